"""The training rows a file's series choice keeps (core.logs.rows.perfile), held between a live reader's
snapshots: `split_series` (core.logs.rows.snapshot) copied every column of the whole table on every tick as
soon as one file set one row aside (~300k rows x 60 columns on the 1,024-rank real-corpus folder: ~120 ms of
a tick at 512 ranks). Here the kept rows are compacted once and each tick appends its own new kept rows; the
copy is built again only when what it was built from changed: an earlier row's choice (a file's choice is
decided over its rows so far and can flip), the table's rows (a file dropped: rotation, truncation, a
relaunch) or its columns (a metric added, a column's type widened). Past the rows a snapshot shows, arrays
are only ever appended to, and rebuilt into new arrays, so a frame handed out never changes. The float64
columns (the table's metrics, most NaN on most rows) are as sparse as the table's (`_Sparse`: no array while
NaN on every kept row, else a NaN room written only where a value is): ~705 MB written NaN on that folder's
first snapshot before, ~25 MB of pages now.

Same frames as `split_series` on the same input, every time (tests/test_kept_rows.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from core.logs.rows.nanroom import NAN_BITS, NanRooms, copy_values
from core.logs.rows.perfile import Aside
from core.logs.rows.room import room
from core.logs.rows.snapshot import eval_entries, with_entries, with_kept_facts

__all__ = ["KeptRows"]


class _Grown:
    """One column's kept values: appended to, with room to spare (rows past `n` never shown); a full array
    is replaced by a larger new one, never resized in place."""

    __slots__ = ("arr", "n")

    def __init__(self, dtype: np.dtype) -> None:
        self.arr = np.empty(0, dtype=dtype)
        self.n = 0

    def append(self, values: np.ndarray) -> None:
        """`values` after the rows held (a fresh array, as a fancy index gives: the first one is held as it is,
        no second copy of a whole read's rows; a tick's rows after it then move it into room to spare)."""
        if not self.n:
            self.arr, self.n = values, len(values)
            return
        end = self.n + len(values)
        if end > len(self.arr):
            fresh = room(max(end + end // 2, 1024), self.arr.dtype)
            fresh[: self.n] = self.arr[: self.n]
            self.arr = fresh
        self.arr[self.n : end] = values
        self.n = end

    def view(self, k: int) -> np.ndarray:
        return self.arr[:k]


class _Sparse:
    """One float64 column's kept values as the table holds its metrics (core.logs.rows.nanroom): no array while
    every kept row is NaN (`NAN_BITS`: shown as the zero-stride NaN view), then a NaN room written only at the
    rows that hold a value, so a column valued on a few rows backs a few pages, not every kept row. Appended to
    past `n` only; a full room is replaced by a larger new one (its valued rows copied), never written below `n`.

    Why: the 1,024-rank real-corpus folder keeps ~213k rows x ~434 columns, most metrics named by a few files:
    written densely they held ~705 MB (the table itself backs only the pages a value lands on)."""

    __slots__ = ("arr", "n", "rooms")

    def __init__(self, rooms: NanRooms) -> None:
        self.arr: np.ndarray | None = None
        self.n = 0
        self.rooms = rooms

    def append(self, values: np.ndarray) -> None:
        """`values` after the rows held; only those that are not `NAN_BITS` are written."""
        start, end = self.n, self.n + len(values)
        at = np.flatnonzero(values.view(np.uint64) != NAN_BITS)
        self.n = end
        if self.arr is None and not len(at):
            return  # NaN on every kept row so far: no array (the zero-stride view)
        if self.arr is None or end > len(self.arr):  # (a room shorter than the rows would cut the view short)
            fresh = self.rooms.room(max(end + end // 2, 1024))
            if self.arr is not None:
                copy_values(fresh, self.arr[:start])
            self.arr = fresh
        if len(at) == len(values):
            self.arr[start:end] = values
        elif len(at):
            self.arr[start + at] = values[at]

    def view(self, k: int) -> np.ndarray:
        return np.broadcast_to(np.float64(np.nan), (k,)) if self.arr is None else self.arr[:k]


@dataclass
class _Held:
    """The kept rows of the table's first `len(aside)` rows, and what the ranks and evaluations take from them."""

    layout: tuple
    aside: np.ndarray  # the choice of every row it was built from
    cols: dict[str, _Grown | _Sparse | None]  # None: a column NaN on every row (the table's zero-stride view)
    entries: pd.DataFrame | None = None  # the evaluation rows' entries (`eval_entries`)
    hit: set[int] = field(default_factory=set)  # ranks with a row set aside
    count: dict[int, int] = field(default_factory=dict)  # rank -> its kept rows
    last: dict[int, int] = field(default_factory=dict)  # rank -> where its last kept row is
    k: int = 0  # kept rows


