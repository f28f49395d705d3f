"""Cluster-scale diagnosis of a run's logs: stragglers, hung ranks, failure groups, overflow and norm spikes.

At 1,024 ranks nobody reads 1,024 tracebacks: identical exceptions collapse into one group with its rank
list, and the rank that failed first (by the time of the last stamped line before its traceback, else
its file's mtime) among those that failed of their own (not only stopped by a launcher's SIGTERM:
core.logs.judgement.victims) is marked as the likely root cause. A straggler is a rank whose step time is
well above the job's median; a hung rank is one whose progress is far behind the others while their logs
moved on (Megatron's `--log-straggler` and MegaScale's per-rank timing are the models).

Everything is computed from a `RunSnapshot` (no file access) and returned as plain dataclasses;
`Diagnosis.to_dict()` is what `python -m core diagnose --json` prints.

Example (ranks 0-3, LossMonitor + TimeMonitor logs): per step times 100, 101, 99, 180 ms ->
median 100.5 ms, rank 3 ratio 1.79 >= 1.3 -> `Straggler(rank=3, step_time=180, ...)`.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from core.logs.judgement.metrics import infer_steps_per_epoch
from core.logs.judgement.naming import naming_failure
from core.logs.judgement.reasons import launcher_reason, with_own_words
from core.logs.judgement.status import first_of_each_rank, nonfinite_by_rank
from core.logs.judgement.victims import first_failure, received_only
from core.logs.rows.cells import as_float, as_int
from core.logs.rows.filestate import FATAL_KINDS, ErrorKind
from core.logs.rows.snapshot import RunSnapshot
from core.logs.rows.taskends import kills_only

__all__ = ["DiagnoseSettings", "Diagnosis", "FailureGroup", "Hung", "NormSpike", "Straggler", "diagnose"]

_NAN = float("nan")


@dataclass(frozen=True)
class DiagnoseSettings:
    """Thresholds (each a ratio or a count, so they hold at any step time)."""

    straggler_ratio: float = 1.3  # step time / job median at or above this = straggler
    min_lag_steps: int = 3  # a rank this many steps behind the median may be hung...
    hang_factor: float = 5.0  # ...when its last line is older than the job's latest by this x step time
    silent_factor: float = 10.0  # whole job silent this x its step time (needs `now`) = hung
    spike_factor: float = 3.0  # global_norm above this x the job's median = spike
    max_listed: int = 20  # spikes / overflow steps listed


@dataclass(frozen=True)
class Straggler:
    rank: int
    step_time: float  # ms, this rank's median
    median_step_time: float  # ms, the job's median over ranks
    ratio: float
    source: str  # where the step time came from: per_step_time | TimeMonitor | line times


@dataclass(frozen=True)
class Hung:
    rank: int
    last_step: float  # global step of its last loss line
    last_time: float | None  # unix time of its last progress (line time, else file mtime)
    behind_steps: float
    reason: str


@dataclass(frozen=True)
class FailureGroup:
    exception: str  # the shared last line of the traceback (or what msrun / the scheduler said)
    ranks: list[int]
    first_rank: int  # likely root cause: the rank that failed first
    first_time: float | None
    time_source: str  # "log time" | "file mtime" | "none" (then first_rank is the lowest rank)
    evidence: list[str] = field(default_factory=list)
    stopped: bool = False  # every rank only received a termination (a launcher's SIGTERM): a victim, no root cause


@dataclass(frozen=True)
class NormSpike:
    rank: int
    step: float
    global_norm: float
    median: float


@dataclass
class Diagnosis:
    """What `diagnose` found; `failed` says whether a CI job should fail."""

    ranks: int
    stragglers: list[Straggler]
    hung: list[Hung]
    failure_groups: list[FailureGroup]
    median_step_time: float | None
    step_time_source: str
    median_last_step: float | None
    last_step: float | None  # the job's: the furthest any rank got (the Monitor's "Last step")
    job_errors: list[str]  # launcher / scheduler exceptions not tied to one rank
    overflow_steps: list[float]  # steps where some rank reported overflow (first max_listed)
    overflow_ranks: int
    norm_spikes: list[NormSpike]
    silent_s: float | None  # seconds since the job's last progress (only when `now` was given)

    @property
    def failed(self) -> bool:
        return bool(self.failure_groups or self.hung)

    @property
    def root_cause(self) -> int | None:
        """The first failing rank over the groups that failed of their own (None without failures)."""
        group = first_failure(self.failure_groups)
        return None if group is None else group.first_rank

    def to_dict(self) -> dict:
        """Plain JSON-ready dict (NaN becomes None)."""
        out = asdict(self)
        out["failed"] = self.failed
        out["root_cause_rank"] = self.root_cause
        return {k: _json_safe(v) for k, v in out.items()}


def _json_safe(value: object) -> object:
    if isinstance(value, float):
        return None if not math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        return _json_safe(value.item())
    return value


# ----------------------------------------------------------------------------- step times


def rank_step_times(snap: RunSnapshot) -> tuple[pd.Series, pd.Series]:
    """Each rank's median step time in ms and where it came from, in order of trust: the log's own
    per-step time (MindFormers `per_step_time`), TimeMonitor / MindYOLO step-time lines, then the
    gaps between time-stamped loss lines divided by the steps between them. On column arrays, never a
    row selection of the whole table: it has a column per metric any log names (60 on the real-corpus
    folder), and each pandas selection took every one of them (~13 ms of each live tick there)."""
    m = snap.metrics
    rank = m["rank"].to_numpy() if not m.empty else np.empty(0, dtype=np.int64)
    per_row = _median_by_rank(rank, m["step_time_ms"].to_numpy(dtype=np.float64)) if not m.empty else _no_times()
    t = snap.timings
    timed = t.groupby("rank")["step_time_ms"].median() if not t.empty else _no_times()
    gaps = _no_times()
    # line-time gaps count only for ranks with neither of the others (at 1,024 x 2,000 MindFormers rows,
    # which all carry per_step_time, the gaps were 100 ms of every live tick)
    better = set(per_row.dropna().index) | set(timed.dropna().index)
    need = [int(r) for r in snap.ranks["rank"] if int(r) not in better]
    if need and not m.empty:
        stamp = m["time"].to_numpy(dtype=np.float64)
        rows = np.flatnonzero(~np.isnan(stamp))  # the stamped rows first: few on most logs
        if len(rows) and better:
            rows = rows[np.isin(rank[rows], need)]
        if len(rows):
            gaps = _line_time_gaps(rank[rows], m["step"].to_numpy(dtype=np.float64)[rows], stamp[rows])
    index = pd.Index(snap.ranks["rank"].astype(int))
    ranks = index.to_numpy()
    value = np.full(len(ranks), _NAN)
    source = np.full(len(ranks), "", dtype=object)
    for series, name in ((gaps, "line times"), (timed, "TimeMonitor"), (per_row, "per_step_time")):  # last wins
        have = series.dropna()
        at = have.index.get_indexer(index) if len(have) else np.full(len(ranks), -1)
        hit = at >= 0
        value[hit] = have.to_numpy(dtype=np.float64)[at[hit]]
        source[hit] = name
    return pd.Series(value, index=index, dtype=float), pd.Series(source, index=index, dtype=object)


def _no_times() -> pd.Series:
    """No rank's time (a fresh series: callers may fill it)."""
    return pd.Series(dtype=float)


