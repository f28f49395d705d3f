"""`RunWatcher`: a live, thread-safe view of a run's logs (watchdog events + a periodic rescan)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from core.logs.parser import ReaderSettings
from core.logs.reader import RunSnapshot, _RunState, bytes_on_disk, file_order

__all__ = ["MAX_WATCHES", "RunWatcher", "WatcherRegistry"]

MAX_WATCHES = 2048  # folders watched per run: 1,024 mpirun ranks need 1,026; more is not a log layout


class RunWatcher:
    """Live view of a run's logs: watchdog events + periodic rescan, incremental reads, thread-safe.

    `polling=True` uses watchdog's PollingObserver (the only thing that works on NFS-like shared
    filesystems) to find new files, plus a cheap check every `stat_poll_s` that only stats the files
    already known and reads those that grew: an append shows up within ~`stat_poll_s` instead of
    a full directory snapshot every `poll_timeout_s`. `snapshot()` is cheap when nothing changed
    (cached by version).
    """

    def __init__(self, log_dir: Path | str, polling: bool = False, loss_regex: str | None = None,
                 extra_files: Sequence[Path | str] = (), rescan_s: float = 1.0,
                 poll_timeout_s: float = 0.2, stat_poll_s: float = 0.05,
                 settings: ReaderSettings | None = None, background_catch_up: bool = False,
                 background_above_bytes: int = 64 << 20, follow_links: bool = False) -> None:
        self.log_dir = Path(log_dir)
        # the page's watcher: when the logs already there exceed `background_above_bytes` (~0.1 s of
        # reading), start() returns at once and they are read on the rescan thread a few files per
        # lock hold, so a 1,024-rank run paints while it is read; smaller folders are read at once
        self.background_catch_up = background_catch_up
        self.background_above_bytes = background_above_bytes
        self.polling = polling
        self.rescan_s = rescan_s
        self.poll_timeout_s = poll_timeout_s
        self.stat_poll_s = stat_poll_s
        self._state = _RunState(self.log_dir, loss_regex, extra_files, settings, follow_links=follow_links)
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._observer = None
        self._scheduled = False
        self._thread: threading.Thread | None = None
        self._listeners: list[Callable[[], None]] = []
        self._handler = None
        self._watched: set[Path] = set()
        self.watch_limited = False
        self._catch_up: tuple[int, int] | None = None  # (files read, files to read) while catching up

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
            else:
                self._state.refresh()
        self._ensure_observer()
        self._thread = threading.Thread(target=self._rescan_loop, name="RunWatcher-rescan", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the observer and the rescan thread (the parsed data stays readable)."""
        self._stop.set()
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

    def refresh(self) -> bool:
        """Synchronously read whatever is new (what the events would trigger)."""
        with self._lock:
            changed = self._state.refresh()
            if changed:
                self._changed.notify_all()
            return changed

    def snapshot(self, refresh: bool = False) -> RunSnapshot:
        """A consistent copy of everything parsed so far; `refresh=True` catches up first (not while
        the background catch-up reads: the page gets what is read so far at once)."""
        with self._lock:
            if refresh and self._catch_up is None and self._state.refresh():
                self._changed.notify_all()
            return self._state.snapshot()

    @property
    def catching_up(self) -> tuple[int, int] | None:
        """(files read, files to read) while the logs already there are still being read, else None."""
        return self._catch_up

    def _read_existing(self, batch: int = 16) -> None:
        """The background catch-up: every known file, `batch` files per lock hold (a 3.7 MB log
        takes ~4 ms, so a page waiting for a snapshot waits ~60 ms at most)."""
        with self._lock:
            paths = [st.info.path for st in sorted(self._state.files.values(), key=file_order)]
        for i in range(0, len(paths), batch):
            if self._stop.is_set():
                return
            with self._lock:
                if self._state.refresh(paths[i:i + batch], rediscover=False):
                    self._changed.notify_all()
                self._catch_up = (min(i + batch, len(paths)), len(paths))
        with self._lock:
            self._catch_up = None
            self._state.refresh()  # what appeared meanwhile
            self._changed.notify_all()

    def wait_for_change(self, since_version: int, timeout: float) -> int:
        """Block until the version moves past `since_version` (or timeout); return the version."""
        with self._changed:
            self._changed.wait_for(lambda: self._state.version != since_version or self._stop.is_set(),
                                   timeout=timeout)
            return self._state.version

    # -- internals
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
        return sorted(wanted)[: MAX_WATCHES]

    def _ensure_observer(self) -> None:
        if not self.log_dir.is_dir():
            return
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        if self._observer is None:
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
        with self._lock:
            wanted = self.watched_folders()
            self.watch_limited = len(self._state.files) > 0 and len(wanted) >= MAX_WATCHES
        for folder in wanted:
            if folder in self._watched:
                continue
            try:
                self._observer.schedule(self._handler, str(folder), recursive=False)
            except OSError:  # inotify limit or a vanished folder: the rescan still reads it
                continue
            self._watched.add(folder)
        self._scheduled = True

    def _on_event(self, event) -> None:
        if self._stop.is_set():
            return
        path = Path(os.fsdecode(getattr(event, "dest_path", "") or event.src_path))
        with self._lock:
            known = path in self._state.files
            if known and not event.is_directory:
                changed = self._state.refresh([path], rediscover=False)
            elif self._catch_up is not None:  # only find it: the catch-up reads everything at its end
                changed = self._state.discover()
            else:
                changed = self._state.refresh()
            if changed:
                self._changed.notify_all()

    def _rescan_loop(self) -> None:
        if self._catch_up is not None:
            self._read_existing()
        tick = min(self.rescan_s, self.stat_poll_s) if self.polling and self.stat_poll_s > 0 else self.rescan_s
        next_full = time.monotonic() + self.rescan_s
        while not self._stop.wait(tick):
            if time.monotonic() < next_full:
                self._refresh_known()
                continue
            next_full = time.monotonic() + self.rescan_s
            with contextlib.suppress(Exception):
                self._ensure_observer()
            self.refresh()

    def _refresh_known(self) -> None:
        """One os.stat per known file; only files that changed are read (no directory walk)."""
        with self._lock:
            if self._state.refresh(rediscover=False):
                self._changed.notify_all()


