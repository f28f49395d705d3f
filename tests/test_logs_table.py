"""The loss table grown in place (core/logs/rows/table.py) and the next file's read-ahead (readahead.py):
a live snapshot holds exactly the rows a one-shot read gives, an earlier snapshot never changes, a
restarted file's old rows leave, and reading ahead changes no row."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs import ReaderSettings, read_run
from core.logs.rows.reader import RunReader

NOISE = "[WARNING] ME(1234,7f,python):2026-11-23-10:00:00.000.000 [mindspore/ccsrc/x.cc:1] noise\n"


def _line(step: int, rank: int) -> str:
    return f"epoch: 1 step: {step}, loss is {2.3139476776123047 + rank / 7 - step / 1000!r}\n"


def _per_rank(metrics: pd.DataFrame) -> dict[int, list[tuple[float, float, int]]]:
    """Each rank's (step, loss, offset) in table order: what readers of `metrics` rely on."""
    return {
        int(r): list(zip(g["step"], g["loss"], g["offset"], strict=True)) for r, g in metrics.groupby("rank", sort=True)
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rounds=st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=8), min_size=1, max_size=8))
def test_live_snapshots_hold_the_one_shot_rows(
    tmp_path_factory: pytest.TempPathFactory, rounds: list[list[int]]
) -> None:
    root = tmp_path_factory.mktemp("live")
    steps = [0] * 6
    state = RunReader(root, settings=ReaderSettings(block_min=2, compiled_min=0))
    for ranks in rounds:  # each round appends a step to some ranks, then the watcher ticks
        for rank in ranks:
            steps[rank] += 1
            with open(root / f"worker_{rank}.log", "a") as f:
                f.write(NOISE + _line(steps[rank], rank))
        state.refresh()
        live = state.snapshot().metrics
        assert _per_rank(live) == _per_rank(read_run(root).metrics)
        assert len(live) == sum(steps)


def test_an_earlier_snapshot_never_changes_and_a_restart_drops_old_rows(tmp_path: Path) -> None:
    for rank in range(3):
        (tmp_path / f"worker_{rank}.log").write_text("".join(_line(s, rank) for s in range(1, 5)))
    state = RunReader(tmp_path)
    state.refresh()
    first = state.snapshot().metrics
    kept = first.copy(deep=True)
    for rank in range(3):  # the run goes on ...
        with open(tmp_path / f"worker_{rank}.log", "a") as f:
            f.write("".join(_line(s, rank) for s in range(5, 9)))
    state.refresh()
    second = state.snapshot().metrics
    (tmp_path / "worker_1.log").write_text(_line(1, 1))  # ... and msrun restarts rank 1 (log opened with "w")
    state.refresh()
    third = state.snapshot().metrics
    pd.testing.assert_frame_equal(first, kept)
    assert len(second) == 24
    assert third.loc[third["rank"] == 1, "step"].tolist() == [1.0]
    assert third.loc[third["rank"] == 0, "step"].tolist() == [float(s) for s in range(1, 9)]
    assert set(third["file"]) == {"worker_0.log", "worker_1.log", "worker_2.log"}
    assert _per_rank(third) == _per_rank(read_run(tmp_path).metrics)


@pytest.mark.parametrize("read_block", [300, 4096, 1 << 20])
def test_reading_the_next_file_ahead_changes_no_row(tmp_path: Path, read_block: int) -> None:
    for rank in range(5):
        body = "".join(NOISE * (rank % 3) + _line(s, rank) for s in range(1, 60))
        (tmp_path / f"worker_{rank}.log").write_text(body)
    (tmp_path / "worker_5.log").write_text("")  # an empty log between them
    plain = read_run(tmp_path, settings=ReaderSettings(prefetch_min=1 << 30))
    ahead = read_run(tmp_path, settings=ReaderSettings(prefetch_min=1, read_block=read_block, compiled_min=0))
    pd.testing.assert_frame_equal(ahead.metrics, plain.metrics)
    watched = RunReader(tmp_path, settings=ReaderSettings(prefetch_min=1, read_block=read_block))
    watched.refresh()
    assert _per_rank(watched.snapshot().metrics) == _per_rank(plain.metrics)
    assert len(plain.metrics) == 5 * 59


def test_page_watcher_paints_at_once_and_reads_the_rest_in_the_background(tmp_path: Path) -> None:
    import gc
    import threading
    import time

    from core.logs.live.watcher import RunWatcher

    for rank in range(40):
        (tmp_path / f"worker_{rank}.log").write_text("".join(NOISE + _line(s, rank) for s in range(1, 30)))
    w = RunWatcher(tmp_path, rescan_s=0.2, background_catch_up=True, background_above_bytes=0)
    gate = threading.Event()
    real_catch_up = w.read_existing

    def held_catch_up(*args: object, **kwargs: object) -> None:
        gate.wait(10)  # the catch-up starts once the page has had its first snapshot
        real_catch_up(*args, **kwargs)

    w.read_existing = held_catch_up  # type: ignore[method-assign]
    w.start()
    try:
        t0 = time.monotonic()
        first = w.snapshot(refresh=True)  # the page's first paint: nothing read yet, and no waiting
        assert time.monotonic() - t0 < 5
        assert w.catching_up == (0, 40) and first.metrics.empty and first.n_ranks == 40
        gc.unfreeze()
        gate.set()
        deadline = time.monotonic() + 30
        while w.catching_up is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert w.catching_up is None
        while gc.get_freeze_count() == 0 and time.monotonic() < deadline:  # settled just after the last batch
            time.sleep(0.05)
        assert gc.get_freeze_count() > 0  # the catch-up froze the heap (the watcher injects settle_heap)
        assert _per_rank(w.snapshot(refresh=True).metrics) == _per_rank(read_run(tmp_path).metrics)
    finally:
        gate.set()
        w.stop()
        gc.unfreeze()
    small = RunWatcher(tmp_path, background_catch_up=True).start()  # 40 small logs: read before start returns
    try:
        assert small.catching_up is None and len(small.snapshot().metrics) == 40 * 29
    finally:
        small.stop()