def _median_by_rank(rank: np.ndarray, values: np.ndarray) -> pd.Series:
    """Per rank, the median of its non-NaN `values` (ranks in ascending order; none: an empty series)."""
    has = np.flatnonzero(~np.isnan(values))
    if not len(has):
        return _no_times()
    return pd.Series(values[has]).groupby(rank[has]).median()


def _line_time_gaps(rank: np.ndarray, step: np.ndarray, stamp: np.ndarray) -> pd.Series:
    """Per rank, the median of (time gap * 1000 / steps between) over each pair of a rank's consecutive
    stamped rows (in row order) that moved forward: a group-by diff, on the arrays."""
    order = np.argsort(rank, kind="stable")  # each rank's rows together, in row order
    r, s, t = rank[order], step[order], stamp[order]
    same = r[1:] == r[:-1]
    ds, dt = s[1:] - s[:-1], t[1:] - t[:-1]
    ok = same & (ds > 0) & (dt >= 0)
    if not ok.any():
        return _no_times()
    return pd.Series(dt[ok] * 1000.0 / ds[ok]).groupby(r[1:][ok]).median()


def _stragglers(
    times: pd.Series, sources: pd.Series, skip: set[int], settings: DiagnoseSettings
) -> tuple[list[Straggler], float | None, str]:
    ok = times.dropna()
    ok = ok[~ok.index.isin(list(skip))]
    if len(ok) < 2:
        return [], (float(ok.median()) if len(ok) else None), (str(sources[ok.index[0]]) if len(ok) else "")
    median = float(ok.median())
    source = str(sources[ok.index].mode().iat[0])
    if median <= 0:
        return [], median, source
    ratio = ok / median
    slow = ratio[ratio >= settings.straggler_ratio].sort_values(ascending=False)
    # each slow rank's values by one lookup per column, not three label lookups per rank (most of a real-corpus
    # folder's 1,024 ranks differ in step time by 1.3x or more: ~1,000 lookups a tick)
    times_ms, names = ok.loc[slow.index].tolist(), sources.loc[slow.index].tolist()
    return (
        [
            Straggler(as_int(r), as_float(t), median, round(as_float(x), 3), str(name))
            for r, t, x, name in zip(slow.index, times_ms, slow.tolist(), names, strict=True)
        ],
        median,
        source,
    )


