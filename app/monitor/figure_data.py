"""What the Monitor's figures show, computed before anything is drawn: the x axes, the band across ranks, each
rank's smoothed line, other runs' means, evaluation points, the y range without outliers, the aggregates
of a big run and its heatmap cells. Plain functions over tables and arrays (no Streamlit, no Plotly), so
`figures` and `scale` only draw and each number here is tested on its own.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.logs import RunSnapshot
from core.logs.judgement.metrics import (
    N_OUT,
    add_global_step,
    add_time_axes,
    block_rows,
    downsample,
    ema_smooth,
    global_step_values,
    infer_steps_per_epoch,
    nan_quantiles,
    outlier_range,
    rank_band,
    segment_breaks,
)
from core.logs.judgement.status import RankState
from core.logs.rows.cells import as_int
from core.logs.rows.formats import ROW_FIELDS

X_MODES = {"Step": "global_step", "Relative time": "relative_s", "Wall time": "wall_time"}
X_TITLES = {"global_step": "step", "relative_s": "seconds since start", "wall_time": "wall time"}
_NOT_METRICS = frozenset({"rank", *ROW_FIELDS, "offset", "file", "global_step", "relative_s", "wall_time"})


@dataclass
class ChartOptions:
    """What the user picked for the loss chart."""

    smoothing: float = 0.6
    x_mode: str = "Step"
    log_y: bool = False
    ignore_outliers: bool = False
    show_band: bool = True
    show_ranks: bool = True
    ranks: tuple[int, ...] | None = None  # None = all
    metric: str = "loss"  # the column drawn: loss or any other metric of the loss lines
    show_eval: bool = False  # evaluation points of the same metric as markers


# ----------------------------------------------------------------------------- tables and axes


def prepare(metrics: pd.DataFrame) -> pd.DataFrame:
    """Metrics with global_step, relative_s and wall_time columns (all x-axis choices).

    The table's columns are not copied: the frame holds them as they are plus the three new ones.
    Why: `add_time_axes(add_global_step(...))` copied the frame twice and merged its blocks, 3.6 s
    and 3x the table's memory per tick at 2 M rows, the server's memory on a fast log (issue 22).
    """
    if metrics.empty:
        return add_time_axes(add_global_step(metrics))
    t = metrics["time"].to_numpy(dtype=np.float64) if "time" in metrics else np.full(len(metrics), np.nan)
    finite = np.isfinite(t)
    t0 = t[finite].min() if finite.any() else np.nan
    data: dict[str, object] = {c: metrics[c] for c in metrics.columns}
    data["global_step"] = global_step_values(metrics)
    if finite.any():
        data["relative_s"] = t - t0
        data["wall_time"] = pd.to_datetime(t, unit="s", utc=True).tz_convert(None)
    else:  # no time at all (a finished run read once): zero-stride NaN / NaT views, not 16 B a row (issue 31)
        data["relative_s"] = np.broadcast_to(np.float64(np.nan), t.shape)
        data["wall_time"] = np.broadcast_to(np.datetime64("NaT", "us"), t.shape)
    return pd.DataFrame(data, index=metrics.index, copy=False)


def x_column(df: pd.DataFrame, x_mode: str) -> tuple[str, str | None]:
    """The column for the chosen x mode, falling back to steps when the log has no timestamps."""
    col = X_MODES.get(x_mode, "global_step")
    if col != "global_step" and (df.empty or df["relative_s"].isna().all()):
        return "global_step", (
            "These logs carry no timestamps and were not watched live, so time axes are unavailable: showing steps."
        )
    return col, None


def metric_choices(snap: RunSnapshot) -> dict[str, str]:
    """Every metric the loss lines carry (column -> label as the logs spell it), loss first."""
    m = snap.metrics
    fixed = ["loss", "step_time_ms", "lr", "global_norm", "loss_scale", "throughput", "overflow"]
    extra = [c for c in m.columns if c not in _NOT_METRICS]
    keys = snap.metric_keys
    out = {}
    for col in fixed + extra:
        if col in m.columns and (col == "loss" or m[col].notna().any()):
            key = keys.get(col, col)
            out[col] = col if key == col else f"{key} ({col})"
    return out


def plotted(x: pd.Series, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points of one line that are drawn: rows with an x, at most ~N_OUT of them (the shape kept), as
    float32 (4 bytes to the browser, not 8: half the websocket bytes per update). Steps stay exact below
    2**24; a relative time of days keeps ~1 s, finer than the chart can show."""
    xs = x.to_numpy()
    keep = ~pd.isna(xs)
    xs, ys = xs[keep], y[keep]
    idx = downsample(
        xs.astype("datetime64[ns]").astype("int64")
        if np.issubdtype(xs.dtype, np.datetime64)
        else xs.astype(np.float64),
        ys,
        N_OUT,
    )
    xs, ys = xs[idx], ys[idx]
    if xs.dtype.kind == "f" and (len(xs) == 0 or np.nanmax(np.abs(xs)) < 2**24):
        xs = xs.astype(np.float32)
    return xs, ys.astype(np.float32)


