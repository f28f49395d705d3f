"""The Monitor's figures and tables, drawn from what `figure_data` computed (no parsing or statistics here)."""

from __future__ import annotations

import math
import time
from collections.abc import Sized

import pandas as pd
import plotly.graph_objects as go

from app.monitor.figure_data import (
    X_TITLES,
    Band,
    ChartOptions,
    LossData,
    RankLine,
    StepTimes,
    loss_data,
    plotted,
    prepare,
    step_times,
)
from core.logs import RunSnapshot, rank_status
from core.logs.judgement.status import RankState, duration_text, loss_text
from core.run.states import RunStatus

# Plain symbols, not emoji: emoji need a colour-emoji font many Linux desktops lack.
STATE_LABELS = {
    RankState.RUNNING: "● running",
    RankState.STALLED: "◌ stalled",
    RankState.CRASHED: "✗ crashed",
    RankState.NAN: "✗ NaN/inf loss",
    RankState.FINISHED: "✓ finished",
    RankState.STOPPED: "■ stopped",
    RankState.WAITING: "… waiting",
    RankState.UNREADABLE: "⊘ unreadable",
    RankState.ENDED: "◼ log ended",
}
_PALETTE = [
    "#2563eb",
    "#dc2626",
    "#16a34a",
    "#9333ea",
    "#ea580c",
    "#0891b2",
    "#ca8a04",
    "#db2777",
    "#4b5563",
    "#65a30d",
    "#7c3aed",
    "#0d9488",
]
_COMPARE_DASH = ["dash", "dot", "dashdot", "longdash"]


def _color(rank: int) -> str:
    return _PALETTE[rank % len(_PALETTE)]


_LAYOUT = {
    "template": "plotly_white",
    "margin": {"l": 60, "r": 20, "t": 30, "b": 45},
    "hovermode": "x unified",
    "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.01, "x": 0, "font": {"size": 11}},
}


def loss_figure(
    df: pd.DataFrame,
    opts: ChartOptions,
    compare: list[tuple[str, pd.DataFrame]] | None = None,
    evals: pd.DataFrame | None = None,
) -> tuple[go.Figure, int, str | None]:
    """Per-rank curves of `opts.metric` (+ mean/min/max band, + other runs' means, + evaluation points
    when `opts.show_eval`). Returns (figure, points, note)."""
    data = loss_data(df, opts, compare, evals)
    fig = draw_loss(data, opts.smoothing > 0, opts.log_y)
    return fig, sum(len(trace.x) for trace in fig.data), data.note


def draw_loss(data: LossData, faint: bool, log_y: bool) -> go.Figure:
    """The loss chart of `data`; `faint`: each rank's raw values under its smoothed line."""
    fig = go.Figure()
    if data.band is not None:
        _draw_band(fig, data.band)
    for line in data.ranks:
        _draw_rank(fig, line, faint)
    for c in data.compare:
        cx, cy = plotted(c.x, c.smooth)
        style = {
            "color": _PALETTE[(c.index + 3) % len(_PALETTE)],
            "width": 2,
            "dash": _COMPARE_DASH[c.index % len(_COMPARE_DASH)],
        }
        fig.add_trace(go.Scatter(x=cx, y=cy, mode="lines", name=f"{c.label} (mean)", line=style))
    if data.evals is not None:
        marker = {"symbol": "diamond", "size": 9, "color": "#dc2626"}
        ex, ey = data.evals
        fig.add_trace(go.Scatter(x=ex, y=ey, mode="markers", name=f"eval {data.metric}", marker=marker))
    yaxis: dict = {"title": data.metric, "type": "log" if log_y else "linear", "gridcolor": "#e5e7eb"}
    if data.y_range is not None:
        yaxis["range"] = list(data.y_range)
    fig.update_layout(
        **_LAYOUT,
        xaxis={"title": X_TITLES[data.xcol], "gridcolor": "#e5e7eb"},
        yaxis=yaxis,
        modebar={"orientation": "v"},  # keep the toolbar clear of the legend row
    )
    return fig


def _mode(x: Sized) -> str:
    """A line, or a marker where the series has one point: a line of one point draws nothing, so a short log
    (one row per rank) looked like an empty chart."""
    return "lines" if len(x) > 1 else "lines+markers"


def _draw_rank(fig: go.Figure, line: RankLine, faint: bool) -> None:
    """One rank's smoothed line, over its raw values drawn faint when `faint`."""
    color = _color(line.rank)
    if faint:
        rx, ry = plotted(line.x, line.raw)
        fig.add_trace(
            go.Scatter(
                x=rx,
                y=ry,
                mode="lines",
                line={"color": color, "width": 1},
                opacity=0.25,
                hoverinfo="skip",
                showlegend=False,
                legendgroup=f"rank{line.rank}",
            )
        )
    sx, sy = plotted(line.x, line.smooth)
    fig.add_trace(
        go.Scatter(
            x=sx,
            y=sy,
            mode=_mode(sx),
            name=f"rank {line.rank}",
            line={"color": color, "width": 1.6},
            legendgroup=f"rank{line.rank}",
        )
    )