# ----------------------------------------------------------------------------- progress and hangs


def _last_progress(snap: RunSnapshot) -> pd.DataFrame:
    """Per rank: global step of its last loss line and the time of its last progress."""
    m = snap.metrics
    ranks = snap.ranks.set_index("rank")
    out = pd.DataFrame(index=ranks.index.astype(int))
    if m.empty:
        out["last_step"] = _NAN
    else:
        spe = infer_steps_per_epoch(m)
        # per rank, rows are in file order (a live table holds runs of rows, one per tick): the last
        # row of a rank ends its last run
        rank = m["rank"].to_numpy()
        ends = np.flatnonzero(np.append(rank[1:] != rank[:-1], True))
        last = pd.DataFrame({k: m[k].to_numpy()[ends] for k in ("epoch", "step", "time")}, index=rank[ends])
        last = last[~last.index.duplicated(keep="last")]
        step = last["step"]
        if spe and np.nanmax(m["step"].to_numpy()) <= spe and last["epoch"].notna().any():
            step = (last["epoch"] - np.nanmin(m["epoch"].to_numpy())) * spe + last["step"]
        out["last_step"] = step.reindex(out.index)
        out["line_time"] = last["time"].reindex(out.index)
    file_time = ranks["last_activity"].where(ranks["last_activity"].notna(), ranks["mtime"])
    line_time = out["line_time"] if "line_time" in out else pd.Series(_NAN, index=out.index)
    out["last_time"] = line_time.where(line_time.notna(), file_time.reindex(out.index))
    out["finished"] = ranks["finished"].reindex(out.index).fillna(False).astype(bool)
    return out


