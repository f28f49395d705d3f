"""Candidate lines that carry nothing: found in one search per chunk instead of one `Parser._line` each."""

from __future__ import annotations

import re

import numpy as np

from core.logs.failures import fatal_quick
from core.logs.formats import ERROR_PREFIXES

__all__ = ["worth_a_look"]

# What can make a candidate line without a loss key or an eval word do anything in `Parser._line`: an
# error prefix, a traceback, an exception line, a YOLO or TimeMonitor timing, a fatal signature (a
# superset of each: a line it matches is read by `_line`, which decides). (?m): `^`/`$` at every line.
_RE_WORTH = re.compile(
    rb"(?m)^(?:" + b"|".join(re.escape(p) for p in ERROR_PREFIXES) + rb"|Traceback|"
    rb"[\w.]*(?:Error|Exception|Interrupt|Exit|Failure)(?::|\r?$))|step time: |per step time|" + fatal_quick().pattern
)


def worth_a_look(
    buf: bytes | bytearray, starts: np.ndarray, others: np.ndarray, words: np.ndarray, newlines: np.ndarray
) -> np.ndarray:
    """`others` (indices of candidate lines left to `_line`) without the lines `_line` would read and drop.

    Why: plain text lines (`Number of epochs: 3`, config dumps) are candidates because they may be an
    error; at ~4 us each in `Parser._line` they cost MindCV-format logs a third of their read. A line holding a
    keyword is kept (`words`: a position inside each such line, e.g. its start); the others are joined and
    searched once by `_RE_WORTH`, and only the lines it hits are kept, so the result is exactly what
    reading them all gives.
    """
    has_word = np.zeros(len(starts), dtype=bool)
    if len(words):
        line = np.searchsorted(starts, words, side="right") - 1
        has_word[line[line >= 0]] = True
    plain = others[~has_word[others]]
    if not len(plain):
        return others
    ls = starts[plain]
    le = newlines[np.searchsorted(newlines, ls)]
    joined = b"\n".join([buf[a:b] for a, b in zip(ls.tolist(), le.tolist(), strict=True)])
    hits = [m.start() for m in _RE_WORTH.finditer(joined)]
    keep = has_word[others]
    if hits:
        line_of = np.searchsorted(np.cumsum(le - ls + 1), hits, side="right")  # joined line of each hit
        worth = np.zeros(len(starts), dtype=bool)
        worth[plain[line_of]] = True
        keep |= worth[others]
    return others[keep]
