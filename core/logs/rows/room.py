"""Storage for columns grown in place (the run's loss table, the kept rows): an uninitialized array with room
to spare, backed by small pages only.

Why: numpy asks the kernel for transparent huge pages on every array of 4 MiB or more
(`madvise(MADV_HUGEPAGE)`). A grown column is written a few thousand rows a tick past its end, so each tick's
writes land on pages never touched before; with huge pages the first write into each 2 MiB page makes the kernel
find (compact, when memory is fragmented: `defrag=madvise`, the common default) and zero a whole huge page. On
the 1,024-rank real-corpus folder (~140 table columns, each written every tick) a tick now and then took ~18 such
faults at ~5 ms each: ~100 ms in one tick, the ticks' p95. Small pages cost ~1,300 faults a tick at ~4 us each,
every tick alike, and only the rows written are backed (a huge page backs 2 MiB of room per column).

Below the size numpy would madvise, and where the platform has no anonymous private mapping, `np.empty`.
"""

from __future__ import annotations

import mmap

import numpy as np

__all__ = ["HUGE_MIN", "room"]

HUGE_MIN = 4 << 20  # numpy's threshold for MADV_HUGEPAGE (numpy/_core/src/multiarray/alloc.c)
_PRIVATE = getattr(mmap, "MAP_PRIVATE", None)
_ANON = getattr(mmap, "MAP_ANONYMOUS", None)
_NO_HUGE = getattr(mmap, "MADV_NOHUGEPAGE", None)


def room(n: int, dtype: np.dtype | type) -> np.ndarray:
    """An uninitialized, writable 1-d array of `n` values of `dtype` (as `np.empty(n, dtype)`), in small pages
    when it is large: its pages are backed as they are first written, 4 KiB at a time."""
    dtype = np.dtype(dtype)
    nbytes = n * dtype.itemsize
    if nbytes < HUGE_MIN or _PRIVATE is None or _ANON is None:
        return np.empty(n, dtype=dtype)
    buf = mmap.mmap(-1, nbytes, flags=_PRIVATE | _ANON)  # freed when the last array viewing it goes
    if _NO_HUGE is not None:  # (THP `always`: no huge page here either)
        buf.madvise(_NO_HUGE)
    return np.frombuffer(buf, dtype=dtype, count=n)
