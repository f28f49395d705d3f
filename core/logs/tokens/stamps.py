"""A `[date]` stamp before an error level, as the compiled candidate scan finds it (core.logs.tokens.linescan).

Why: python logging's `[%(asctime)s] [%(levelname)s]` (DeepSpeed's launcher) and `[%(asctime)s] %(name)s:
[%(levelname)s]` (torch's elastic agent) start their lines with a `[date]`, which is no launcher tag, so the scan
left them out; their reports of a dead rank were never read. A stamped line is a candidate at error level only:
the `[date]` INFO/WARNING noise of MindCV and DeepSpeed stays out (the definition: `core.logs.tokens.bulk.
STAMPED_ERROR`; tests/test_logs_fastpath.py holds the two to each other). Also `stamp_parts`: a known stamp's
digits as numbers, for the rows of a shape that starts with one.
"""

from __future__ import annotations

import numba
import numpy as np

from core.logs.tokens import jitcache  # noqa: F401  (numba's cache folder, set before any decoration)

__all__ = ["stamp_parts", "stamped_error"]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _error_level_at(a: np.ndarray, x: int, end: int) -> bool:
    """Whether `[E`, `[C`, `ERROR`, `Error:`, `CRITICAL` or `FATAL` begins at `a[x]` (within `a[:end]`)."""
    if x >= end:
        return False
    c = a[x]
    if c == 91:  # [E [C
        return x + 1 < end and (a[x + 1] == 69 or a[x + 1] == 67)
    if c == 69:  # ERROR, Error:
        if x + 5 <= end and a[x + 1] == 82 and a[x + 2] == 82 and a[x + 3] == 79 and a[x + 4] == 82:
            return True
        return (
            x + 6 <= end
            and a[x + 1] == 114
            and a[x + 2] == 114
            and a[x + 3] == 111
            and a[x + 4] == 114
            and a[x + 5] == 58
        )
    if c == 70:  # FATAL
        return x + 5 <= end and a[x + 1] == 65 and a[x + 2] == 84 and a[x + 3] == 65 and a[x + 4] == 76
    if c == 67:  # CRITICAL
        if x + 8 > end:
            return False
        word = a[x + 1] == 82 and a[x + 2] == 73 and a[x + 3] == 84 and a[x + 4] == 73
        return word and a[x + 5] == 67 and a[x + 6] == 65 and a[x + 7] == 76
    return False


@numba.njit(cache=True, nogil=True, boundscheck=False)
def stamped_error(a: np.ndarray, line: int, end: int) -> bool:
    """Whether the line at `line` (`[` and a digit) is `core.logs.tokens.bulk.STAMPED_ERROR`: a `[date]` stamp
    (its `]` within 41 bytes), a space, maybe one word (1-64 bytes) and a space, then an error level; or glued to
    it (Hydra's), maybe one bracketed word (1-64 bytes), then a bracketed error level."""
    p = line + 2
    stop = min(end, line + 43)  # the stamp's `]` is at most 40 bytes after its first digit
    while p < stop and a[p] != 93 and a[p] != 10:
        p += 1
    if p >= stop or a[p] != 93 or p + 1 >= end:
        return False
    if a[p + 1] == 91:  # Hydra's glued `[date][name][LEVEL]`: maybe one bracketed word, then `[E` / `[C`
        if _error_level_at(a, p + 1, end):
            return True
        r = p + 2
        stop = min(end, p + 67)  # the word's `]` after 1-64 bytes
        while r < stop and a[r] != 93 and a[r] != 10:
            r += 1
        return p + 2 < r < stop and a[r] == 93 and r + 1 < end and a[r + 1] == 91 and _error_level_at(a, r + 1, end)
    if a[p + 1] != 32:
        return False
    q = p + 2
    if _error_level_at(a, q, end):
        return True
    r = q
    stop = min(end, q + 65)  # one word of at most 64 bytes
    while r < stop and a[r] != 32 and a[r] != 10:
        r += 1
    return q < r < stop and a[r] == 32 and _error_level_at(a, r + 1, end)


# A stamp's digits, read by one compiled pass (core.logs.rows.templated, through linescan's compiled passes)
_HOUR_DIGITS = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12])  # of `YYYY-mm-dd HH:MM:SS`


@numba.njit(cache=True, nogil=True, boundscheck=False)
def stamp_parts(
    a: np.ndarray,
    starts: np.ndarray,
    at: int,
    frac_from: int,
    frac_to: int,
    hours: np.ndarray,
    seconds: np.ndarray,
    fracs: np.ndarray,
) -> None:
    """Per line, of its `YYYY-mm-dd HH:MM:SS` at `starts + at` (a digit wherever its shape has one): the hour as
    YYYYmmddHH, the second in it (MM * 60 + SS; -1 when MM or SS is past 59) and the digits at
    [frac_from, frac_to) as an integer. One pass, where numpy's took a dozen over (lines, 14) matrices."""
    for i in range(starts.size):
        p = starts[i] + at
        hour = 0
        for k in _HOUR_DIGITS:
            hour = hour * 10 + (a[p + k] - 48)
        hours[i] = hour
        minute = (a[p + 14] - 48) * 10 + (a[p + 15] - 48)
        second = (a[p + 17] - 48) * 10 + (a[p + 18] - 48)
        seconds[i] = minute * 60 + second if minute < 60 and second < 60 else -1
        frac = 0
        for q in range(starts[i] + frac_from, starts[i] + frac_to):
            frac = frac * 10 + (a[q] - 48)
        fracs[i] = frac
