"""What a read of a run's logs hands over: `RunSnapshot` and the frames it is built of (pure functions of the
files' parse state, `core.logs.rows.filestate`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd

from core.logs.bytes.discover import LogFile
from core.logs.bytes.rawio import line_number
from core.logs.rows.filestate import FATAL_KINDS, JOB_RANK, ErrorKind, ErrorRow, FileState
from core.logs.rows.perfile import Aside
from core.logs.rows.runranks import jobs_word, launcher_reports, stream_ranks
from core.logs.rows.table import EVAL_COLUMNS

__all__ = [
    "ERROR_COLUMNS",
    "METRIC_COLUMNS",
    "TIMING_COLUMNS",
    "RunSnapshot",
    "SideFrames",
    "empty_metrics",
    "error_frame",
    "eval_entries",
    "pass_summaries",
    "rank_table",
    "split_series",
    "timing_frame",
    "with_entries",
    "with_kept_facts",
]

METRIC_COLUMNS = [
    "rank",
    "epoch",
    "step",
    "epochs_total",
    "steps_total",
    "loss",
    "step_time_ms",
    "lr",
    "time",
    "offset",
    "file",
]
TIMING_COLUMNS = ["rank", "epoch", "step", "epoch_time_ms", "step_time_ms", "time", "offset", "file"]
ERROR_COLUMNS = ["rank", "kind", "message", "context", "line", "offset", "file", "pid", "time", "log_time"]
_NAN = float("nan")
_NOT_EVAL = frozenset({"rank", "epoch", "step", "epochs_total", "steps_total", "time", "offset", "file"})
T = TypeVar("T")


@dataclass
class RunSnapshot:
    """A consistent view of a run's logs: what `read_run` returns and `RunWatcher.snapshot()` gives.

    metrics: one row per loss line per rank in file order (rank, epoch, step, loss, step_time_ms, lr,
    time = line timestamp or observation time when watched live else NaN, offset, file);
    timings: TimeMonitor lines; errors: rank, kind (exception/nan/worker_exit/task_exit/timeout/error_log),
    message, context (traceback), line, offset, file; ranks: per-rank facts for `rank_status`;
    skipped: every file found but not read (a FIFO, a folder, permission denied, ...) -> why;
    evals: evaluation lines, one row per scalar (EVAL_COLUMNS; `summary`: a test pass's summary, counted
    apart from the evaluation rows), never training rows, and the rows a file's series choice set aside
    (core.logs.rows.perfile); metric_keys:
    metric column -> the key as the logs spell it (`step_time_ms` <- `per_step_time`), for every
    metric the loss lines carry (the columns of `metrics` beyond METRIC_COLUMNS are such metrics).
    A file whose lines name their ranks (core.logs.rows.lineranks) gives every such rank its rows, error
    lines and a row of `ranks`; so does a launcher's report for every rank it names (core.logs.rows.runranks:
    the file's own rank then a row only when the file has lines of its own); hosts: the series of a pdsh
    stream's hosts whose lines name no rank -> host.
    """

    log_dir: Path
    metrics: pd.DataFrame
    timings: pd.DataFrame
    errors: pd.DataFrame
    ranks: pd.DataFrame
    files: list[LogFile]
    layout: str
    version: int
    taken_at: float
    skipped: dict[str, str] = field(default_factory=dict)
    evals: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=EVAL_COLUMNS))
    metric_keys: dict[str, str] = field(default_factory=dict)
    behind_bytes: int = 0  # written but not read yet: a writer faster than the watcher's per-tick cap
    # series -> host, for the rows of a pdsh stream whose lines name a host but no rank (core.logs.rows.lineranks)
    hosts: dict[int, str] = field(default_factory=dict)
    _memo: dict = field(default_factory=dict, repr=False, compare=False)
    _memo_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def derived(self, name: str, key: tuple, make: Callable[[], T]) -> T:
        """`make()` once per snapshot and key, whoever asks: a watcher hands one snapshot to every
        Monitor session until its logs change, so 20 sessions compute a diagnosis once a tick, not 20 times."""
        with self._memo_lock:
            hit = self._memo.get(name)
            if hit is None or hit[0] != key:
                hit = self._memo[name] = (key, make())
            return hit[1]

    @property
    def n_ranks(self) -> int:
        return len(self.ranks)

    def crashed_ranks(self) -> list[int]:
        """Ranks with an exception, a worker-exit report, or a scheduler timeout."""
        if self.errors.empty:
            return []
        bad = self.errors[self.errors["kind"].isin([str(k) for k in FATAL_KINDS])]
        return sorted({int(r) for r in bad["rank"].dropna() if int(r) >= 0})


def empty_metrics() -> pd.DataFrame:
    dtypes = {k: "float64" for k in METRIC_COLUMNS}
    dtypes.update(rank="int64", offset="int64", file="object")
    return pd.DataFrame({k: pd.Series(dtype=v) for k, v in dtypes.items()})


def timing_frame(workers: list[FileState]) -> pd.DataFrame:
    """The workers' TimeMonitor rows, rank by rank in file order."""
    return pd.DataFrame([(st.info.rank, *t, st.info.rel) for st in workers for t in st.timings], columns=TIMING_COLUMNS)


