"""Monitor views for big runs (more than SCALE_RANKS ranks): aggregates, rank x step heatmaps, the
ranks to look at. Built from core.logs data (grids, diagnosis) and `figure_data` (aggregates, heatmap
cells); `scale_view` lays them out.

Why: one line and one legend entry per rank stops working long before 1,024 ranks (a 98 MB chart,
a legend that squeezes the plot). Here every figure is drawn from a rank x step grid of bounded size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.monitor.figure_data import Aggregates, aggregates, heat_cells
from core.logs import RunSnapshot
from core.logs.judgement.diagnose import Diagnosis
from core.logs.judgement.lookat import look_at as core_look_at
from core.logs.judgement.metrics import global_step_values, rank_grid

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
    agg = aggregates(g.loss, g.ranks, g.x, highlight, smoothing, MAX_HIGHLIGHT)
    if agg is not None:
        _draw_aggregates(fig, agg)
    fig.update_layout(
        template="plotly_white",
        margin={"l": 60, "r": 20, "t": 30, "b": 45},
        xaxis={"title": "step", "gridcolor": "#e5e7eb"},
        yaxis={"title": "loss", "type": "log" if log_y else "linear", "gridcolor": "#e5e7eb"},
        hovermode="x unified",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.01, "x": 0, "font": {"size": 11}},
    )
    return fig


def _draw_aggregates(fig: go.Figure, agg: Aggregates) -> None:
    x = agg.x
    for name, a, b, color in (
        ("min-max across ranks", agg.hi, agg.lo, "rgba(100,116,139,0.15)"),
        ("p10-p90", agg.p90, agg.p10, "rgba(37,99,235,0.18)"),
    ):
        edge = {"x": x, "mode": "lines", "line": {"width": 0}, "hoverinfo": "skip", "legendgroup": name}
        fig.add_trace(go.Scatter(y=a, showlegend=False, **edge))
        fig.add_trace(go.Scatter(y=b, fill="tonexty", fillcolor=color, name=name, **edge))
    fig.add_trace(go.Scatter(x=x, y=agg.mean, mode="lines", name="mean", line={"color": "#111827", "width": 2.4}))
    median_line = {"color": "#4b5563", "width": 1.2, "dash": "dot"}
    fig.add_trace(go.Scatter(x=x, y=agg.median, mode="lines", name="median", line=median_line))
    for k, (rank, y) in enumerate(agg.highlighted):
        line = {"color": _HIGHLIGHT[k % len(_HIGHLIGHT)], "width": 1.6}
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=f"rank {rank}", line=line))


def heatmap_figure(
    grid: np.ndarray, ranks: np.ndarray, x: np.ndarray, title: str, xtitle: str, colorscale: str = "Viridis"
) -> go.Figure:
    """Rank x step heatmap, at most HEAT_ROWS x HEAT_COLS cells (a straggler or a diverging rank shows
    as a line across it). Columns are merged by mean, row blocks keep their most deviant rank."""
    z, labels, xs = heat_cells(grid, ranks, x, HEAT_ROWS, HEAT_COLS)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=xs,
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
