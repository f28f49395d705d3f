"""The lines that hold a loss keyword (lexicon.KEYWORDS) in any case, or begin as lexicon.KEYED_START, found by
literal searches over a block: the definition the compiled scan (core.logs.tokens.linescan) matches in bulk, and
the path of a read too small to pay for it (core.logs.tokens.bulk.scan_by_definition). Split off bulk.py (at the
module-length bound).
"""

from __future__ import annotations

import re

import numpy as np

from core.logs.tokens.lexicon import KEYED_START, KEYWORDS

__all__ = ["keyword_lines", "keyword_positions", "keyword_starts"]

# each keyword as it reads in the OR-ed copy (`_` becomes 0x7f); one holding a byte other than a letter is then
# checked in the block itself (`cross entropy`: a NUL, 0x20 OR-ed, would read as its space)
_ORED = {kw: bytes(c | 0x20 for c in kw) for kw in KEYWORDS}
_KEYED_HEADS = (b"\ns:", b"\nS:", b"\n[")  # how a KEYED_START line begins: a block without one is not searched
# build-nanogpt's `0 train X`, Paddle v1's `Pass: 0, `, char-RNN's `5000 5% (0m 12s) `, a torch scalar's `tensor(3.2`
_RE_DIGIT_HEAD = re.compile(rb"(?i)\n(?:\d+ (?:t|\d+% )|pass:? \d|tensor\()")
_RE_KEYED_LINE = re.compile(
    rb"(?i)\n(?:" + KEYED_START + rb")"
)  # a line's start as llm.c's `s:0 trl:` (lexicon.KEYED_START)
_RE_KEYWORDS = {kw: re.compile(re.escape(ored)) for kw, ored in _ORED.items()}


def keyword_positions(buf: bytes | bytearray, end: int, scratch: bytearray) -> np.ndarray:
    """Where KEYWORDS occur in `buf[:end]`, in any case (sorted per keyword, not across them).

    The block is OR-ed with 0x20 into `scratch` (a reused buffer: a fresh 8 MB copy per block cost
    more in page faults than the scan), which lower-cases the letters and maps no other byte onto one
    of the keywords' letters; then a literal search per keyword (`val` only walked if present).
    """
    if len(scratch) < end:
        scratch.extend(bytes(end - len(scratch)))
    np.bitwise_or(
        np.frombuffer(buf, dtype=np.uint8, count=end),
        np.uint8(0x20),
        out=np.frombuffer(scratch, dtype=np.uint8, count=end),
    )
    found: list[int] = []
    for kw, pattern in _RE_KEYWORDS.items():
        if kw == b"loss" or scratch.find(_ORED[kw], 0, end) != -1:  # the rarer words only walked if present
            at = [m.start() for m in pattern.finditer(scratch, 0, end)]
            found += at if kw.isalpha() else [p for p in at if buf[p : p + len(kw)].lower() == kw]
    return np.array(found, dtype=np.int64)


def keyword_lines(buf: bytes | bytearray, end: int, scratch: bytearray) -> list[int]:
    """Sorted starts of the lines after the first that hold one of KEYWORDS in any case or begin as KEYED_START."""
    rfind = buf.rfind
    starts = {rfind(b"\n", 0, int(p)) + 1 for p in keyword_positions(buf, end, scratch).tolist()}
    if any(buf.find(head, 0, end) != -1 for head in _KEYED_HEADS) or _RE_DIGIT_HEAD.search(buf, 0, end):
        starts.update(m.start() + 1 for m in _RE_KEYED_LINE.finditer(buf, 0, end))
    starts.discard(0)  # like RE_SCAN's, a start follows a newline (the caller reads the first line itself)
    return sorted(starts)


def keyword_starts(buf: bytes | bytearray, end: int, found: list[int], scratch: bytearray) -> list[int]:
    """`found` (sorted line starts of a small block) with the start of every line holding one of
    KEYWORDS in any case, whatever the line begins with (what core.logs.tokens.linescan adds in bulk)."""
    held = keyword_lines(buf, end, scratch)
    return sorted(set(held).union(found)) if held else found
