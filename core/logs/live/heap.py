"""The process's heap after a big read: collect and freeze what is alive (`settle_heap`), give freed
pages back to the system (`trim_heap`). The reader calls them after a read that parsed a lot; the
watcher after its catch-up and when it releases a run's memory."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import threading
from collections.abc import Iterator


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


_pause_lock = threading.Lock()
_pausing = [0, False]  # how many ticks are in `paused_collector`, whether the collector ran when the first began


@contextlib.contextmanager
def paused_collector() -> Iterator[None]:
    """No cyclic collection during a live tick (its refresh, its snapshot): the watcher owns the process's
    collector policy, as it owns `settle_heap`'s freeze.

    Why: a tick at 1,024 ranks allocates ~15k small objects (its lines' rows, tuples, frames) and the
    collector ran ~22 young-generation passes in it, each walking what the tick built so far (~6 ms of a
    ~200 ms tick on the real-corpus folder). Paused, the young objects are walked once, by the first
    collection after the tick. A tick reads `tick_bytes` at most, so what waits for that collection is
    bounded. Nested and concurrent ticks (several watchers) keep it paused until the last one ends; a
    collector the process had disabled stays disabled."""
    with _pause_lock:
        if _pausing[0] == 0:
            _pausing[1] = gc.isenabled()
            gc.disable()
        _pausing[0] += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pausing[0] -= 1
            if _pausing[0] == 0 and _pausing[1]:
                gc.enable()


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