def hung_ranks(
    progress: pd.DataFrame,
    failed: set[int],
    median_step_ms: float | None,
    now: float | None,
    settings: DiagnoseSettings,
) -> tuple[list[Hung], float | None, float | None]:
    """Ranks far behind the job that stopped moving. The job's progress is measured over every rank
    that did not fail, finished ones included: a rank that stopped at step 120 while all the others
    finished at 200 is compared with them, not only with itself (finished ranks used to be dropped)."""
    ok = progress[~progress.index.isin(list(failed))]
    steps = ok["last_step"].dropna()
    if steps.empty:
        return [], None, None
    median_last = float(steps.median())
    done = ok.loc[ok["finished"], "last_step"].dropna()
    reference = max(median_last, float(done.max())) if not done.empty else median_last
    latest = float(ok["last_time"].max()) if ok["last_time"].notna().any() else None
    alive = ok[~ok["finished"]]
    step_s = (median_step_ms or 0.0) / 1000.0
    behind = reference - alive["last_step"]
    lag = behind >= max(settings.min_lag_steps, 1)
    gap = (latest - alive["last_time"]) if latest is not None else pd.Series(_NAN, index=alive.index)
    need = settings.hang_factor * step_s if step_s > 0 else 0.0
    timed = gap.notna()
    hung_mask = lag & (~timed | ((gap > need) & (gap > 0)))  # a rank whose log still moves is slow, not hung
    out: list[Hung] = []
    at = np.flatnonzero(hung_mask.to_numpy())  # the hung ranks' values by position, not a label lookup each
    cols = (a.to_numpy()[at].tolist() for a in (alive.index, behind, alive["last_step"], gap, alive["last_time"]))
    for rank, b, t, g, last_t in zip(*cols, strict=True):
        b, t, last_t = float(b), as_float(t), as_float(last_t)
        if not done.empty:
            reason = f"stopped at step {t:.0f} of {reference:.0f} without an error ({len(done)} other rank(s) finished)"
        elif g == g:
            reason = f"{b:.0f} steps behind the median; last progress {g:.0f} s before the others'"
        else:
            reason = f"{b:.0f} steps behind the median (no time in the log to confirm)"
        out.append(Hung(as_int(rank), t, None if last_t != last_t else last_t, b, reason))
    silent = None
    if now is not None and latest is not None:
        silent = max(0.0, now - latest)
        if step_s > 0 and silent > settings.silent_factor * step_s:
            listed = {h.rank for h in out}
            for rank, row in alive.iterrows():
                if as_int(rank) not in listed:
                    t = row["last_time"]
                    out.append(
                        Hung(
                            as_int(rank),
                            float(row["last_step"]),
                            None if t != t else float(t),
                            0.0,
                            f"whole job silent for {silent:.0f} s (~{silent / step_s:.0f} step times)",
                        )
                    )
    out.sort(key=lambda h: (-h.behind_steps, h.rank))
    return out, median_last, silent


# ----------------------------------------------------------------------------- failures

_RE_HEX = re.compile(r"0x[0-9a-fA-F]+")
# a line's own stamp before the message: glog's `[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] `,
# python logging's `2024-05-08 08:47:31,877 ` (every rank's copy of one failure differs there only)
_RE_STAMP = re.compile(r"^\[[EFWI]\d{3,4} [\d:.]+ [^\]]*\] |^\[?\d{4}-\d\d-\d\d[ T][\d:,.]+\]? ")
_RE_IDS = re.compile(r"\b(rank|node|pid|worker|device|process|Rank|Node|Worker|Device|Process)([ _:=]+)\d+")


def _normalise(message: str) -> str:
    """The part of an exception that is the same on every rank (addresses, rank/pid numbers masked)."""
    message = _RE_STAMP.sub("", message.strip())
    return _RE_IDS.sub(r"\1\2N", _RE_HEX.sub("0x?", message))


