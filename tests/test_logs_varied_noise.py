"""Noise lines as real logs write them (each its own thread id, numbers and time) are read in bulk, and read
exactly as line by line (issue 30, speed on shapes like the real ones).

A keyword inside a word (`Event value fd: 12`, `... is invalid`) makes a noise line a candidate; when every
such line is a shape of its own, the bulk reader used to learn them from samples and read the rest one line
at a time. `core.logs.rows.templated.quiet_lines` tells them by their text (`reads_nothing`, MindSpore's
chatter), and a failure's part on such a line still sends it to the line reader.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.rows.general import read_line, reads_nothing
from core.logs.rows.linetemplates import LineTemplate, shape_key
from core.logs.rows.templated import Shapes
from core.logs.tokens.linescan import match_shapes, words_of
from tests.helpers import read_both_ways, same_snapshot

REPO = Path(__file__).resolve().parent.parent


def _event_line(rng: random.Random, rank: int, t: int, tail: str = "") -> str:
    """MindSpore's `Event value` chatter: its own thread id (hex), fd, port and errno, its own time."""
    tid = f"{rng.getrandbits(48):012x}"
    return (
        f"[WARNING] DISTRIBUTED({20000 + rank},{tid},python):2026-11-22-07:{t // 60 % 60:02d}:{t % 60:02d}."
        f"{rng.randrange(1000):03d}.{rng.randrange(1000):03d} [mindspore/ccsrc/cluster/rpc/tcp/connection.cc:79] "
        f"SocketEventHandler] Event value fd: {rng.randrange(1, 900)}, events: {rng.randrange(1, 30)}, state: 7, "
        f"errcode: {rng.randrange(0, 200)}, remote peer: 127.0.0.1:{rng.randrange(1, 65535)}{tail}"
    )


def _mindformers_noise(rng: random.Random, t: int) -> str:
    """A MindFormers line holding `val` inside a word, its numbers varying."""
    return (
        f"[WARNING] 2026-11-23 21:{t // 60 % 60:02d}:{t % 60:02d},{rng.randrange(1000):03d} "
        f"[mindformers/trainer/utils.py:{rng.randrange(10, 999)}] check_runner_config: Sink mode is False, per epoch "
        f"size {rng.randrange(1, 99999)} is invalid, it will reset to {rng.randrange(1, 999)}"
    )


def _varied_log(seed: int, fatal_every: int = 0) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for step in range(1, 301):
        lines.append(f"epoch: 1 step: {step}, loss is {5 - step / 100}")
        lines.append(_event_line(rng, seed, step))
        lines.append(_mindformers_noise(rng, step))
        if step % 50 == 0:  # an eval message (`val` at the start of its message): read, one by one or in bulk
            lines.append(f"[INFO] 2026-11-23 21:00:{step % 60:02d},001 Validation accuracy: 0.{step}")
        if fatal_every and step % fatal_every == 0:  # a keyword inside a word and a failure's part
            n = rng.randrange(1, 10 ** rng.randrange(1, 7))
            lines.append(
                f"[2026-11-23 10:00:{step % 60:02d}] mindcv.utils INFO - value {n} Killed"
                if step % 2
                else f"rank {seed} interval {n}: Segmentation fault (core dumped)"
            )
    return lines


def test_noise_lines_each_of_its_own_shape_are_read_in_bulk_like_line_by_line(tmp_path: Path) -> None:
    """900 noise lines holding `value` / `invalid`, nearly each of a shape of its own: none is read one line at a
    time (before: learnt from samples of 16, the rest one by one), and the snapshot is the one-by-one read's."""
    one_by_one, bulk, calls = read_both_ways(tmp_path, _varied_log(1))
    assert len(bulk.metrics) == 900
    same_snapshot(bulk, one_by_one)
    assert len(bulk.evals) == len(one_by_one.evals) > 0
    assert len(calls) < 100, f"{len(calls)} lines read one by one"


def test_a_noise_line_of_its_own_shape_with_a_failure_part_is_still_a_failure(tmp_path: Path) -> None:
    """Such a line that also holds a failure's signature is read by the line reader: the failure is reported
    in bulk as it is line by line (17 per file)."""
    one_by_one, bulk, _ = read_both_ways(tmp_path, _varied_log(2, fatal_every=17))
    assert len(one_by_one.errors) == 3 * 17
    same_snapshot(bulk, one_by_one)


