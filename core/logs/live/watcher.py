"""`RunWatcher`: a live, thread-safe view of a run's logs (watchdog events + a periodic rescan).

Bounded on any write rate (issue 22): one reader thread reads at most `tick_bytes` per lock hold and
goes on at once while the writer is ahead; what is on disk and not read yet is `behind` (bytes),
shown by the page and `watch`. The watchdog handler only marks files to read, so its event queue
never waits behind a long read.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.logs.bytes.source import ByteSource
from core.logs.live.heap import paused_collector, release_memory, settle_heap
from core.logs.rows.filestate import ReaderSettings
from core.logs.rows.reader import RunReader, RunSnapshot, bytes_on_disk, file_order
from core.logs.rows.snapshot import Held
from core.logs.rows.table import MetricTable

if TYPE_CHECKING:  # watchdog is imported when the first watcher starts
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers.api import BaseObserver

__all__ = ["MAX_WATCHES", "TICK_BYTES", "RunWatcher", "WatcherRegistry", "release_memory"]

MAX_WATCHES = 2048  # folders watched per run: 1,024 mpirun ranks need 1,026; more is not a log layout
TICK_BYTES = 8 << 20  # bytes read per lock hold: ~0.2 s of parsing on a busy core (40-50 MB/s), so a
# snapshot or Ctrl-C never waits long; one read block (ReaderSettings.read_block)


class RunWatcher:
    """Live view of a run's logs: watchdog events + periodic rescan, incremental reads, thread-safe.

    `polling=True` uses watchdog's PollingObserver (the only thing that works on NFS-like shared
    filesystems) to find new files, plus a cheap check every `stat_poll_s` that only stats the files
    already known and reads those that grew: an append shows up within ~`stat_poll_s` instead of
    a full directory snapshot every `poll_timeout_s`. `snapshot()` is cheap when nothing changed
    (cached by version).
    """

    def __init__(
        self,
        log_dir: Path | str,
        polling: bool = False,
        loss_regex: str | None = None,
        extra_files: Sequence[Path | str] = (),
        rescan_s: float = 1.0,
        poll_timeout_s: float = 0.2,
        stat_poll_s: float = 0.05,
        settings: ReaderSettings | None = None,
        background_catch_up: bool = False,
        background_above_bytes: int = 64 << 20,
        tick_bytes: int = TICK_BYTES,
        follow_links: bool = False,
        source: ByteSource | None = None,
    ) -> None:
        self.log_dir = Path(log_dir)
        self.tick_bytes = tick_bytes  # read at most this much per lock hold (one whole line at least)
        # the page's watcher: when the logs already there exceed `background_above_bytes` (~0.1 s of
        # reading), start() returns at once and they are read on the rescan thread a few files per
        # lock hold, so a 1,024-rank run paints while it is read; smaller folders are read at once
        self.background_catch_up = background_catch_up
        self.background_above_bytes = background_above_bytes
        self.polling = polling
        self.rescan_s = rescan_s
        self.poll_timeout_s = poll_timeout_s
        self.stat_poll_s = stat_poll_s
        # what release() starts a fresh state with (`source`: where the bytes come from, the real files by default)
        self._config = (loss_regex, extra_files, settings, False, follow_links, settle_heap, source)
        self._state = RunReader(self.log_dir, *self._config)
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._observer: BaseObserver | None = None
        self._scheduled = False
        self._thread: threading.Thread | None = None
        self._listeners: list[Callable[[], None]] = []
        self._handler: FileSystemEventHandler | None = None
        self._watched: set[Path] = set()
        self.watch_limited = False
        self._catch_up: tuple[int, int] | None = None  # (files read, files to read) while catching up
        self._peak_read = 0
        self._wake = threading.Event()  # an event marked files to read (or stop() was called)
        self._dirty: set[Path] = set()  # known files the events said changed
        self._unknown = False  # an event named a file or folder not known yet: rediscover
        self._dirty_lock = threading.Lock()  # guards the two above; never held across I/O

    # -- lifecycle
    def start(self) -> RunWatcher:
        """Read what exists, then follow changes. Idempotent."""
        if self._thread is not None:
            return self
        self._stop.clear()
        with self._lock:
            if self.background_catch_up:
                self._state.discover()
            if self.background_catch_up and bytes_on_disk(self._state.files) > self.background_above_bytes:
                self._catch_up = (0, len(self._state.files))
            else:  # the page's watcher reads these few MB at once (a finished run's page never
                # refreshes itself); `watch` reads one capped block, the rest on the reader thread
                self._state.refresh(budget=None if self.background_catch_up else self.tick_bytes)
        self._ensure_observer()
        self._thread = threading.Thread(target=self._rescan_loop, name="RunWatcher-rescan", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the observer and the rescan thread (the parsed data stays readable)."""
        self._stop.set()
        self._wake.set()
        obs, self._observer = self._observer, None
        if obs is not None:
            with contextlib.suppress(Exception):
                obs.stop()
                obs.join(timeout=2)
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None
        self._scheduled = False
        self._watched = set()
        with self._changed:
            self._changed.notify_all()  # a waiting `watch` loop sees the stop at once

    def release(self) -> None:
        """Stop, and drop everything parsed (the loss table): a reaped watcher may still be held by a
        closed tab's session, which Streamlit keeps for reconnection (and past its 2 minutes until
        another session comes), and that kept the whole table alive after the tab closed."""
        self.stop()
        with self._lock:
            self._state = RunReader(self.log_dir, *self._config)

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._stop.is_set()

    def __enter__(self) -> RunWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- data
    @property
    def version(self) -> int:
        return self._state.version

    @property
    def behind(self) -> int:
        """Bytes written to the logs and not read yet (0 when the watcher keeps up)."""
        return sum(self._state.behind.values())

    @property
    def table_nbytes(self) -> int:
        """Bytes the loss table's rows take (`MetricTable.nbytes`)."""
        with self._lock:
            return self._state.table.nbytes

    @property
    def table(self) -> MetricTable:
        """The loss table the reader grows (a reaped or released watcher lets it go)."""
        return self._state.table

    def held(self) -> Held:
        """What the reader holds between two capped reads besides the table (taken under the lock)."""
        with self._lock:
            return self._state.held

    @property
    def peak_read(self) -> int:
        """The most bytes one lock hold has read (bounded by `tick_bytes` + one line)."""
        return self._peak_read

    def refresh(self) -> bool:
        """Synchronously read what is new, `tick_bytes` at most (the rest: `behind`, read next)."""
        with self._lock:
            changed = self._capped_refresh()
            if changed:
                self._changed.notify_all()
            return changed

    def snapshot(self, refresh: bool = False) -> RunSnapshot:
        """A consistent copy of everything parsed so far; `refresh=True` catches up first (not while
        the background catch-up reads: the page gets what is read so far at once)."""
        with self._lock:
            if refresh and self._catch_up is None and self._capped_refresh():
                self._changed.notify_all()
            with paused_collector():  # (core.logs.live.heap: a tick's young objects walked once, after it)
                return self._state.snapshot()

    def _capped_refresh(self, paths: list[Path] | None = None, rediscover: bool = True) -> bool:
        """One bounded read (the caller holds the lock); remembers the most bytes one read took."""
        before = self._state.spent
        with paused_collector():
            changed = self._state.refresh(paths, rediscover=rediscover, budget=self.tick_bytes)
        self._peak_read = max(self._peak_read, self._state.spent - before)
        return changed

    @property
    def catching_up(self) -> tuple[int, int] | None:
        """(files read, files to read) while the logs already there are still being read, else None."""
        return self._catch_up

    def read_existing(self, batch: int = 16) -> None:
        """The background catch-up: every known file, `batch` files per lock hold (a 3.7 MB log
        takes ~4 ms, so a page waiting for a snapshot waits ~60 ms at most)."""
        with self._lock:
            paths = [st.info.path for st in sorted(self._state.files.values(), key=file_order)]
        for i in range(0, len(paths), batch):
            part = paths[i : i + batch]
            while not self._stop.is_set():  # a batch of big files: `tick_bytes` per lock hold
                with self._lock:
                    if self._capped_refresh(part, rediscover=False):
                        self._changed.notify_all()
                    if not any(p in self._state.behind for p in part):
                        break
                self._stop.wait(0.002)  # as below: a waiting snapshot first
            if self._stop.is_set():
                return
            with self._lock:
                self._catch_up = (min(i + batch, len(paths)), len(paths))
            self._stop.wait(0.002)  # let a snapshot waiting for the lock take it (a lock is not fair)
        with self._lock:
            self._catch_up = None
            self._capped_refresh()  # what appeared meanwhile (more, if any: the reader loop)
            self._changed.notify_all()
        settle_heap()  # the run's state is built: live ticks' collections need not rescan it

    def wait_for_change(self, since_version: int, timeout: float) -> int:
        """Block until the version moves past `since_version` (or timeout); return the version."""
        with self._changed:
            self._changed.wait_for(lambda: self._state.version != since_version or self._stop.is_set(), timeout=timeout)
            return self._state.version

    # -- internals
    @property
    def watching(self) -> frozenset[Path]:
        """The folders the observer is scheduled on now (`watched_folders` once it has caught up)."""
        with self._lock:
            return frozenset(self._watched)

    def watched_folders(self) -> list[Path]:
        """Folders the observer watches: the log folder and the folders its discovered logs live in.

        Why not `recursive=True`: on an arbitrary tree (`/`, `/tmp`) that meant tens of thousands of
        inotify watches. Log layouts are at most two levels deep, and the 1 s rescan finds new ones.
        """
        wanted = {self.log_dir}
        for path in list(self._state.files):
            parent = path.parent
            while parent != self.log_dir and self.log_dir in parent.parents:
                wanted.add(parent)
                parent = parent.parent
        return sorted(wanted)[:MAX_WATCHES]

    def _ensure_observer(self) -> None:
        if not self.log_dir.is_dir():
            return
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        if self._observer is None or self._handler is None:  # set together
            watcher = self

            class _Handler(FileSystemEventHandler):
                def on_any_event(self, event) -> None:
                    if event.event_type in ("opened", "closed_no_write"):
                        return
                    watcher._on_event(event)

            self._handler = _Handler()
            observer = PollingObserver(timeout=self.poll_timeout_s) if self.polling else Observer()
            observer.daemon = True
            observer.start()
            self._observer = observer
            self._watched = set()
        observer, handler = self._observer, self._handler
        with self._lock:
            wanted = self.watched_folders()
            self.watch_limited = len(self._state.files) > 0 and len(wanted) >= MAX_WATCHES
        for folder in wanted:
            if folder in self._watched:
                continue
            try:
                observer.schedule(handler, str(folder), recursive=False)
            except OSError:  # inotify limit or a vanished folder: the rescan still reads it
                continue
            self._watched.add(folder)
        self._scheduled = True

    def _on_event(self, event) -> None:
        """Mark what to read and wake the reader thread (no I/O here: watchdog's queue stays short)."""
        if self._stop.is_set():
            return
        path = Path(os.fsdecode(getattr(event, "dest_path", "") or event.src_path))
        with self._dirty_lock:
            if path in self._state.files and not event.is_directory:
                self._dirty.add(path)
            else:
                self._unknown = True
        self._wake.set()

    def _take_marks(self) -> tuple[list[Path], bool]:
        with self._dirty_lock:
            dirty, unknown = list(self._dirty), self._unknown
            self._dirty, self._unknown = set(), False
        return dirty, unknown

    def _rescan_loop(self) -> None:
        if self._catch_up is not None:
            self.read_existing()
        tick = min(self.rescan_s, self.stat_poll_s) if self.polling and self.stat_poll_s > 0 else self.rescan_s
        next_full = time.monotonic() + self.rescan_s
        while not self._stop.is_set():
            if not self._state.behind:  # caught up: wait for an event or the tick
                self._wake.wait(tick)
            else:  # behind: go on at once, but let a snapshot waiting for the lock take it first
                self._stop.wait(0.002)
            self._wake.clear()
            if self._stop.is_set():
                return
            dirty, unknown = self._take_marks()
            if unknown or time.monotonic() >= next_full:
                next_full = time.monotonic() + self.rescan_s
                with contextlib.suppress(Exception):
                    self._ensure_observer()
                self.refresh()
            elif dirty and not self._state.behind and not self.polling:
                self._read_paths(dirty)
            else:  # the polling tick, or the files left behind by the last capped read
                self._refresh_known()

    def _read_paths(self, paths: list[Path]) -> None:
        with self._lock:
            if self._capped_refresh(paths, rediscover=False):
                self._changed.notify_all()

    def _refresh_known(self) -> None:
        """One os.stat per known file; only files that changed are read (no directory walk)."""
        with self._lock:
            if self._capped_refresh(rediscover=False):
                self._changed.notify_all()


