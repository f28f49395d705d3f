"""UTF-16 logs (issue 31 item 7): recognised by their first bytes and read decoded to UTF-8 in the byte
source, so every scan of the parser (which looks for ASCII keys) reads them as it reads any log.

Why: PowerShell's `>` and `Out-File` write UTF-16; such a rank log showed "no loss line yet" with no hint.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TypeVar

from core.logs.bytes.rawio import line_number, read_exact

__all__ = ["read_utf16", "utf16_blocks", "utf16_codec", "utf16_undecided"]


class _Named(Protocol):
    @property
    def path(self) -> Path: ...


class LineNumbered(Protocol):
    """An error row as a UTF-16 read numbers it (`core.logs.rows.filestate.ErrorRow` is one)."""

    @property
    def offset(self) -> int: ...

    @property
    def line(self) -> int | None: ...

    def with_line(self, line: int | None) -> LineNumbered: ...


class FileProgress(Protocol):
    """What a UTF-16 read advances of a file's parse state (`core.logs.rows.filestate.FileState` has it)."""

    consumed: int
    decoded: int
    dropped_bytes: int
    dropped_lines: int
    errors: list[Any]  # of LineNumbered rows (a list is invariant: `list[ErrorRow]` is no `list[LineNumbered]`)

    @property
    def info(self) -> _Named: ...


_State = TypeVar("_State", bound=FileProgress)

_UTF16_MIN = 8  # bytes of a head needed to call NUL-interleaved text UTF-16


@functools.lru_cache(maxsize=4096)  # asked of every file on every live tick: a file's head is the same bytes
def utf16_codec(head: bytes) -> str | None:
    """ "utf-16-le" / "utf-16-be" when a log's first bytes are UTF-16 text: a byte-order mark, or ASCII
    with a NUL after (before) every byte, as PowerShell's `>` and `Out-File` write it; else None. UTF-32
    and NUL padding (a sparse file after copytruncate) are not taken for it."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return None
    if head.startswith(b"\xff\xfe"):
        return "utf-16-le"
    if head.startswith(b"\xfe\xff"):
        return "utf-16-be"
    n = len(head) // 2 * 2
    if n < _UTF16_MIN:
        return None
    even, odd = head[0:n:2], head[1:n:2]
    if odd.count(0) == len(odd) and even.count(0) <= len(even) // 10:
        return "utf-16-le"
    if even.count(0) == len(even) and odd.count(0) <= len(odd) // 10:
        return "utf-16-be"
    return None


def utf16_undecided(head: bytes) -> bool:
    """True while a log's first bytes are too few for `utf16_codec` to decide (fewer than _UTF16_MIN, no
    byte-order mark) yet fit UTF-16 so far: a NUL in every other byte, none between. Why: read as UTF-8, those
    NULs become line ends and the first line's bytes are taken before the file is known to be UTF-16 (a
    trainer writing its first line in pieces lost its first row); the read waits for more bytes instead."""
    if len(head) // 2 * 2 >= _UTF16_MIN or head.startswith((b"\xff\xfe", b"\xfe\xff")) or 0 not in head:
        return False
    even, odd = head[0::2], head[1::2]
    return (odd.count(0) == len(odd) and 0 not in even) or (even.count(0) == len(even) and 0 not in odd)


def utf16_blocks(f: BinaryIO, pos: int, end: int, block: int, codec: str) -> Iterator[tuple[int, int, bytes | None]]:
    """The complete lines of a UTF-16 file from byte `pos` (even, at a line start) to about `end`, decoded:
    (raw offset of the block, raw offset after its last complete line, the lines as UTF-8, CRLF and CR as LF).
    A block without a line end that fills `block` is given as None (dropped, counted, up to the line's end);
    an incomplete last line stays on disk. Why: the reader's scans look for ASCII keys; decoding in the
    byte source is the one place that knows the file is UTF-16 (rows keep raw offsets)."""
    newline = "\n".encode(codec)
    bom = "\ufeff".encode(codec)
    skipping = False  # inside a line longer than a block: dropped up to its end
    while pos < end:
        f.seek(pos)
        raw = read_exact(f, min(block, end - pos))
        if not raw:
            return
        i = raw.rfind(newline)
        while i > 0 and i % 2:  # a line end is a whole code unit: at an even offset (pos is even)
            i = raw.rfind(newline, 0, i + 1)
        if i < 0 or i % 2:
            if len(raw) >= block:  # one line longer than a block: dropped, like an over-long UTF-8 line
                step = max(2, len(raw) // 2 * 2)
                yield pos, pos + step, None
                pos += step
                skipping = True
                continue
            return
        lines = raw[: i + 2]
        if pos == 0 and lines.startswith(bom):
            lines = lines[len(bom) :]
        text = lines.decode(codec, "replace").replace("\r\n", "\n").replace("\r", "\n").encode("utf-8", "replace")
        if skipping:  # the rest of the over-long line
            text = text[text.index(b"\n") + 1 :]
            skipping = False
        yield pos, pos + i + 2, text
        pos += i + 2


def read_utf16(
    feed: Callable[[_State, bytes, int, float, int], None],
    st: _State,
    f: BinaryIO,
    codec: str,
    *,
    now: float,
    end: int,
    block: int,
) -> int:
    """Parse the complete lines of a UTF-16 log from `st.consumed` to about `end` with `feed` (the
    parser's); the raw offset reached. Rows and errors are placed in the decoded text (`st.decoded`: where the
    decoded lines read so far end), so a line's offset and the next line's are neighbours whatever the blocks or live
    ticks the file was read in, as in one read (a bar's redraw is told by it: core.logs.rows.redraws); errors get the
    file's line numbers, counted in the decoded text; a line longer than `block` is dropped and counted."""
    dropping = False
    for raw_base, upto, text in utf16_blocks(f, st.consumed, end, block, codec):
        if text is None:
            st.dropped_bytes += upto - raw_base
            st.dropped_lines += not dropping
        elif text:
            base = st.decoded
            feed(st, text, base, now, len(text))
            st.decoded += len(text)
            before = None
            # this block's errors (the newest; a pending traceback's may have been replaced, not appended)
            for i in range(len(st.errors) - 1, -1, -1):
                err: LineNumbered = st.errors[i]
                if err.offset < base:
                    break
                if err.line is None:
                    before = before or line_number(st.info.path, raw_base) or 1
                    st.errors[i] = err.with_line(before + text.count(b"\n", 0, max(0, err.offset - base)))
        dropping = text is None
        st.consumed = upto
    return st.consumed
