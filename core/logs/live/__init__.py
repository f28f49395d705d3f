"""Stage 5, live watching: a run's logs followed as they grow, and the process that owns the reads.

watcher.py    `RunWatcher`: a live, thread-safe view (watchdog events + a periodic rescan), bounded on any
              write rate; it owns its process's heap policy and hands it to the reader
heap.py       the heap after a big read (`gc.freeze`, `malloc_trim`), for whoever owns the process
replay.py     record a run's logs with their timing and replay them as a live run
"""
