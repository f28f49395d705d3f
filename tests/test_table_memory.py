"""Memory per loss row (issue 31 item 6): the loss table's own arrays hold a LossMonitor row in at most
40 B (it was 116 B, ~300 B of RSS a row), every printed digit of a float64 loss survives, a step past
2**31 is kept exactly (int64), and the Monitor's watcher is released when its last session ends."""

from __future__ import annotations

import gc
import struct
import time
import weakref
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.bytes.discover import LogFile
from core.logs.live.watcher import RunWatcher, WatcherRegistry
from core.logs.rows.filestate import FileState
from core.logs.rows.reader import RunReader
from core.logs.rows.table import MetricTable, code_dtype
from core.logs.tokens.bulk import ROW_KEYS

MAX_ROW_BYTES = 40
NOISE = "[WARNING] ME(1234,7f,python):2026-11-23-10:00:00.000.000 [mindspore/ccsrc/x.cc:1] noise\n"


def _lossmonitor(steps: int, epochs: int = 3, rank: int = 0) -> str:
    per = steps // epochs
    return "".join(
        f"epoch: {s // per + 1} step: {s % per + 1}, loss is {2.3139476776123047 + rank / 7 - s / 1e4!r}\n"
        for s in range(steps)
    )


def _bytes_per_row(reader: RunReader) -> float:
    """The table's own arrays (cut to its rows) over its rows: a size, never a time."""
    arrays = reader.table.arrays()
    return sum(a.nbytes for a in arrays.values()) / len(reader.table)


def test_a_lossmonitor_row_costs_at_most_40_bytes_read_once_and_watched_live(tmp_path: Path) -> None:
    for rank in range(4):
        (tmp_path / f"worker_{rank}.log").write_text(NOISE + _lossmonitor(3000, rank=rank))
    once = RunReader(tmp_path, one_shot=True)
    once.refresh()
    assert len(once.snapshot().metrics) == 12000
    assert _bytes_per_row(once) <= MAX_ROW_BYTES
    fresh = tmp_path / "live"
    fresh.mkdir()
    live = RunReader(fresh)  # a watcher's reader: rows written while it watches get their observation time
    live.refresh()
    for rank in range(4):
        (fresh / f"worker_{rank}.log").write_text(NOISE + _lossmonitor(3000, rank=rank))
    live.refresh()
    snap = live.snapshot()
    assert len(snap.metrics) == 12000
    assert np.isfinite(snap.metrics["time"].to_numpy(dtype=np.float64)).all()
    assert _bytes_per_row(live) <= MAX_ROW_BYTES
    assert live.table.nbytes == sum(a.nbytes for a in live.table.arrays().values())
    # no Python object per row: every column is a plain number array but the file's category codes
    assert not any(a.dtype == object for a in live.table.arrays().values())
    assert snap.metrics["file"].cat.codes.dtype == code_dtype(4)


def test_the_compact_frame_reads_as_before(tmp_path: Path) -> None:
    """Counts as integers, absent columns as NaN, rank/offset int64: what every reader of `metrics` used."""
    (tmp_path / "worker_0.log").write_text(_lossmonitor(90))
    m = read_run(tmp_path).metrics
    assert m["step"].dtype == np.int32 and m["epoch"].dtype == np.int16
    assert m["rank"].dtype == np.int64 and m["offset"].dtype == np.int64
    assert m["lr"].isna().all() and len(m["lr"]) == 90  # no line gave it: no array behind it
    assert m["step"].tolist()[:3] == [1, 2, 3] and m["epoch"].max() == 3


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    losses=st.lists(
        st.floats(allow_nan=False, allow_infinity=True, width=64) | st.just(-0.0) | st.just(float("nan")),
        min_size=1,
        max_size=40,
    ),
    lr=st.floats(min_value=1e-12, max_value=1.0),
)
def test_every_printed_digit_of_a_float64_loss_and_metric_survives(
    tmp_path_factory: pytest.TempPathFactory, losses: list[float], lr: float
) -> None:
    root = tmp_path_factory.mktemp("digits")
    text = "".join(f"epoch: 1 step: {i + 1}, loss: {v!r}, lr: {lr!r}\n" for i, v in enumerate(losses))
    (root / "worker_0.log").write_text(text)
    m = read_run(root).metrics
    assert m["loss"].dtype == np.float64 and m["lr"].dtype == np.float64
    got = [struct.pack("<d", v) for v in m["loss"]]
    assert got == [struct.pack("<d", v) for v in losses]  # bit for bit: repr(float) round-trips
    assert [repr(v) for v in m["lr"]] == [repr(lr)] * len(losses)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.integers(min_value=0, max_value=2**53), min_size=1, max_size=30))
