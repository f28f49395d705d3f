"""The report's content, computed: charts as bounded series, the per-rank table, the ranks to look at.

Why bounded: a report is mailed and attached to issues. Above SCALE_RANKS ranks the charts are what the
Monitor draws at scale (mean and min-max band across ranks per step, plus the ranks to look at), never
one trace per rank; below it every rank is a trace, each downsampled (MinMaxLTTB keeps the spikes) so the
points of a chart stay under POINTS_PER_CHART whatever the run length.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import pandas as pd

from core.logs import RunSnapshot, rank_status
from core.logs.judgement.diagnose import Diagnosis, rank_step_times
from core.logs.judgement.lookat import LookAt, look_at
from core.logs.judgement.metrics import downsample, global_step_values, nan_quantiles, rank_grid

__all__ = ["Chart", "ErrorQuote", "LookAt", "ReportData", "Trace", "TraceKind", "build_report"]

SCALE_RANKS = 32  # the Monitor's threshold (app/monitor/scale.py): above it, aggregates instead of ranks
MAX_COLS = 400  # steps per aggregate column at scale
MAX_HIGHLIGHT = 8  # ranks to look at drawn beside the aggregate
POINTS_PER_CHART = 12_000  # below SCALE_RANKS: points per chart over all ranks
MIN_POINTS, MAX_POINTS = 200, 1000  # points per rank trace


class TraceKind(StrEnum):
    """How a series is drawn: a line, or the upper / lower edge of a filled band."""

    LINE = "line"
    BAND_HIGH = "band_high"
    BAND_LOW = "band_low"


@dataclass(frozen=True)
class Trace:
    name: str
    x: np.ndarray
    y: np.ndarray
    kind: TraceKind = TraceKind.LINE
    emphasis: bool = False  # the mean of an aggregate, or a rank to look at


@dataclass(frozen=True)
class Chart:
    title: str
    y_title: str
    x_title: str
    traces: list[Trace]
    note: str = ""


@dataclass(frozen=True)
class ErrorQuote:
    """The first failing rank's own error as its log says it: where, the message, the traceback."""

    file: str
    line: int | None
    message: str
    context: str


@dataclass
class ReportData:
    """Everything the HTML shows, computed from a snapshot and its diagnosis (strings still raw: the
    renderer escapes them, since log lines are untrusted)."""

    title: str
    log_dir: str
    n_ranks: int
    n_rows: int
    charts: list[Chart]
    ranks: pd.DataFrame  # rank, state, last_epoch, last_step, last_loss, step_time_ms, detail
    look_at: list[LookAt]
    diagnosis: Diagnosis
    first_error: ErrorQuote | None = None
    facts: list[tuple[str, str]] = field(default_factory=list)  # the run's record: id, status, launcher, ...
    options: dict = field(default_factory=dict)
    plan: dict | None = None
    generated_at: float = 0.0


def build_report(
    snap: RunSnapshot,
    diag: Diagnosis,
    *,
    title: str,
    facts: list[tuple[str, str]] | None = None,
    options: dict | None = None,
    plan: dict | None = None,
    run_status: str | None = None,
    now: float = 0.0,
) -> ReportData:
    """The report of one snapshot: charts, per-rank table, ranks to look at (pure: no file is read)."""
    gs = global_step_values(snap.metrics)
    big = snap.n_ranks > SCALE_RANKS
    loss_grid, grid_ranks = _loss_grid(snap, gs) if big else (np.empty((0, 0)), np.empty(0, dtype=np.int64))
    look = look_at(diag, loss_grid, grid_ranks)
    highlight = [a.rank for a in look][:MAX_HIGHLIGHT]
    charts = [
        _chart(snap, gs, "loss", "loss", big, highlight),
        _step_time_chart(snap, gs, big, highlight),
    ]
    return ReportData(
        title=title,
        log_dir=str(snap.log_dir),
        n_ranks=snap.n_ranks,
        n_rows=len(snap.metrics),
        charts=[c for c in charts if c is not None and c.traces],  # no loss line yet: no empty chart
        ranks=rank_table(snap, now, run_status),
        look_at=look,
        diagnosis=diag,
        first_error=first_error(snap, diag.root_cause),
        facts=facts or [],
        options=options or {},
        plan=plan,
        generated_at=now,
    )


def first_error(snap: RunSnapshot, rank: int | None) -> ErrorQuote | None:
    """The error that ended `rank` (the likely root cause): its exception if it has one, else its first error."""
    errs = snap.errors
    if rank is None or errs.empty:
        return None
    mine = errs[errs["rank"].notna() & (errs["rank"] == rank)]
    if mine.empty:
        return None
    exc = mine[mine["kind"] == "exception"]
    row = (exc if not exc.empty else mine).iloc[0]
    line = row["line"]
    return ErrorQuote(
        str(row["file"]), None if pd.isna(line) else int(line), str(row["message"]), str(row["context"] or "")
    )


