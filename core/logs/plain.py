"""Candidate lines that carry nothing: found in one search per chunk instead of one `Parser._line` each."""

from __future__ import annotations

import re

import numpy as np

from core.logs.formats import ERROR_PREFIXES

__all__ = ["worth_a_look"]

# What can make a candidate line without a loss key or an eval word do anything in `Parser._line`: an
# error prefix, a traceback, an exception line (`[\w.]*(Error|Exception|...)(:|$)`), a YOLO or
# TimeMonitor timing, a fatal signature (core.logs.failures' quick test). As literals, each a part every
# such line holds (a superset: a line that holds one is read by `_line`, which decides), found with
# bytes.find (memchr-fast, ~5x one regex over the joined lines); the CANN code (`EI0002`) by a regex.
_WORTH_LITERALS = (
    *ERROR_PREFIXES,
    *(b"Traceback", b"Error", b"Exception", b"Interrupt", b"Exit", b"Failure", b"step time"),
    # failures._QUICK's alternatives after its first letter
    *(b"RITICAL", b"ATAL", b"): ", b"ouble free", b"orrupted", b"tack smashing", b"egmentation fault"),
    *(b"borted", b"illed", b"us error", b"llegal instruction", b"loating point exception", b"ore dumped"),
    *(b"atal Python error", b"ut of memory", b"run: error: ", b"rocess rank"),
    *(b"imeout", b"imeOut", b"ime out", b"ime Out", b"imed out", b"imes out", b"iming out", b"IMEOUT", b"IME OUT"),
)
_RE_CANN_CODE = re.compile(rb"[A-Z][0-9]{4}")


def _worth_positions(joined: bytes) -> list[int]:
    """Where in `joined` a part of a line worth reading is (unsorted, maybe repeated)."""
    found = [m.start() for m in _RE_CANN_CODE.finditer(joined)]
    find = joined.find
    for literal in _WORTH_LITERALS:
        at = find(literal)
        while at != -1:
            found.append(at)
            at = find(literal, at + 1)
    return found


def worth_a_look(
    buf: bytes | bytearray, starts: np.ndarray, others: np.ndarray, words: np.ndarray, newlines: np.ndarray
) -> np.ndarray:
    """`others` (indices of candidate lines left to `_line`) without the lines `_line` would read and drop.

    Why: plain text lines (`Number of epochs: 3`, config dumps) are candidates because they may be an
    error; at ~4 us each in `Parser._line` they cost MindCV-format logs a third of their read. A line holding a
    keyword is kept (`words`: a position inside each such line, e.g. its start); the others are joined and
    searched once for the parts of a line worth reading (`_WORTH_LITERALS`), and only the lines it hits
    are kept, so the result is exactly what reading them all gives.
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
    hits = _worth_positions(joined)
    keep = has_word[others]
    if hits:
        line_of = np.searchsorted(np.cumsum(le - ls + 1), hits, side="right")  # joined line of each hit
        worth = np.zeros(len(starts), dtype=bool)
        worth[plain[line_of]] = True
        keep |= worth[others]
    return others[keep]