_WORDS = [
    b"value",
    b"values",
    b"interval",
    b"invalid",
    b"eval",
    b"evaluate",
    b"Evaluation",
    b"val",
    b"VAL",
    b"valid",
    b"Validation",
    b"val_acc",
    b"loss",
    b"LOSS",
    b"total_loss",
    b"[INFO]",
    b"[WARNING] ME(1:2,MainProcess):2026-11-23-10:00:00.000.000 [a.py:1] x]",
    b"2026-11-23 10:00:00,123",
    b"[2026-11-23 10:00:00]",
    b"mindcv.train INFO -",
    b"{",
    b"-",
    b" ",
    b"\t",
    b":",
    b"=",
    b"/",
    b".",
    b"\x1b[0m",
    b"\r",
]


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_WORDS),
            st.integers(0, 10**6).map(lambda n: str(n).encode()),
            st.floats(allow_nan=True).map(lambda x: repr(x).encode()),
            st.binary(max_size=4),
        ),
        max_size=10,
    )
)
def test_reads_nothing_only_when_the_general_reader_reads_nothing(parts: list[bytes]) -> None:
    """`reads_nothing` is a cheap, sure answer: whenever it says so, `read_line` gives None."""
    line = b"".join(parts).replace(b"\n", b" ")
    if reads_nothing(line):
        assert read_line(line) is None


@pytest.mark.parametrize(
    ("line", "nothing"),
    [
        (b"[WARNING] DISTRIBUTED(1,7f2a,python):2026 [c.cc:79] SocketEventHandler] Event value fd: 9", True),
        (b"[WARNING] 2026-11-23 21:19:08,612 [utils.py:1] check: per epoch size is invalid", True),
        (b"[INFO] 2026-11-23 21:00:00,001 Validation accuracy: 0.5", False),
        (b"val_acc: 0.5", True),
        (b"val acc: 0.5", False),
        (b"epoch: 1 step: 2, loss is 1.5", False),
        (b"eval loss 2.5 (no separator)", False),
    ],
)
def test_reads_nothing_on_real_lines(line: bytes, nothing: bool) -> None:
    assert reads_nothing(line) is nothing
    if nothing:
        assert read_line(line) is None


@settings(max_examples=300, deadline=None)
@given(
    learnt=st.lists(st.binary(min_size=1, max_size=24).map(lambda b: b.replace(b"\n", b"x")), max_size=40),
    lines=st.lists(st.binary(min_size=1, max_size=24).map(lambda b: b.replace(b"\n", b"x")), max_size=40),
)
def test_the_match_by_length_finds_the_first_learnt_shape(learnt: list[bytes], lines: list[bytes]) -> None:
    """Templates are tried only among those of the line's length: each line still takes the first learnt
    template of its shape (many shapes of one length, and of others)."""
    shapes = Shapes()
    for line in learnt:
        shapes.add(shape_key(line), LineTemplate(columns=(), constants=(), word_digits=(), keys=()))
    probe = lines + learnt
    buf = b"\n" + b"\n".join(probe) + b"\n"
    nl = [i for i, c in enumerate(buf) if c == 10]
    starts, ends = np.array(nl[:-1], dtype=np.int64) + 1, np.array(nl[1:], dtype=np.int64)
    if not shapes:
        return
    a = np.frombuffer(buf, dtype=np.uint8)
    got = match_shapes(a, words_of(a), starts, ends, *shapes.packed())
    keys = shapes._keys
    assert got.tolist() == [keys.index(shape_key(x)) if shape_key(x) in keys else -1 for x in probe]


def test_synthetic_noise_varies_as_real_lines_do(tmp_path: Path) -> None:
    """The benchmark's folders (benchmarks/synth_logs.py, varied noise): every MindSpore noise line carries the
    rank's own pid, its time rises through the log, and its lines are not copies of a fixed set."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import synth_logs

    run = synth_logs.write_run(tmp_path, 4, 60, fmt="mindformers")
    stamp = re.compile(rb"\((\d+),[0-9a-f]+,python\):(\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3})")
    for rank in range(4):
        lines = (tmp_path / f"worker_{rank}.log").read_bytes().splitlines()
        found = [m for line in lines if (m := stamp.search(line))]
        assert len(found) > 60
        assert {int(m.group(1)) for m in found} == {20000 + rank}
        times = [m.group(2) for m in found]
        assert times == sorted(times) and len(set(times)) == len(times)
        noise = [line for line in lines if line.startswith(b"[WARNING] DISTRIBUTED")]
        assert len(set(noise)) == len(noise)
    assert len(read_run(tmp_path).metrics) == run.loss_lines
