"""Opening a file a user named: checked first, so no path can block, flood or fool a reader.

A path from the user or from a folder they chose (a log, a design, the MindFormers YAML, job.json,
a run's files) may name a FIFO (a plain open() waits for a writer forever), a device such as
/dev/zero (stat says 0 bytes, reading never ends), a socket or a folder. So: stat the path and
refuse anything but a regular file before opening it (opening some devices has effects of its
own), open it non-blocking (a FIFO swapped in after the stat cannot block the open), look at what
was really opened (fstat of the descriptor) and check its size, then clear O_NONBLOCK.
`read_checked` also stops after max_bytes + 1 bytes, so a file that grows meanwhile is refused
too, never read whole. This is the ground floor: it imports nothing from core.
"""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import BinaryIO

from core.errors import UserError

__all__ = [
    "FileCheckError",
    "expand_home",
    "is_regular",
    "kind_of",
    "open_checked",
    "open_fd",
    "read_checked",
    "write_replacing",
]

_CHUNK = 1 << 16  # read size once the file turned out longer than fstat said (it grew, or procfs)
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


class FileCheckError(UserError, OSError, ValueError):
    """A file ShardScope refuses to read: missing, unreadable, not a regular file, or too big.

    `str()` is one line naming the path and what is wrong with it; `reason` is the short part ("a
    FIFO (named pipe), not a regular file") for callers that already name the file (the reader's
    "unreadable" detail). An OSError, so code that handles unreadable files keeps working, and a
    ValueError, the house's type for bad user input (like io.UnsupportedOperation, both).
    """

    def __init__(self, message: str, path: Path, reason: str) -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason
        self.strerror = reason  # `exc.strerror or exc` (the usual OSError idiom) gives the reason


def is_regular(path: str | Path, follow_links: bool = False) -> bool:
    """Whether `path` is a regular file now; a link counts only with `follow_links` (a link can lead out
    of the folder the user chose). False for anything missing or unreadable."""
    try:
        info = os.stat(path) if follow_links else os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode)


def kind_of(mode: int) -> str:
    """What a non-regular file is, for a message: 'a FIFO (named pipe)', 'a folder', ..."""
    kinds = (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISREG, "a regular file"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file")


def _not_regular(path: Path, what: str, mode: int) -> FileCheckError:
    reason = f"{kind_of(mode)}, not a regular file"
    return FileCheckError(f"{what} {path} is {reason}", path, reason)


def _too_big(path: Path, what: str, size: int | None, max_bytes: int) -> FileCheckError:
    if size is None:  # more bytes came than fstat said: it grows while we read
        reason = f"more than the {max_bytes:,} bytes allowed (it grew while being read)"
    else:
        reason = f"{size:,} bytes, more than the {max_bytes:,} allowed"
    return FileCheckError(f"{what} {path} is {reason}", path, reason)


def _os_error(path: Path, what: str, exc: OSError) -> FileCheckError:
    why = exc.strerror or str(exc)
    return FileCheckError(f"cannot open {what} {path}: {why}", path, why.lower())


def open_fd(path: str | Path, max_bytes: int | None, what: str = "file") -> tuple[int, os.stat_result]:
    """A blocking-mode descriptor of the regular file `path` (at most `max_bytes` now, when given) and
    its fstat, or FileCheckError. Never blocks, never opens a device, FIFO or socket."""
    path = path if isinstance(path, Path) else Path(path)  # (Path(a Path) parses it again: ~5 ms a live tick)
    try:
        before = os.stat(path)
    except OSError as exc:
        raise _os_error(path, what, exc) from None
    if not stat.S_ISREG(before.st_mode):
        raise _not_regular(path, what, before.st_mode)
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        raise _os_error(path, what, exc) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped between the stat and the open
            raise _not_regular(path, what, info.st_mode)
        if max_bytes is not None and info.st_size > max_bytes:
            raise _too_big(path, what, info.st_size, max_bytes)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except OSError as exc:
        os.close(fd)
        raise exc if isinstance(exc, FileCheckError) else _os_error(path, what, exc) from None
    return fd, info


def open_checked(path: str | Path, max_bytes: int | None, what: str = "file", buffering: int = -1) -> BinaryIO:
    """`open(path, "rb")` for a checked regular file (see `open_fd`). `max_bytes=None` for a reader
    that bounds its own reads (a log read block by block up to the size it saw)."""
    fd, _ = open_fd(path, max_bytes, what)
    try:
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def read_checked(path: str | Path, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of the regular file `path`, or FileCheckError when it is not one or holds more than
    `max_bytes` (checked before reading, and again while reading: at most max_bytes + 1 are read)."""
    path = Path(path)
    fd, info = open_fd(path, max_bytes, what)
    chunks: list[bytes] = []
    total = 0
    want = info.st_size + 1  # one read for a file that stays as it is; +1 sees growth at once
    try:
        with os.fdopen(fd, "rb", buffering=0) as f:
            while total <= max_bytes:
                part = f.read(min(want, max_bytes + 1 - total))
                if not part:
                    break
                chunks.append(part)
                total += len(part)
                want = _CHUNK
    except OSError as exc:
        raise _os_error(path, what, exc) from None
    if total > max_bytes:
        raise _too_big(path, what, None, max_bytes)
    return b"".join(chunks)


def expand_home(path: str | Path) -> Path:
    """`~` and `~user` expanded; a `~name` naming no user stays as written (Path.expanduser raises
    RuntimeError there), so the caller's own check says the path does not exist instead of crashing."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        return Path(path)


def write_replacing(path: str | Path, data: bytes, mode: int = 0o644) -> Path:
    """Write `data` as `path` atomically, never through a link: a fresh temp file in the same folder
    (mkstemp: O_EXCL, so never an existing name or a planted link), then os.replace, which replaces a
    link standing at `path` instead of writing to where it points. A reader sees the old file or the new."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), mode)  # mkstemp made it 0600
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    return path