def test_any_whole_step_is_kept_exactly_in_the_narrowest_integer(
    tmp_path_factory: pytest.TempPathFactory, steps: list[int]
) -> None:
    root = tmp_path_factory.mktemp("steps")
    (root / "worker_0.log").write_text("".join(f"step: {s}, loss: 1.5\n" for s in steps))
    m = read_run(root).metrics
    assert m["step"].tolist() == steps
    fits32 = all(s < 2**31 for s in steps)
    assert m["step"].dtype == (np.int32 if fits32 else np.int64)


def test_a_step_past_2_31_widens_to_int64_and_an_earlier_snapshot_keeps_its_int32(tmp_path: Path) -> None:
    """Decided: a step > 2**31 is stored (int64), never refused; the widening builds new arrays."""
    log = tmp_path / "worker_0.log"
    log.write_text("step: 2147483646, loss: 1.25\nstep: 2147483647, loss: 1.5\n")
    reader = RunReader(tmp_path)
    reader.refresh()
    first = reader.snapshot().metrics
    assert first["step"].dtype == np.int32
    with open(log, "a") as f:
        f.write("step: 2147483648, loss: 1.75\nstep: 3000000000000, loss: 2.0\n")
    reader.refresh()
    later = reader.snapshot().metrics
    assert later["step"].dtype == np.int64
    assert later["step"].tolist() == [2147483646, 2147483647, 2147483648, 3000000000000]
    assert first["step"].tolist() == [2147483646, 2147483647]  # the handed-out frame never changes
    with open(log, "a") as f:  # a row without a step: the column becomes float64 (NaN), values kept
        f.write("loss: 2.5\n")
    reader.refresh()
    m = reader.snapshot().metrics
    assert m["step"].dtype == np.float64 and m["step"].tolist()[:4] == [2147483646, 2147483647, 2**31, 3e12]
    assert np.isnan(m["step"].iloc[4])


def test_a_column_filled_late_holds_nan_before_and_the_first_snapshot_keeps_no_array(tmp_path: Path) -> None:
    log = tmp_path / "worker_0.log"
    log.write_text("epoch: 1 step: 1, loss is 2.5\n")
    reader = RunReader(tmp_path)
    reader.refresh()
    first = reader.snapshot().metrics
    assert "lr" not in reader.table.arrays() and first["lr"].isna().all()
    with open(log, "a") as f:
        f.write("epoch: 1 step: 2, loss: 2.25, lr: 0.001\n")
    reader.refresh()
    later = reader.snapshot().metrics
    assert later["lr"].tolist()[1] == 0.001 and np.isnan(later["lr"].iloc[0])
    assert len(first) == 1 and first["lr"].isna().all()


_VALUES = (
    st.integers(min_value=-(2**62), max_value=2**62).map(float)
    | st.integers(min_value=-40000, max_value=40000).map(float)
    | st.floats(width=64)  # NaN, inf, -0.0, fractions
    | st.just(float("nan"))
)


@settings(max_examples=150, deadline=None)
@given(
    blocks=st.lists(
        st.tuples(st.sampled_from(["epoch", "step", "loss", "lr"]), st.lists(_VALUES, min_size=1, max_size=6)),
        min_size=1,
        max_size=6,
    ),
    rank=st.integers(min_value=-1, max_value=100000),
)
def test_any_values_in_any_order_read_back_bit_for_bit_and_old_frames_never_change(
    blocks: list[tuple[str, list[float]]], rank: int
) -> None:
    """Whatever the order of whole numbers, NaN, -0.0, fractions and huge counts, each column reads back
    the float64 values it was given, and a frame handed out earlier keeps its values when a column widens."""
    table = MetricTable()
    state = FileState(LogFile(Path("w.log"), "w.log", "worker", rank, "msrun"))
    given_rows: list[np.ndarray] = []
    frames = []
    for name, values in blocks:
        block = np.full((len(values), len(ROW_KEYS)), np.nan)
        block[:, ROW_KEYS.index(name)] = values
        block[:, ROW_KEYS.index("offset")] = np.arange(len(values))
        state.rows.add_block(block)
        table.add(state)
        given_rows.append(block)
        frames.append((table.frame(), np.concatenate(given_rows)))
    for frame, expected in frames:
        for i, key in enumerate(ROW_KEYS):
            got = frame[key].to_numpy(dtype=np.float64)
            assert got.tobytes() == expected[:, i].astype(np.float64).tobytes(), key
        assert (frame["rank"] == rank).all() and (frame["file"] == "w.log").all()
    assert table.nbytes <= len(table) * (8 * 6 + 1)  # at most rank, offset and the 4 columns given, + code


