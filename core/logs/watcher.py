"""`RunWatcher`: a live, thread-safe view of a run's logs (watchdog events + a periodic rescan)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from core.logs.parser import ReaderSettings
from core.logs.reader import RunSnapshot, _RunState

__all__ = ["RunWatcher"]


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
                 settings: ReaderSettings | None = None) -> None:
        self.log_dir = Path(log_dir)
        self.polling = polling
        self.rescan_s = rescan_s
        self.poll_timeout_s = poll_timeout_s
        self.stat_poll_s = stat_poll_s
        self._state = _RunState(self.log_dir, loss_regex, extra_files, settings)
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._observer = None
        self._scheduled = False
        self._thread: threading.Thread | None = None
        self._listeners: list[Callable[[], None]] = []

    # -- lifecycle
    def start(self) -> RunWatcher:
        """Read what exists, then follow changes. Idempotent."""
        if self._thread is not None:
            return self
        self._stop.clear()
        with self._lock:
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
        """A consistent copy of everything parsed so far; `refresh=True` catches up first."""
        with self._lock:
            if refresh and self._state.refresh():
                self._changed.notify_all()
            return self._state.snapshot()

    def wait_for_change(self, since_version: int, timeout: float) -> int:
        """Block until the version moves past `since_version` (or timeout); return the version."""
        with self._changed:
            self._changed.wait_for(lambda: self._state.version != since_version or self._stop.is_set(),
                                   timeout=timeout)
            return self._state.version

    # -- internals
    def _ensure_observer(self) -> None:
        if self._scheduled or not self.log_dir.is_dir():
            return
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        watcher = self

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event) -> None:
                if event.event_type in ("opened", "closed_no_write"):
                    return
                watcher._on_event(event)

        observer = PollingObserver(timeout=self.poll_timeout_s) if self.polling else Observer()
        observer.schedule(_Handler(), str(self.log_dir), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer
        self._scheduled = True

    def _on_event(self, event) -> None:
        if self._stop.is_set():
            return
        path = Path(os.fsdecode(getattr(event, "dest_path", "") or event.src_path))
        with self._lock:
            known = path in self._state.files
            if known and not event.is_directory:
                changed = self._state.refresh([path], rediscover=False)
            else:
                changed = self._state.refresh()
            if changed:
                self._changed.notify_all()

    def _rescan_loop(self) -> None:
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