def error_frame(workers: list[FileState], files: list[FileState]) -> pd.DataFrame:
    """Every file's errors (an error's rank from its pid when it has none, the pid's worker's; the launcher's own
    traceback when its report names the failed ranks, and a spawning parent's beside another rank's failure, are
    the job's, rank -1: core.logs.rows.runranks.jobs_word)."""
    pid_to_rank = {st.pid: st.info.rank for st in workers if st.pid is not None}
    error_rows: list[tuple] = []
    for st in files:
        reported = launcher_reports(st)
        for i, err in enumerate(st.errors):
            if err.line is None:
                err = st.errors[i] = err.with_line(line_number(st.info.path, err.offset))
            if jobs_word(st, err, reported):
                err = replace(err, rank=JOB_RANK)
            elif err.rank is None and err.pid is not None:
                err = replace(err, rank=_pid_rank(err, st, pid_to_rank))
            error_rows.append(err.row())
    errors = pd.DataFrame(error_rows, columns=ERROR_COLUMNS)
    errors["rank"] = pd.to_numeric(errors["rank"], errors="coerce").astype("Int64")
    return errors


def _pid_rank(err: ErrorRow, st: FileState, pid_to_rank: dict[int, int | None]) -> int | None:
    """The rank of the worker an error's pid names. msrun's `Worker process N exit with exception` in one stream
    (a paste, a redirected console) with no worker log of that pid is the stream's own worker's: it is the only
    word the log holds that the run died (before, it failed no rank and the run read as healthy)."""
    rank = pid_to_rank.get(err.pid) if err.pid is not None else None
    if rank is None and err.kind == ErrorKind.WORKER_EXIT and st.info.layout == "single":
        return st.info.rank
    return rank


class TimingTable:
    """The workers' TimeMonitor tuples kept as float64 blocks per file between snapshots, each tuple converted
    once: `timing_frame` built every tuple of the run again (~10 ms of a live tick on the 1,024-rank real-corpus
    folder, where each tick adds a few hundred). The frame is `timing_frame`'s, row for row and dtype for dtype
    (tests/test_timing_table.py); a tuple of other types than the parser's (floats, an int offset) or a rank
    that is not an int builds it as `timing_frame` does."""

    def __init__(self) -> None:
        self._files: dict[int, tuple[list[tuple], np.ndarray]] = {}  # id(timings) -> (the list, its rows so far)

    def frame(self, workers: list[FileState]) -> pd.DataFrame:
        """`timing_frame(workers)`, from the blocks kept (only the tuples added since the last call converted)."""
        parts: list[tuple[FileState, list[tuple], int]] = []  # (file, its list, rows converted before)
        for st in workers:
            if st.timings:
                if type(st.info.rank) is not int:
                    return timing_frame(workers)
                held = self._files.get(id(st.timings))
                parts.append((st, st.timings, len(held[1]) if held is not None and held[0] is st.timings else 0))
        if not parts:
            return timing_frame(workers)
        new = [t for _, timings, n in parts for t in timings[n:]]
        block = np.array(new, dtype=np.float64).reshape(-1, 6) if set(map(_types, new)) <= {_PARSED} else None
        if block is None or (len(block) and np.abs(block[:, 5]).max() >= 2**53):  # (an offset converted exactly)
            self._files = {}
            return timing_frame(workers)
        at, kept = 0, {}
        for _, timings, n in parts:
            k = len(timings) - n
            old = self._files[id(timings)][1] if n else block[:0]
            kept[id(timings)] = (timings, np.concatenate([old, block[at : at + k]]) if k else old)
            at += k
        self._files = kept  # a file gone or reset: its block goes too
        blocks = [kept[id(timings)][1] for _, timings, _ in parts]
        lengths = np.array([len(b) for b in blocks], dtype=np.int64)
        rows = np.concatenate(blocks)
        data: dict[str, object] = {"rank": np.repeat(np.array([st.info.rank for st, _, _ in parts], np.int64), lengths)}
        data.update((name, rows[:, i].copy()) for i, name in enumerate(TIMING_COLUMNS[1:6]))
        data["offset"] = rows[:, 5].astype(np.int64)
        data["file"] = pd.array([st.info.rel for st, _, _ in parts], dtype="str").take(
            np.repeat(np.arange(len(parts)), lengths)
        )
        return pd.DataFrame(data, columns=TIMING_COLUMNS)