class _Entry:
    """A registry slot: created under the registry's lock, its watcher started outside it."""

    def __init__(self, used: float) -> None:
        self.watcher: RunWatcher | None = None
        self.error: BaseException | None = None
        self.ready = threading.Event()  # set once the watcher started (or failed to)
        self.used = used
        self.sessions: dict[str, float] = {}  # session id -> when it last asked for this watcher
        self.had_session = False  # once a session asked, the last one ending releases the watcher

    def live(self) -> bool:
        return not self.ready.is_set() or (self.watcher is not None and self.watcher.running)


class WatcherRegistry:
    """Owns shared RunWatchers (one per key, whatever the number of sessions) and stops those nobody
    asked for in `idle_s` seconds.

    Why: the page used to keep one watcher per folder forever (st.cache_resource), so a closed tab
    kept its inotify watches and rescan thread. Every `get` marks the watcher used; `reap` (called
    on each `get`, and by a small daemon thread) stops the idle ones and gives their memory back.
    The lock is never held while a watcher is made or started (its first read may be slow, or
    block on a FIFO): a slow folder keeps only its own sessions waiting.

    Sessions (issue 31: a closed tab's 1.45 GB table stayed for minutes): a `get` naming its `session`
    is counted; a session that `session_alive` has said is gone for `grace_s` (its tab closed; a
    reconnecting tab is back within it), that `end_session` names, or that has not asked for `idle_s`
    no longer uses the watcher, and when the last one goes the watcher is stopped, its table dropped
    and the heap trimmed at once (the reaper looks every second).
    """

    def __init__(
        self,
        idle_s: float = 120.0,
        max_watchers: int = 32,
        session_alive: Callable[[str], bool] | None = None,
        grace_s: float = 0.0,
    ) -> None:
        self.idle_s = idle_s
        self.max_watchers = max_watchers
        self.session_alive = session_alive
        self.grace_s = grace_s
        self._gone_since: dict[str, float] = {}  # session -> when session_alive first said it was gone
        self._lock = threading.Lock()
        self._entries: dict[tuple, _Entry] = {}
        self._reaper: threading.Thread | None = None
        self._closed = threading.Event()

    def get(self, key: tuple, make: Callable[[], RunWatcher], session: str | None = None) -> RunWatcher:
        """The running watcher for `key` (made and started by `make` if needed, outside the lock), used
        by `session` (None: a caller without sessions, kept by the idle rule only)."""
        self.reap()
        evicted: list[_Entry] = []
        with self._lock:
            found = self._entries.get(key)
            mine = found is None or not found.live()
            if found is None or mine:
                ready = [k for k, e in self._entries.items() if e.ready.is_set() and k != key]
                while ready and len(self._entries) >= self.max_watchers:  # evict the least recently used
                    old = min(ready, key=lambda k: self._entries[k].used)
                    ready.remove(old)
                    evicted.append(self._entries.pop(old))
                found = self._entries[key] = _Entry(time.monotonic())
            entry = found
            entry.used = time.monotonic()
            if session is not None:
                entry.sessions[session] = entry.used
                entry.had_session = True
            self._ensure_reaper()
        self._stop_all(evicted)
        if mine:
            self._start(key, entry, make)
        else:
            entry.ready.wait()  # another session is starting this folder's watcher
        if entry.error is not None:
            raise entry.error
        assert entry.watcher is not None
        return entry.watcher

    def _start(self, key: tuple, entry: _Entry, make: Callable[[], RunWatcher]) -> None:
        try:
            watcher = make()
            if not watcher.running:
                watcher.start()
            entry.watcher = watcher
        except BaseException as exc:
            entry.error = exc
            with self._lock:
                if self._entries.get(key) is entry:  # the next get tries again
                    del self._entries[key]
        finally:
            entry.ready.set()
        if self._closed.is_set() and entry.watcher is not None:
            entry.watcher.stop()

    def reap(self, now: float | None = None) -> list[tuple]:
        """Stop and forget watchers unused for `idle_s` or whose last session ended; return their keys."""
        now = time.monotonic() if now is None else now
        with self._lock:
            sessions = {s for e in self._entries.values() for s in e.sessions}
        alive = self.session_alive  # asked outside the lock (Streamlit's session manager has its own)
        gone = {s for s in sessions if alive is not None and not alive(s)}
        with self._lock:
            self._gone_since = {s: self._gone_since.get(s, now) for s in gone}
            ended = {s for s, since in self._gone_since.items() if now - since >= self.grace_s}
            for e in self._entries.values():
                for s in [s for s, used in e.sessions.items() if s in ended or now - used > self.idle_s]:
                    del e.sessions[s]
            idle = [
                k
                for k, e in self._entries.items()
                if e.ready.is_set() and (now - e.used > self.idle_s or (e.had_session and not e.sessions))
            ]
            stopped = [self._entries.pop(k) for k in idle]
        self._stop_all(stopped, release=True)  # no session shows them any more
        return idle

    def end_session(self, session: str) -> list[tuple]:
        """`session` ended (its tab closed): release the watchers no other session uses; their keys."""
        with self._lock:
            for e in self._entries.values():
                e.sessions.pop(session, None)
        return self.reap()

    def sessions(self, key: tuple) -> set[str]:
        """The sessions using `key`'s watcher now."""
        with self._lock:
            entry = self._entries.get(key)
            return set(entry.sessions) if entry is not None else set()

    def active(self) -> list[tuple]:
        with self._lock:
            return list(self._entries)

    def close(self) -> None:
        """Stop every watcher and the reaper (one still starting is stopped when its start ends)."""
        self._closed.set()
        with self._lock:
            stopped = list(self._entries.values())
            self._entries.clear()
        self._stop_all(stopped)

    @staticmethod
    def _stop_all(entries: list[_Entry], release: bool = False) -> None:
        """Stop these watchers (outside the lock; `release`: and drop their tables), give the memory back."""
        watchers = [e.watcher for e in entries if e.watcher is not None]
        entries.clear()  # the caller's list was the last holder of these entries
        for w in watchers:
            if release:
                w.release()
            else:
                w.stop()
        stopped = len(watchers)
        watchers.clear()
        if stopped:
            release_memory()

    def _ensure_reaper(self) -> None:
        if self._reaper is not None and self._reaper.is_alive():
            return

        def loop() -> None:
            period = 1.0 if self.session_alive is not None else 30.0  # a closed tab is released within ~1 s
            while not self._closed.wait(min(period, max(self.idle_s / 4, 0.05))):
                self.reap()

        self._reaper = threading.Thread(target=loop, name="WatcherRegistry-reaper", daemon=True)
        self._reaper.start()
