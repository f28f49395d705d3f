"""core.logs.rows.templated.quiet_lines asks the per-line dispatch (`reaches_metric_line`) only of the lines that may
be turned away (issue 30, read speed): held to the statement it replaced, which asked it of every line, on lines
built from the parts that turn a line away and on every line of the real-log corpus."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.rows import templated
from core.logs.rows.failure_kinds import FAILURE_KINDS, LAUNCHER_REPORTS
from core.logs.rows.formats import is_chatter
from core.logs.rows.general import reads_nothing
from core.logs.rows.linekinds import WORTH, reaches_metric_line
from core.logs.rows.linetemplates import shape_key

_CORPUS = Path(__file__).parent / "fixtures" / "real_logs"


def _reference(
    buf: bytes, starts: np.ndarray, ends: np.ndarray, pending: bool
) -> tuple[np.ndarray, list[tuple[bytes, bytes]]]:
    """The loop `quiet_lines` had before (every line of no known shape holding a keyword: here every line), and
    the shapes it learnt."""
    quiet = np.zeros(len(starts), dtype=bool)
    look = np.arange(len(starts))
    shapes: dict[bytes, list[bytes]] = {}
    found = np.zeros(len(look), dtype=bool)
    for i, (s, e) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        line = bytes(buf[s:e]).removesuffix(b"\r")
        chatter = is_chatter(line)
        if (chatter or reads_nothing(line)) and reaches_metric_line(line, line.startswith((b" ", b"\t")) and pending):
            found[i] = True
            if not chatter:
                shapes.setdefault(shape_key(line), []).append(line)
    look = look[found]
    if len(look):
        quiet[look[~WORTH.holds(buf, starts[look], ends[look], True)]] = True
    learnt = [(k, v[0]) for k, v in shapes.items() if len(v) > 1 and not WORTH.shape_holds(k)]
    return quiet, learnt


def _both(lines: list[bytes], pending: bool) -> None:
    buf = b"\n" + b"".join(x + b"\n" for x in lines)
    nl = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)
    starts, ends = nl[:-1] + 1, nl[1:]
    learnt: list[tuple[bytes, bytes]] = []
    learn: Callable[[bytes, bytes], object] = lambda key, line: learnt.append((key, line))  # noqa: E731
    shape_of = np.full(len(starts), -1, dtype=np.int64)
    got = templated.quiet_lines(buf, starts, ends, shape_of, starts.copy(), lambda: pending, learn)
    want, want_learnt = _reference(buf, starts, ends, pending)
    assert got.tolist() == want.tolist(), [x for x, g, w in zip(lines, got, want, strict=True) if g != w][:3]
    assert learnt == want_learnt


_ANCHORS = sorted({a for k in (*FAILURE_KINDS, *LAUNCHER_REPORTS) for a in k.anchors} | set(WORTH.literals))
_PARTS = st.sampled_from(
    [
        b"[WARNING] ME(123:456,MainProcess):2024-01-01-00:00:00.000.000 [a.cc:1] F] ",
        b"[INFO] DISTRIBUTED(20000,49288,python):",
        b"[ERROR] ME(1:2,1):",
        b"[2026-09-21 14:13:20] mindcv.utils.callbacks INFO - ",
        b"[rank3]: ",
        b"[1,2]<stderr>:",
        b"worker-1: ",
        b"2025-07-17T11:20:40.299361236+08:00 ",
        b"<>        [2021-12-07 10:43:00] ef45fdce [rank=1] || ",
        b"  5%|5         | 1/20 [00:01<00:10,  1.00it/s]",
        b"Traceback (most recent call last):",
        b'  File "x.py", line 3, in f',
        b"ValueError: ",
        b"KeyboardInterrupt",
        b"Event value fd: 12",
        b"invalid eval value 3 ",
        b"val_acc: 0.5 ",
        b"loss: 2.5",
        b"[",
        b"]",
        b" ",
        b"E1234 ",
        b"EI0002",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    lines=st.lists(
        st.lists(_PARTS | st.sampled_from(_ANCHORS) | st.binary(max_size=12), min_size=1, max_size=5).map(
            lambda parts: b"".join(parts).replace(b"\n", b" ")
        ),
        min_size=1,
        max_size=12,
    ),
    pending=st.booleans(),
)
@example(lines=[b"[WARNING] ME(1:2,M):x [a.cc:1] F] Event value fd: 12"] * 2, pending=False)
@example(lines=[b"[INFO] RUNTIME(1,2,p): x  5%| 1/20 [00:01<00:10, 1.00it/s][E x.cpp:1] NCCL error"], pending=False)
@example(lines=[b"[rank1]: Traceback (most recent call last): value"], pending=True)
def test_same_lines_and_shapes_as_asking_every_line(lines: list[bytes], pending: bool) -> None:
    """Tags, chatter prefixes, bars, anchors and keyword words in lines: the same quiet lines, the same shapes."""
    _both(lines, pending)


def test_every_real_log_line() -> None:
    """Every line of every real log (their chatter, tags, failures, glued bars) as a candidate: the same answer."""
    skip = {"expect.json", "README.md", "SOURCE.md"}
    logs = [p for p in sorted(_CORPUS.rglob("*")) if p.is_file() and p.name not in skip]
    assert len(logs) > 400
    for path in logs:
        lines = path.read_bytes().replace(b"\r\n", b"\n").split(b"\n")[:4000]
        for pending in (False, True):
            _both(lines, pending)
