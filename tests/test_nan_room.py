"""core.logs.rows.nanroom and the loss table's metric columns in it: a column beyond the fixed ones reads NaN on
every row nothing wrote without a write (a tick wrote NaN into ~270 columns over every new row; the anonymous
memory of the 1,024-rank real-corpus folder's watcher fell from ~1.9 to ~1.3 GB: benchmarks/README_logs.md,
round 15), and every frame the table hands out is the dense frame it was, bit for bit."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs.bytes.discover import LogFile
from core.logs.rows.filestate import FileState
from core.logs.rows.nanroom import NAN_BITS, SMALL, NanRooms, copy_values
from core.logs.rows.table import MetricTable, by_metric
from core.logs.tokens.bulk import ROW_KEYS

_NEG_NAN = -np.float64(np.nan)  # `-nan`: a NaN of other bits, kept as written
_VALUES = st.one_of(
    st.floats(allow_nan=False, width=64),
    st.just(float("nan")),
    st.just(float(_NEG_NAN)),
    st.just(-0.0),
)


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, dtype=np.float64).tobytes()


@settings(max_examples=30, deadline=None)
@given(near=st.integers(-2, 2), small=st.integers(0, 3000), spots=st.lists(st.tuples(st.integers(0), _VALUES)))
@example(near=0, small=0, spots=[(0, 1.0)])  # exactly the size where a room is mapped
def test_a_nan_room_reads_nan_until_written_and_is_its_own(near: int, small: int, spots: list) -> None:
    """Around the mapped size and far below it: float64, writable, NaN of `np.full`'s bits on every row nothing
    wrote, a write read back bit for bit and seen by no other room (an earlier or a later one), and a view
    outlives its array."""
    rooms = NanRooms()
    for n in (SMALL // 8 + near, small):
        a = rooms.room(n)
        assert a.shape == (n,) and a.dtype == np.float64 and a.flags.writeable and a.flags.c_contiguous
        expect = np.full(n, np.nan)
        assert _bits(a) == _bits(expect)
        for at, value in spots:
            if n:
                a[at % n] = expect[at % n] = value
        b = rooms.room(n)
        assert _bits(a) == _bits(expect) and _bits(b) == _bits(np.full(n, np.nan)) and not np.shares_memory(a, b)
        view = a[n // 2 :]
        del a
        gc.collect()
        assert _bits(view) == _bits(expect[n // 2 :])


@settings(max_examples=40, deadline=None)
@given(values=st.lists(_VALUES, max_size=300), big=st.booleans())
def test_copy_values_is_a_slice_copy(values: list[float], big: bool) -> None:
    """Into a NaN room, `copy_values` gives what `fresh[:k] = values` gives, bit for bit (`-nan` kept)."""
    fresh = NanRooms().room(SMALL // 8 if big else 400)
    copy_values(fresh, np.array(values, dtype=np.float64))
    expect = np.full(len(fresh), np.nan)
    expect[: len(values)] = values
    assert _bits(fresh) == _bits(expect)


@st.composite
def _parts(draw: st.DrawFn) -> list[tuple[int, dict[str, tuple[np.ndarray, np.ndarray]]]]:
    """A batch's files: each its row count and, per metric it names, its row numbers (ascending, each once)
    and values."""
    names = draw(st.lists(st.sampled_from(["acc", "grad_norm", "val_loss", "ppl", "lr_x"]), unique=True))
    out = []
    for _ in range(draw(st.integers(0, 6))):
        n = draw(st.integers(0, 8))
        extras = {}
        for name in draw(st.permutations(names)):
            rows = sorted(draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n)) if n else set())
            vals = draw(st.lists(_VALUES, min_size=len(rows), max_size=len(rows)))
            if draw(st.booleans()):
                extras[name] = (np.array(rows, dtype=np.int64), np.array(vals, dtype=np.float64))
        out.append((n, extras))
    return out


def _old_join(parts: list[tuple[int, dict]]) -> dict[str, np.ndarray]:
    """The loop `MetricTable._take` ran before (round 14): per metric, in the order first named, a NaN column of
    the whole block with each file's values written at its rows."""
    total = sum(n for n, _ in parts)
    out: dict[str, np.ndarray] = {}
    at = 0
    for n, extras in parts:
        for name, (idx, values) in extras.items():
            full = out.setdefault(name, np.full(total, np.nan))
            full[at + idx] = values
        at += n
    return out


