"""Curve maths for the Monitor: TensorBoard smoothing, global step, time axes, rank aggregates, downsampling.

Pure numpy/pandas; figures are built from these results in `app/`.
"""

from __future__ import annotations

import math
import warnings

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
]

N_OUT = 2000
"""Points kept per trace by `downsample`: 8 traces x 2000 points stay well under 1 MB of JSON."""


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
    epoch that a later epoch followed (LossMonitor prints the step within the epoch). None if unknown."""
    if df.empty or "epoch" not in df or df["epoch"].isna().all():
        return None
    if "steps_total" in df and df["steps_total"].notna().any():
        return float(df["steps_total"].dropna().max())
    epochs = df["epoch"].dropna()
    last_epoch = epochs.max()
    done = df[df["epoch"] < last_epoch]
    if done.empty or done["step"].isna().all():
        return None
    return float(done["step"].max())


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
    counter = df.groupby("rank").cumcount().to_numpy(dtype=np.float64) + 1
    step = df["step"].to_numpy(dtype=np.float64)
    epoch = df["epoch"].to_numpy(dtype=np.float64)
    if np.isnan(step).all():
        return counter
    spe = steps_per_epoch if steps_per_epoch is not None else infer_steps_per_epoch(df)
    if spe and not np.isnan(epoch).all() and np.nanmax(step) <= spe:
        gs = (epoch - np.nanmin(epoch)) * spe + step
    else:
        gs = step.copy()
    return np.where(np.isnan(gs), counter, gs)


def rank_grid(rank: np.ndarray, x: np.ndarray, value: np.ndarray,
              max_cols: int = 1000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    ranks = np.unique(rank)
    if not ok.any():
        return np.full((len(ranks), 0), np.nan), ranks, np.empty(0)
    rank, x, value = rank[ok], x[ok], value[ok]
    lo, hi = float(x.min()), float(x.max())
    n_cols = int(min(max_cols, max(1, hi - lo + 1)))
    width = (hi - lo) / n_cols if hi > lo else 1.0
    col = np.minimum(((x - lo) / width).astype(np.int64), n_cols - 1)
    row = np.searchsorted(ranks, rank)
    cell = row * n_cols + col
    size = len(ranks) * n_cols
    sums = np.bincount(cell, weights=value, minlength=size)
    counts = np.bincount(cell, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        grid = (sums / counts).reshape(len(ranks), n_cols)
    centres = lo + (np.arange(n_cols) + 0.5) * width if hi > lo else np.array([lo])
    return grid, ranks, centres


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
    """Ranks whose latest value is far from the others' (robust z-score on each rank's last point)."""
    if grid.size == 0:
        return []
    has = ~np.isnan(grid)
    last_col = np.where(has.any(axis=1), grid.shape[1] - 1 - np.argmax(has[:, ::-1], axis=1), -1)
    last = np.where(last_col >= 0, grid[np.arange(len(ranks)), np.maximum(last_col, 0)], np.nan)
    finite = last[np.isfinite(last)]
    if len(finite) < 3:
        return []
    med = float(np.median(finite))
    mad = float(np.median(np.abs(finite - med))) * 1.4826
    if mad <= 0:
        mad = max(abs(med) * 1e-3, 1e-12)
    score = np.abs(last - med) / mad
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
    out = pd.DataFrame({"mean": grouped.mean(), "min": grouped.min(), "max": grouped.max(),
                        "n_ranks": clean.groupby(x, sort=True)["rank"].nunique()})
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


def outlier_range(values: np.ndarray | pd.Series, lower: float = 5.0, upper: float = 95.0,
                  pad: float = 0.1) -> tuple[float, float] | None:
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