def _failure_groups(snap: RunSnapshot) -> tuple[list[FailureGroup], list[str]]:
    errs = snap.errors
    if errs.empty:
        return [], []
    ranks = snap.ranks.set_index("rank")
    fatal = errs[errs["kind"].isin(FATAL_KINDS)]
    job_errors = [str(m) for m in fatal.loc[fatal["rank"].isna() | (fatal["rank"] < 0), "message"]]
    fatal = fatal[fatal["rank"].notna() & (fatal["rank"] >= 0)]
    by_key: dict[str, dict] = {}
    for key, rows in fatal.groupby("rank"):
        rank = as_int(key)
        exc = rows[rows["kind"].isin([ErrorKind.EXCEPTION, ErrorKind.NAN])]
        evidence = []
        if (rows["kind"] == ErrorKind.WORKER_EXIT).any():
            evidence.append(f"msrun: worker process of rank {rank} exited with an exception")
        if (rows["kind"] == ErrorKind.TIMEOUT).any():
            evidence.append(f"scheduler: node {rank} timed out")
        ended = rows[rows["kind"] == ErrorKind.TASK_EXIT]
        killed = ended["message"].astype(str).map(kills_only).astype(bool)
        ended = pd.concat([ended[~killed], ended[killed]])  # how a task ended before a launcher's "killed it"
        evidence.extend(ended["message"].astype(str))
        said = ""
        if not exc.empty:
            key = _normalise(str(exc.iloc[naming_failure(exc)]["message"]))  # the best-named, first (judgement.naming)
            times = exc["log_time"].dropna()
            times = times if not times.empty else ended["log_time"].dropna()  # (a launcher's report's time)
        else:
            key, said = launcher_reason(rows, ended)
            times = ended["log_time"].dropna()  # (a launcher's report may say when: rows.childfailed)
        if not times.empty:
            t, src = float(times.min()), "log time"
        elif rank in ranks.index and not math.isnan(mtime := as_float(ranks.at[rank, "mtime"])):
            t, src = mtime, "file mtime"
        else:
            t, src = _NAN, "none"
        g = by_key.setdefault(key, {"ranks": [], "times": [], "srcs": [], "evidence": [], "said": {}, "stopped": []})
        g["said"][rank] = said
        g["stopped"].append(received_only(rows["message"].astype(str)))
        g["ranks"].append(rank)
        g["times"].append(t)
        g["srcs"].append(src)
        g["evidence"].extend(evidence)
    groups = []
    for key, g in by_key.items():
        ranks_sorted = sorted(g["ranks"])
        own = not all(g["stopped"])  # the first of its ranks that failed of their own, when one did
        members = zip(g["times"], g["ranks"], g["srcs"], g["stopped"], strict=True)
        best = [(t, r, s) for t, r, s, stop in members if t == t and not (own and stop)]
        if best:
            first_time, first_rank, src = min(best)
        else:
            mine = [r for r, stop in zip(g["ranks"], g["stopped"], strict=True) if not (own and stop)]
            first_time, first_rank, src = _NAN, min(mine), "none"
        evidence = sorted(set(g["evidence"]))
        if len(evidence) > 10:
            evidence = [*evidence[:10], f"... and {len(evidence) - 10} more"]
        groups.append(
            FailureGroup(
                with_own_words(key, g["said"].get(int(first_rank), "")),
                ranks_sorted,
                int(first_rank),
                None if first_time != first_time else float(first_time),
                src,
                evidence,
                not own,
            )
        )
    groups.sort(key=lambda g: (-len(g.ranks), g.first_time if g.first_time is not None else math.inf))
    return groups, job_errors


def _nan_groups(snap: RunSnapshot, have: set[int]) -> list[FailureGroup]:
    """Ranks whose parsed loss became nan or inf and stayed so (any format: the value decides, not the
    line's shape; a NaN the run trained past is no failure: core.logs.judgement.status.failed_ranks), one group per
    kind, first step as evidence; ranks already failed by an exception are left out."""
    m = snap.metrics
    if m.empty:
        return []
    loss = m["loss"].to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(loss))
    if not len(bad):
        return []
    _, recovered = nonfinite_by_rank(m)
    at = first_of_each_rank(m["rank"].to_numpy(), bad)  # the four columns it needs, not every metric's
    first = pd.DataFrame({k: m[k].to_numpy()[at] for k in ("rank", "step", "loss", "time")})
    first = first[~first["rank"].astype(int).isin(list(have | recovered))]
    ranks = snap.ranks.set_index("rank")
    by_kind: dict[str, list[tuple[float, int, str, str]]] = {}
    for rank, step, loss_value, t in zip(
        first["rank"].astype(int), first["step"], first["loss"], first["time"], strict=True
    ):
        kind = "nan" if loss_value != loss_value else "inf"
        src = "log time"
        if t != t:
            t = as_float(ranks.at[rank, "mtime"]) if rank in ranks.index else _NAN
            src = "file mtime" if t == t else "none"
        step_text = "?" if step != step else f"{step:.0f}"
        by_kind.setdefault(kind, []).append(
            (float(t), int(rank), src, f"rank {rank}: loss {loss_value} at step {step_text}")
        )
    groups = []
    for kind, rows in by_kind.items():
        timed = [r for r in rows if r[0] == r[0]]
        t, r, src, _ = min(timed) if timed else (_NAN, min(x[1] for x in rows), "none", "")
        evidence = [x[3] for x in sorted(rows, key=lambda x: x[1])]
        if len(evidence) > 10:
            evidence = [*evidence[:10], f"... and {len(evidence) - 10} more"]
        groups.append(
            FailureGroup(
                f"loss is {kind} (the training loss stopped being a finite number)",
                sorted(x[1] for x in rows),
                r,
                None if t != t else t,
                src,
                evidence,
            )
        )
    return groups