# ----------------------------------------------------------------------------- the loss chart


@dataclass(frozen=True)
class Band:
    """Min, max and smoothed mean across the drawn ranks at each x."""

    x: pd.Series
    lo: np.ndarray
    hi: np.ndarray
    mean: np.ndarray


@dataclass(frozen=True)
class RankLine:
    """One rank's line: its raw values (with a gap where a truncated log's kept part ends) and smoothed."""

    rank: int
    x: pd.Series
    raw: np.ndarray
    smooth: np.ndarray


@dataclass(frozen=True)
class CompareLine:
    """Another run's smoothed mean across its ranks; `index` is its place among the runs picked (its style)."""

    index: int
    label: str
    x: pd.Series
    smooth: np.ndarray


@dataclass(frozen=True)
class LossData:
    """Everything the loss chart draws, computed."""

    metric: str
    xcol: str
    note: str | None  # why the x axis is not the one asked for
    band: Band | None
    ranks: tuple[RankLine, ...]
    compare: tuple[CompareLine, ...]
    evals: tuple[np.ndarray, np.ndarray] | None  # (x, value) of the evaluation points
    y_range: tuple[float, float] | None  # None: the chart's own (outliers kept)


def loss_data(
    df: pd.DataFrame,
    opts: ChartOptions,
    compare: list[tuple[str, pd.DataFrame]] | None = None,
    evals: pd.DataFrame | None = None,
) -> LossData:
    """The loss chart's series for `opts` (metric, ranks, x axis, smoothing, band, outliers, evaluations)."""
    metric = opts.metric if opts.metric in df.columns else "loss"
    if metric != "loss":  # the series below read `loss`: the chosen metric goes under that name
        df = df.assign(loss=df[metric])
        compare = [(label, o.assign(loss=o[metric])) for label, o in compare or [] if metric in o.columns]
    xcol, note = x_column(df, opts.x_mode)
    ranks = sorted(df["rank"].unique()) if not df.empty else []
    selected = [r for r in ranks if opts.ranks is None or r in opts.ranks]
    # every rank drawn (the usual case): no boolean-mask copy of the whole table per tick (issue 22)
    # what is drawn: each rank's rows copy these columns, not all ("file": a truncated log's kept part breaks the line)
    sub = df[list(dict.fromkeys(["rank", "loss", xcol, *(["file"] if "file" in df.columns else [])]))]
    sub = sub if len(selected) == len(ranks) else sub[sub["rank"].isin(selected)] if selected else sub.iloc[:0]
    band = _band(sub, xcol, opts.smoothing) if opts.show_band and len(selected) > 1 and not sub.empty else None
    lines = tuple(_rank_line(sub, r, len(selected), xcol, opts.smoothing) for r in selected) if opts.show_ranks else ()
    others = tuple(_compare_line(i, label, o, xcol, opts) for i, (label, o) in enumerate(compare or []) if not o.empty)
    shown = [
        *([band.mean] if band is not None else []),
        *(line.smooth for line in lines),
        *(c.smooth for c in others),
    ]
    wants_evals = opts.show_eval and evals is not None and xcol == "global_step"
    return LossData(
        metric=metric,
        xcol=xcol,
        note=note,
        band=band,
        ranks=lines,
        compare=others,
        evals=eval_points(df, evals, metric) if wants_evals and evals is not None else None,
        y_range=y_range(shown, opts.log_y) if opts.ignore_outliers else None,
    )


