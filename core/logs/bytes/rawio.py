"""Byte-level reads of the log reader: into reused buffers (no fresh bytes object per block), at an
offset from a helper thread (pread: no shared seek), CR line ends turned into LF in place.

Kept apart from core.logs.rows.reader so that module stays a readable size (its bounded-read logic grew).
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import numpy as np

from core.files import FileCheckError, open_checked

__all__ = [
    "HAVE_PREAD",
    "breaks_to_lf",
    "bytes_on_disk",
    "cr_to_lf",
    "find_copy",
    "find_rotated",
    "line_number",
    "nul_to_lf",
    "pread_into",
    "read_exact",
    "read_into",
]


def read_into(f: BinaryIO, buf: bytearray | memoryview, n: int) -> int:
    """Read up to `n` bytes into the start of `buf` (no fresh 32 MB bytes object per block)."""
    got = 0
    with memoryview(buf) as view:
        while got < n:
            # typeshed's BinaryIO has no readinto; what open() / os.fdopen give (BufferedReader, FileIO) has
            k = f.readinto(view[got:n])  # type: ignore[attr-defined]
            if not k:
                break
            got += k
    return got


def cr_to_lf(buf: bytearray, n: int, start: int = 0) -> None:
    """Turn every CR in `buf[start:n]` into LF, in place: CR-only lines become lines, CRLF an empty line more.

    Offsets stay the same (one byte for one), so rows keep their byte offsets in the file.
    """
    view = np.frombuffer(buf, dtype=np.uint8, count=n)[start:]
    view[view == 13] = 10


def nul_to_lf(buf: bytearray, n: int, start: int = 0) -> None:
    """Turn every NUL in `buf[start:n]` into LF, in place: a run of NULs is no text but the hole a file truncated
    under its writer leaves (the writer goes on at its old offset: `> train.log` or copytruncate while training
    runs), and the text after it begins a line (LPCNet's `^@^@...^@epoch: 5 step: 5208, loss is 3.66`).

    Offsets stay the same (one byte for one), as cr_to_lf's do. UTF-16 text is decoded before (its NULs are its
    own), so only a byte file's NULs are turned."""
    view = np.frombuffer(buf, dtype=np.uint8, count=n)[start:]
    view[view == 0] = 10


def breaks_to_lf(buf: bytearray, n: int, start: int = 0) -> int:
    """cr_to_lf and nul_to_lf on `buf[start:n]`, each only where the bytes hold one (a memchr each, rarely more):
    the usual read's block and the small files' batch (one file's bytes at `start`) make lines alike. Returns where
    the last hole of NULs ends in `buf` (-1: none): the bytes before a hole were written by another opener after the
    truncation (core.logs.rows.launches)."""
    if buf.find(b"\r", start, n) != -1:  # CR-only files (progress bars, old Macs)
        cr_to_lf(buf, n, start)
    if (hole := buf.rfind(b"\x00", start, n)) == -1:
        return -1
    nul_to_lf(buf, n, start)  # a truncated file's hole of NULs
    return hole + 1


HAVE_PREAD = hasattr(os, "preadv")


def pread_into(fd: int, buf: bytearray | memoryview, n: int, pos: int) -> int:
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


def find_rotated(path: Path, ino: int, taken: set[Path]) -> Path | None:
    """Where logrotate moved the file `path` named (rename + new file): the entry beside it named after it
    (`worker_0.log.1`) with its inode `ino`, not read yet; None when there is none or the folder cannot be read."""
    try:
        with os.scandir(path.parent) as it:
            return next(
                (
                    Path(e.path)
                    for e in it
                    if e.name.startswith(path.name) and e.inode() == ino and Path(e.path) not in taken
                ),
                None,
            )
    except OSError:
        return None


def find_copy(path: Path, head: bytes, least: int, taken: set[Path]) -> tuple[Path, int] | None:
    """(path, inode) of the copy logrotate's copytruncate left beside `path` (`worker_0.log.1`,
    `worker_0.log-20261126`): a regular file named after it, not read yet, at least `least` bytes, that
    begins with `head` (the truncated file's first bytes); the newest such; None when there is none."""
    if not head:
        return None
    best: tuple[float, Path, int] | None = None
    try:
        with os.scandir(path.parent) as it:
            entries = [e for e in it if e.name.startswith(path.name) and e.name != path.name]
    except OSError:
        return None
    for e in entries:
        candidate = Path(e.path)
        if candidate in taken:
            continue
        try:
            st = e.stat(follow_symlinks=False)
            if not stat_mod.S_ISREG(st.st_mode) or st.st_size < max(least, len(head)):
                continue
            with open_checked(candidate, None, "log file", buffering=0) as f:
                if read_exact(f, len(head)) != head:
                    continue
        except (OSError, FileCheckError):
            continue
        if best is None or st.st_mtime > best[0]:
            best = (st.st_mtime, candidate, st.st_ino)
    return None if best is None else (best[1], best[2])
