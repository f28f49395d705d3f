"""A run's TimeMonitor rows kept as columns between snapshots (core.logs.rows.snapshot.TimingTable): each tuple
converted once, the frame `timing_frame` builds from every tuple, row for row and dtype for dtype, through
ticks that append, truncate (a relaunch) and rotate; a frame handed out never changes; tuples of other types
build the frame as `timing_frame` does. Lines: MindEarth's TimeMonitor (corpus mindearth-graphcast_mindspore-docs,
graphcast_train.log), MindYOLO's step time (openmpi-segfault-after-loss_mindyolo-242, train.log)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs.bytes.discover import LogRole
from core.logs.rows.filestate import FileState
from core.logs.rows.reader import RunReader, file_order
from core.logs.rows.snapshot import TIMING_COLUMNS, TimingTable, timing_frame
from tests.helpers import frames_held_each_tick

TIME_MONITOR = b"Train epoch time: 77295.547 ms, per step time: 191.800 ms\n"
LOSS = b"epoch: 1 step: 403, loss is 0.003921998\n"
YOLO = b"  2023-11-03 17:50:49,478 [INFO] Epoch 2/100, Step 600/924, step time: 305.22 ms\n"
OTHER = b"2023-11-03 17:50:49,478 [INFO] saving checkpoint\n"
LINES = [TIME_MONITOR, LOSS, YOLO, OTHER]


def _workers(reader: RunReader) -> list[FileState]:
    return sorted((s for s in reader.files.values() if s.info.role == LogRole.WORKER), key=file_order)


def test_the_real_lines_give_timing_frames_rows(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_bytes(LOSS + TIME_MONITOR)
    (tmp_path / "worker_1.log").write_bytes(YOLO + OTHER)
    reader = RunReader(tmp_path)
    reader.refresh()
    table = TimingTable()
    got = table.frame(_workers(reader))
    pd.testing.assert_frame_equal(got, timing_frame(_workers(reader)), check_exact=True)
    assert got["rank"].tolist() == [0, 1] and got["step_time_ms"].tolist() == [191.8, 305.22]
    assert got["step"].tolist() == [403.0, 924 + 600.0]  # the TimeMonitor's step is its loss row's
    kept = got.copy(deep=True)
    with open(tmp_path / "worker_0.log", "ab") as f:
        f.write(TIME_MONITOR)
    reader.refresh()
    again = table.frame(_workers(reader))
    pd.testing.assert_frame_equal(again, timing_frame(_workers(reader)), check_exact=True)
    assert len(again) == 3
    pd.testing.assert_frame_equal(got, kept, check_exact=True)  # the frame handed out before is unchanged


def _read(root: Path, logs: list[bytes]) -> RunReader:
    """A live reader that has read `logs` (rank by rank) under `root`."""
    for rank, data in enumerate(logs):
        (root / f"worker_{rank}.log").write_bytes(data)
    reader = RunReader(root)
    reader.refresh()
    return reader


def test_no_timings_gives_the_empty_frame_of_timing_columns(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_bytes(LOSS)
    reader = RunReader(tmp_path)
    reader.refresh()
    got = TimingTable().frame(_workers(reader))
    assert list(got.columns) == TIMING_COLUMNS and got.empty
    pd.testing.assert_frame_equal(got, timing_frame(_workers(reader)))


@pytest.mark.parametrize(
    "odd",
    [
        (1, 2.0, 3.0, 4.0, 5.0, 6),
        (np.float64(1.0), 2.0, 3.0, 4.0, 5.0, 6),
        (1.0, 2.0, 3.0, 4.0, 5.0, 6.0),
        (1.0, 2.0, 3.0, 4.0, 5.0, 2**53 + 1),  # an offset a float64 does not hold exactly
        (None,),
    ],
)
def test_tuples_of_other_types_build_the_frame_as_timing_frame_does(tmp_path: Path, odd: tuple) -> None:
    """An int epoch, a numpy float, a float offset, an offset past 2**53, a short tuple: pandas' own inference
    decides their dtypes, as in `timing_frame`, and the table does not keep a block it cannot convert exactly."""
    reader = _read(tmp_path, [LOSS + TIME_MONITOR] * 2)
    workers = _workers(reader)
    table = TimingTable()
    table.frame(workers)
    workers[1].timings.append(odd)
    pd.testing.assert_frame_equal(table.frame(workers), timing_frame(workers), check_exact=True)
    workers[1].timings.pop()
    pd.testing.assert_frame_equal(table.frame(workers), timing_frame(workers), check_exact=True)


# a tick: (rank, its new lines, what happens to the file first: 0 nothing, 1 truncated, 2 rotated)
_TICK = st.lists(
    st.tuples(st.integers(0, 2), st.lists(st.sampled_from(LINES), max_size=5), st.integers(0, 2)),
    min_size=1,
    max_size=3,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ticks=st.lists(_TICK, min_size=1, max_size=5))
@example(ticks=[[(0, [TIME_MONITOR], 0)], [(0, [LOSS, TIME_MONITOR], 1)], [(0, [YOLO], 2)]])
def test_every_tick_s_frame_is_the_one_built_from_every_tuple(
    tmp_path_factory: pytest.TempPathFactory, ticks: list[list[tuple[int, list[bytes], int]]]
) -> None:
    """After each tick (lines appended, a file truncated and written again, a file rotated away and a new one
    begun) the kept frame is `timing_frame` of the same files, and every earlier frame is as it was handed out."""
    root = tmp_path_factory.mktemp("timings")
    reader, table = _read(root, [LOSS + TIME_MONITOR] * 3), TimingTable()

    def write(n: int, tick: object) -> None:
        for rank, lines, what in tick:  # type: ignore[attr-defined]
            path = root / f"worker_{rank}.log"
            if what == 1:
                path.write_bytes(b"")
            elif what == 2:
                os.rename(path, root / f"worker_{rank}.log.{n}")
                path.write_bytes(b"")
            with path.open("ab") as f:
                f.write(b"".join(lines))

    frames_held_each_tick(
        ticks, write, reader.refresh, lambda: table.frame(_workers(reader)), lambda: timing_frame(_workers(reader))
    )
