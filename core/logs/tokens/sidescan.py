"""The rows of a big block that may have a side line beside them (core.logs.rows.sidelines), in one compiled pass.

Why: side lines are rare, but the rule looks at the lines either side of every row of every block; in Python that is
~2 us a row (a line's start, its next line's, a first byte each), +35-45 % on a 256-rank bulk read. This pass
walks each row's line and its two neighbours once and keeps a row only when a neighbour may continue its run: a
line that is not another row's and has a side line's or a section line's outline (its first byte a frame's, `|`,
`>`, space or tab, or a prefix's: glog's `[IWEF]` and four digits, a capital word and `:`; its last byte, past a
`\\r`, spaces and tabs, a number's, a `)` or a `|`). That outline holds for every line the rule's patterns take,
so the rows it drops are exactly rows the rule gives nothing (tests/test_logs_sidelines.py holds the two equal);
only the kept ones are read in Python. Its line walks go 8 bytes a step between a newline's word and the bytes
either side (a row's line is ~100-300 bytes; a byte a step was ~2/3 of the pass: tests/test_sidescan_words.py).
A block its scan listed the newlines of (a bulk read's batch) is not walked at all: each row's line and its
neighbours' ends are looked up among those newlines (`side_candidates_at`: ~70-100 -> ~30 ms a 1,024-file read).

numba is imported only by a read that already loaded it (core.logs.rows.templated.compiled_passes).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = [  # (the outline and both sifts: also tests')
    *("run_line_head", "run_line_opens", "run_line_tail"),
    *("side_candidates", "side_candidates_at", "sift_rows"),
]

_NL = 10


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def run_line_opens(c: int) -> bool:
    """Whether a line opening with byte `c` may be a side line or a section line: a frame's, a prefix's capital."""
    return c == 32 or c == 9 or c == 124 or c == 62 or 65 <= c <= 90


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def run_line_head(a: np.ndarray, ls: int, le: int) -> bool:
    """Whether the line a[ls:le] (no newline) opens as a side line or a section line may: a frame's byte (space,
    tab, `|`, `>`), glog's `[IWEF]` and four digits, or a capital word and `:` (`INFO:tensorflow:`)."""
    if ls >= le:
        return False
    c = a[ls]
    if c == 32 or c == 9 or c == 124 or c == 62:
        return True
    if c < 65 or c > 90:
        return False
    if (c == 73 or c == 87 or c == 69 or c == 70) and le - ls > 5:
        glog = True
        for j in range(ls + 1, ls + 5):
            if a[j] < 48 or a[j] > 57:
                glog = False
        if glog:
            return True
    j = ls + 1
    while j < le and 65 <= a[j] <= 90:
        j += 1
    return j < le and a[j] == 58


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def run_line_tail(a: np.ndarray, lo: int, le: int) -> bool:
    """Whether the line ending at `le` (its newline, or `end`; its start past `lo`) ends as a side line or a section
    line may: past a `\\r`, spaces and tabs, a number's end (a digit, `.` of `1.`, nan / NaN / NAN, inf / Inf / INF,
    [Ii]nfinity, MSVC's `1.#QNAN`, `1.#IND`), a running average's `)` or a table's `|`."""
    e = le
    if e > lo and a[e - 1] == 13:
        e -= 1
    while e > lo and (a[e - 1] == 32 or a[e - 1] == 9):
        e -= 1
    if e <= lo or a[e - 1] == _NL:
        return False
    c = a[e - 1]
    if 48 <= c <= 57 or c == 124 or c == 41 or c == 46:
        return True
    if e - lo < 3 or a[e - 2] == _NL or a[e - 3] == _NL:
        return False
    b, x = a[e - 2], a[e - 3]
    if c == 110:  # nan
        return b == 97 and x == 110
    if c == 102:  # inf, Inf
        return b == 110 and (x == 105 or x == 73)
    if c == 78:  # NaN, NAN (MSVC's QNAN, SNAN)
        return (b == 97 or b == 65) and x == 78
    if c == 68 or c == 70:  # MSVC's IND, INF
        return b == 78 and x == 73
    if c == 121 and e - lo >= 7:  # [Ii]nfinity
        for j, w in enumerate((110, 102, 105, 110, 105, 116)):  # noqa: SIM110 (numba: no generator)
            if a[e - 7 + j] != w:
                return False
        return True
    return False


_NLS = np.uint64(0x0A0A0A0A0A0A0A0A)  # a newline in every byte of a word
_ONES = np.uint64(0x0101010101010101)
_HIGHS = np.uint64(0x8080808080808080)
_ZERO = np.uint64(0)


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _holds_newline(x: np.uint64) -> bool:
    """Whether the 8 bytes of word `x` hold a newline (the classic zero-byte test on `x ^ _NLS`: exact as to
    whether, the bytes themselves are then looked at)."""
    y = x ^ _NLS
    return ((y - _ONES) & ~y & _HIGHS) != _ZERO


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _newline_after(a: np.ndarray, w: np.ndarray, j: int, end: int) -> int:
    """The first newline of a[j:end], or `end`: 8 bytes a step through `w` (a's whole words) between a newline's
    word and the bytes either side (a row's line is ~100-300 bytes: a byte a step was most of this pass)."""
    while j < end and j & 7:
        if a[j] == _NL:
            return j
        j += 1
    while j + 8 <= end and not _holds_newline(w[j >> 3]):
        j += 8
    while j < end and a[j] != _NL:
        j += 1
    return j


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _newline_before(a: np.ndarray, w: np.ndarray, j: int, floor: int) -> int:
    """The last newline of a[floor:j + 1], or `floor - 1`: as `_newline_after`, backwards."""
    while j >= floor and (j + 1) & 7:
        if a[j] == _NL:
            return j
        j -= 1
    while j - 7 >= floor and not _holds_newline(w[(j - 7) >> 3]):
        j -= 8
    while j >= floor and a[j] != _NL:
        j -= 1
    return j