def _loss_grid(snap: RunSnapshot, gs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = snap.metrics
    if m.empty:
        return np.empty((0, 0)), np.empty(0, dtype=np.int64)
    grid, ranks, _ = rank_grid(m["rank"].to_numpy(), gs, m["loss"].to_numpy(dtype=np.float64), MAX_COLS)
    return grid, ranks


def _chart(snap: RunSnapshot, gs: np.ndarray, column: str, label: str, big: bool, highlight: list[int]) -> Chart:
    m = snap.metrics
    rank = m["rank"].to_numpy() if not m.empty else np.empty(0, dtype=np.int64)
    values = m[column].to_numpy(dtype=np.float64) if not m.empty else np.empty(0)
    return _series_chart(rank, gs, values, label, "step", big, highlight)


def _step_time_chart(snap: RunSnapshot, gs: np.ndarray, big: bool, highlight: list[int]) -> Chart | None:
    """Step time per step when the loss lines carry it, else TimeMonitor's per epoch, else no chart."""
    m = snap.metrics
    if not m.empty and np.isfinite(m["step_time_ms"].to_numpy(dtype=np.float64)).any():
        return _chart(snap, gs, "step_time_ms", "step time (ms)", big, highlight)
    t = snap.timings
    if t.empty or not np.isfinite(t["step_time_ms"].to_numpy(dtype=np.float64)).any():
        return None
    order = t.groupby("rank").cumcount().to_numpy(dtype=np.float64) + 1
    per_epoch = t["step_time_ms"].to_numpy(dtype=np.float64)
    chart = _series_chart(t["rank"].to_numpy(), order, per_epoch, "step time (ms)", "epoch", big, highlight)
    return Chart(chart.title, chart.y_title, chart.x_title, chart.traces, "per epoch, from TimeMonitor")


def _series_chart(
    rank: np.ndarray, x: np.ndarray, y: np.ndarray, label: str, x_title: str, big: bool, highlight: list[int]
) -> Chart:
    if big:
        return _aggregate(rank, x, y, label, x_title, highlight)
    traces = []
    ranks = sorted({int(r) for r in rank})
    n_out = int(min(MAX_POINTS, max(MIN_POINTS, POINTS_PER_CHART // max(1, len(ranks)))))
    for r in ranks:
        mine = rank == r
        xr, yr = x[mine], y[mine]
        keep = downsample(xr, yr, n_out)
        traces.append(Trace(f"rank {r}", xr[keep], yr[keep], emphasis=r in highlight))
    note = f"one line per rank, at most {n_out:,} points each (peaks kept)"
    return Chart(label, label, x_title, traces, note)


def _aggregate(rank: np.ndarray, x: np.ndarray, y: np.ndarray, label: str, x_title: str, highlight: list[int]) -> Chart:
    """Mean and min-max band across ranks per step column, plus the ranks to look at."""
    grid, ranks, cols = rank_grid(rank, x, y, MAX_COLS)
    if not grid.size:
        return Chart(label, label, x_title, [])
    with warnings.catch_warnings():  # steps no rank reached are all-NaN columns
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = nan_quantiles(grid, [0.0, 1.0])
        mean = np.nanmean(grid, axis=0)
    traces = [
        Trace("max across ranks", cols, hi, TraceKind.BAND_HIGH),
        Trace("min-max across ranks", cols, lo, TraceKind.BAND_LOW),
        Trace("mean across ranks", cols, mean, emphasis=True),
    ]
    row = {int(r): i for i, r in enumerate(ranks)}
    traces += [Trace(f"rank {r}", cols, grid[row[r]], emphasis=True) for r in highlight if r in row]
    note = f"{len(ranks):,} ranks: mean and min-max band per step ({len(cols):,} columns), and the ranks to look at"
    return Chart(label, label, x_title, traces, note)


def rank_table(snap: RunSnapshot, now: float, run_status: str | None) -> pd.DataFrame:
    """One row per rank: state and detail (as the Monitor's table says), last step and loss, median step time."""
    st = rank_status(snap, now=now or None, run_status=run_status)
    times, _ = rank_step_times(snap)
    out = st[["rank", "state", "last_epoch", "last_step", "last_loss", "detail"]].copy()
    out["step_time_ms"] = [float(times.get(int(r), math.nan)) for r in out["rank"]]
    return out.sort_values("rank", kind="stable").reset_index(drop=True)
