"""Read the next log's first block on the helper thread while the current one is parsed.

Why: a catch-up over 1,024 worker logs of a few MB each reads each file in one block, so the
in-file prefetch (block k+1 while block k is parsed) never overlaps anything and the copy from the
page cache (~8 % of a first read) sat on the parsing thread. Only files never read before are read
ahead: a live tick's few new bytes are not worth an extra open.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from core.logs.bytes.source import ByteSource


@dataclass
class _Job:
    path: Path
    file: BinaryIO
    ino: int
    read: Future[int]


class ReadAhead:
    """At most one file's first block in flight, into a buffer of its own."""

    def __init__(self, block: int, min_bytes: int) -> None:
        self.block = block  # bytes read ahead at most (the reader's block size)
        self.min_bytes = min_bytes  # smaller files are read in line (not worth a thread hop)
        self.buffer = bytearray()
        self._job: _Job | None = None

    def start(self, path: Path, submit: Callable[..., Future[int]], source: ByteSource) -> None:
        """Begin reading `path` from offset 0 with `submit(source.read_at, file, buffer, n, 0)`."""
        self.cancel()
        try:  # a FIFO, device or folder is refused before any blocking open (the reader says why)
            f = source.open(path)
        except OSError:
            return
        try:
            info = os.fstat(f.fileno())  # the file opened, not what the path names now
            n = min(info.st_size, self.block)
            if n < self.min_bytes:
                f.close()
                return
            if len(self.buffer) < n:
                self.buffer = bytearray(n)
            self._job = _Job(path, f, info.st_ino, submit(source.read_at, f, self.buffer, n, 0))
        except BaseException:
            f.close()
            raise

    def take(self, path: Path, ino: int, spare: bytearray) -> tuple[bytearray, int] | None:
        """The block read ahead for `path` (same inode) and its length, or None; `spare` becomes the
        next read-ahead buffer (the caller keeps the returned one)."""
        job = self._job
        if job is None or job.path != path or job.ino != ino:
            return None
        self._job = None
        try:
            got = job.read.result()
        finally:
            job.file.close()
        data, self.buffer = self.buffer, spare
        return data, got

    def cancel(self) -> None:
        """Wait for a read nobody took (never close a file or reuse a buffer under a running read)."""
        job, self._job = self._job, None
        if job is not None:
            try:
                job.read.exception()
            finally:
                job.file.close()

    def trim(self, keep: int) -> None:
        """Drop a big buffer between refreshes (a watcher keeps only small ones)."""
        if self._job is None and len(self.buffer) > keep:
            self.buffer = bytearray()