def _band(sub: pd.DataFrame, xcol: str, smoothing: float) -> Band | None:
    band = rank_band(sub.assign(_x=sub[xcol]).dropna(subset=["_x"]), x="_x", y="loss")
    if band.empty:
        return None
    return Band(
        x=band["_x"],
        lo=band["min"].to_numpy(dtype=np.float64),
        hi=band["max"].to_numpy(dtype=np.float64),
        mean=ema_smooth(band["mean"].to_numpy(dtype=np.float64), smoothing),
    )


def _rank_line(sub: pd.DataFrame, rank: int, n_selected: int, xcol: str, smoothing: float) -> RankLine:
    g = sub if n_selected == 1 else sub[sub["rank"] == rank]
    # a log kept from before a truncation, then steps that repeat: a gap, not a line back
    gx, raw = segment_breaks(g[xcol], g["loss"].to_numpy(dtype=np.float64), g.get("file"))
    return RankLine(as_int(rank), gx, raw, ema_smooth(raw, smoothing))


def _compare_line(index: int, label: str, other: pd.DataFrame, xcol: str, opts: ChartOptions) -> CompareLine:
    ocol, _ = x_column(other, opts.x_mode)
    if ocol != xcol:  # this run has the time axis, the other not: its steps
        ocol = "global_step"
    band = rank_band(other.assign(_x=other[ocol]).dropna(subset=["_x"]), x="_x", y="loss")
    return CompareLine(index, label, band["_x"], ema_smooth(band["mean"].to_numpy(dtype=np.float64), opts.smoothing))


def y_range(shown: list[np.ndarray], log_y: bool) -> tuple[float, float] | None:
    """The y range that leaves out outliers of every value shown (log10 of the positive ones on a log axis);
    None when there is nothing to judge."""
    if not shown:
        return None
    vals = np.concatenate(shown)
    if log_y:
        vals = np.log10(vals[vals > 0])
    return outlier_range(vals)