def _draw_band(fig: go.Figure, band: Band) -> None:
    """Min-max across ranks as a filled area, their smoothed mean as a line."""
    for name, values in (("max", band.hi), ("min", band.lo)):
        bx, by = plotted(band.x, values)
        fig.add_trace(
            go.Scatter(
                x=bx,
                y=by,
                mode="lines",
                line={"width": 0},
                hoverinfo="skip",
                showlegend=name == "min",
                name="min-max across ranks",
                legendgroup="band",
                fill="tonexty" if name == "min" else None,
                fillcolor="rgba(100,116,139,0.18)",
            )
        )
    mx, my = plotted(band.x, band.mean)
    mean_line = {"color": "#111827", "width": 2.5}
    fig.add_trace(go.Scatter(x=mx, y=my, mode=_mode(mx), name="mean of ranks", line=mean_line))


def step_time_figure(df: pd.DataFrame, timings: pd.DataFrame, ranks: tuple[int, ...] | None) -> go.Figure | None:
    """Step time per rank: MindFormers' per-line step time, else TimeMonitor's per-epoch figure."""
    data = step_times(df, timings, ranks)
    return None if data is None else draw_step_times(data)


def draw_step_times(data: StepTimes) -> go.Figure:
    """One line per rank (points marked when they are per epoch), no legend: the rank table beside it names them."""
    fig = go.Figure()
    for rank, x, y in data.lines:
        mode = "lines+markers" if data.markers else "lines"
        fig.add_trace(go.Scatter(x=x, y=y, mode=mode, name=f"rank {rank}", line={"color": _color(rank)}))
    fig.update_layout(
        template="plotly_white",
        margin={"l": 60, "r": 20, "t": 30, "b": 45},
        xaxis={"title": data.xtitle},
        yaxis={"title": "ms per step", "rangemode": "tozero"},
        hovermode="x unified",
        showlegend=False,
    )
    return fig


def rank_states(snap: RunSnapshot, stall_after_s: float, run_status: RunStatus | None) -> pd.DataFrame:
    """Each rank's RankState and its facts, unformatted: counts are taken here, before any label."""
    return rank_status(snap, now=time.time(), stall_after_s=stall_after_s, run_status=run_status)


def status_table(states: pd.DataFrame) -> pd.DataFrame:
    """The per-rank table shown to the user (formatted, one row per rank) from `rank_states`."""
    if states.empty:
        return pd.DataFrame(columns=["rank", "state", "epoch", "step", "last loss", "last line", "detail"])

    def age(v: float) -> str:
        return "–" if v != v else f"{duration_text(v)} ago"

    def num(v: float, fmt: str) -> str:
        return "–" if v != v else (format(v, fmt) if math.isfinite(v) else str(v))

    return pd.DataFrame(
        {
            "rank": states["rank"].astype(int),
            "state": states["state"].map(STATE_LABELS).fillna(states["state"]),
            "epoch": states["last_epoch"].map(lambda v: num(v, ".0f")),
            "step": states["last_step"].map(lambda v: num(v, ".0f")),
            "last loss": [
                loss_text(v, n, ".5g", "–") for v, n in zip(states["last_loss"], states["n_loss"], strict=True)
            ],
            "last line": states["age_s"].map(age),
            "detail": states["detail"],
        }
    )


def csv_bytes(snap: RunSnapshot) -> bytes:
    """Every parsed point (never the downsampled ones) as CSV, rank by rank in file order (a live
    table holds each tick's new rows after the older ones)."""
    df = prepare(snap.metrics.sort_values("rank", kind="stable"))
    cols = [
        "rank",
        "epoch",
        "step",
        "global_step",
        "loss",
        "step_time_ms",
        "lr",
        "time",
        "relative_s",
        "file",
        "offset",
    ]
    cols += [c for c in df.columns if c not in cols and c != "wall_time"]  # every other metric of the loss lines
    return df[cols].to_csv(index=False).encode()


def behind_caption(behind_bytes: int) -> str | None:
    """What the page says while the logs grow faster than the watcher reads them (None: it keeps up).

    Why: the watcher reads a capped block per tick to stay within memory; without this line a chart
    that lags the writer would look like a stalled run.
    """
    if behind_bytes <= 0:
        return None
    return (
        f"⏩ Reading behind the writer: {behind_bytes / 2**20:,.1f} MiB written and not read yet. "
        "The charts show every line read so far and catch up as the writer slows down."
    )
