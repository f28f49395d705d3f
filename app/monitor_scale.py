"""Monitor views for big runs (more than SCALE_RANKS ranks): aggregates, rank x step heatmaps, the
ranks to look at. Built from core.logs data (grids, diagnosis); the page only lays them out.

Why: one line and one legend entry per rank stops working long before 1,024 ranks (a 98 MB chart,
a legend that squeezes the plot). Here every figure is drawn from a rank x step grid of bounded size.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.logs import RunSnapshot
from core.logs.judgement.diagnose import Diagnosis
from core.logs.judgement.lookat import look_at as core_look_at
from core.logs.judgement.metrics import block_rows, ema_smooth, global_step_values, nan_quantiles, rank_grid

SCALE_RANKS = 32
"""Above this many ranks the Monitor shows aggregates and heatmaps instead of one line per rank."""
MAX_COLS = 500  # steps per aggregate / highlighted line (bounded payload whatever the run length)
HEAT_ROWS = 192  # heatmap rows (blocks of ranks above this, outliers kept)
HEAT_COLS = 100  # 192 x 100 float32 cells: ~130 KB of (escaped) base64 per tick
MAX_HIGHLIGHT = 16
_HIGHLIGHT = ["#dc2626", "#ea580c", "#9333ea", "#0891b2", "#ca8a04", "#db2777", "#16a34a", "#2563eb"]


@dataclass
class Grids:
    """Rank x step grids of one snapshot (computed once per snapshot version)."""

    loss: np.ndarray
    ranks: np.ndarray
    x: np.ndarray
    step_time: np.ndarray | None
    step_time_x: np.ndarray | None
    step_time_label: str


def grids(snap: RunSnapshot, max_cols: int = MAX_COLS) -> Grids:
    """Loss and step-time grids (step time: the log's per-step time, else TimeMonitor per epoch)."""
    m = snap.metrics
    all_ranks = np.array(sorted(int(r) for r in snap.ranks["rank"]), dtype=np.int64)
    if m.empty:
        empty = np.full((len(all_ranks), 0), np.nan)
        return Grids(empty, all_ranks, np.empty(0), None, None, "")
    gs = global_step_values(m)
    rank = m["rank"].to_numpy()
    loss, ranks, x = rank_grid(rank, gs, m["loss"].to_numpy(dtype=np.float64), max_cols)
    st_vals = m["step_time_ms"].to_numpy(dtype=np.float64)
    step_time = step_x = None
    label = ""
    if np.isfinite(st_vals).any():
        step_time, st_ranks, step_x = rank_grid(rank, gs, st_vals, max_cols)
        step_time = _align(step_time, st_ranks, ranks)
        label = "step"
    elif not snap.timings.empty:
        t = snap.timings
        order = t.groupby("rank").cumcount().to_numpy(dtype=np.float64) + 1
        step_time, st_ranks, step_x = rank_grid(
            t["rank"].to_numpy(), order, t["step_time_ms"].to_numpy(dtype=np.float64), max_cols
        )
        step_time = _align(step_time, st_ranks, ranks)
        label = "epoch (TimeMonitor)"
    return Grids(loss, ranks, x, step_time, step_x, label)


def _align(grid: np.ndarray, have: np.ndarray, want: np.ndarray) -> np.ndarray:
    out = np.full((len(want), grid.shape[1]), np.nan)
    pos = np.searchsorted(want, have)
    ok = (pos < len(want)) & (want[np.minimum(pos, len(want) - 1)] == have)
    out[pos[ok]] = grid[ok]
    return out


def look_at(diag: Diagnosis, g: Grids) -> pd.DataFrame:
    """The ranks a person should look at first, with why (judgement.lookat, as the shared report lists them)."""
    rows = [(a.rank, a.what, a.why) for a in core_look_at(diag, g.loss, g.ranks)]
    return pd.DataFrame(rows, columns=["rank", "what", "why"])


def aggregate_figure(g: Grids, highlight: list[int], smoothing: float, log_y: bool = False) -> go.Figure:
    """Mean, p10-p90 and min-max across ranks per step, plus up to MAX_HIGHLIGHT named ranks."""
    fig = go.Figure()
    grid, x = g.loss, g.x.astype(np.float32)  # float32 traces: half the bytes, exact steps up to 16 M
    if grid.size:
        with warnings.catch_warnings():  # steps no rank reached yet are all-NaN columns
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, p10, med, p90, hi = nan_quantiles(grid, [0.0, 0.1, 0.5, 0.9, 1.0])
            mean = np.nanmean(grid, axis=0)
        for name, a, b, color in (
            ("min-max across ranks", hi, lo, "rgba(100,116,139,0.15)"),
            ("p10-p90", p90, p10, "rgba(37,99,235,0.18)"),
        ):
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=a.astype(np.float32),
                    mode="lines",
                    line={"width": 0},
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=name,
                )
            )
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=b.astype(np.float32),
                    mode="lines",
                    line={"width": 0},
                    fill="tonexty",
                    fillcolor=color,
                    name=name,
                    legendgroup=name,
                    hoverinfo="skip",
                )
            )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=ema_smooth(mean, smoothing).astype(np.float32),
                mode="lines",
                name="mean",
                line={"color": "#111827", "width": 2.4},
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=ema_smooth(med, smoothing).astype(np.float32),
                mode="lines",
                name="median",
                line={"color": "#4b5563", "width": 1.2, "dash": "dot"},
            )
        )
        index = {int(r): i for i, r in enumerate(g.ranks)}
        for k, rank in enumerate(r for r in highlight[:MAX_HIGHLIGHT] if r in index):
            y = grid[index[rank]]
            color = _HIGHLIGHT[k % len(_HIGHLIGHT)]
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=ema_smooth(y, smoothing).astype(np.float32),
                    mode="lines",
                    name=f"rank {rank}",
                    line={"color": color, "width": 1.6},
                )
            )
    fig.update_layout(
        template="plotly_white",
        margin={"l": 60, "r": 20, "t": 30, "b": 45},
        xaxis={"title": "step", "gridcolor": "#e5e7eb"},
        yaxis={"title": "loss", "type": "log" if log_y else "linear", "gridcolor": "#e5e7eb"},
        hovermode="x unified",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.01, "x": 0, "font": {"size": 11}},
    )
    return fig