class WatcherRegistry:
    """Owns shared RunWatchers and stops those nobody asked for in `idle_s` seconds.

    Why: the page used to keep one watcher per folder forever (st.cache_resource), so a closed tab
    kept its inotify watches and rescan thread. Every `get` marks the watcher used; `reap` (called
    on each `get`, and by a small daemon thread) stops the idle ones.
    """

    def __init__(self, idle_s: float = 120.0, max_watchers: int = 32) -> None:
        self.idle_s = idle_s
        self.max_watchers = max_watchers
        self._lock = threading.Lock()
        self._watchers: dict[tuple, tuple[RunWatcher, float]] = {}
        self._reaper: threading.Thread | None = None
        self._closed = threading.Event()

    def get(self, key: tuple, make: Callable[[], RunWatcher]) -> RunWatcher:
        """The running watcher for `key` (created and started by `make` if needed)."""
        self.reap()
        with self._lock:
            entry = self._watchers.get(key)
            if entry is None or not entry[0].running:
                if len(self._watchers) >= self.max_watchers:  # evict the least recently used
                    old = min(self._watchers, key=lambda k: self._watchers[k][1])
                    self._watchers.pop(old)[0].stop()
                watcher = make()
                if not watcher.running:
                    watcher.start()
            else:
                watcher = entry[0]
            self._watchers[key] = (watcher, time.monotonic())
            self._ensure_reaper()
            return watcher

    def reap(self, now: float | None = None) -> list[tuple]:
        """Stop and forget watchers unused for `idle_s`; return their keys."""
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [k for k, (_, used) in self._watchers.items() if now - used > self.idle_s]
            stopped = [self._watchers.pop(k)[0] for k in idle]
        for w in stopped:
            w.stop()
        return idle

    def active(self) -> list[tuple]:
        with self._lock:
            return list(self._watchers)

    def close(self) -> None:
        """Stop every watcher and the reaper."""
        self._closed.set()
        with self._lock:
            stopped = [w for w, _ in self._watchers.values()]
            self._watchers.clear()
        for w in stopped:
            w.stop()

    def _ensure_reaper(self) -> None:
        if self._reaper is not None and self._reaper.is_alive():
            return

        def loop() -> None:
            while not self._closed.wait(min(30.0, max(self.idle_s / 4, 0.05))):
                self.reap()

        self._reaper = threading.Thread(target=loop, name="WatcherRegistry-reaper", daemon=True)
        self._reaper.start()