def _types(t: tuple) -> tuple[type, ...]:
    return tuple(map(type, t))


_PARSED = (float, float, float, float, float, int)  # a timing tuple as the parser writes it (else pandas infers)


class SideFrames:
    """The TimeMonitor rows and the errors, each rebuilt only when its own files' lists changed: a live tick
    on the real-corpus folder adds TimeMonitor lines every time and error lines rarely, and rebuilding both
    whenever one changed cost it a few ms (a tick usually adds loss lines only: then neither is rebuilt)."""

    def __init__(self) -> None:
        self._timings: tuple[tuple, pd.DataFrame] | None = None
        self._timing_table = TimingTable()
        self._errors: tuple[tuple, pd.DataFrame] | None = None

    def frames(self, workers: list[FileState], files: list[FileState]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """`timing_frame(workers)`, `error_frame(workers, files)`: each the last one while its lists are unchanged."""
        tkey = tuple((id(st), id(st.timings), len(st.timings)) for st in workers)
        if self._timings is None or self._timings[0] != tkey:
            self._timings = (tkey, self._timing_table.frame(workers))
        # (the rows themselves: a failure trained past or a traceback's exception replaces one in place)
        ekey = tuple((id(st), tuple(st.errors), st.pid) for st in files)  # (the workers' pids too)
        if self._errors is None or self._errors[0] != ekey:
            self._errors = (ekey, error_frame(workers, files))
        return self._timings[1], self._errors[1]


RANK_COLUMNS = [
    "rank",
    "files",
    "pid",
    "bytes",
    "n_loss",
    "last_epoch",
    "last_step",
    "last_loss",
    "last_activity",
    "mtime",
    "finished",
    "restarts",
    "dropped_bytes",
    "dropped_lines",
    "unreadable",
]


def rank_table(workers: list[FileState], unregistered: set[int]) -> pd.DataFrame:
    """Per-rank facts for `rank_status`: last step and loss, activity, whether it finished, what was dropped.
    A file whose lines name several ranks gives each of them a row (its activity and size are the file's): the
    ranks core.logs.rows.runranks.stream_ranks says it gives, a launcher's reported ones among them.
    Built column by column (a live tick rebuilds it: row dicts cost 1,024 ranks ~10 ms)."""
    by_rank: dict[int, list[tuple[FileState, int, tuple | None]]] = {}
    for st in workers:
        for rank, (n, last_row) in stream_ranks(st).items():
            by_rank.setdefault(rank, []).append((st, n, last_row))
    if not by_rank:
        return pd.DataFrame([], columns=RANK_COLUMNS)
    cols: dict[str, list] = {c: [] for c in RANK_COLUMNS}
    put = [cols[c].append for c in RANK_COLUMNS]
    for rank in sorted(by_rank):
        parts = by_rank[rank]
        sts = [p[0] for p in parts]
        last = next((p[2] for p in reversed(parts) if p[1]), None)
        epoch, step, epochs_total, steps_total, loss = last[:5] if last else (_NAN,) * 5
        # a global step (MindYOLO rows) is done at epochs x steps per epoch, a step-in-epoch at the last one
        done_by_totals = bool(
            last
            and epochs_total == epochs_total
            and steps_total == steps_total
            and epoch >= epochs_total
            and step >= (steps_total if step <= steps_total else steps_total * epochs_total)
        )
        if len(sts) == 1:  # a rank's one file (the common case): its own facts, no generator per column
            s = sts[0]
            values = (
                *(rank, s.info.rel, s.pid, s.size, parts[0][1], epoch, step, loss, s.last_growth, s.mtime),
                *(done_by_totals or rank in unregistered, s.restarts, s.dropped_bytes, s.dropped_lines),
                f"{s.info.rel}: {s.unreadable}" if s.unreadable else "",
            )
            for add, value in zip(put, values, strict=True):
                add(value)
            continue
        values = (
            rank,
            ", ".join(s.info.rel for s in sts),
            next((s.pid for s in sts if s.pid is not None), None),
            sum(s.size for s in sts),
            sum(p[1] for p in parts),
            epoch,
            step,
            loss,
            max((s.last_growth for s in sts if s.last_growth == s.last_growth), default=_NAN),
            max((s.mtime for s in sts if s.mtime == s.mtime), default=_NAN),
            done_by_totals or rank in unregistered,
            max(s.restarts for s in sts),
            sum(s.dropped_bytes for s in sts),
            sum(s.dropped_lines for s in sts),
            next((f"{s.info.rel}: {s.unreadable}" for s in sts if s.unreadable), ""),
        )
        for add, value in zip(put, values, strict=True):
            add(value)
    return pd.DataFrame(cols, columns=RANK_COLUMNS)


@dataclass(frozen=True)
class Held:
    """Memory a reader keeps between two reads: its largest read buffer, the next file's read-ahead
    (bytes), and the most parsed rows a file holds not yet taken into the table."""

    read_buffer: int
    read_ahead: int
    untaken_rows: int


def split_series(
    metrics: pd.DataFrame, aside: np.ndarray | None, evals: pd.DataFrame, ranks: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The rows a file's series choice sets aside (`MetricTable.set_aside`, core.logs.rows.perfile) out of the
    training rows: an evaluation row into the evaluation series (its loss, NaN too, and every other value it
    gives), a dropped echo nowhere; the ranks' row counts and last rows then from the training rows left. As
    they are when nothing is set aside (the frame stays a view). The whole table at once: the definition a live
    reader's `KeptRows` (core.logs.rows.kept: the kept rows held between ticks) is held to."""
    if aside is None or not aside.any():
        return metrics, evals, ranks
    moved = metrics[aside == Aside.EVAL]
    evals = with_entries(evals, eval_entries(lambda c: moved[c].tolist(), list(metrics.columns)))
    hit = set(metrics["rank"][aside != Aside.KEEP].tolist())
    metrics = metrics[aside == Aside.KEEP].reset_index(drop=True)
    kept = metrics[metrics["rank"].isin(hit)]  # one pass over the rows, not one per rank
    last = kept.groupby("rank").tail(1).set_index("rank")

    def facts(which: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        n_loss = kept.groupby("rank").size().reindex(which, fill_value=0).to_numpy()
        return n_loss, [last[name].reindex(which).to_numpy(dtype=np.float64) for name in _LAST]

    return metrics, evals, with_kept_facts(ranks, hit, facts)


_LAST = ("epoch", "step", "loss")  # a rank's last kept row's values, as `ranks`' last_epoch, last_step, last_loss


def eval_entries(values: Callable[[str], list], columns: list[str]) -> pd.DataFrame | None:
    """The evaluation entries of rows set aside as evaluation rows (`values(column)`: those rows' values of a
    metrics column, in table order), one per value a row gives (its loss, NaN too); None: no entry."""
    names = [c for c in columns if c not in _NOT_EVAL]
    where = [values(c) for c in ("rank", "epoch", "step", "time", "offset", "file")]
    by_name = {name: values(name) for name in names}
    entries = [
        (rank, epoch, step, name, by_name[name][i], t, off, str(file), False)
        for i, (rank, epoch, step, t, off, file) in enumerate(zip(*where, strict=True))
        for name in names
        if name == "loss" or by_name[name][i] == by_name[name][i]
    ]
    return pd.DataFrame(entries, columns=EVAL_COLUMNS) if entries else None


def with_entries(evals: pd.DataFrame, more: pd.DataFrame | None) -> pd.DataFrame:
    """`evals` with the set-aside rows' entries after its own."""
    if more is None:
        return evals
    return more if evals.empty else pd.concat([evals, more], ignore_index=True)


def with_kept_facts(
    ranks: pd.DataFrame, hit: set[int], facts: Callable[[np.ndarray], tuple[np.ndarray, list[np.ndarray]]]
) -> pd.DataFrame:
    """`ranks` (a copy) with the row count and last row (`facts(which)`: n_loss, then last epoch, step, loss as
    float64) of the ranks `hit` (those with a row set aside) taken from their kept rows."""
    ranks = ranks.copy()
    mine = ranks["rank"].isin(hit).to_numpy()
    which = ranks["rank"].to_numpy()[mine]  # one column written at once: 1,024 ranks' `.loc` cost ~0.4 s
    n_loss, lasts = facts(which)
    ranks.loc[mine, "n_loss"] = n_loss
    for col, values in zip(("last_epoch", "last_step", "last_loss"), lasts, strict=True):
        ranks.loc[mine, col] = values
    return ranks


def pass_summaries(metrics: pd.DataFrame, evals: pd.DataFrame) -> pd.DataFrame:
    """`evals` with `summary` true only for a pass's summary: a one-off summary line (core.logs.rows.series)
    whose file's line before it, of the loss lines and the evaluation lines (as their text tells them), is an
    evaluation line (DETR's `Averaged stats:` after its `Test: [k/163]` rows: the pass's averages, counted
    apart from its rows). A summary after training rows (fairseq's `| epoch 001 | valid on 'valid' subset |
    valid_loss ...`) is the file's evaluation: an evaluation row. Decided over the file's lines, so every read
    path agrees. `metrics`: every loss line's row, before the per-file split (core.logs.rows.perfile).

    Every summary at once (a file's lines as one sorted key each, file then offset, and a binary search): a live
    tick on 1,024 files with summaries took ~240 ms one file at a time (tests/test_per_file_series.py holds it
    to the file-by-file statement)."""
    if evals.empty or not evals["summary"].any():
        return evals
    flag = evals["summary"].to_numpy(dtype=bool).copy()
    offsets = np.minimum(evals["offset"].to_numpy(dtype=np.int64), _OFFSET_MAX)
    codes, names = pd.factorize(evals["file"], use_na_sentinel=False)
    codes = codes.astype(np.int64)
    wanted = np.zeros(len(names) + 1, dtype=bool)
    wanted[codes[flag]] = True  # only the files with a summary line
    file_col = metrics["file"]
    cat = file_col.cat if isinstance(file_col.dtype, pd.CategoricalDtype) else file_col.astype("category").cat
    to_eval_code = pd.Index(names).get_indexer(cat.categories)  # -1: a file without evaluation lines
    row_codes = np.append(to_eval_code, -1)[cat.codes.to_numpy()]  # a missing file (code -1) maps to -1 too
    kept = row_codes >= 0
    kept[kept] = wanted[row_codes[kept]]
    row_offsets = np.minimum(metrics["offset"].to_numpy(dtype=np.int64)[kept], _OFFSET_MAX)
    # a stable sort (timsort: the keys come as long sorted runs, a file's rows, a tick's rows) merges the runs:
    # ~0.4 ms for the corpus folder's 635k rows where quicksort took ~30 ms of each live tick
    trained = np.sort((row_codes[kept] << _FILE_SHIFT) | row_offsets, kind="stable")
    plain = ~flag & wanted[codes]
    evaluated = np.sort((codes[plain] << _FILE_SHIFT) | offsets[plain], kind="stable")
    asked = np.flatnonzero(flag)
    query = (codes[asked] << _FILE_SHIFT) | offsets[asked]
    before, has_before = _last_before(evaluated, query)
    last_row, has_row = _last_before(trained, query)
    flag[asked] = has_before & (~has_row | (before > last_row))
    return evals.assign(summary=flag)


_FILE_SHIFT = 40  # a line's key: its file's code above its offset (a log under 1 TiB: larger offsets are clamped)
_OFFSET_MAX = (1 << _FILE_SHIFT) - 1


def _last_before(keys: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each query key, the largest of the sorted `keys` below it in the same file (same bits above
    _FILE_SHIFT), and whether there is one."""
    at = np.searchsorted(keys, query, side="left") - 1
    found = keys[np.maximum(at, 0)] if len(keys) else np.zeros(len(query), dtype=np.int64)
    same = (at >= 0) & ((found >> _FILE_SHIFT) == (query >> _FILE_SHIFT))
    return found, same
