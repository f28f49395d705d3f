"""Candidate lines that carry nothing: found in one search per chunk instead of one `Parser.parse_line` each (the
literals it searches for are given by the rows stage, which knows the failure kinds)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np

from core.logs.tokens.lexicon import ERROR_PREFIXES

__all__ = ["BASE_LITERALS", "TRIPLES", "WorthScan", "triple"]

# What can make a candidate line without a loss key or an eval word do anything in `Parser.parse_line`: an
# error prefix, a traceback, an exception line (`[\w.]*(Error|Exception|...)(:|$)`), a YOLO or
# TimeMonitor timing (these, `BASE_LITERALS`), or a failure kind's line (the anchors of
# core.logs.rows.failure_kinds, given by the rows stage: core.logs.rows.linekinds.WORTH). As literals, each a
# part every such line holds (a superset: a line that holds one is read by `parse_line`, which decides), found
# with bytes.find (memchr-fast, ~5x one regex over the joined lines); a CANN code (`EI0002`) by a regex.
BASE_LITERALS = (
    *ERROR_PREFIXES,
    *(b"Traceback", b"Error", b"Exception", b"Interrupt", b"Exit", b"Failure", b"step time"),
)
_RE_CANN_CODE = re.compile(rb"[A-Z][0-9]{4}")


def _packed(literals: tuple[bytes, ...]) -> tuple[np.ndarray, ...]:
    """The literals as core.logs.tokens.linescan.worth_lines takes them: end to end, sorted by first byte, with
    their starts, lengths, each first byte's range and which hashes of first three bytes begin one (`triple`)."""
    assert min(len(x) for x in literals) >= 3, "worth_lines looks a literal up by its first three bytes"
    ordered = sorted(set(literals))
    lengths = np.array([len(x) for x in ordered], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    firsts = np.array([x[0] for x in ordered], dtype=np.int64)
    first_lo = np.searchsorted(firsts, np.arange(256), side="left").astype(np.int64)
    first_hi = np.searchsorted(firsts, np.arange(256), side="right").astype(np.int64)
    triples = np.zeros(TRIPLES, dtype=np.bool_)
    triples[[triple(*x[:3]) for x in ordered]] = True  # every literal has three bytes or more
    return np.frombuffer(b"".join(ordered), dtype=np.uint8).copy(), starts, lengths, first_lo, first_hi, triples


TRIPLES = 1 << 15  # the size of worth_lines' table of literals' openings


def triple(c: int, d: int, e: int) -> int:
    """The table index of three bytes as core.logs.tokens.linescan.worth_lines hashes them (its `_triple`).

    Why three, not two: a pair table let every ` t`, ` d`, ` r`, `in` ... through to the literal compares (the
    literals ` training`, ` death signal`, ...): ~5 ns a byte on a MindCV read's plain lines, where a table of
    three bytes lets ~1 in 30 through (0.047 -> 0.027 s of a 1,024 x 200 MindCV read)."""
    return ((c << 10) ^ (d << 5) ^ e) & (TRIPLES - 1)


class WorthScan:
    """The search for lines worth a look among candidate lines without a keyword, over a fixed set of
    literals (and CANN-style codes): made once by the stage that knows the literals."""

    def __init__(self, literals: Iterable[bytes]) -> None:
        self.literals = tuple(sorted(set(literals)))
        assert not any(set(x) & set(b"0123456789#") for x in self.literals), "shape_holds relies on it"
        self._packed = _packed(self.literals)

    def positions(self, joined: bytes) -> list[int]:
        """Where in `joined` a part of a line worth reading is (unsorted, maybe repeated)."""
        found = [m.start() for m in _RE_CANN_CODE.finditer(joined)]
        find = joined.find
        for literal in self.literals:
            at = find(literal)
            while at != -1:
                found.append(at)
                at = find(literal, at + 1)
        return found

    def compiled(self, buf: bytes | bytearray, ls: np.ndarray, le: np.ndarray) -> np.ndarray:
        """Per line [ls, le) of `buf`, whether it holds a part of a line worth reading (one compiled pass)."""
        from core.logs.tokens import linescan  # numba: imported by a big read only (templated.compiled_passes)

        return linescan.worth_lines(np.frombuffer(buf, dtype=np.uint8), ls, le, *self._packed)

    def searched(self, buf: bytes | bytearray, ls: np.ndarray, le: np.ndarray) -> np.ndarray:
        """The same answer by `bytes.find` over the lines joined: a small read never loads numba for it."""
        joined = b"\n".join([buf[a:b] for a, b in zip(ls.tolist(), le.tolist(), strict=True)])
        worth = np.zeros(len(ls), dtype=bool)
        hits = self.positions(joined)
        if hits:
            worth[np.searchsorted(np.cumsum(le - ls + 1), hits, side="right")] = True  # joined line of each hit
        return worth

    def shape_holds(self, shape: bytes) -> bool:
        """Whether a line of this shape (core.logs.rows.linetemplates.shape_key: its digits as `#`) may hold a part
        worth reading: every line of a shape, answered once. Exact for the literals (none holds a digit or a
        `#`, so a line holds one where its shape does); a CANN code (a capital and four digits) shows as a
        capital and four `#`, and a line's own `#` counts too (a superset, as `holds` is)."""
        return bool(self.positions(shape.replace(b"#", b"0")))

    def holds(self, buf: bytes | bytearray, ls: np.ndarray, le: np.ndarray, compiled: bool) -> np.ndarray:
        """Per line [ls, le) of `buf`, whether it holds a part of a line worth reading (an error prefix, a
        traceback, a timing, a failure's anchor: a superset), by the compiled pass or by `bytes.find`."""
        return (self.compiled if compiled else self.searched)(buf, ls, le)

    def look(
        self,
        buf: bytes | bytearray,
        starts: np.ndarray,
        others: np.ndarray,
        words: np.ndarray,
        newlines: np.ndarray,
        compiled: bool = False,
    ) -> np.ndarray:
        """`others` (indices of candidate lines left to `parse_line`) without the lines it would read and drop.

        Why: plain text lines (`Number of epochs: 3`, config dumps) are candidates because they may be an
        error; at ~4 us each in `Parser.parse_line` they cost MindCV-format logs a third of their read. A line
        holding a keyword is kept (`words`: a position inside each such line, e.g. its start); the others
        are joined and searched once for the literals, and only the lines it hits are kept, so the result
        is exactly what reading them all gives. `compiled`: by the compiled pass (a big read, numba loaded)
        instead of `bytes.find` (which took a quarter of a 1,024-rank MindCV read).
        """
        search = _walk_search() if compiled else np.searchsorted  # (ascending queries: one walk, not a search each)
        has_word = np.zeros(len(starts), dtype=bool)
        if len(words):
            line = search(starts, words, side="right") - 1
            has_word[line[line >= 0]] = True
        plain = others[~has_word[others]]
        if not len(plain):
            return others
        ls = starts[plain]
        le = newlines[search(newlines, ls)]
        worth = np.zeros(len(starts), dtype=bool)
        worth[plain] = self.holds(buf, ls, le, compiled)
        return others[has_word[others] | worth[others]]


def _walk_search() -> Callable[..., np.ndarray]:
    """core.logs.tokens.sortedsearch.searchsorted, imported by a read that loaded numba (the compiled passes)."""
    from core.logs.tokens.sortedsearch import searchsorted

    return searchsorted
