"""The run's loss table, grown in place: a live tick copies only the rows that are new since the last
snapshot (issue 14: at 1,024 ranks x 2,000 steps, rebuilding 2 M rows took ~0.5 s per tick).

Rows move here from each file's `Rows` (which then keeps only its count and last row), so the table
is the only copy. Every snapshot's DataFrame is a view of the first n rows; rows are only ever added
past n, and anything that must change existing rows (a restarted or vanished file) builds new arrays,
so an older snapshot never sees its data change.

Order: the first snapshot holds the rows rank by rank in file order (what `read_run` returns); later
ones add each tick's new rows after them. Within a rank (and a file) rows stay in file order, which is
all the readers of `metrics` rely on (they group by rank).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.logs.bulk import ROW_KEYS, Rows
from core.logs.filestate import FileState

_N_FLOAT = len(ROW_KEYS) - 1  # every row key but the byte offset is a float column of the table
_FLOAT_NAMES = list(ROW_KEYS[:_N_FLOAT])


@dataclass
class _Source:
    """One file's rows in the table: the `Rows` object it came from (a reset file gets a new one)."""

    rows: Rows
    code: int
    name: str


EVAL_COLUMNS = ["rank", "epoch", "step", "name", "value", "time", "offset", "file"]
"""An evaluation entry: one scalar of an evaluation line (never a training row)."""
_INT_COLUMNS = {"rank": np.int64, "offset": np.int64, "code": np.int32}


class MetricTable:
    """Append-only column store of a run's loss rows: one array per column (float row keys, rank,
    byte offset, file code), grown with room to spare."""

    def __init__(self) -> None:
        self._cols: dict[str, np.ndarray] = {k: np.empty(0, dtype=np.float64) for k in _FLOAT_NAMES}
        self._cols.update({k: np.empty(0, dtype=t) for k, t in _INT_COLUMNS.items()})
        self._n = 0
        self._sources: dict[int, _Source] = {}  # id(Rows) -> where its rows are (the Rows is kept alive)
        self._names: list[str] = []  # file name per code
        self._extra_names: list[str] = []  # metrics beyond ROW_KEYS, in the order first seen

    @property
    def extra_names(self) -> list[str]:
        """The metric columns beyond the fixed ones (every other `key: number` of the loss lines)."""
        return list(self._extra_names)

    def _add_column(self, name: str) -> None:
        """A metric seen for the first time: a new float column, NaN on every row so far."""
        self._cols[name] = np.full(len(self._cols["rank"]), np.nan)
        self._extra_names.append(name)

    def __len__(self) -> int:
        return self._n

    def update(self, workers: Sequence[FileState]) -> None:
        """Take every worker file's new rows; drop the rows of files that restarted or went away."""
        current = {id(st.rows) for st in workers}
        gone = [src for key, src in self._sources.items() if key not in current]
        if gone:
            self._drop(gone)
        self.reserve(self._n + sum(st.rows.untaken for st in workers))
        for st in workers:
            self.add(st)

    def add(self, st: FileState) -> None:
        """Take the rows `st` parsed since the last take (after the rows already here)."""
        src = self._sources.get(id(st.rows))
        if src is None:
            src = self._sources[id(st.rows)] = _Source(st.rows, len(self._names), st.info.rel)
            self._names.append(st.info.rel)
        elif src.name != st.info.rel:  # log rotation: the same rows now live under the file's new name
            src.name = self._names[src.code] = st.info.rel
        if not st.rows.untaken:
            return
        self.reserve(self._n + st.rows.untaken)
        block, extras = st.rows.take_all()  # the file keeps its count and last row only
        start, end = self._n, self._n + len(block)
        cols = self._cols
        for i, name in enumerate(_FLOAT_NAMES):
            cols[name][start:end] = block[:, i]
        # every other metric: NaN on the rows that do not name it; one every row names (rows 0..n-1: `Rows`
        # gives them in order, each once) is copied whole
        whole = {name for name, (rows, _) in extras.items() if len(rows) == end - start}
        for name in self._extra_names:
            if name not in whole:
                cols[name][start:end] = np.nan
        for name, (rows, values) in extras.items():
            if name not in cols:
                self._add_column(name)
            if name in whole:
                cols[name][start:end] = values
            else:
                cols[name][start + rows] = values
        cols["offset"][start:end] = block[:, _N_FLOAT]
        cols["rank"][start:end] = st.info.rank if st.info.rank is not None else -1
        cols["code"][start:end] = src.code
        self._n = end

    def frame(self) -> pd.DataFrame:
        """The first n rows as a DataFrame of views (no copy: pandas keeps one block per column)."""
        n, cols = self._n, self._cols
        data: dict[str, object] = {"rank": cols["rank"][:n]}
        data.update((k, cols[k][:n]) for k in _FLOAT_NAMES)
        data["offset"] = cols["offset"][:n]
        data["file"] = pd.Categorical.from_codes(
            cols["code"][:n], dtype=pd.CategoricalDtype(self._names), validate=False
        )
        data.update((k, cols[k][:n]) for k in self._extra_names)  # the other metrics, after the fixed ones
        return pd.DataFrame(data, copy=False)

    def reserve(self, need: int) -> None:
        """Room for `need` rows at least (and half as many more: pages never written cost no memory)."""
        cap = len(self._cols["rank"])
        if need <= cap:
            return
        # room for live ticks (np.empty: pages never written cost no memory); new arrays, never
        # realloc: frames handed out are views of the old ones (and ndarray.resize zero-fills)
        self._replace(slice(0, self._n), max(need + need // 2, 1024))

    def _drop(self, gone: list[_Source]) -> None:
        """Forget the rows of files that restarted (msrun relaunch) or vanished: new arrays, so the
        snapshots already handed out keep theirs; codes are renumbered so file names stay unique."""
        for src in gone:
            del self._sources[id(src.rows)]
        keep_codes = sorted(src.code for src in self._sources.values())
        renumber = np.full(max(len(self._names), 1), -1, dtype=np.int32)
        renumber[keep_codes] = np.arange(len(keep_codes), dtype=np.int32)
        keep = np.flatnonzero(renumber[self._cols["code"][: self._n]] >= 0)
        self._replace(keep, max(len(self._cols["rank"]), len(keep)))
        self._cols["code"][: self._n] = renumber[self._cols["code"][: self._n]]
        self._names = [self._names[c] for c in keep_codes]
        for src in self._sources.values():
            src.code = int(renumber[src.code])

    def _replace(self, keep: np.ndarray | slice, cap: int) -> None:
        """Copy rows `keep` into fresh arrays of capacity `cap` (never write over handed-out rows)."""
        kept = len(range(self._n)[keep]) if isinstance(keep, slice) else len(keep)
        fresh = {}
        for name, col in self._cols.items():
            fresh[name] = np.empty(cap, dtype=col.dtype)
            fresh[name][:kept] = col[: self._n][keep]
        self._cols, self._n = fresh, kept


def eval_frame(workers: list[FileState]) -> pd.DataFrame:
    """Every worker file's evaluation entries, rank by rank (a few per epoch: rebuilt per snapshot)."""
    return pd.DataFrame(
        [
            (st.info.rank if st.info.rank is not None else -1, *e[:5], e[5], st.info.rel)
            for st in workers
            for e in st.evals
        ],
        columns=EVAL_COLUMNS,
    )


def metric_keys(workers: list[FileState]) -> dict[str, str]:
    """Metric column -> the key as the first file that has it spells it."""
    keys: dict[str, str] = {}
    for st in workers:
        for column, key in st.metric_keys.items():
            keys.setdefault(column, key)
    return keys
