"""Where the reader's bytes come from: a `ByteSource` says what a file is now, opens it (checked, never
blocking) and reads it at an offset. `RunReader` (and its batches of small files and read-ahead) reads
through one, injected; the default is the real files as core.files checks them.

Why a seam here: tests that need a file to refuse its open, come back short or change under the reader
inject a source that does so, instead of patching `os.open` or the reader's private methods.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Protocol

from core.files import open_checked
from core.logs.bytes.rawio import HAVE_PREAD, pread_into, read_into

__all__ = ["ByteSource", "CheckedFiles", "why_not"]


class ByteSource(Protocol):
    """A reader's files. `open` gives an OS file (a descriptor: the read-ahead and `read_at` use it) or
    raises OSError (a `core.files.FileCheckError` names why: a FIFO, a folder, permission denied);
    `read_at` may run on the reader's helper thread while the main thread reads another file."""

    def stat(self, path: Path) -> os.stat_result:
        """The file's status now (follows a link), or OSError."""
        ...

    def open(self, path: Path) -> BinaryIO:
        """The file opened for reading, unbuffered; OSError when it cannot be."""
        ...

    def read_at(self, f: BinaryIO, buf: bytearray | memoryview, n: int, pos: int) -> int:
        """Up to `n` bytes at offset `pos` of `f` into the start of `buf`; how many were read (fewer only
        at the file's end: the reader takes a short read for the end of what is written)."""
        ...


class CheckedFiles:
    """The real files: stat'ed, opened through core.files (a regular file, never a blocking open) and read
    with pread (no shared seek: safe beside the helper thread)."""

    def stat(self, path: Path) -> os.stat_result:
        return os.stat(path)

    def open(self, path: Path) -> BinaryIO:
        return open_checked(path, None, "log file", buffering=0)

    def read_at(self, f: BinaryIO, buf: bytearray | memoryview, n: int, pos: int) -> int:
        if HAVE_PREAD:
            return pread_into(f.fileno(), buf, n, pos)
        f.seek(pos)
        return read_into(f, buf, n)


def why_not(exc: OSError) -> str:
    """A file's open refused, in a few words for its rank's detail ("permission denied", "a FIFO (named
    pipe), not a regular file"): core.files' reason, or the OS's."""
    reason = getattr(exc, "reason", None)
    text = " ".join((reason if isinstance(reason, str) else (exc.strerror or str(exc)).lower()).split())
    return text if len(text) <= 120 else text[:117] + "..."  # one line, shortened
