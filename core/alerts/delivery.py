"""Delivery that never blocks or slows the watcher: `enqueue` puts the alert on one bounded queue per
target and returns; each target's daemon thread sends, retries with exponential backoff when a retry
may help (timeout, refused connection, 5xx, a failing command), rate-limits, and records every attempt
in a bounded `alerts.jsonl`. A slow receiver delays only its own queue."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.alerts.channels import DeliveryError, Target, send
from core.alerts.rules import Alert
from core.files import write_replacing

__all__ = ["AttemptLog", "DeliveryPolicy", "Dispatcher"]


@dataclass(frozen=True)
class DeliveryPolicy:
    attempts: int = 4  # tries per alert and target (the first + 3 retries)
    backoff_s: float = 1.0  # wait before retry n: backoff_s * 2**(n-1)
    max_backoff_s: float = 60.0
    rate: int = 10  # alerts per target per window; more are recorded as rate_limited, not sent
    window_s: float = 60.0
    max_queue: int = 256  # alerts waiting per target; more are recorded as dropped


class AttemptLog:
    """Every delivery attempt, one JSON line each, kept under `max_bytes` (the oldest half goes first)."""

    def __init__(self, path: Path | None, max_bytes: int = 512 << 10) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self.entries: deque[dict] = deque(maxlen=1000)  # what this process recorded (the page / tests)

    def record(self, **entry: object) -> None:
        entry = {"time": round(time.time(), 3), **entry}
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self._lock:
            self.entries.append(entry)
            if self.path is None:
                return
            with contextlib.suppress(OSError):  # a full disk costs the record, never the watch
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "a", encoding="utf-8") as out:
                    out.write(line)
                    size = out.tell()
                if size > self.max_bytes:
                    self._trim(self.path)

    def _trim(self, path: Path) -> None:
        data = path.read_bytes()
        keep = data[len(data) // 2 :]
        keep = keep[keep.find(b"\n") + 1 :]
        write_replacing(path, keep, mode=0o600)  # a fresh temp file: never through a link at a fixed name


class _Worker:
    def __init__(self, target: Target, policy: DeliveryPolicy, log: AttemptLog, wait: Callable[[float], bool]) -> None:
        self.target = target
        self.policy = policy
        self.log = log
        self.wait = wait  # the dispatcher's stop event's wait: a close interrupts a backoff
        self.queue: queue.Queue[Alert | None] = queue.Queue(maxsize=policy.max_queue)
        self.sent: deque[float] = deque()
        self.thread = threading.Thread(target=self._loop, name=f"alerts-{target.kind}", daemon=True)
        self.thread.start()

    def _allowed(self) -> bool:
        now = time.monotonic()
        while self.sent and now - self.sent[0] > self.policy.window_s:
            self.sent.popleft()
        if len(self.sent) >= self.policy.rate:
            return False
        self.sent.append(now)
        return True

    def _deliver(self, alert: Alert) -> None:
        where = self.target.describe()
        if not self._allowed():
            self.log.record(rule=str(alert.rule), run=alert.run, target=where, outcome="rate_limited", attempt=0)
            return
        for attempt in range(1, self.policy.attempts + 1):
            try:
                detail = send(self.target, alert)
            except DeliveryError as exc:
                last = attempt == self.policy.attempts or not exc.retry
                self.log.record(
                    rule=str(alert.rule),
                    run=alert.run,
                    target=where,
                    attempt=attempt,
                    outcome="failed" if last else "retry",
                    detail=str(exc),
                )
                if last:
                    return
                delay = min(self.policy.backoff_s * 2 ** (attempt - 1), self.policy.max_backoff_s)
                if self.wait(delay):
                    return  # closing
            else:
                self.log.record(
                    rule=str(alert.rule), run=alert.run, target=where, attempt=attempt, outcome="sent", detail=detail
                )
                return

    def _loop(self) -> None:
        while True:
            alert = self.queue.get()
            try:
                if alert is None:
                    return
                self._deliver(alert)
            finally:
                self.queue.task_done()


class Dispatcher:
    """Sends alerts to every target in the background. `enqueue` never waits on a receiver."""

    def __init__(self, targets: Sequence[Target], record: Path | None = None, policy: DeliveryPolicy | None = None):
        self.policy = policy or DeliveryPolicy()
        self.log = AttemptLog(record)
        self._stop = threading.Event()
        self._workers = [_Worker(t, self.policy, self.log, self._stop.wait) for t in targets]

    def enqueue(self, alert: Alert) -> None:
        """Queue `alert` for every target and return at once (a full queue drops it, recorded)."""
        for w in self._workers:
            try:
                w.queue.put_nowait(alert)
            except queue.Full:
                self.log.record(
                    rule=str(alert.rule), run=alert.run, target=w.target.describe(), outcome="dropped", attempt=0
                )

    def join(self) -> None:
        """Wait until every queued alert was delivered or given up (tests, and a clean exit)."""
        for w in self._workers:
            w.queue.join()

    def close(self, wait_s: float = 5.0) -> None:
        """Finish what is queued within `wait_s` at most (a backoff in progress is cut short)."""
        deadline = time.monotonic() + wait_s
        for w in self._workers:
            with contextlib.suppress(queue.Full):
                w.queue.put_nowait(None)
        for w in self._workers:
            w.thread.join(max(0.0, deadline - time.monotonic()))
        self._stop.set()
