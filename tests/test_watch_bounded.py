"""Issue 22 item 3 and the registry part of item 2: the watcher reads in capped chunks on any write
rate and says how far behind it is, `watch` stops on Ctrl-C, and one slow folder never blocks the
Monitor sessions of another."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from core.cli.watch import behind_line, new_rows
from core.logs import read_run
from core.logs.live.heap import release_memory
from core.logs.live.watcher import RunWatcher, WatcherRegistry
from core.logs.rows.filestate import ReaderSettings
from core.logs.rows.reader import RunReader

REPO = Path(__file__).resolve().parent.parent
SMALL = ReaderSettings(read_block=4096, prefetch_min=1 << 30, max_partial_line=512, keep_buf=4096)
TICK = 8192  # bytes one capped read takes (a whole line at least)
NOISE = b"[WARNING] ME(1:1,MainProcess):2026-01-01-00:00:00.000.000 [mindspore/x.py:1] noise\n"


def _line(step: int, rank: int) -> bytes:
    return b"epoch: %d step: %d, loss is %d.%06d\n" % (1 + step // 1000, step % 1000 + 1, rank, step)


def _steps(m: pd.DataFrame, rank: int) -> list[float]:
    return m[m["rank"] == rank]["loss"].tolist()


def _wait(cond, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


# ----------------------------------------------------------------------------- capped reads


def test_a_capped_refresh_reads_about_its_budget_and_says_what_is_behind(tmp_path: Path) -> None:
    log = tmp_path / "worker_0.log"
    log.write_bytes(b"".join(_line(s, 0) for s in range(5000)))  # ~190 KB: many ticks of 8 KB
    w = RunWatcher(tmp_path, settings=SMALL, tick_bytes=TICK)  # not started: refresh by hand
    w.refresh()
    size = log.stat().st_size
    snap = w.snapshot()
    assert 0 < len(snap.metrics) < 5000
    assert w.peak_read <= TICK
    read = sum(len(_line(s, 0)) for s in range(len(snap.metrics)))  # every line is a row: the lines read
    assert snap.behind_bytes == w.behind == size - read  # after the last line read
    assert w.behind > size // 2
    ticks = 1
    while w.behind:
        w.refresh()
        ticks += 1
        assert w.peak_read <= TICK
    assert ticks >= size // TICK
    snap = w.snapshot()
    assert snap.behind_bytes == 0
    assert _steps(snap.metrics, 0) == _steps(read_run(tmp_path).metrics, 0)


def test_a_capped_refresh_moves_on_to_the_next_file(tmp_path: Path) -> None:
    """A rank whose log grows faster than the cap does not keep the others from being read."""
    (tmp_path / "worker_0.log").write_bytes(b"".join(_line(s, 0) for s in range(20000)))
    (tmp_path / "worker_1.log").write_bytes(_line(0, 1))
    w = RunWatcher(tmp_path, settings=SMALL, tick_bytes=TICK)
    for _ in range(3):
        w.refresh()
        with open(tmp_path / "worker_0.log", "ab") as f:  # rank 0 keeps growing
            f.write(b"".join(_line(s, 0) for s in range(20000, 20400)))
    assert _steps(w.snapshot().metrics, 1) == [1.0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_lines=hs.integers(0, 300), budget=hs.integers(1, 3000), cut=hs.integers(0, 40), noise_every=hs.integers(1, 7))
def test_capped_reads_give_exactly_the_rows_of_one_read(
    tmp_path: Path, n_lines: int, budget: int, cut: int, noise_every: int
) -> None:
    folder = tmp_path / f"r{n_lines}_{budget}_{cut}_{noise_every}"
    folder.mkdir()
    body = b"".join((NOISE if s % noise_every == 0 else b"") + _line(s, 0) for s in range(n_lines))
    (folder / "worker_0.log").write_bytes(body + _line(n_lines, 0)[:cut])  # and an incomplete last line
    state = RunReader(folder, settings=SMALL)
    state.refresh(budget=budget)
    for _ in range(len(body) + 2):  # each capped read takes one whole line at least
        if not state.behind:
            break
        state.refresh(budget=budget)
    assert not state.behind
    got = state.snapshot().metrics
    want = read_run(folder, settings=SMALL).metrics
    assert got[["rank", "step", "loss", "offset"]].equals(want[["rank", "step", "loss", "offset"]])


def test_fast_writer_memory_stays_under_the_cap_behind_is_reported_and_no_row_is_lost(tmp_path: Path) -> None:
    """A writer appending much faster than the reader's 8 KB per tick: the read buffers and one
    read stay under the cap, parsed rows never pile up outside the table, `behind` is reported
    while the writer is ahead, and once it stops every row is there, once."""
    n, ranks = 30000, 2
    paths = [tmp_path / f"worker_{r}.log" for r in range(ranks)]
    for p in paths:
        p.write_bytes(b"")
    w = RunWatcher(tmp_path, settings=SMALL, tick_bytes=TICK, rescan_s=0.05).start()
    behind_seen: list[int] = []
    high = {"bufs": 0, "ahead": 0, "untaken": 0}
    done = threading.Event()

    def writer() -> None:
        files = [open(p, "ab", buffering=0) for p in paths]  # noqa: SIM115 - closed below
        try:
            for start in range(0, n, 500):
                for r, f in enumerate(files):
                    f.write(b"".join(_line(s, r) for s in range(start, start + 500)))
        finally:
            for f in files:
                f.close()
            done.set()

    t = threading.Thread(target=writer)
    t.start()
    deadline = time.monotonic() + 120
    try:
        # Sample until every row is in, not merely until the writer is done: on a loaded machine the
        # writer can finish before the watcher's first read, when nothing is known to be behind yet.
        while time.monotonic() < deadline:
            snap = w.snapshot()
            behind_seen.append(snap.behind_bytes)
            if done.is_set() and not snap.behind_bytes and len(snap.metrics) == n * ranks:
                break
            held = w.held()  # between two capped reads: what the reader holds
            high["bufs"] = max(high["bufs"], held.read_buffer)
            high["ahead"] = max(high["ahead"], held.read_ahead)
            high["untaken"] = max(high["untaken"], held.untaken_rows)
            time.sleep(0.01)
        t.join()
        assert _wait(lambda: len(w.snapshot(refresh=True).metrics) == n * ranks)
    finally:
        done.set()
        t.join()
        w.stop()
    m = w.snapshot().metrics
    for r in range(ranks):
        assert _steps(m, r) == [float(f"{r}.{s:06d}") for s in range(n)]
    assert max(behind_seen) > 0, "the writer was ahead and nothing said so"
    assert w.peak_read <= TICK
    assert high["bufs"] <= SMALL.read_block and high["ahead"] <= SMALL.read_block
    assert high["untaken"] == 0  # rows go to the table after every read
    assert w.snapshot().behind_bytes == 0


# ----------------------------------------------------------------------------- registry


class _GatedWatcher(RunWatcher):
    """A watcher whose start blocks until `gate` is set (what a FIFO's open did)."""

    def __init__(self, folder: Path, gate: threading.Event) -> None:
        super().__init__(folder)
        self.gate = gate

    def start(self) -> RunWatcher:
        self.gate.wait(60)
        return super().start()


def test_a_watcher_that_blocks_while_starting_does_not_block_another_folder(tmp_path: Path) -> None:
    slow, fast = tmp_path / "slow", tmp_path / "fast"
    for d in (slow, fast):
        d.mkdir()
        (d / "worker_0.log").write_bytes(_line(0, 0))
    gate = threading.Event()
    reg = WatcherRegistry(idle_s=1000.0)
    blocked = threading.Thread(target=reg.get, args=(("slow",), lambda: _GatedWatcher(slow, gate)), daemon=True)
    try:
        blocked.start()
        assert _wait(lambda: ("slow",) in reg.active())  # its slot exists, its start is blocked
        got: list[RunWatcher] = []
        other = threading.Thread(target=lambda: got.append(reg.get(("fast",), lambda: RunWatcher(fast))), daemon=True)
        other.start()
        other.join(30)
        assert not other.is_alive(), "get of another folder waited for the blocked start"
        assert got and got[0].running and len(got[0].snapshot().metrics) == 1
        assert blocked.is_alive()  # still blocked: the other folder did not wait for it
        reg.reap(now=time.monotonic() + 5000)  # a starting watcher is not reaped under its starter
        assert ("slow",) in reg.active()
    finally:
        gate.set()
        blocked.join(30)
        reg.close()


def test_twenty_sessions_of_one_folder_share_one_watcher(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_bytes(_line(0, 0))
    gate = threading.Event()
    made: list[RunWatcher] = []

    def make() -> RunWatcher:
        w = _GatedWatcher(tmp_path, gate)
        made.append(w)
        return w

    reg = WatcherRegistry(idle_s=1000.0)
    got: list[RunWatcher] = []
    threads = [threading.Thread(target=lambda: got.append(reg.get(("one",), make))) for _ in range(20)]
    try:
        for t in threads:
            t.start()
        time.sleep(0.2)
        gate.set()  # everyone waited for the one start
        for t in threads:
            t.join(30)
        assert len(made) == 1 and len(got) == 20 and all(w is made[0] for w in got)
        assert made[0].running
    finally:
        gate.set()
        reg.close()
    assert not made[0].running


def test_a_failed_start_is_raised_to_its_waiters_and_retried_next_time(tmp_path: Path) -> None:
    reg = WatcherRegistry(idle_s=1000.0)
    calls = []

    def broken() -> RunWatcher:
        calls.append(1)
        raise OSError("cannot watch")

    try:
        for _ in range(2):
            try:
                reg.get(("x",), broken)
            except OSError as exc:
                assert "cannot watch" in str(exc)
            else:
                raise AssertionError("the error was swallowed")
        assert len(calls) == 2 and reg.active() == []
        assert reg.get(("x",), lambda: RunWatcher(tmp_path)).running
    finally:
        reg.close()


def test_a_reaped_watcher_and_its_table_are_freed(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_bytes(b"".join(_line(s, 0) for s in range(2000)))
    reg = WatcherRegistry(idle_s=1000.0)
    w = reg.get(("a",), lambda: RunWatcher(tmp_path))
    assert len(w.snapshot().metrics) == 2000
    gone = weakref.ref(w)
    table = weakref.ref(w.table)
    del w
    assert reg.reap(now=time.monotonic() + 5000) == [("a",)]
    gc.collect()
    assert gone() is None and table() is None
    reg.close()
    assert release_memory() in (True, False)  # glibc: malloc_trim ran; elsewhere a no-op


def test_release_memory_frees_a_cycle_that_was_garbage_when_the_heap_was_frozen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`settle_heap` freezes whatever is alive, garbage cycles too; a release thaws them for its collection."""
    import gc
    import weakref

    from core.logs.live.heap import settle_heap

    class Node:
        pass

    real_unfreeze = gc.unfreeze
    real_unfreeze()
    # an earlier test's watcher registry may reap (release_memory: unfreeze + collect) on its own thread
    # meanwhile: until this test releases, no thread thaws the heap
    monkeypatch.setattr(gc, "unfreeze", lambda: None)
    try:
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        gc.collect(1)
        gc.collect(2)  # older than the young generations settle_heap collects: only a full collection finds it
        gc.freeze()
        del a, b
        settle_heap()
        gc.collect()  # a full collection does not look at frozen objects
        assert gone() is not None
        monkeypatch.setattr(gc, "unfreeze", real_unfreeze)
        release_memory()
        assert gone() is None
        assert gc.get_freeze_count() == 0  # thawed: what the caller still held can be collected later
    finally:
        real_unfreeze()


# ----------------------------------------------------------------------------- the watch command


def test_watch_prints_few_rows_one_by_one_and_summarises_a_flood() -> None:
    m = pd.DataFrame(
        {
            "rank": [0, 1] * 500,
            "epoch": 1.0,
            "step": [float(s // 2) for s in range(1000)],
            "loss": [float(s) for s in range(1000)],
        }
    )
    few = new_rows(m, 995)
    assert len(few) == 5 and few[-1].startswith("rank   1") and "loss 999" in few[-1]
    flood = new_rows(m, 0, limit=200)
    assert flood[:2] == [new_rows(m, 998)[0], new_rows(m, 999)[0]]  # the last row of each rank
    assert "1,000 new loss rows" in flood[-1] and len(flood) == 3


def test_watch_says_when_it_is_behind_and_when_it_caught_up() -> None:
    assert "behind: 3.0 MiB" in (behind_line(3 << 20, 0) or "")
    assert behind_line(5 << 20, 3 << 20) is None  # said once, not on every update
    assert "caught up" in (behind_line(0, 3 << 20) or "")
    assert behind_line(0, 0) is None


def test_watch_ends_on_sigint_while_a_writer_floods_the_log(tmp_path: Path) -> None:
    log = tmp_path / "worker_0.log"
    log.write_bytes(b"".join(_line(s, 0) for s in range(200_000)))  # ~8 MB already there
    stop = threading.Event()

    def writer() -> None:
        step = 200_000
        with open(log, "ab") as f:
            while not stop.is_set():
                f.write(b"".join(_line(s, 0) for s in range(step, step + 20_000)))
                step += 20_000

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "core", "watch", str(tmp_path), "--interval", "0.5"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # as a terminal
    # starts it: a test run from `cmd &` would otherwise hand the child SIGINT ignored
    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        first = proc.stdout.readline()
        assert first.startswith("watching"), first
        assert proc.stdout.readline().startswith("rank")  # it reads and prints while the log floods
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)  # generous: the benchmark measures the real latency
    finally:
        stop.set()
        t.join(30)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode is not None
    assert "stopped" in err and "Traceback" not in err, err


def test_the_monitor_page_says_how_far_behind_it_reads() -> None:
    from app.monitor.figures import behind_caption

    assert behind_caption(0) is None
    text = behind_caption(300 << 20) or ""
    assert "300.0 MiB written and not read yet" in text


def test_the_monitor_prepares_its_x_axes_without_copying_the_loss_table(tmp_path: Path) -> None:
    """A copy (and block merge) of the whole table per tick was 3x its memory on a fast-growing log."""
    import numpy as np

    from app.monitor.figure_data import prepare
    from core.logs.judgement.metrics import add_global_step, add_time_axes

    for r in range(2):
        (tmp_path / f"worker_{r}.log").write_bytes(b"".join(NOISE + _line(s, r) for s in range(3000)))
    w = RunWatcher(tmp_path).start()  # live: rows carry observation times
    try:
        with open(tmp_path / "worker_0.log", "ab") as f:
            f.write(_line(3000, 0))
        assert _wait(lambda: len(w.snapshot().metrics) == 6001)
        m = w.snapshot().metrics
    finally:
        w.stop()
    df = prepare(m)
    pd.testing.assert_frame_equal(df, add_time_axes(add_global_step(m)))
    for col in ("loss", "step", "epoch", "time", "offset"):
        assert np.shares_memory(df[col].to_numpy(), m[col].to_numpy()), col


def test_sessions_shown_one_snapshot_compute_what_they_derive_from_it_once(tmp_path: Path) -> None:
    """20 Monitor sessions on one folder: the watcher hands them the same snapshot until the logs
    change, and the diagnosis / grids derived from it are computed once for all of them."""
    (tmp_path / "worker_0.log").write_bytes(_line(0, 0))
    reg = WatcherRegistry(idle_s=1000.0)
    calls: list[int] = []

    def session() -> None:
        w = reg.get(("one",), lambda: RunWatcher(tmp_path))
        snap = w.snapshot()
        assert snap.derived("diag", (snap.version,), lambda: calls.append(1) or len(snap.metrics)) == 1

    try:
        threads = [threading.Thread(target=session) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert calls == [1]
    finally:
        reg.close()


def test_the_pages_watcher_has_every_row_of_a_finished_run_when_it_starts(tmp_path: Path) -> None:
    """A finished run's page does not refresh itself: what start() read is what it shows."""
    (tmp_path / "worker_0.log").write_bytes(b"".join(_line(s, 0) for s in range(5000)))  # >> the cap
    w = RunWatcher(tmp_path, settings=SMALL, tick_bytes=TICK, background_catch_up=True)
    w.start()
    try:
        snap = w.snapshot()
        assert len(snap.metrics) == 5000 and snap.behind_bytes == 0
        assert w.peak_read == 0  # the reader thread's capped reads read nothing: start() read it all
    finally:
        w.stop()


def test_a_reaped_watcher_still_held_by_a_closed_session_lets_its_table_go(tmp_path: Path) -> None:
    """Streamlit keeps a closed tab's session (and the page's globals: its watcher) for reconnection."""
    (tmp_path / "worker_0.log").write_bytes(b"".join(_line(s, 0) for s in range(2000)))
    reg = WatcherRegistry(idle_s=1000.0)
    held = reg.get(("a",), lambda: RunWatcher(tmp_path))  # the closed session's reference
    table = weakref.ref(held.table)
    assert len(held.snapshot().metrics) == 2000
    assert reg.reap(now=time.monotonic() + 5000) == [("a",)]
    gc.collect()
    assert table() is None and not held.running
    reg.close()


def test_snapshots_are_served_while_the_background_catch_up_reads(tmp_path: Path) -> None:
    """The page asks for snapshots while a big folder is caught up in the background: each gets the
    lock between two batches (a lock is not fair: the catch-up thread used to take it back at once, so
    the page saw nothing until the whole folder was read)."""
    for r in range(256):
        (tmp_path / f"worker_{r}.log").write_bytes(b"".join(NOISE + _line(s, r) for s in range(1000)))
    w = RunWatcher(tmp_path, background_catch_up=True, background_above_bytes=1 << 20).start()
    served_during = 0
    try:
        while w.catching_up is not None or not len(w.snapshot().metrics):
            snap = w.snapshot()
            if w.catching_up is not None and len(snap.metrics):
                served_during += 1
    finally:
        w.stop()
    assert len(w.snapshot().metrics) == 256 * 1000
    assert served_during >= 3