@settings(max_examples=150, deadline=None)
@given(parts=_parts())
def test_by_metric_is_the_old_per_file_join(parts: list[tuple[int, dict]]) -> None:
    """`by_metric`'s rows and values, written into NaN columns, are the old join's columns bit for bit, its
    metrics in the same order, each metric's rows ascending."""
    old = _old_join(parts)
    got = by_metric(parts)
    assert [name for name, _, _ in got] == list(old)
    total = sum(n for n, _ in parts)
    for name, rows, values in got:
        assert (np.diff(rows) > 0).all()
        full = np.full(total, np.nan)
        full[rows] = values
        assert _bits(full) == _bits(old[name]), name


def _file(rank: int) -> FileState:
    return FileState(LogFile(Path(f"worker_{rank}.log"), f"worker_{rank}.log", "worker", rank, "msrun"))


_BIG = SMALL // 8  # a first block this long puts every metric column in a mapped room


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    ticks=st.lists(
        st.lists(
            st.tuples(
                st.integers(0, 2),  # which file
                st.dictionaries(st.sampled_from(["acc", "val_loss", "grad_norm", "ppl"]), _VALUES, max_size=3),
            ),
            max_size=8,
        ),
        max_size=8,
    ),
    drop_at=st.integers(-1, 8),
    grow_at=st.integers(-1, 8),
)
def test_a_table_of_sparse_metrics_hands_out_the_dense_frames(
    ticks: list[list[tuple[int, dict[str, float]]]], drop_at: int, grow_at: int
) -> None:
    """Three files (one a long first block naming `acc` on every row), then ticks of rows naming any metrics or
    none, a file dropped (its rows go, codes renumbered) and the table grown past its room at chosen ticks:
    every frame handed out, the earlier ones checked after every later change, holds each metric as the dense
    column of the rows given (NaN where a row names none), bit for bit."""
    table = MetricTable()
    files = [_file(r) for r in range(3)]
    given_rows: dict[int, list[dict[str, float]]] = {r: [] for r in range(3)}
    big = np.full((_BIG, len(ROW_KEYS)), np.nan)
    big[:, ROW_KEYS.index("loss")] = np.arange(_BIG) / 7
    big[:, ROW_KEYS.index("offset")] = np.arange(_BIG)
    files[0].rows.add_block(big, {"acc": np.arange(_BIG) / 3})
    given_rows[0] += [{"acc": v} for v in (np.arange(_BIG) / 3).tolist()]
    live = list(files)
    table.update(live)
    frames = [(table.frame(), {r: list(v) for r, v in given_rows.items() if files[r] in live})]
    for k, tick in enumerate(ticks):
        if k == drop_at and len(live) > 1:
            live = live[1:]
        if k == grow_at:  # rows enough to pass the room: every column moves into a larger one
            st_ = live[-1]
            n = 2 * _BIG
            block = np.full((n, len(ROW_KEYS)), np.nan)
            block[:, ROW_KEYS.index("offset")] = np.arange(n)
            st_.rows.add_block(block)
            given_rows[files.index(st_)] += [{} for _ in range(n)]
        for which, extras in tick:
            st_ = live[which % len(live)]
            row = tuple({"loss": 1.0, "offset": 0.0}.get(key, float("nan")) for key in ROW_KEYS)
            st_.rows.append(row, dict(extras))
            given_rows[files.index(st_)].append(dict(extras))
        table.update(live)
        frames.append((table.frame(), {files.index(f): list(given_rows[files.index(f)]) for f in live}))
    for frame, rows_of in frames:
        ranks = frame["rank"].to_numpy()
        for rank, rows in rows_of.items():
            mine = ranks == rank
            assert mine.sum() == len(rows)
            for name in table.extra_names:
                if name in frame.columns:
                    expect = np.array([r.get(name, np.nan) for r in rows], dtype=np.float64)
                    assert _bits(frame[name].to_numpy()[mine]) == _bits(expect), (rank, name)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="memfd_create and /proc/self/maps are Linux's")
def test_a_large_metric_column_is_a_mapping_of_the_nan_file() -> None:
    """On Linux a metric column past SMALL bytes is mapped from the NaN file (what spares the writes); with
    `np.full` rooms instead, this fails."""
    table = MetricTable()
    st_ = _file(0)
    block = np.full((_BIG, len(ROW_KEYS)), np.nan)
    block[:, ROW_KEYS.index("offset")] = np.arange(_BIG)
    st_.rows.add_block(block, {"acc": np.ones(_BIG)})
    table.add(st_)
    start = table.arrays()["acc"].ctypes.data
    maps = Path("/proc/self/maps").read_text().splitlines()
    holder = [
        line
        for line in maps
        if int(line.split()[0].split("-")[0], 16) <= start < int(line.split()[0].split("-")[1], 16)
    ]
    assert holder and "shardscope-nan" in holder[0]
    assert int(np.float64(np.nan).view(np.uint64)) == NAN_BITS