def heatmap_figure(
    grid: np.ndarray, ranks: np.ndarray, x: np.ndarray, title: str, xtitle: str, colorscale: str = "Viridis"
) -> go.Figure:
    """Rank x step heatmap, at most HEAT_ROWS x HEAT_COLS cells (a straggler or a diverging rank shows
    as a line across it). Columns are merged by mean, row blocks keep their most deviant rank."""
    if grid.shape[1] > HEAT_COLS:
        f = -(-grid.shape[1] // HEAT_COLS)
        pad = (-grid.shape[1]) % f
        g = np.hstack([grid, np.full((grid.shape[0], pad), np.nan)]) if pad else grid
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            grid = np.nanmean(g.reshape(grid.shape[0], -1, f), axis=2)
        xp = np.concatenate([x, np.full(pad, np.nan)]) if pad else x
        x = np.nanmean(xp.reshape(-1, f), axis=1)
    rows, labels = block_rows(grid, ranks, HEAT_ROWS)
    fig = go.Figure(
        go.Heatmap(
            z=rows.astype(np.float32),
            x=x.astype(np.float32),
            y=labels,
            colorscale=colorscale,
            colorbar={"title": title, "thickness": 12},
            hoverongaps=False,
            hovertemplate=f"%{{y}}<br>{xtitle} %{{x:.0f}}<br>{title} %{{z:.4g}}<extra></extra>",
        )
    )
    fig.update_layout(
        template="plotly_white",
        margin={"l": 90, "r": 20, "t": 10, "b": 45},
        xaxis={"title": xtitle},
        yaxis={"autorange": "reversed", "showgrid": False},
    )
    return fig
