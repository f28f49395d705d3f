"""core.logs.rows.room: the storage of columns grown in place (the loss table, the kept rows) is `np.empty` in
every way a reader sees, and a large one is mapped without huge pages (a tick's first write into a huge page
stalled it ~5 ms a page: benchmarks/README_logs.md, round 14)."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.bytes.discover import LogFile
from core.logs.rows.filestate import FileState
from core.logs.rows.room import HUGE_MIN, room
from core.logs.rows.table import MetricTable
from core.logs.tokens.bulk import ROW_KEYS

_DTYPES = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.float64)]


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from(_DTYPES), near=st.integers(min_value=-3, max_value=3), small=st.integers(0, 5000))
@example(dtype=np.dtype(np.float64), near=0, small=0)  # exactly numpy's huge-page size: the mapped path
@example(dtype=np.dtype(np.int8), near=-1, small=0)  # one byte under it: np.empty
def test_a_room_reads_and_writes_as_np_empty_at_any_size(dtype: np.dtype, near: int, small: int) -> None:
    """Around the size where room maps its own pages and far below it: the shape, dtype and writability of
    `np.empty`, every value written read back bit for bit, two rooms never share memory, and a view outlives
    the array it was cut from."""
    for n in (HUGE_MIN // dtype.itemsize + near, small):
        a, b = room(n, dtype), room(n, dtype)
        assert a.shape == (n,) and a.dtype == dtype and a.flags.writeable and a.flags.c_contiguous
        values = (np.arange(n) % 127).astype(dtype)
        a[:] = values
        b[:] = 1
        assert a.tobytes() == values.tobytes() and not np.shares_memory(a, b)
        view = a[n // 2 :]
        del a
        gc.collect()
        assert view.tobytes() == values[n // 2 :].tobytes()


def _vm_flags(arr: np.ndarray) -> list[str]:
    """The kernel's flags of the mapping holding the middle of `arr` (/proc/self/smaps `VmFlags`; numpy madvises
    from the array's first page boundary on, so its first bytes sit in a mapping of their own)."""
    at = arr.ctypes.data + arr.nbytes // 2
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= at < hi
        elif inside and head == "VmFlags:":
            return line.split()[1:]
    raise AssertionError("no mapping holds the array")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/smaps is Linux's")
def test_a_large_room_is_mapped_without_huge_pages_and_np_empty_is_not() -> None:
    """`nh` (VM_NOHUGEPAGE) on a large room's mapping; numpy's own array of the same size is madvised `hg`
    (what made the ticks stall: if numpy stops asking for huge pages, this test says so)."""
    n = 2 * HUGE_MIN // 8
    mine, numpys = room(n, np.float64), np.empty(n, dtype=np.float64)
    mine[:] = 0.0
    numpys[:] = 0.0
    assert "nh" in _vm_flags(mine) and "hg" not in _vm_flags(mine)
    assert "hg" in _vm_flags(numpys)


def _owner(arr: np.ndarray) -> object:
    """What holds an array's memory (a view's base's base ...): an ndarray for numpy's own, else the buffer."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr if arr.base is None else arr.base


def test_a_table_grown_past_the_huge_page_size_keeps_every_row_and_its_old_frames() -> None:
    """A loss table whose columns move into mapped rooms (past HUGE_MIN bytes a column) as it grows: every
    frame, the ones handed out before it grew too, reads back the rows it was given bit for bit."""
    table = MetricTable()
    state = FileState(LogFile(Path("w.log"), "w.log", "worker", 3, "msrun"))
    rng = np.random.default_rng(7)
    given_rows: list[np.ndarray] = []
    frames = []
    for n in (1000, HUGE_MIN // 8, 5000, HUGE_MIN // 4):
        block = np.full((n, len(ROW_KEYS)), np.nan)
        block[:, ROW_KEYS.index("step")] = np.arange(n) + sum(len(b) for b in given_rows)
        block[:, ROW_KEYS.index("loss")] = rng.random(n)
        block[:, ROW_KEYS.index("offset")] = np.arange(n) * 10
        state.rows.add_block(block)
        table.add(state)
        given_rows.append(block)
        frames.append((table.frame(), np.concatenate(given_rows)))
    assert any(isinstance(_owner(a), memoryview) for a in table.arrays().values()), "no mapped room: reads nothing new"
    for frame, expected in frames:
        for key in ("step", "loss", "offset"):
            got = frame[key].to_numpy(dtype=np.float64)
            assert got.tobytes() == expected[:, ROW_KEYS.index(key)].tobytes(), key
        assert (frame["rank"] == 3).all()
