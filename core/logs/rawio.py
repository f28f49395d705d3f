"""Byte-level reads of the log reader: into reused buffers (no fresh bytes object per block), at an
offset from a helper thread (pread: no shared seek), CR line ends turned into LF in place.

Kept apart from core.logs.reader so that module stays a readable size (its bounded-read logic grew).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import numpy as np

from core.files import open_checked

__all__ = ["HAVE_PREAD", "bytes_on_disk", "cr_to_lf", "line_number", "pread_into", "read_exact", "read_into"]


def read_into(f: BinaryIO, buf: bytearray, n: int) -> int:
    """Read up to `n` bytes into the start of `buf` (no fresh 32 MB bytes object per block)."""
    got = 0
    with memoryview(buf) as view:
        while got < n:
            k = f.readinto(view[got:n])
            if not k:
                break
            got += k
    return got


def cr_to_lf(buf: bytearray, n: int) -> None:
    """Turn every CR in `buf[:n]` into LF, in place: CR-only lines become lines, CRLF an empty line more.

    Offsets stay the same (one byte for one), so rows keep their byte offsets in the file.
    """
    view = np.frombuffer(buf, dtype=np.uint8, count=n)
    view[view == 13] = 10


HAVE_PREAD = hasattr(os, "preadv")


def pread_into(fd: int, buf: bytearray, n: int, pos: int) -> int:
    """Read up to `n` bytes at file offset `pos` into the start of `buf` (thread-safe: no seek)."""
    got = 0
    with memoryview(buf) as view:
        while got < n:
            k = os.preadv(fd, [view[got:n]], pos + got)
            if not k:
                break
            got += k
    return got


def read_exact(f: BinaryIO, n: int) -> bytes:
    """Up to `n` bytes from an unbuffered file (a raw read may come back short)."""
    parts: list[bytes] = []
    while n > 0:
        part = f.read(n)
        if not part:
            break
        parts.append(part)
        n -= len(part)
    return b"".join(parts)


def line_number(path: Path, offset: int) -> int | None:
    """1-based line number of the byte at `offset` (only used for the rare error rows)."""
    try:
        with open_checked(path, None, "log file") as f:
            count = 0
            remaining = offset
            while remaining > 0:
                data = f.read(min(remaining, 8 << 20))
                if not data:
                    break
                count += data.count(b"\n")
                remaining -= len(data)
        return count + 1
    except OSError:
        return None


def bytes_on_disk(paths: Iterable[Path]) -> int:
    """The files' sizes now (a file that vanished or cannot be stat'ed counts 0)."""
    total = 0
    for path in paths:
        with contextlib.suppress(OSError):
            total += os.stat(path).st_size
    return total