@numba.njit(cache=True, nogil=True, boundscheck=False)
def side_candidates(a: np.ndarray, at: np.ndarray, floor: int, end: int, starts: np.ndarray) -> np.ndarray:
    """Per row (a position `at[k]` inside its line of a[floor:end]): `starts[k]` its line's start, and whether
    a line beside it (the next, the one before) may continue its run: not another row's line (the row listed
    beside it) and of a side line's outline. A row whose line has no newline before `end` is kept."""
    n = at.size
    keep = np.zeros(n, dtype=np.bool_)
    w = a[: a.size - a.size % 8].view(np.uint64)
    for k in range(n):
        starts[k] = _newline_before(a, w, at[k] - 1, floor) + 1
    for k in range(n):
        ls = starts[k]
        j = _newline_after(a, w, ls, end)
        if j >= end:
            keep[k] = True
            continue
        pos = j + 1  # the next line: its first byte, then its end
        if pos < end and not (k + 1 < n and starts[k + 1] == pos) and run_line_opens(a[pos]):
            q = _newline_after(a, w, pos, end)
            if run_line_head(a, pos, q) and run_line_tail(a, pos, q):
                keep[k] = True
                continue
        if ls > floor and run_line_tail(a, floor, ls - 1):  # the line before: its end, then its start
            pls = _newline_before(a, w, ls - 2, floor) + 1
            if not (k > 0 and starts[k - 1] == pls) and run_line_head(a, pls, ls - 1) and run_line_tail(a, pls, ls - 1):
                keep[k] = True
    return keep


@numba.njit(cache=True, nogil=True, boundscheck=False)
def side_candidates_at(
    a: np.ndarray, at: np.ndarray, floor: int, end: int, nl: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """`side_candidates` where the block's newlines are known (`nl`: ascending, every newline of a[floor:end] and
    none outside it, as the block's scan listed them): each line's start and end is looked up among them, not
    walked to. The same starts and keep (tests/test_sidescan_words.py); the bytes read are a line's first and last
    few, where the walks read every row's line and most lines before one (~60-100 ms a 1,024-file read)."""
    n = at.size
    keep = np.zeros(n, dtype=np.bool_)
    idx = np.searchsorted(nl, at)  # per row, its line's newline (the first at or after its position)
    for k in range(n):
        starts[k] = nl[idx[k] - 1] + 1 if idx[k] > 0 else floor
    for k in range(n):
        ls, i = starts[k], idx[k]
        if i >= nl.size:  # no newline before `end`
            keep[k] = True
            continue
        pos = nl[i] + 1  # the next line: its first byte, then its end
        if pos < end and not (k + 1 < n and starts[k + 1] == pos) and run_line_opens(a[pos]):
            q = nl[i + 1] if i + 1 < nl.size else end
            if run_line_head(a, pos, q) and run_line_tail(a, pos, q):
                keep[k] = True
                continue
        if ls > floor and run_line_tail(a, floor, ls - 1):  # the line before: its end, then its start
            pls = nl[i - 2] + 1 if i >= 2 else floor
            if not (k > 0 and starts[k - 1] == pls) and run_line_head(a, pls, ls - 1) and run_line_tail(a, pls, ls - 1):
                keep[k] = True
    return keep


@numba.njit(cache=True, nogil=True, boundscheck=False)
def sift_rows(
    a: np.ndarray, offsets: np.ndarray, base: int, floor: int, end: int, newlines: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`side_candidates` of the rows (their file offsets, `offsets`, float64: a row block's last column) whose
    line is in a[floor:end] (a at file offset `base`), in one call: (those rows' numbers, their lines' starts,
    whether each is kept). A live tick sifts ~700 blocks of a few rows: the numpy calls around a sift of each
    (the rows inside, their positions, the kept ones) cost more than the sift. `newlines`: every newline of
    a[floor:end] among them, ascending (the block's scan found them: `side_candidates_at` looks lines up in
    them), or empty: the lines are walked."""
    n = offsets.size
    inside = np.empty(n, dtype=np.int64)
    at = np.empty(n, dtype=np.int64)
    m = 0
    lo, hi = base + floor, base + end
    for k in range(n):
        o = offsets[k]
        if o >= lo and o < hi:  # (NaN: neither)
            inside[m] = k
            at[m] = np.int64(o) - base
            m += 1
    starts = np.empty(m, dtype=np.int64)
    if newlines.size:
        nl = newlines[np.searchsorted(newlines, floor) : np.searchsorted(newlines, end)]
        keep = side_candidates_at(a, at[:m], floor, end, nl, starts)
    else:
        keep = side_candidates(a, at[:m], floor, end, starts)
    return inside[:m], starts, keep
