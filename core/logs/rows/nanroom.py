"""Float64 columns that read NaN on every row nothing wrote, without a write: the loss table's other metrics.

Why: the table holds one column per metric any loss line names (~270 on the 1,024-rank real-corpus folder),
and most metrics are named by a few files' rows only. Written densely, each tick wrote NaN into every such column
over every new row (~4,400 rows x ~270 columns: ~9 MB and ~2,300 fresh pages a tick, ~12 ms) and backed
every row of every column in memory. Here a column's room is a copy-on-write mapping of one NaN-filled memory
file (`memfd_create`) the table owns: an unwritten row reads the file's NaN (its page shared by every column),
a written row's 4 KiB page becomes the column's own on the first write. The column is still a plain float64
ndarray, so every reader sees the same frame as before, bit for bit (`NAN_BITS`, the NaN a numpy fill writes).

The mapping is made with the C library's `mmap` (Python's `mmap.mmap` keeps a duplicate descriptor per mapping
until 3.13: a few hundred columns would hold a few hundred descriptors); the array keeps it mapped, and the
last view's release unmaps it. Where there is no `memfd_create` (not Linux) or a mapping fails, and for a small
column, the room is `np.full(n, nan)`: the same values, written.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["NAN_BITS", "NanRooms", "copy_values"]

NAN_BITS = int(np.float64(np.nan).view(np.uint64))  # what `np.full(n, np.nan)` writes
SMALL = 256 << 10  # below this many bytes a column is written NaN (a mapping per small column costs more)
_CHUNK = np.full(1 << 17, np.nan).tobytes()  # 1 MiB of NaN, what the file is filled with
_PAGE = mmap.PAGESIZE


def _libc_mmap() -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """The C library's mmap and munmap, None where there is no memory file to map."""
    if not hasattr(os, "memfd_create"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        do_map, do_unmap = libc.mmap, libc.munmap
    except (OSError, AttributeError):
        return None
    do_map.restype, do_map.argtypes = (
        ctypes.c_void_p,
        [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ],
    )
    do_unmap.restype, do_unmap.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t]
    return do_map, do_unmap


_LIBC = _libc_mmap()
_FAILED = ctypes.c_void_p(-1).value


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
    fds.clear()


class NanRooms:
    """One table's NaN-filled memory file, grown as its columns grow; `room(n)` maps a column of it."""

    def __init__(self) -> None:
        self._fds: list[int] = []  # the current file (one at most); closed when the owner goes
        self._size = 0
        weakref.finalize(self, _close, self._fds)

    def room(self, n: int) -> np.ndarray:
        """A writable float64 array of `n` values, NaN (`NAN_BITS`) on every row until written, its own memory
        (no two rooms share a written row)."""
        nbytes = n * 8
        if nbytes < SMALL or _LIBC is None:
            return np.full(n, np.nan)
        try:
            return self._mapped(n, nbytes)
        except OSError:
            return np.full(n, np.nan)

    def _file(self, nbytes: int) -> int:
        """A NaN-filled memory file of at least `nbytes` (a larger new one when the current is short: mappings
        of the old one keep it alive; a file is never written after it is filled)."""
        if nbytes > self._size:
            size = -(-max(nbytes, 2 * self._size) // _PAGE) * _PAGE
            fd = os.memfd_create("shardscope-nan", getattr(os, "MFD_CLOEXEC", 0))
            try:
                done = 0
                while done < size:
                    done += os.pwrite(fd, memoryview(_CHUNK)[: size - done], done)
            except OSError:
                os.close(fd)
                raise
            _close(self._fds)
            self._fds.append(fd)
            self._size = size
        return self._fds[0]

    def _mapped(self, n: int, nbytes: int) -> np.ndarray:
        assert _LIBC is not None
        do_map, do_unmap = _LIBC
        fd = self._file(nbytes)
        ptr = do_map(None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE, fd, 0)
        if ptr is None or ptr == _FAILED:
            raise OSError(ctypes.get_errno(), "mmap of the NaN file failed")
        buf = (ctypes.c_char * nbytes).from_address(ptr)
        # the buffer outlives every array viewing it; never unmapped at exit (a thread may still read it: the
        # process's end frees it)
        weakref.finalize(buf, do_unmap, ptr, nbytes).atexit = False
        return np.frombuffer(memoryview(buf).cast("B"), dtype=np.float64, count=n)


def copy_values(fresh: np.ndarray, values: np.ndarray) -> None:
    """`fresh[:len(values)] = values` into a NaN room, writing only the rows that are not `NAN_BITS` (those
    read NaN already): a table moved into larger rooms keeps its rows' pages unbacked."""
    at = np.flatnonzero(values.view(np.uint64) != NAN_BITS)
    if len(at) == len(values):
        fresh[: len(values)] = values
    elif len(at):
        fresh[at] = values[at]