# ----------------------------------------------------------------------------- health


def _overflow(snap: RunSnapshot, settings: DiagnoseSettings) -> tuple[list[float], int]:
    m = snap.metrics
    if m.empty or "overflow" not in m or not (m["overflow"] == 1).any():
        return [], 0
    hit = m[m["overflow"] == 1]
    steps = sorted(hit["step"].dropna().unique().tolist())[: settings.max_listed]
    return [float(s) for s in steps], int(hit["rank"].nunique())


def _norm_spikes(snap: RunSnapshot, settings: DiagnoseSettings) -> list[NormSpike]:
    m = snap.metrics
    if m.empty or "global_norm" not in m:
        return []
    norms = m["global_norm"].to_numpy(dtype=np.float64)
    finite = np.isfinite(norms)
    if not finite.any():
        return []
    median = float(np.median(norms[finite]))
    with np.errstate(invalid="ignore"):
        at = np.flatnonzero((~finite & ~np.isnan(norms)) | (norms > settings.spike_factor * median))
    # the few spiking rows' three columns, in row order, sorted as the whole table's rows were
    bad = pd.DataFrame({k: m[k].to_numpy()[at] for k in ("rank", "step", "global_norm")})
    bad = bad.sort_values("global_norm", ascending=False).head(settings.max_listed)
    return [NormSpike(as_int(r.rank), as_float(r.step), as_float(r.global_norm), median) for r in bad.itertuples()]


# ----------------------------------------------------------------------------- entry point


def diagnose(snap: RunSnapshot, now: float | None = None, settings: DiagnoseSettings | None = None) -> Diagnosis:
    """Diagnose a run from its snapshot. `now` (unix time) also checks whether the whole job went
    silent: pass it only while the job is meant to be running (a finished run's logs are silent too)."""
    settings = settings or DiagnoseSettings()
    groups, job_errors = _failure_groups(snap)
    groups += _nan_groups(snap, {r for g in groups for r in g.ranks})
    failed = {r for g in groups for r in g.ranks}
    times, sources = rank_step_times(snap)
    stragglers, median_ms, source = _stragglers(times, sources, failed, settings)
    progress = _last_progress(snap)
    hung, median_last, silent = hung_ranks(progress, failed, median_ms, now, settings)
    furthest = progress["last_step"].max() if not progress.empty else _NAN
    overflow_steps, overflow_ranks = _overflow(snap, settings)
    return Diagnosis(
        ranks=int((snap.ranks["rank"] >= 0).sum()) if not snap.ranks.empty else 0,
        stragglers=stragglers,
        hung=hung,
        failure_groups=groups,
        median_step_time=median_ms,
        step_time_source=source,
        median_last_step=median_last,
        last_step=None if furthest != furthest else float(furthest),
        job_errors=job_errors,
        overflow_steps=overflow_steps,
        overflow_ranks=overflow_ranks,
        norm_spikes=_norm_spikes(snap, settings),
        silent_s=silent,
    )


def now_if_alive(alive: bool) -> float | None:
    """`time.time()` when the caller says the job is running, else None (see `diagnose`)."""
    return time.time() if alive else None
