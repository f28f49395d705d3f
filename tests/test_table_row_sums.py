"""The loss table's per-row sums over its metric columns (core.logs.rows.table `MetricTable._named`,
`_names_eval_loss`: perfile's epoch-printed-twice and estimates rules), counted once per row as ticks add rows (a
tick counted ~290 columns over every asking row again: ~30 ms of the real-corpus folder's tick,
benchmarks/README_logs.md round 16), are the sums over the whole table at every tick, across a file dropped and the
table grown past its room."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs.bytes.discover import LogFile
from core.logs.rows.filestate import FileState
from core.logs.rows.perfile import estimate_name
from core.logs.rows.table import MetricTable
from core.logs.tokens.bulk import ROW_KEYS

_NAMES = ["acc", "val_loss", "grad_norm", "test_loss"]
_VALUES = st.one_of(st.floats(-1e3, 1e3), st.just(float("nan")), st.just(float(-np.float64(np.nan))))


def _file(rank: int) -> FileState:
    return FileState(LogFile(Path(f"worker_{rank}.log"), f"worker_{rank}.log", "worker", rank, "msrun"))


def _dense(table: MetricTable) -> tuple[np.ndarray, np.ndarray]:
    """The definitions over the whole table: per row, how many metric columns hold a number, and whether an
    evaluation loss's does."""
    n = len(table)
    arrays = table.arrays()
    cols = [arrays[name] for name in table.extra_names if name in arrays]
    named = sum((c == c).astype(np.int64) for c in cols) if cols else np.zeros(n, dtype=np.int64)
    evals = [arrays[name] for name in table.extra_names if name in arrays and estimate_name(name)]
    eval_loss = np.zeros(n, dtype=bool)
    for c in evals:
        eval_loss |= c == c
    return np.asarray(named, dtype=np.int64), eval_loss


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ticks=st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 2), st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=3))),
            st.booleans(),  # whether the rules ask this tick (a tick that does not leaves its rows to the next ask)
        ),
        max_size=10,
    ),
    drop_at=st.integers(-1, 10),
    grow_at=st.integers(-1, 10),
    data=st.data(),
)
def test_the_row_sums_are_the_whole_tables_at_every_tick(
    ticks: list[tuple[list[tuple[int, dict[str, float]]], bool]], drop_at: int, grow_at: int, data: st.DataObject
) -> None:
    table = MetricTable()
    live = [_file(r) for r in range(3)]
    for k, (rows, ask) in enumerate(ticks):
        if k == drop_at and len(live) > 1:
            live = live[1:]  # its rows go, the rest renumbered: counted afresh
        if k == grow_at:
            block = np.full((3000, len(ROW_KEYS)), np.nan)
            block[:, ROW_KEYS.index("offset")] = np.arange(3000)
            live[-1].rows.add_block(block, {"acc": np.where(np.arange(3000) % 3 == 0, 1.5, np.nan)})
        for which, extras in rows:
            row = tuple({"loss": 1.0, "offset": 0.0}.get(key, float("nan")) for key in ROW_KEYS)
            live[which % len(live)].rows.append(row, dict(extras))
        table.update(live)
        if not ask:
            continue
        n = len(table)
        named, eval_loss = _dense(table)
        got = table._named(n, None)
        assert got.dtype == np.int64
        assert got.tolist() == named.tolist()
        pick = np.array(sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=20))), dtype=np.int64)
        pick = pick[pick < n]
        assert table._named(n, pick).tolist() == named[pick].tolist()
        assert table._names_eval_loss(n).tolist() == eval_loss.tolist()