class KeptRows:
    """`split_series` for a reader that snapshots again and again: the kept rows held between snapshots."""

    def __init__(self) -> None:
        self._held: _Held | None = None
        self._rooms = NanRooms()  # the float64 columns' storage (`_Sparse`), kept across rebuilds

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays the kept rows are held in, cut to the kept rows (room past them is never written);
        a column NaN on every kept row holds none (as `MetricTable.nbytes`)."""
        held = self._held
        if held is None:
            return 0
        return sum(col.view(held.k).nbytes for col in held.cols.values() if col is not None and col.arr is not None)

    def split(
        self,
        metrics: pd.DataFrame,
        aside: np.ndarray | None,
        evals: pd.DataFrame,
        ranks: pd.DataFrame,
        generation: int,
        columns: Mapping[str, object] | None = None,
    ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
        """`split_series(metrics, aside, evals, ranks)`, where `metrics` is the table's first rows (views) and
        `generation` changes whenever rows already in the table were removed or renumbered; `columns`, when given,
        the values `metrics` was made of (`MetricTable.frame_columns`), read without a look-up through pandas."""
        if aside is None or not aside.any():
            self._held = None  # nothing set aside: the table's own view, and no copy kept
            return metrics, evals, ranks
        arrays, cats = _arrays(metrics) if columns is None else _given(columns)
        layout = (generation, *((c, a.dtype, a.strides == (0,)) for c, a in arrays.items()))
        held = self._held
        m = 0 if held is None else len(held.aside)
        if held is None or held.layout != layout or m > len(aside) or not np.array_equal(held.aside, aside[:m]):
            held = _Held(layout, aside[:0], {c: self._held_column(a, c in cats) for c, a in arrays.items()})
            m = 0
        _append(held, arrays, cats, aside, m)
        self._held = held
        data = {c: _column(held, c, cats.get(c)) for c in metrics.columns}
        kept = pd.DataFrame(data, copy=False)

        def facts(which: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
            order = which.tolist()
            n_loss = np.array([held.count.get(r, 0) for r in order], dtype=np.int64)
            at = np.array([held.last.get(r, -1) for r in order], dtype=np.int64)
            lasts = []
            for name in ("epoch", "step", "loss"):
                col = held.cols[name]
                values = np.full(len(at), np.nan)
                if col is not None:
                    values[at >= 0] = col.view(held.k)[at[at >= 0]]
                lasts.append(values)
            return n_loss, lasts

        return kept, with_entries(evals, held.entries), with_kept_facts(ranks, held.hit, facts)

    def _held_column(self, values: np.ndarray, cat: bool) -> _Grown | _Sparse | None:
        """Where a table column's kept values go: None for the table's zero-stride NaN view, a NaN room written
        only where a value is for a float64 column (the table's metrics, mostly NaN), else a dense array."""
        if values.strides == (0,):
            return None
        if not cat and values.dtype == np.float64:
            return _Sparse(self._rooms)
        return _Grown(values.dtype)


def _arrays(metrics: pd.DataFrame) -> tuple[dict[str, np.ndarray], dict[str, pd.CategoricalDtype]]:
    """Each column's values as the table holds them (the file column as its category codes), and the type of
    each categorical column."""
    out, cats = {}, {}
    for c in metrics.columns:
        col = metrics[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            out[c], cats[c] = col.cat.codes.to_numpy(), col.dtype
        else:
            out[c] = col.to_numpy()
    return out, cats


def _given(columns: Mapping[str, object]) -> tuple[dict[str, np.ndarray], dict[str, pd.CategoricalDtype]]:
    """`_arrays` of the columns a frame was made of (an ndarray, or a Categorical: its codes and type)."""
    out: dict[str, np.ndarray] = {}
    cats: dict[str, pd.CategoricalDtype] = {}
    for c, col in columns.items():
        if isinstance(col, pd.Categorical):
            out[c], cats[c] = col.codes, col.dtype
        else:
            out[c] = np.asarray(col)
    return out, cats


def _append(
    held: _Held, arrays: dict[str, np.ndarray], cats: dict[str, pd.CategoricalDtype], aside: np.ndarray, m: int
) -> None:
    """Rows m: of the table into `held`: the kept ones appended, the ranks' counts and last rows, the ranks with
    a row set aside, the evaluation rows' entries."""
    new = aside[m:]
    keep = np.flatnonzero(new == Aside.KEEP) + m
    start = held.k
    for c, col in held.cols.items():
        if col is not None:
            col.append(arrays[c][keep])
    rank = arrays["rank"]
    if len(keep):
        ranks = rank[keep]
        seen, counts = np.unique(ranks, return_counts=True)
        _, from_end = np.unique(ranks[::-1], return_index=True)  # (sorted alike: the same ranks)
        ends = start + len(ranks) - 1 - from_end
        for r, n, end in zip(seen.tolist(), counts.tolist(), ends.tolist(), strict=True):
            held.count[r] = held.count.get(r, 0) + n
            held.last[r] = end
    held.hit.update(rank[m:][new != Aside.KEEP].tolist())
    held.k += len(keep)
    moved = np.flatnonzero(new == Aside.EVAL) + m
    if len(moved):
        got = {c: a[moved] for c, a in arrays.items()}

        def values(c: str) -> list:
            if c in cats:  # a categorical's values, as `Series.tolist` gives them (a missing one: NaN)
                names = cats[c].categories
                return [names[i] if i >= 0 else np.nan for i in got[c].tolist()]
            return got[c].tolist()

        # a metric these rows give no value of gives no entry: left out before the entries are walked (a corpus
        # tick's ~100 such rows x ~430 metrics, a few of them valued: ~8 -> ~2 ms)
        named = [c for c, v in got.items() if c == "loss" or c in cats or v.dtype.kind != "f" or (v == v).any()]
        more = eval_entries(values, named)
        if more is not None:
            held.entries = more if held.entries is None else pd.concat([held.entries, more], ignore_index=True)
    held.aside = aside


def _column(held: _Held, c: str, cat: pd.CategoricalDtype | None) -> object:
    """Column `c` of the kept rows: a view of the held values (a categorical's over its codes)."""
    col, k = held.cols[c], held.k
    if col is None:
        return np.broadcast_to(np.float64(np.nan), (k,))
    if cat is not None:
        return pd.Categorical.from_codes(col.view(k), dtype=cat, validate=False)
    return col.view(k)