def eval_points(df: pd.DataFrame, evals: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Evaluation points of `metric` (never training rows) at the step they were printed (the epoch's last
    step when the line names only its epoch; after the file's last training row when it names neither)."""
    ev = evals[evals["name"] == metric]
    if ev.empty:
        return None
    spe = infer_steps_per_epoch(df)
    step = ev["step"].to_numpy(dtype=np.float64)
    epoch = ev["epoch"].to_numpy(dtype=np.float64)
    x = np.where(np.isfinite(step), step, epoch * spe if spe else np.nan)
    if spe and np.isfinite(step).any() and np.isfinite(epoch).any():
        x = np.where(np.isfinite(step) & np.isfinite(epoch) & (step <= spe), (epoch - 1) * spe + step, x)
    for i in np.flatnonzero(~np.isfinite(x)):  # a summary that names no step: after the last training row
        before = df[
            (df["rank"] == ev["rank"].iloc[i])
            & (df["file"] == ev["file"].iloc[i])
            & (df["offset"] < ev["offset"].iloc[i])
        ]
        if not before.empty:
            x[i] = before["global_step"].iloc[-1]
    return x, ev["value"].to_numpy(dtype=np.float64)


# ----------------------------------------------------------------------------- step time


@dataclass(frozen=True)
class StepTimes:
    """Step time per rank: (rank, x, ms) lines, the x axis's title, and whether points are marked (per epoch)."""

    lines: tuple[tuple[int, np.ndarray | pd.Series, np.ndarray | pd.Series], ...]
    xtitle: str
    markers: bool


def step_times(df: pd.DataFrame, timings: pd.DataFrame, ranks: tuple[int, ...] | None) -> StepTimes | None:
    """MindFormers' per-line step time (drawn points only), else TimeMonitor's per-epoch figure; None if neither."""
    have = df.dropna(subset=["step_time_ms"]) if not df.empty else df
    if not have.empty:
        lines = [
            (as_int(rank), *plotted(g["global_step"], g["step_time_ms"].to_numpy(dtype=np.float64)))
            for rank, g in have.groupby("rank")
            if ranks is None or rank in ranks
        ]
        return StepTimes(tuple(lines), "step", markers=False)
    if not timings.empty:
        per_epoch: list[tuple[int, np.ndarray | pd.Series, np.ndarray | pd.Series]] = [
            (as_int(rank), g["epoch"], g["step_time_ms"])
            for rank, g in timings.groupby("rank")
            if ranks is None or rank in ranks
        ]
        return StepTimes(tuple(per_epoch), "epoch (TimeMonitor)", markers=True)
    return None


# ----------------------------------------------------------------------------- rank states


def state_count(states: pd.DataFrame, *wanted: RankState) -> int:
    """How many ranks are in one of `wanted` (0 for an empty table)."""
    return 0 if states.empty else int(states["state"].isin(list(wanted)).sum())


def state_counts(states: pd.DataFrame) -> dict[RankState, int]:
    """Ranks per RankState (the typed values of `rank_states`, never their labels), most first; a tie in
    the order the states first appear."""
    counts = Counter(RankState(s) for s in states["state"]) if not states.empty else Counter()
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


# ----------------------------------------------------------------------------- big runs (rank x step grids)


@dataclass(frozen=True)
class Aggregates:
    """Across ranks at each step (float32, as drawn): min, p10, p90, max, smoothed mean and median, and the
    smoothed line of each highlighted rank that has one."""

    x: np.ndarray
    lo: np.ndarray
    p10: np.ndarray
    p90: np.ndarray
    hi: np.ndarray
    mean: np.ndarray
    median: np.ndarray
    highlighted: tuple[tuple[int, np.ndarray], ...]


def aggregates(
    grid: np.ndarray, ranks: np.ndarray, x: np.ndarray, highlight: list[int], smoothing: float, max_highlight: int
) -> Aggregates | None:
    """The aggregate chart's series of a rank x step `grid` (None when it has no cell); at most
    `max_highlight` of the `highlight` ranks, those of the grid."""
    if not grid.size:
        return None
    with warnings.catch_warnings():  # steps no rank reached yet are all-NaN columns
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, p10, med, p90, hi = nan_quantiles(grid, [0.0, 0.1, 0.5, 0.9, 1.0])
        mean = np.nanmean(grid, axis=0)
    index = {int(r): i for i, r in enumerate(ranks)}
    chosen = [r for r in highlight[:max_highlight] if r in index]

    def f32(a: np.ndarray) -> np.ndarray:
        return a.astype(np.float32)

    return Aggregates(
        x=f32(x),  # float32 traces: half the bytes, exact steps up to 16 M
        lo=f32(lo),
        p10=f32(p10),
        p90=f32(p90),
        hi=f32(hi),
        mean=f32(ema_smooth(mean, smoothing)),
        median=f32(ema_smooth(med, smoothing)),
        highlighted=tuple((r, f32(ema_smooth(grid[index[r]], smoothing))) for r in chosen),
    )


def heat_cells(
    grid: np.ndarray, ranks: np.ndarray, x: np.ndarray, max_rows: int, max_cols: int
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """At most max_rows x max_cols cells of a rank x step grid (float32 z, row labels, float32 x): columns
    merged by mean, row blocks keeping their most deviant rank (a straggler still shows as a line)."""
    if grid.shape[1] > max_cols:
        f = -(-grid.shape[1] // max_cols)
        pad = (-grid.shape[1]) % f
        g = np.hstack([grid, np.full((grid.shape[0], pad), np.nan)]) if pad else grid
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            grid = np.nanmean(g.reshape(grid.shape[0], -1, f), axis=2)
        xp = np.concatenate([x, np.full(pad, np.nan)]) if pad else x
        x = np.nanmean(xp.reshape(-1, f), axis=1)
    if grid.shape[1] == 0:  # no loss line yet: the row labels of a grid of gaps (no block of 0 columns to cut)
        rows, labels = block_rows(np.full((grid.shape[0], 1), np.nan), ranks, max_rows)
        rows = rows[:, :0]
    else:
        rows, labels = block_rows(grid, ranks, max_rows)
    return rows.astype(np.float32), labels, x.astype(np.float32)
