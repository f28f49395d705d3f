"""Plain lines a read found nothing in, remembered by their text: a log prints the same plain lines again and again.

Why: a failure's anchor such as ` training` lets a plain line through the bulk path's literal search
(`Number of training samples: 104`, printed at every epoch or by every data loader), and each copy cost
`Parser.parse_line` ~4 us plus a cut in the block's rows where it stood: on a 1,024-rank MindCV folder 11 k such
lines, about a seventh of the read. A line whose text `parse_line` read to nothing, whatever the file's state, is
read to nothing again: the bulk path skips its copies (`read_nothing`) and `_fatal` skips its search (`no_failure`).
Both sets are bounded (4,096 lines of at most 1 KiB).
"""

from __future__ import annotations

from core.logs.rows.linekinds import failure_after_prefix

__all__ = ["PlainMemo"]

_MAX_LINES = 4096  # lines remembered per set (a flood of other lines empties it)
_MAX_LENGTH = 1024  # longest line remembered


class PlainMemo:
    """The texts of lines read to nothing: with no failure in them (`_fatal`), and with nothing at all in them
    whatever the file's state (what the bulk path may skip)."""

    def __init__(self) -> None:
        self._no_failure: set[bytes] = set()
        self._nothing: set[bytes] = set()

    def no_failure(self, line: bytes) -> bool:
        """Whether `line` was searched for a failure before and held none."""
        return line in self._no_failure

    def note_no_failure(self, line: bytes) -> None:
        """`line` holds no failure (core.logs.rows.failures.add_line_failure found none)."""
        _add(self._no_failure, line)

    def note_nothing(self, line: bytes) -> None:
        """`Parser.parse_line` read the whole line `line` (its `\\r` dropped) to nothing at the end of its checks: no
        error, traceback, exception, timing, row or failure. Remembered only when no state of the file can
        change that: it holds no keyword (`loss`, `val`: the metric reader learns shapes from those) and no tag
        or host prefix before a failure's line with or without a traceback pending (a host prefix names a
        series). What is left of `parse_line` then depends on the text alone, or skips the line (a pending
        traceback's frame), which reads nothing either."""
        if len(line) > _MAX_LENGTH:
            return
        low = line.lower()
        if b"loss" in low or b"val" in low:
            return
        if failure_after_prefix(line, True)[0] or failure_after_prefix(line, False)[0]:
            return
        _add(self._nothing, line)

    def read_nothing(self, buf: bytes | bytearray, start: int, end: int) -> bool:
        """Whether the line `buf[start:end]` (its `\\r` dropped) was read to nothing before (`note_nothing`)."""
        return bool(self._nothing) and bytes(buf[start:end]).removesuffix(b"\r") in self._nothing


def _add(lines: set[bytes], line: bytes) -> None:
    if len(line) <= _MAX_LENGTH:
        if len(lines) >= _MAX_LINES:
            lines.clear()
        lines.add(line)
