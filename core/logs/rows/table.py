"""The run's loss table, grown in place: a live tick copies only the rows that are new since the last
snapshot (issue 14: at 1,024 ranks x 2,000 steps, rebuilding 2 M rows took ~0.5 s per tick).

Compact (issue 31 item 6: ~300 B a row took `watch` to 1.05 GB for a 111 MB log): a LossMonitor row
is 31 B read once, 39 B watched live (its observation time). The loss, the time and every metric
stay float64 (every printed digit survives); step counts are int32 and epoch counts int16 while every
value is a whole number (then int32, int64 past 2**31: a step is never refused; float64 once a row has
none or a fraction); a column no row has filled yet (NaN everywhere, bit for bit) holds no array and
shows as a zero-stride NaN view; a metric beyond the fixed ones lives in a room that reads NaN where
nothing wrote (core.logs.rows.nanroom: the rows that do not name it are never written); rank and offset
are int64, the file a category code of the width pandas uses (so `pd.Categorical.from_codes` never
copies it). No Python object or string per row.

Rows move here from each file's `Rows` (which then keeps only its count and last row), so the table
is the only copy. Every snapshot's DataFrame is a view of the first n rows; rows are only ever added
past n, and anything that must change existing rows (a restarted or vanished file, a column widened)
builds new arrays, so an older snapshot never sees its data change.

Order: the first snapshot holds the rows rank by rank in file order (what `read_run` returns); later
ones add each tick's new rows after them. Within a rank (and a file) rows stay in file order, which is
all the readers of `metrics` rely on (they group by rank). A row's rank is its file's, or the rank its line
names when one stream carries several (core.logs.rows.lineranks: `Rows.take_ranks`); such a file's rows
interleave its ranks, each rank's still in file order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from core.logs.rows.filestate import FileState, note_key
from core.logs.rows.nanroom import NanRooms, copy_values
from core.logs.rows.perfile import Notes, estimate_name, note_epochs_many, note_many, set_aside
from core.logs.rows.room import room
from core.logs.rows.wording import WordedRows
from core.logs.tokens.bulk import ROW_KEYS, Rows

_N_FLOAT = len(ROW_KEYS) - 1  # every row key but the byte offset is a numeric column of the table
_FLOAT_NAMES = list(ROW_KEYS[:_N_FLOAT])
_F64, _I16, _I32, _I64 = np.dtype(np.float64), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64)
_WHOLE: dict[str, np.dtype] = {"epoch": _I16, "epochs_total": _I16, "step": _I32, "steps_total": _I32}
"""Count columns and the width they start at while every value is a whole number (then wider: `_fits`)."""
_LADDER = (_I16, _I32, _I64)
_I64_END = 2.0**63  # floats at or past this do not fit an int64
_CODE_WIDTHS = tuple((int(np.iinfo(t).max), np.dtype(t)) for t in (np.int8, np.int16, np.int32))  # (`code_dtype`)
_NAN_BITS = np.float64(np.nan).view(np.uint64)  # a value the line does not give (what an absent column shows)


@dataclass
class _Source:
    """One file's rows in the table: the `Rows` object it came from (a reset file gets a new one)."""

    rows: Rows
    code: int
    name: str
    notes: Notes = field(default_factory=Notes)  # whether a per-file series rule may apply (core.logs.rows.perfile)


EVAL_COLUMNS = ["rank", "epoch", "step", "name", "value", "time", "offset", "file", "summary"]
"""An evaluation entry: one scalar of an evaluation line (never a training row); `summary`: of a pass's summary
(`core.logs.rows.snapshot.pass_summaries`: DETR's `Averaged stats:` after its `Test: [k/163]` rows), counted
apart from the evaluation rows."""


def code_dtype(n_names: int) -> np.dtype:
    """The code width pandas gives a Categorical of `n_names` categories (`coerce_indexer_dtype`):
    codes stored at that width are taken as they are, any other width is copied per frame."""
    for top, dtype in _CODE_WIDTHS:  # (np.iinfo per call cost a 1,024-file read ~5 ms)
        if n_names < top:
            return dtype
    return _I64