# ----------------------------------------------------------------------------- the Monitor's watcher


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "worker_0.log").write_text(_lossmonitor(600))
    return tmp_path


def test_the_watcher_is_released_when_its_last_session_ends(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    reg = WatcherRegistry(idle_s=1000.0)
    try:
        w = reg.get(("a",), lambda: RunWatcher(folder), session="tab-1")
        assert reg.get(("a",), lambda: RunWatcher(folder), session="tab-2") is w
        assert len(w.snapshot().metrics) == 600
        table = weakref.ref(w.table)
        assert reg.sessions(("a",)) == {"tab-1", "tab-2"}
        assert reg.end_session("tab-1") == [] and w.running  # another tab still shows it
        assert reg.end_session("tab-2") == [("a",)]
        assert not w.running and reg.active() == []
        gc.collect()
        assert table() is None  # the loss table went with it, though the watcher object is still held here
        assert len(w.snapshot().metrics) == 0
    finally:
        reg.close()


def test_a_session_the_server_no_longer_has_releases_its_watcher_at_the_next_reap(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    connected = {"tab-1", "tab-2"}
    reg = WatcherRegistry(idle_s=1000.0, session_alive=connected.__contains__)
    try:
        a = reg.get(("a",), lambda: RunWatcher(folder), session="tab-1")
        b = reg.get(("b",), lambda: RunWatcher(folder), session="tab-2")
        plain = reg.get(("c",), lambda: RunWatcher(folder))  # no session (the CLI, a test): the idle rule only
        assert reg.reap() == []
        connected.discard("tab-1")  # the tab closed: Streamlit no longer lists its session as active
        assert reg.reap() == [("a",)]
        assert not a.running and b.running and plain.running
        assert sorted(reg.active()) == [("b",), ("c",)]
        assert reg.reap(now=time.monotonic() + 5000) == [("b",), ("c",)]  # nobody asked for 1000 s
    finally:
        reg.close()


def test_a_session_that_stopped_asking_for_a_folder_stops_holding_it(tmp_path: Path) -> None:
    """A tab that switched to another folder: after idle_s without asking it no longer holds the first."""
    folder = _folder(tmp_path)
    reg = WatcherRegistry(idle_s=100.0, session_alive=lambda _session: True)
    try:
        reg.get(("a",), lambda: RunWatcher(folder), session="tab-1")
        later = time.monotonic() + 150
        assert reg.reap(now=later) == [("a",)]
    finally:
        reg.close()


def test_a_tab_that_reconnects_within_the_grace_keeps_its_watcher(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    connected = {"tab-1"}
    reg = WatcherRegistry(idle_s=1000.0, session_alive=connected.__contains__, grace_s=3.0)
    try:
        w = reg.get(("a",), lambda: RunWatcher(folder), session="tab-1")
        t = time.monotonic()
        connected.clear()  # the websocket dropped
        assert reg.reap(now=t) == [] and reg.reap(now=t + 2) == []
        connected.add("tab-1")  # ... and came back within 3 s
        assert reg.reap(now=t + 4) == [] and w.running
        connected.clear()  # the tab closed for good: gone since t + 10
        assert reg.reap(now=t + 10) == [] and w.running
        assert reg.reap(now=t + 13.5) == [("a",)] and not w.running
    finally:
        reg.close()


def test_read_run_moving_rows_to_the_table_while_a_log_is_read_keeps_every_row_in_order(tmp_path: Path) -> None:
    """`read_run` takes a long log's rows every `take_rows` (not once at its end): the same rows, rank by rank."""
    from core.logs import ReaderSettings

    for rank in range(3):
        (tmp_path / f"worker_{rank}.log").write_text(NOISE + _lossmonitor(300, rank=rank) + NOISE)
    whole = read_run(tmp_path).metrics
    small = ReaderSettings(read_block=512, prefetch_min=1, block_min=1, compiled_min=0, take_rows=7)
    once = RunReader(tmp_path, settings=small, one_shot=True)
    once.refresh()
    early = once.snapshot().metrics
    assert len(early) == 900
    assert early["rank"].tolist() == [0] * 300 + [1] * 300 + [2] * 300
    cols = ["rank", "epoch", "step", "loss", "offset"]
    assert early[cols].to_numpy().tolist() == whole[cols].to_numpy().tolist()
