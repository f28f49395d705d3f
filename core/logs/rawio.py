"""Byte-level reads of the log reader: into reused buffers (no fresh bytes object per block), at an
offset from a helper thread (pread: no shared seek), CR line ends turned into LF in place.

Kept apart from core.logs.reader so that module stays a readable size (its bounded-read logic grew).
"""

from __future__ import annotations

import os
from typing import BinaryIO

import numpy as np

__all__ = ["HAVE_PREAD", "cr_to_lf", "pread_into", "read_exact", "read_into"]


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