def _fits(values: np.ndarray, dtype: np.dtype) -> np.dtype:
    """The narrowest of `dtype` and the wider integers, else float64, holding every value exactly (NaN,
    inf, -0.0 and fractions need float64). A column only ever widens."""
    if dtype == _F64 or not len(values):
        return dtype
    if not (np.floor(values) == values).all():  # NaN fails this too
        return _F64
    lo, hi = float(values.min()), float(values.max())
    if lo <= 0.0 <= hi and np.signbit(values[values == 0.0]).any():  # `-0` is a float: its sign is kept
        return _F64
    for wide in _LADDER[_LADDER.index(dtype) :]:
        info = np.iinfo(wide)
        if float(info.min) <= lo <= hi < (_I64_END if wide == _I64 else info.max + 1.0):
            return wide
    return _F64


def by_metric(
    parts: Sequence[tuple[int, dict[str, tuple[np.ndarray, np.ndarray]]]],
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Per metric the parts name, in the order first named: its row numbers in the block the parts make one
    after another (each part: its row count, and per metric its row numbers, ascending, and values), ascending,
    and their values. Grouped in a few numpy calls whatever the parts (a tick of ~775 files naming ~270 metrics
    had ~5,000 (file, metric) pairs: a numpy call per pair cost ~10 ms)."""
    ids: dict[str, int] = {}
    pair_ids: list[int] = []
    firsts: list[int] = []
    idxs: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    at = 0
    for n, extras in parts:
        for name, (idx, values) in extras.items():
            pair_ids.append(ids.setdefault(name, len(ids)))
            firsts.append(at)
            idxs.append(idx)
            vals.append(values)
        at += n
    if not ids:
        return []
    lens = np.fromiter((len(i) for i in idxs), dtype=np.int64, count=len(idxs))
    rows = np.concatenate(idxs).astype(np.int64, copy=False) + np.repeat(np.array(firsts, dtype=np.int64), lens)
    values = np.concatenate(vals).astype(np.float64, copy=False)
    per_row = np.repeat(np.array(pair_ids, dtype=np.int64), lens)
    if len(ids) > 1:
        order = np.argsort(per_row, kind="stable")  # stable: a metric's rows stay in block order
        rows, values = rows[order], values[order]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(per_row, minlength=len(ids)))))
    return [(name, rows[bounds[k] : bounds[k + 1]], values[bounds[k] : bounds[k + 1]]) for name, k in ids.items()]


class _Column:
    """One numeric column: no array while every row is NaN; then an integer while every value is a
    whole number (count columns only, from `start`), else float64. Widening builds a new array (never in
    place). A metric beyond the fixed ones (`nan`: the table's NaN rooms, core.logs.rows.nanroom) is float64 in a
    room that reads NaN where nothing wrote: a tick writes only the rows that name it (`scatter`)."""

    __slots__ = ("arr", "nan", "start")

    def __init__(self, start: np.dtype = _F64, nan: NanRooms | None = None) -> None:
        self.arr: np.ndarray | None = None
        self.start = start
        self.nan = nan

    def put(self, start: int, values: np.ndarray, cap: int) -> None:
        """Rows start:start+len(values), as float64 values (NaN: none)."""
        arr = self.arr
        if arr is None:
            if (values.view(np.uint64) == _NAN_BITS).all():
                return  # still NaN everywhere (bit for bit what the view shows: `-nan` is stored)
            arr = self._widen(_fits(values, self.start) if start == 0 else _F64, start, cap)
        elif arr.dtype != _F64:
            need = _fits(values, arr.dtype)
            if need != arr.dtype:
                arr = self._widen(need, start, cap)
        arr[start : start + len(values)] = values

    def scatter(self, start: int, end: int, rows: np.ndarray, values: np.ndarray, cap: int) -> None:
        """Of a NaN-room column, rows start + `rows` (ascending, each once) set to `values`; every other row of
        start:end stays NaN (the room's, unwritten): `put` of the block's full column, without its NaN."""
        arr = self.arr
        if arr is None:
            if (values.view(np.uint64) == _NAN_BITS).all():
                return
            assert self.nan is not None
            arr = self.arr = self.nan.room(cap)  # every row so far NaN: nothing to copy
        if len(rows) == end - start:
            arr[start:end] = values
        else:
            arr[start + rows] = values

    def moved(self, arr: np.ndarray, cap: int) -> np.ndarray:
        """`arr` (rows already cut and picked) at the head of a fresh room of `cap` rows."""
        if self.nan is not None:
            fresh = self.nan.room(cap)
            copy_values(fresh, arr)  # its NaN rows left unwritten (the room reads NaN there)
            return fresh
        fresh = room(cap, arr.dtype)
        fresh[: len(arr)] = arr
        return fresh

    def _widen(self, dtype: np.dtype, n: int, cap: int) -> np.ndarray:
        """The column as `dtype` in a fresh array of `cap` rows (its first `n` kept); returns it."""
        fresh = room(cap, dtype)
        if n:  # a column NaN so far is float64 (only a first block starts an integer one)
            fresh[:n] = np.nan if self.arr is None else self.arr[:n]
        self.arr = fresh
        return fresh

    def view(self, n: int) -> np.ndarray:
        return np.broadcast_to(np.float64(np.nan), (n,)) if self.arr is None else self.arr[:n]


def _first_valued(extras: dict[str, tuple[np.ndarray, np.ndarray]], name: str) -> int:
    """The first row metric `name` has a value on (not NaN), or a number past every row if it has none."""
    rows, values = extras[name]
    valued = rows[values == values]
    return int(valued.min()) if len(valued) else 1 << 62


class MetricTable:
    """Append-only column store of a run's loss rows: one compact array per column (see the module
    docstring), grown with room to spare (pages never written cost no memory)."""

    def __init__(self) -> None:
        self._cols: dict[str, _Column] = {k: _Column(_WHOLE.get(k, _F64)) for k in _FLOAT_NAMES}
        self._fixed: dict[str, np.ndarray] = {
            "rank": np.empty(0, dtype=np.int64),  # int64 as ever (readers compare and index with it)
            "offset": np.empty(0, dtype=np.int64),
            "code": np.empty(0, dtype=code_dtype(0)),
        }
        self._cap = 0
        self._n = 0
        self._sources: dict[int, _Source] = {}  # id(Rows) -> where its rows are (the Rows is kept alive)
        self._names: list[str] = []  # file name per code
        self._extra_names: list[str] = []  # metrics beyond ROW_KEYS, in the order first seen
        self._nan = NanRooms()  # their columns' storage (core.logs.rows.nanroom)
        self.generation = 0  # bumped whenever rows already here are removed or renumbered (`_drop`)
        self._row_sums: dict[str, tuple[int, int, np.ndarray]] = {}  # (generation, rows summed, sums): `_per_row`
        self._worded = WordedRows()  # each row's loss key wordings, flagged once (`worded`)

    @property
    def extra_names(self) -> list[str]:
        """The metric columns beyond the fixed ones (every other `key: number` of the loss lines)."""
        return list(self._extra_names)

    def __len__(self) -> int:
        return self._n

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array the rows are stored in, cut to the rows (a column NaN everywhere has none)."""
        out = {k: a[: self._n] for k, a in self._fixed.items()}
        out.update((k, c.arr[: self._n]) for k, c in self._cols.items() if c.arr is not None)
        return out

    @property
    def nbytes(self) -> int:
        """Bytes the rows take (capacity reserved past them is not counted: its pages are never written)."""
        return sum(a.nbytes for a in self.arrays().values())

    def update(self, workers: Sequence[FileState]) -> None:
        """Take every worker file's new rows; drop the rows of files that restarted or went away."""
        current = {id(st.rows) for st in workers}
        gone = [src for key, src in self._sources.items() if key not in current]
        if gone:
            self._drop(gone)
        self._take(workers)

    def add(self, st: FileState) -> None:
        """Take the rows `st` parsed since the last take (after the rows already here)."""
        self._take([st])

    def add_many(self, files: Sequence[FileState]) -> None:
        """`add` of each of `files`, in order, in one write per column (a batch of small logs)."""
        self._take(files)

    def _source(self, st: FileState) -> _Source:
        src = self._sources.get(id(st.rows))
        if src is None:
            src = self._sources[id(st.rows)] = _Source(st.rows, len(self._names), st.info.rel)
            self._names.append(st.info.rel)
            self._retype("code", code_dtype(len(self._names)))
        elif src.name != st.info.rel:  # log rotation: the same rows now live under the file's new name
            src.name = self._names[src.code] = st.info.rel
        return src

    def _take(self, files: Sequence[FileState]) -> None:
        """The new rows of `files`, file after file, in one write per column: a live tick of 1,024 files
        with a row each costs a dozen numpy calls, not a dozen per file."""
        parts = []  # (source, rank, rows, other metrics) per file with new rows
        named = []  # (where the file's rows start in the block, row numbers, ranks their lines name)
        at = 0
        for st in files:
            src = self._source(st)
            if st.rows.untaken:
                line_ranks = st.rows.take_ranks()  # one stream of several ranks (core.logs.rows.lineranks)
                rows, extras = st.rows.take_all()  # the file keeps its count and last row only
                parts.append((src, st.info.rank if st.info.rank is not None else -1, rows, extras))
                if line_ranks is not None:
                    named.append((at, *line_ranks))
                at += len(rows)
        if not parts:
            return
        block = parts[0][2] if len(parts) == 1 else np.concatenate([p[2] for p in parts])
        lengths = np.array([len(p[2]) for p in parts], dtype=np.int64)
        note_many([p[0].notes for p in parts], block, lengths.tolist())  # (core.logs.rows.perfile)
        for src, _, _, extras in parts:  # rows naming an evaluation loss: perfile's estimates rule
            named_eval = [idx[values == values] for name, (idx, values) in extras.items() if estimate_name(name)]
            if named_eval:
                src.notes.estimates += len(np.unique(np.concatenate(named_eval)))
        epochs = [(src.notes, rows, extras) for src, _, rows, extras in parts if src.notes.epoch_only]
        if epochs:  # an epoch printed twice: perfile's step printed twice, by epoch (from a file's first such row on:
            note_epochs_many(*map(list, zip(*epochs, strict=True)))  # a pair across two ticks is noted), one pass
        start, end = self._n, self._n + len(block)
        self.reserve(end)
        for i, name in enumerate(_FLOAT_NAMES):
            self._cols[name].put(start, block[:, i], self._cap)
        for part in parts:  # a metric seen for the first time: in file order (as when files come one by one), and
            new = [name for name in part[3] if name not in self._cols]  # in a file by the first row giving it a value,
            new.sort(key=partial(_first_valued, part[3]))  # whatever path read it (a batch fills
            for name in new:  # NaN on rows of other shapes); stable: a line's own order
                self._cols[name] = _Column(nan=self._nan)
                self._extra_names.append(name)
        for name, rows, values in by_metric([(len(p[2]), p[3]) for p in parts]):
            self._cols[name].scatter(start, end, rows, values, self._cap)  # the rest read NaN (never written)
        self._fixed["rank"][start:end] = np.repeat(np.array([p[1] for p in parts], dtype=np.int64), lengths)
        self._fixed["code"][start:end] = np.repeat(np.array([p[0].code for p in parts], dtype=np.int64), lengths)
        for first, rows, ranks in named:  # the rows whose line names its rank
            self._fixed["rank"][start + first + rows] = ranks
        self._fixed["offset"][start:end] = block[:, _N_FLOAT]
        self._n = end

    def frame(self) -> pd.DataFrame:
        """The first n rows as a DataFrame of views (no copy: pandas keeps one block per column)."""
        return pd.DataFrame(self.frame_columns(), copy=False)

    def frame_columns(self) -> dict[str, object]:
        """`frame`'s columns before pandas holds them (a tick's kept rows read them here: ~290 look-ups through the
        frame cost ~10 ms a tick of the real-corpus folder)."""
        n, fixed = self._n, self._fixed
        data: dict[str, object] = {"rank": fixed["rank"][:n]}
        data.update((k, self._cols[k].view(n)) for k in _FLOAT_NAMES)
        data["offset"] = fixed["offset"][:n]
        data["file"] = pd.Categorical.from_codes(
            fixed["code"][:n], dtype=pd.CategoricalDtype(self._names), validate=False
        )
        data.update((k, self._cols[k].view(n)) for k in self._extra_names)  # the other metrics, after the fixed ones
        return data

    def set_aside(self) -> np.ndarray | None:
        """Per row of the first n, an `Aside` (core.logs.rows.perfile: an epoch summary beside step rows, a step
        printed twice in a rarer shape, an echo of a row in another shape, a step's side rows); None when no file's
        notes say a rule may apply (the cheap path of every tick). Decided over each file's rows so far, so every
        read path (and a tick cut anywhere) gives the same answer once the same rows are read."""
        srcs = [
            src
            for src in self._sources.values()
            if src.notes.any or src.notes.sides or src.rows.averaged or src.rows.echoed or _two_wordings(src)
        ]
        if not srcs:
            return None
        n = self._n
        code = self._fixed["code"][:n]
        asked = [src.code for src in srcs]
        rows = np.flatnonzero(np.isin(code, asked))
        if not len(rows):
            return None
        every = len(rows) == n  # one file (or every file) asked: its columns as they are, no copy
        arrays = {k: self._cols[k].arr for k in _FLOAT_NAMES}
        cols = {k: None if a is None else a[:n] if every else a[rows] for k, a in arrays.items()}
        epoch_codes = [src.code for src in srcs if src.notes.summaries]
        est_codes = [src.code for src in srcs if src.notes.estimating]
        est = self._names_eval_loss(n) if est_codes else None
        sides = [src.code for src in srcs if src.notes.sides], [src.code for src in srcs if not src.notes.any]
        loops = [src.code for src in srcs if src.notes.loops]
        named = self._named(n, None if every else rows) if any(src.notes.epoch_pairs for src in srcs) else None
        bits = self.worded() if every else self.worded()[rows]
        avg, part, trained, echoed = (
            ((bits & (1 << k)) != 0) if any(getattr(s.rows, name) for s in srcs) else None
            for k, name in enumerate(("averaged", "parts", "trained", "echoed"))
        )
        if every:
            rank = self._fixed["rank"][:n]
            return set_aside(
                code, rank, cols, asked, epoch_codes, est, est_codes, *sides, named, avg, part, trained, echoed, loops
            )
        out = np.zeros(n, dtype=np.int8)
        out[rows] = set_aside(
            code[rows],
            self._fixed["rank"][:n][rows],
            cols,
            asked,
            epoch_codes,
            None if est is None else est[rows],
            est_codes,
            *sides,
            named,
            avg,
            part,
            trained,
            echoed,
            loops,
        )
        return out

    def worded(self) -> np.ndarray:
        """Per row of the first n, its loss key's wordings as bits (1 an average's, 2 a part's, 4 training's; 8 a
        second logger's echo, core.logs.rows.echoes), core.logs.rows.wording, each row flagged once (`WordedRows`)."""
        n, fixed = self._n, self._fixed
        files = [
            (s.code, s.rows)
            for s in self._sources.values()
            if s.rows.averaged or s.rows.parts or s.rows.trained or s.rows.echoed
        ]
        return self._worded.flags(self.generation, fixed["code"][:n], fixed["offset"][:n], files)

    def _named(self, n: int, rows: np.ndarray | None) -> np.ndarray:
        """Per row of the first n (or of `rows` among them: the asking files' rows), how many other metrics it names
        (a number). Each row counted once: the rows before n never change (only `_drop` removes or renumbers rows,
        and bumps `generation`), so a tick counts its new rows only (~290 columns over the real-corpus folder's
        26,937 asking rows cost ~30 ms a tick)."""
        counts = self._per_row("named", n, np.int32, lambda part: part == part)
        return (counts[:n] if rows is None else counts[rows]).astype(np.int64)

    def _names_eval_loss(self, n: int) -> np.ndarray:
        """Per row of the first n, whether it names an evaluation loss (a number) among its other columns."""
        return self._per_row("eval_loss", n, np.bool_, lambda part: ~np.isnan(part), estimate_name)[:n]

    def _per_row(
        self,
        key: str,
        n: int,
        dtype: type,
        mark: Callable[[np.ndarray], np.ndarray],
        which: Callable[[str], bool] | None = None,
    ) -> np.ndarray:
        """Per row of the first n, the sum (`|` for bools) of `mark` over the metric columns `which` keeps,
        counted over the rows added since the last call only (a `_drop`, a new `generation`, counts afresh)."""
        gen, done, out = self._row_sums.get(key, (-1, 0, np.zeros(0, dtype=dtype)))
        if gen != self.generation or done > n:
            done, out = 0, np.zeros(0, dtype=dtype)
        if done < n:
            if len(out) < n:  # room for half as many rows again: a tick's few rows do not copy the rest
                grown: np.ndarray = np.zeros(n + n // 2, dtype=dtype)
                grown[:done] = out[:done]
                out = grown
            for name in self._extra_names:
                arr = self._cols[name].arr
                if arr is not None and (which is None or which(name)):
                    out[done:n] += mark(arr[done:n])
            self._row_sums[key] = (self.generation, n, out)
        return out

    def reserve(self, need: int) -> None:
        """Room for `need` rows at least (and half as many more: pages never written cost no memory)."""
        if need <= self._cap:
            return
        # new arrays, never realloc: frames handed out are views of the old ones (and ndarray.resize zero-fills)
        self._replace(slice(0, self._n), max(need + need // 2, 1024))

    def _retype(self, name: str, dtype: np.dtype) -> None:
        """A fixed column widened (or a code narrowed after a drop) into a new array."""
        old = self._fixed[name]
        if old.dtype != dtype:
            self._fixed[name] = room(self._cap, dtype)
            self._fixed[name][: self._n] = old[: self._n]

    def _drop(self, gone: list[_Source]) -> None:
        """Forget the rows of files that restarted (msrun relaunch) or vanished: new arrays, so the
        snapshots already handed out keep theirs; codes are renumbered so file names stay unique."""
        self.generation += 1
        for src in gone:
            del self._sources[id(src.rows)]
        keep_codes = sorted(src.code for src in self._sources.values())
        renumber = np.full(max(len(self._names), 1), -1, dtype=np.int64)
        renumber[keep_codes] = np.arange(len(keep_codes))
        codes = renumber[self._fixed["code"][: self._n]]
        keep = np.flatnonzero(codes >= 0)
        self._replace(keep, max(self._cap, len(keep)))
        self._fixed["code"] = room(self._cap, code_dtype(len(keep_codes)))
        self._fixed["code"][: self._n] = codes[keep]
        self._names = [self._names[c] for c in keep_codes]
        for src in self._sources.values():
            src.code = int(renumber[src.code])

    def _replace(self, keep: np.ndarray | slice, cap: int) -> None:
        """Copy rows `keep` into fresh arrays of capacity `cap` (never write over handed-out rows)."""
        kept = len(range(self._n)[keep]) if isinstance(keep, slice) else len(keep)

        def moved(arr: np.ndarray) -> np.ndarray:
            fresh = room(cap, arr.dtype)
            fresh[:kept] = arr[: self._n][keep]
            return fresh

        self._fixed = {name: moved(arr) for name, arr in self._fixed.items()}
        for col in self._cols.values():
            if col.arr is not None:
                col.arr = col.moved(col.arr[: self._n][keep], cap)
        self._cap, self._n = cap, kept


def _two_wordings(src: _Source) -> bool:
    """Whether a file's rows with an epoch and no step may be of two wordings, one naming training (perfile)."""
    return 0 < len(src.rows.trained) < src.notes.epoch_only


def eval_frame(workers: list[FileState]) -> pd.DataFrame:
    """Every worker file's evaluation entries, rank by rank, built from every entry: the definition the
    snapshots' `EvalTable` (core.logs.rows.evaltable: each entry converted once) is held to."""
    return pd.DataFrame(
        [
            (e[6] if e[6] is not None else st.info.rank if st.info.rank is not None else -1, *e[:6], st.info.rel, e[7])
            for st in workers
            for e in st.evals
        ],
        columns=EVAL_COLUMNS,
    )


def metric_keys(workers: list[FileState]) -> dict[str, str]:
    """Metric column -> the key as the files spell it (`note_key`: one spelling whatever the order)."""
    keys: dict[str, str] = {}
    last: dict[str, str] | None = None
    for st in workers:
        if st.metric_keys == last:  # ranks of one run spell their keys alike: noting them again changes nothing
            continue
        last = st.metric_keys
        for column, key in last.items():
            note_key(keys, column, key)
    return keys
