"""Curve maths for the Monitor: TensorBoard smoothing, global step, time axes, rank aggregates, downsampling.

Pure numpy/pandas; figures are built from these results in `app/`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

__all__ = [
    "N_OUT",
    "add_global_step",
    "add_time_axes",
    "block_rows",
    "downsample",
    "ema_smooth",
    "global_step_values",
    "infer_steps_per_epoch",
    "lagging_ranks",
    "outlier_range",
    "rank_band",
    "rank_grid",
    "segment_breaks",
]

N_OUT = 1000
"""Points kept per trace by `downsample` (minmax-LTTB keeps the peaks): more than a chart's ~800 px show,
and 8 ranks x 2,000 steps send ~250 KB per update instead of ~870 KB."""


def ema_smooth(values: np.ndarray | pd.Series | list[float], weight: float) -> np.ndarray:
    """TensorBoard's scalar-dashboard smoothing: debiased EMA, non-finite points passed through.

    last = last * w + (1 - w) * v; smoothed = last / (1 - w ** n) with n = finite points so far;
    a non-finite v keeps its value and does not enter the average; a constant series is unchanged.
    Equal to pandas' `ewm(alpha=1 - w, adjust=True, ignore_na=True)`, which is what runs here.
    """
    y = np.asarray(values, dtype=np.float64)
    if not 0.0 <= weight < 1.0:
        if weight == 1.0:
            weight = 1.0 - 1e-12
        else:
            raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    if y.size == 0 or weight == 0.0:
        return y.copy()
    finite = np.isfinite(y)
    if finite.all() and (y == y[0]).all():
        return y.copy()
    clean = np.where(finite, y, np.nan)
    smoothed = pd.Series(clean).ewm(alpha=1.0 - weight, adjust=True, ignore_na=True).mean().to_numpy()
    return np.where(finite, smoothed, y)


def infer_steps_per_epoch(df: pd.DataFrame) -> float | None:
    """Steps per epoch: the printed total (MindFormers `step:[ 4/125]`) or the largest step seen in an
    epoch that a later epoch followed (LossMonitor prints the step within the epoch). None if unknown.
    On numpy columns: no filtered copy of a 2 M-row frame (that was ~90 ms of a 1,024-rank tick)."""
    if df.empty or "epoch" not in df:
        return None
    epoch = df["epoch"].to_numpy(dtype=np.float64)
    if not np.isfinite(epoch).any():
        return None
    if "steps_total" in df:
        total = df["steps_total"].to_numpy(dtype=np.float64)
        if np.isfinite(total).any():
            return float(np.nanmax(total))
    done = epoch < np.nanmax(epoch)
    steps = df["step"].to_numpy(dtype=np.float64)[done]
    return float(np.nanmax(steps)) if np.isfinite(steps).any() else None


def add_global_step(df: pd.DataFrame, steps_per_epoch: float | None = None) -> pd.DataFrame:
    """Add `global_step`: (epoch - first epoch) x steps per epoch + step when the epoch length is known
    (given or inferable) and steps restart each epoch; the step itself when it already counts globally;
    else a per-rank monotonic counter (1, 2, 3, ...)."""
    out = df.copy()
    out["global_step"] = global_step_values(out, steps_per_epoch)
    return out


def global_step_values(df: pd.DataFrame, steps_per_epoch: float | None = None) -> np.ndarray:
    """The `global_step` column of `add_global_step`, without copying the frame (1,024 ranks x 2,000
    steps is 2 M rows: the Monitor's scale view must not copy them every tick)."""
    if df.empty:
        return np.empty(0, dtype=np.float64)
    step = df["step"].to_numpy(dtype=np.float64)
    epoch = df["epoch"].to_numpy(dtype=np.float64)
    if np.isnan(step).all():
        return _rank_counter(df)
    spe = steps_per_epoch if steps_per_epoch is not None else infer_steps_per_epoch(df)
    if spe and not np.isnan(epoch).all() and np.nanmax(step) <= spe:
        gs = (epoch - np.nanmin(epoch)) * spe + step
    else:
        gs = step.copy()
    missing = np.isnan(gs)
    return np.where(missing, _rank_counter(df), gs) if missing.any() else gs


def _rank_counter(df: pd.DataFrame) -> np.ndarray:
    """1, 2, 3, ... per rank in row order (the x of rows that carry no step)."""
    return df.groupby("rank").cumcount().to_numpy(dtype=np.float64) + 1


def rank_grid(
    rank: np.ndarray, x: np.ndarray, value: np.ndarray, max_cols: int = 1000
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A rank x step grid of `value` (mean per cell), the step axis cut into at most `max_cols` equal bins.

    Returns (grid of shape (n_ranks, n_cols) with NaN where a rank has no point, the sorted ranks,
    each column's x centre). One bincount pass: 2 M rows take ~50 ms, and the payload of anything
    drawn from it is bounded by ranks x max_cols whatever the run length.
    Example: ranks [0, 0, 1], x [1, 2, 1], value [2., 4., 6.], max_cols=1 -> [[3.], [6.]].
    """
    rank = np.asarray(rank, dtype=np.int64)
    x = np.asarray(x, dtype=np.float64)
    value = np.asarray(value, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(value)
    ranks, row_of = _dense_ranks(rank)
    if not ok.any():
        return np.full((len(ranks), 0), np.nan), ranks, np.empty(0)
    rank, x, value = rank[ok], x[ok], value[ok]
    lo, hi = float(x.min()), float(x.max())
    n_cols = int(min(max_cols, max(1, hi - lo + 1)))
    width = (hi - lo) / n_cols if hi > lo else 1.0
    col = np.minimum(((x - lo) / width).astype(np.int64), n_cols - 1)
    row = row_of(rank)
    cell = row * n_cols + col
    size = len(ranks) * n_cols
    sums = np.bincount(cell, weights=value, minlength=size)
    counts = np.bincount(cell, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        grid = (sums / counts).reshape(len(ranks), n_cols)
    centres = lo + (np.arange(n_cols) + 0.5) * width if hi > lo else np.array([lo])
    return grid, ranks, centres


def nan_quantiles(grid: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """`np.nanpercentile(grid, 100 * q, axis=0)` for each q (linear interpolation), from one sort:
    NaNs sort last, so each column's k-th value is found by its count. ~5x faster on a 1,024 x 500
    grid (the aggregate chart's band, every tick). Columns without a value give NaN."""
    ordered = np.sort(grid, axis=0)
    count = np.sum(~np.isnan(grid), axis=0)
    cols = np.arange(grid.shape[1])
    out = np.full((len(qs), grid.shape[1]), np.nan)
    have = count > 0
    for i, q in enumerate(qs):
        pos = (count - 1) * q
        below = np.floor(pos).astype(np.int64)
        above = np.minimum(below + 1, np.maximum(count - 1, 0))
        low = ordered[np.maximum(below, 0), cols]
        high = ordered[above, cols]
        out[i] = np.where(have, low + (high - low) * (pos - below), np.nan)
    return out


def _dense_ranks(rank: np.ndarray) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """The sorted distinct ranks and a map rank -> row. Ranks are small integers (-1 .. a few
    thousand): a bincount and a lookup table instead of a sort of 2 M rows and a binary search each."""
    if len(rank) == 0:
        return np.empty(0, dtype=np.int64), lambda r: np.zeros(len(r), dtype=np.int64)
    lo, hi = int(rank.min()), int(rank.max())
    if hi - lo > 1 << 22:  # not rank numbers: fall back to sorting
        ranks = np.unique(rank)
        return ranks, lambda r: np.searchsorted(ranks, r)
    present = np.bincount(rank - lo, minlength=hi - lo + 1) > 0
    ranks = np.flatnonzero(present).astype(np.int64) + lo
    lut = np.cumsum(present, dtype=np.int64) - 1
    return ranks, lambda r: lut[r - lo]


def block_rows(grid: np.ndarray, ranks: np.ndarray, max_rows: int) -> tuple[np.ndarray, list[str]]:
    """At most `max_rows` rows: blocks of consecutive ranks, each cell the block's value farthest from
    its column's median (or a gap where one of its ranks has none), so one straggler, diverging or
    stopped rank stays visible after the cut.
    Returns (rows, labels: "rank 5" or "ranks 0-3")."""
    n = len(ranks)
    if n <= max_rows:
        return grid, [f"rank {r}" for r in ranks]
    b = -(-n // max_rows)
    pad = (-n) % b
    g = np.vstack([grid, np.full((pad, grid.shape[1]), np.nan)]) if pad else grid
    blocks = g.reshape(-1, b, grid.shape[1])
    with warnings.catch_warnings():  # all-NaN columns are expected (ranks that stopped early)
        warnings.simplefilter("ignore", RuntimeWarning)
        median = np.nanmedian(grid, axis=0)
    dev = np.abs(blocks - median)
    # a rank with no value where the others have one (hung, crashed) is the most deviant of all: its
    # block shows the gap, so a stopped rank stays a visible line after the cut (padding never does)
    missing = np.isnan(blocks) & ~np.isnan(median)
    real = (np.arange(len(g)) < n).reshape(-1, b)[:, :, None]
    dev = np.where(missing & real, np.inf, np.where(np.isnan(dev), -1.0, dev))
    pick = dev.argmax(axis=1)
    rows = np.take_along_axis(blocks, pick[:, None, :], axis=1)[:, 0, :]
    labels = [f"ranks {ranks[i * b]}-{ranks[min(n, (i + 1) * b) - 1]}" for i in range(len(rows))]
    return rows, labels


def lagging_ranks(grid: np.ndarray, ranks: np.ndarray, z: float = 5.0, limit: int = 5) -> list[int]:
    """Ranks whose latest value is far from the others' at the same step (robust z-score of each rank's
    last point against every rank's value in that column): a rank that died at step 150 is compared
    with the others' step 150, not with their later, lower loss (that is no divergence)."""
    if grid.size == 0:
        return []
    has = ~np.isnan(grid)
    last_col = np.where(has.any(axis=1), grid.shape[1] - 1 - np.argmax(has[:, ::-1], axis=1), -1)
    last = np.where(last_col >= 0, grid[np.arange(len(ranks)), np.maximum(last_col, 0)], np.nan)
    score = np.full(len(ranks), np.nan)
    for col in np.unique(last_col[last_col >= 0]).tolist():
        values = grid[:, col]
        finite = values[np.isfinite(values)]
        if len(finite) < 3:
            continue
        med = float(np.median(finite))
        mad = float(np.median(np.abs(finite - med))) * 1.4826
        if mad <= 0:
            mad = max(abs(med) * 1e-3, 1e-12)
        here = last_col == col
        score[here] = np.abs(last[here] - med) / mad
    order = np.argsort(-np.nan_to_num(score, nan=-1.0))
    return [int(ranks[i]) for i in order[:limit] if score[i] > z]


def add_time_axes(df: pd.DataFrame, start: float | None = None) -> pd.DataFrame:
    """Add `wall_time` (datetime, local) and `relative_s` (seconds since the run's first timed point).

    Rows without a time (logs read after the fact carry no timestamps) keep NaN/NaT.
    """
    out = df.copy()
    t = out["time"].to_numpy(dtype=np.float64) if "time" in out else np.full(len(out), np.nan)
    t0 = start if start is not None else (np.nanmin(t) if np.isfinite(t).any() else np.nan)
    out["relative_s"] = t - t0
    out["wall_time"] = pd.to_datetime(t, unit="s", utc=True).tz_convert(None)
    return out


def rank_band(df: pd.DataFrame, x: str = "global_step", y: str = "loss") -> pd.DataFrame:
    """Mean / min / max of `y` across ranks for every `x` (non-finite values ignored)."""
    if df.empty:
        return pd.DataFrame(columns=[x, "mean", "min", "max", "n_ranks"])
    clean = df[[x, y, "rank"]].replace([np.inf, -np.inf], np.nan).dropna(subset=[x])
    grouped = clean.groupby(x, sort=True)[y]
    out = pd.DataFrame(
        {
            "mean": grouped.mean(),
            "min": grouped.min(),
            "max": grouped.max(),
            "n_ranks": clean.groupby(x, sort=True)["rank"].nunique(),
        }
    )
    return out.reset_index()


def downsample(x: np.ndarray, y: np.ndarray, n_out: int = N_OUT) -> np.ndarray:
    """Indices of the points to draw: MinMaxLTTB (tsdownsample) when there are more than `n_out`.

    Keeps the visual shape (spikes included) of millions of points in ~2000. Non-finite y values are
    never dropped silently: their indices are kept as well so NaN/inf steps stay visible.
    """
    x = np.asarray(x)
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    if n <= n_out:
        return np.arange(n)
    finite = np.isfinite(y)
    idx_f = np.flatnonzero(finite)
    if len(idx_f) <= n_out:
        return np.arange(n)
    from tsdownsample import MinMaxLTTBDownsampler

    xf = x[idx_f]
    if np.issubdtype(xf.dtype, np.datetime64):
        xf = xf.astype("int64")
    xf = xf.astype(np.float64)
    order = np.argsort(xf, kind="stable")
    if not (order == np.arange(len(order))).all():
        idx_f = idx_f[order]
        xf = xf[order]
    picked = MinMaxLTTBDownsampler().downsample(xf, np.ascontiguousarray(y[idx_f]), n_out=n_out)
    keep = idx_f[np.asarray(picked, dtype=np.int64)]
    bad = np.flatnonzero(~finite)
    if len(bad):
        keep = np.union1d(keep, bad[:n_out])
    return np.sort(keep)


def segment_breaks(x: pd.Series, y: np.ndarray, files: pd.Series | None) -> tuple[pd.Series, np.ndarray]:
    """One rank's curve with a gap (a NaN y) where a new file begins and x goes back: the part of a log
    kept from before it was truncated is followed by steps that may repeat (a resume in the same log),
    and a line drawn from the last point of one to the first of the other went back across the chart.
    Unchanged (the same objects) when there is no such place: the usual case costs one comparison."""
    if files is None:
        return x, y
    codes = files.cat.codes.to_numpy() if isinstance(files.dtype, pd.CategoricalDtype) else pd.factorize(files)[0]
    if len(codes) < 2 or (codes[1:] == codes[:-1]).all():
        return x, y
    xs = x.to_numpy()
    at = np.flatnonzero((codes[1:] != codes[:-1]) & (xs[1:] < xs[:-1])) + 1
    if not len(at):
        return x, y
    ys = np.insert(np.asarray(y, dtype=np.float64), at, np.nan)
    return pd.Series(np.insert(xs, at, xs[at - 1]), name=x.name), ys


def outlier_range(
    values: np.ndarray | pd.Series, lower: float = 5.0, upper: float = 95.0, pad: float = 0.1
) -> tuple[float, float] | None:
    """A y range that ignores outliers (TensorBoard's "ignore outliers"): the [lower, upper] percentile
    span padded by `pad` of its height on each side. None when there is nothing finite."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    lo, hi = np.percentile(v, [lower, upper])
    span = hi - lo
    if span <= 0 or not math.isfinite(span):
        span = abs(hi) * 0.1 or 1.0
    return float(lo - pad * span), float(hi + pad * span)
