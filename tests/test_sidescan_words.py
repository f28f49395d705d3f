"""The side-line sift's line walks 8 bytes a step (core.logs.tokens.sidescan, round 16 bulk11): on any text, any
rows, any window and any alignment, it keeps the rows and finds the line starts the byte-a-step walk did (the
definition below: the pass as it was before, its outline tests shared)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from core.logs.tokens import sidescan

_opens, _head, _tail = (f.py_func for f in (sidescan.run_line_opens, sidescan.run_line_head, sidescan.run_line_tail))


def _byte_walk(a: np.ndarray, at: np.ndarray, floor: int, end: int) -> tuple[list[int], list[bool]]:
    """The sift before this round, a byte a step (its loops as they were; the outline tests are the module's own,
    unchanged)."""
    n = at.size
    starts, keep = [0] * n, [False] * n
    for k in range(n):
        j = int(at[k]) - 1
        while j >= floor and a[j] != 10:
            j -= 1
        starts[k] = j + 1
    for k in range(n):
        ls = j = starts[k]
        while j < end and a[j] != 10:
            j += 1
        if j >= end:
            keep[k] = True
            continue
        pos = j + 1
        if pos < end and not (k + 1 < n and starts[k + 1] == pos) and _opens(a[pos]):
            q = pos
            while q < end and a[q] != 10:
                q += 1
            if _head(a, pos, q) and _tail(a, pos, q):
                keep[k] = True
                continue
        if ls > floor and _tail(a, floor, ls - 1):
            j = ls - 2
            while j >= floor and a[j] != 10:
                j -= 1
            pls = j + 1
            if not (k > 0 and starts[k - 1] == pls) and _head(a, pls, ls - 1) and _tail(a, pls, ls - 1):
                keep[k] = True
    return starts, keep


# real lines (tests/test_logs_sidelines.py's ROW, caffe-361, and its synthetic noise) and side-line shapes, cut
# at any length so newlines fall at every alignment
_LINES = st.sampled_from(
    [
        b"Iteration 180, loss = 6.55607",
        b"    Train net output #0: loss = 6.55607 (* 1 = 6.55607 loss)",
        b"I0523 14:02:11.123456  1234 solver.cpp:218] Iteration 180 (1.2 iter/s), loss = 6.55",
        b"INFO:tensorflow:global_step/sec: 3.21",
        b"| rollout/   |     |",
        b"Number of parameters in transformer layers in billions:  0.45",
        b" iteration        2/     200 | consumed samples:         2048 | lm loss: 2.291295E+00 | loss scale: 1.0 |",
        b"[WARNING] DISTRIBUTED(20000,144756014165,python):2026-09-21-14:12:51.000.000 [mindspore/ccsrc] Begin.",
        b"  lr = 0.001 nan",
    ]
)
_TEXT = st.lists(st.tuples(_LINES, st.integers(0, 120), st.sampled_from([b"\n", b"\r\n"])), min_size=1, max_size=30)


def _drawn_window(
    parts: list[tuple[bytes, int, bytes]], pad: int, data: st.DataObject | None
) -> tuple[bytes, int, int, np.ndarray]:
    """A drawn text, a window [floor, end) of it, and row positions in it: line starts, or (drawn) a few bytes
    inside their lines; the whole text and every line start for an `@example` (data None)."""
    text = b"x" * pad + b"".join(line[:cut] + nl for line, cut, nl in parts)
    if data is not None and data.draw(st.booleans()):
        text = text.rstrip(b"\n")  # a last line without its newline
    size = len(text)
    if data is None:
        floor, end = 0, size
    else:
        floor = data.draw(st.integers(0, size))
        end = data.draw(st.integers(floor, size))
    line_starts = [i for i in range(floor, end) if i == floor or text[i - 1] == 10]
    picks = sorted(
        set(line_starts if data is None else data.draw(st.lists(st.sampled_from(line_starts))) if line_starts else [])
    )
    if data is not None and picks and data.draw(st.booleans()):  # a position inside its line, not its start
        picks = [min(p + data.draw(st.integers(0, 5)), end - 1) if end > p else p for p in picks]
    return text, floor, end, np.array(sorted(set(picks)), dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.integers(0, 15), st.data())
@example([(b"Iteration 180, loss = 6.55607", 40, b"\n")] * 3, 0, None)
def test_word_walk_is_the_byte_walk(
    parts: list[tuple[bytes, int, bytes]], pad: int, data: st.DataObject | None
) -> None:
    text, floor, end, at = _drawn_window(parts, pad, data)
    for buf in (text, bytearray(text)):
        a = np.frombuffer(buf, dtype=np.uint8)
        starts = np.empty(at.size, dtype=np.int64)
        keep = sidescan.side_candidates(a, at, floor, end, starts)
        want_starts, want_keep = _byte_walk(a, at, floor, end)
        assert starts.tolist() == want_starts
        assert keep.tolist() == want_keep


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.integers(0, 15), st.data())
@example([(b"  lr = 0.001 nan", 40, b"\n"), (b"Iteration 180, loss = 6.55607", 40, b"\n")] * 3, 0, None)
def test_lines_looked_up_are_the_lines_walked(
    parts: list[tuple[bytes, int, bytes]], pad: int, data: st.DataObject | None
) -> None:
    """The sift given the block scan's newlines (round 16 bulkspeed: a batch's lines are looked up among them, not
    walked) keeps the rows and finds the starts the walk does, on any window of any text; `sift_rows` given a whole
    batch's newlines (other files' before and after the window) or none gives the same rows too."""
    text, floor, end, at = _drawn_window(parts, pad, data)
    every = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 10).astype(np.int64)
    window = every[(every >= floor) & (every < end)]
    for buf in (text, bytearray(text)):
        a = np.frombuffer(buf, dtype=np.uint8)
        walked, looked = np.empty(at.size, dtype=np.int64), np.empty(at.size, dtype=np.int64)
        keep_walked = sidescan.side_candidates(a, at, floor, end, walked)
        keep_looked = sidescan.side_candidates_at(a, at, floor, end, window, looked)
        assert looked.tolist() == walked.tolist() == _byte_walk(a, at, floor, end)[0]
        assert keep_looked.tolist() == keep_walked.tolist()
        base = 1000  # file offsets: a row outside the window and a NaN offset are not sifted
        offsets = np.array([floor - 1 + base, *(at + base), np.nan, end + base], dtype=np.float64)
        with_all = sidescan.sift_rows(a, offsets, base, floor, end, every)
        alone = sidescan.sift_rows(a, offsets, base, floor, end, np.empty(0, dtype=np.int64))
        for got, want in zip(with_all, alone, strict=True):
            assert got.tolist() == want.tolist()
        assert with_all[2].tolist() == keep_walked.tolist()
