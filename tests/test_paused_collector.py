"""The collector paused during a watcher's tick (core.logs.live.heap.paused_collector): the watcher owns the
process's collector policy, so its refresh and snapshot run without cyclic collections, and the collector is
left as the process had it: enabled after the last of nested or concurrent ticks, still disabled when the
process disabled it, enabled again when a tick raises."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.logs.live.heap import paused_collector
from core.logs.live.watcher import RunWatcher


@pytest.fixture(autouse=True)
def collecting() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_a_tick_pauses_and_restores_the_collector() -> None:
    with paused_collector():
        assert not gc.isenabled()
        with paused_collector():  # nested (a snapshot's refresh): the outer one re-enables it
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_process_disabled_stays_disabled() -> None:
    gc.disable()
    with paused_collector():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_a_tick_that_raises_still_restores_the_collector() -> None:
    with pytest.raises(ValueError, match="boom"), paused_collector():
        raise ValueError("boom")
    assert gc.isenabled()


def test_concurrent_ticks_keep_it_paused_until_the_last_ends() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with paused_collector():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    t.start()
    assert inside.wait(10)
    with paused_collector():
        pass
    assert not gc.isenabled()  # the other watcher's tick is still running
    release.set()
    t.join(10)
    assert gc.isenabled()


def test_a_watchers_refresh_and_snapshot_run_with_the_collector_paused(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_bytes(b"epoch: 1 step: 1, loss is 2.5\n")
    w = RunWatcher(tmp_path)  # not started: refresh by hand
    seen: list[bool] = []
    state = w._state
    refresh, snapshot = state.refresh, state.snapshot

    def seen_refresh(*a: object, **k: object) -> bool:
        seen.append(gc.isenabled())
        return refresh(*a, **k)  # type: ignore[arg-type]

    def seen_snapshot() -> object:
        seen.append(gc.isenabled())
        return snapshot()

    state.refresh = seen_refresh  # type: ignore[method-assign]
    state.snapshot = seen_snapshot  # type: ignore[method-assign, assignment]
    assert w.refresh()
    snap = w.snapshot()
    assert seen == [False, False] and gc.isenabled()
    assert snap.metrics["loss"].tolist() == [2.5]
