"""The process's heap after a big read: collect and freeze what is alive (`settle_heap`), give freed
pages back to the system (`trim_heap`). The reader calls them after a read that parsed a lot; the
watcher after its catch-up and when it releases a run's memory."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc


def settle_heap() -> None:
    """After a big read, collect the young garbage and freeze what is alive (gc.freeze): the reader state
    of 1,024 files (parsers, shapes, row stores) joins the modules in the collector's permanent generation.

    Why: each full collection rescanned all of it, a 60-80 ms pause every ~6 live ticks at 1,024 ranks
    (the ticks' p95; more in a dashboard, whose heap is larger). Frozen objects are still freed by
    reference counting; a reference cycle that is already garbage is kept until `release_memory`
    thaws and collects everything. Also called when a watcher's background catch-up ends."""
    gc.collect(1)
    gc.freeze()
    trim_heap()  # the read's freed row blocks and buffers: back to the system, not held by the heap


def trim_heap() -> bool:
    """Give freed heap pages back to the system (glibc `malloc_trim(0)`); True when it ran.

    Why: numpy arrays under glibc's mmap threshold (which grows up to 32 MB as big blocks are freed)
    come from the heap, and free() keeps those pages in the process: a 100 MB log's parsed row
    blocks stayed in RSS after they moved to the table (issue 31). musl, macOS: nothing to call."""
    name = ctypes.util.find_library("c")
    try:
        trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return False
    if trim is None:
        return False
    trim(0)
    return True


def release_memory() -> bool:
    """Give freed heap pages back to the system after a big release (a reaped watcher's table).

    Why: numpy arrays under glibc's mmap threshold (up to 32 MB) come from the heap, and free() keeps
    those pages in the process; malloc_trim(0) returns them. True when glibc's malloc_trim ran. The heap
    frozen by `settle_heap` is thawed first, so this collection also frees a cycle that was garbage
    when it was frozen (not frozen again here: the caller may still hold what it releases; the next big
    read or catch-up settles the heap again).
    """
    gc.unfreeze()
    gc.collect()
    return trim_heap()
