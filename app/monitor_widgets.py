"""Figures and tables for the Monitor page, built from core.logs snapshots (no parsing here)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.logs import RunSnapshot, rank_status
from core.logs.judgement.metrics import (
    N_OUT,
    add_global_step,
    add_time_axes,
    downsample,
    ema_smooth,
    global_step_values,
    infer_steps_per_epoch,
    outlier_range,
    rank_band,
    segment_breaks,
)
from core.logs.judgement.status import RankState, duration_text
from core.logs.rows.cells import as_int
from core.logs.rows.formats import ROW_FIELDS

X_MODES = {"Step": "global_step", "Relative time": "relative_s", "Wall time": "wall_time"}
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


def _color(rank: int) -> str:
    return _PALETTE[rank % len(_PALETTE)]


def _xy(x: pd.Series, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
    # float32 goes to the browser as 4-byte binary (float64: 8): half the websocket bytes per update.
    # Exact for steps below 2**24; a relative time of days keeps ~1 s, finer than the chart can show.
    if xs.dtype.kind == "f" and (len(xs) == 0 or np.nanmax(np.abs(xs)) < 2**24):
        xs = xs.astype(np.float32)
    return xs, ys.astype(np.float32)


def loss_figure(
    df: pd.DataFrame,
    opts: ChartOptions,
    compare: list[tuple[str, pd.DataFrame]] | None = None,
    evals: pd.DataFrame | None = None,
) -> tuple[go.Figure, int, str | None]:
    """Per-rank curves of `opts.metric` (+ mean/min/max band, + other runs' means, + evaluation points
    when `opts.show_eval`). Returns (figure, points, note)."""
    metric = opts.metric if opts.metric in df.columns else "loss"
    if metric != "loss":  # the drawing code reads `loss`: hand it the chosen metric under that name
        df = df.assign(loss=df[metric])
        compare = [(label, o.assign(loss=o[metric])) for label, o in compare or [] if metric in o.columns]
    fig = go.Figure()
    xcol, note = x_column(df, opts.x_mode)
    n_points = 0
    shown_values: list[np.ndarray] = []
    ranks = sorted(df["rank"].unique()) if not df.empty else []
    selected = [r for r in ranks if opts.ranks is None or r in opts.ranks]
    # every rank drawn (the usual case): no boolean-mask copy of the whole table per tick (issue 22)
    # what is drawn: each rank's rows copy these columns, not all ("file": a truncated log's kept part breaks the line)
    sub = df[list(dict.fromkeys(["rank", "loss", xcol, *(["file"] if "file" in df.columns else [])]))]
    sub = sub if len(selected) == len(ranks) else sub[sub["rank"].isin(selected)] if selected else sub.iloc[:0]
    if opts.show_band and len(selected) > 1 and not sub.empty:
        band = rank_band(sub.assign(_x=sub[xcol]).dropna(subset=["_x"]), x="_x", y="loss")
        if not band.empty:
            xs = band["_x"]
            for name in ("max", "min"):
                bx, by = _xy(xs, band[name].to_numpy(dtype=np.float64))
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
                n_points += len(bx)
            smooth_mean = ema_smooth(band["mean"].to_numpy(dtype=np.float64), opts.smoothing)
            mx, my = _xy(xs, smooth_mean)
            fig.add_trace(
                go.Scatter(x=mx, y=my, mode="lines", name="mean of ranks", line={"color": "#111827", "width": 2.5})
            )
            n_points += len(mx)
            shown_values.append(smooth_mean)
    if opts.show_ranks:
        for rank in selected:
            g = sub if len(selected) == 1 else sub[sub["rank"] == rank]
            # a log kept from before a truncation, then steps that repeat: a gap, not a line back
            gx, raw = segment_breaks(g[xcol], g["loss"].to_numpy(dtype=np.float64), g.get("file"))
            smooth = ema_smooth(raw, opts.smoothing)
            color = _color(int(rank))
            if opts.smoothing > 0:
                rx, ry = _xy(gx, raw)
                fig.add_trace(
                    go.Scatter(
                        x=rx,
                        y=ry,
                        mode="lines",
                        line={"color": color, "width": 1},
                        opacity=0.25,
                        hoverinfo="skip",
                        showlegend=False,
                        legendgroup=f"rank{rank}",
                    )
                )
                n_points += len(rx)
            sx, sy = _xy(gx, smooth)
            fig.add_trace(
                go.Scatter(
                    x=sx,
                    y=sy,
                    mode="lines",
                    name=f"rank {rank}",
                    line={"color": color, "width": 1.6},
                    legendgroup=f"rank{rank}",
                )
            )
            n_points += len(sx)
            shown_values.append(smooth)
    for i, (label, other) in enumerate(compare or []):
        if other.empty:
            continue
        ocol, _ = x_column(other, opts.x_mode)
        if ocol != xcol:
            ocol = "global_step"
        band = rank_band(other.assign(_x=other[ocol]).dropna(subset=["_x"]), x="_x", y="loss")
        smooth = ema_smooth(band["mean"].to_numpy(dtype=np.float64), opts.smoothing)
        cx, cy = _xy(band["_x"], smooth)
        fig.add_trace(
            go.Scatter(
                x=cx,
                y=cy,
                mode="lines",
                name=f"{label} (mean)",
                line={
                    "color": _PALETTE[(i + 3) % len(_PALETTE)],
                    "width": 2,
                    "dash": _COMPARE_DASH[i % len(_COMPARE_DASH)],
                },
            )
        )
        n_points += len(cx)
        shown_values.append(smooth)
    if opts.show_eval and evals is not None and xcol == "global_step":
        n_points += _eval_traces(fig, df, evals, metric)
    yaxis: dict = {"title": metric, "type": "log" if opts.log_y else "linear", "gridcolor": "#e5e7eb"}
    if opts.ignore_outliers and shown_values:
        vals = np.concatenate(shown_values)
        if opts.log_y:
            vals = np.log10(vals[vals > 0])
        rng = outlier_range(vals)
        if rng is not None:
            yaxis["range"] = list(rng)
    fig.update_layout(
        template="plotly_white",
        margin={"l": 60, "r": 20, "t": 30, "b": 45},
        xaxis={
            "title": {"global_step": "step", "relative_s": "seconds since start", "wall_time": "wall time"}[xcol],
            "gridcolor": "#e5e7eb",
        },
        yaxis=yaxis,
        hovermode="x unified",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.01, "x": 0, "font": {"size": 11}},
        modebar={"orientation": "v"},  # keep the toolbar clear of the legend row
    )
    return fig, n_points, note


def _eval_traces(fig: go.Figure, df: pd.DataFrame, evals: pd.DataFrame, metric: str) -> int:
    """Evaluation points of `metric` (never training rows) as markers, at the step they were printed
    (the epoch's last step when the line names only its epoch)."""
    ev = evals[evals["name"] == metric]
    if ev.empty:
        return 0
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
    fig.add_trace(
        go.Scatter(
            x=x,
            y=ev["value"].to_numpy(dtype=np.float64),
            mode="markers",
            name=f"eval {metric}",
            marker={"symbol": "diamond", "size": 9, "color": "#dc2626"},
        )
    )
    return len(ev)


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


_NOT_METRICS = frozenset({"rank", *ROW_FIELDS, "offset", "file", "global_step", "relative_s", "wall_time"})


def step_time_figure(df: pd.DataFrame, timings: pd.DataFrame, ranks: tuple[int, ...] | None) -> go.Figure | None:
    """Step time per rank: MindFormers' per-line step time, else TimeMonitor's per-epoch figure."""
    fig = go.Figure()
    have = df.dropna(subset=["step_time_ms"]) if not df.empty else df
    if not have.empty:
        for rank, g in have.groupby("rank"):
            if ranks is not None and rank not in ranks:
                continue
            x, y = _xy(g["global_step"], g["step_time_ms"].to_numpy(dtype=np.float64))
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=f"rank {rank}", line={"color": _color(as_int(rank))}))
        xtitle = "step"
    elif not timings.empty:
        for rank, g in timings.groupby("rank"):
            if ranks is not None and rank not in ranks:
                continue
            fig.add_trace(
                go.Scatter(
                    x=g["epoch"],
                    y=g["step_time_ms"],
                    mode="lines+markers",
                    name=f"rank {rank}",
                    line={"color": _color(as_int(rank))},
                )
            )
        xtitle = "epoch (TimeMonitor)"
    else:
        return None
    fig.update_layout(
        template="plotly_white",
        margin={"l": 60, "r": 20, "t": 30, "b": 45},
        xaxis={"title": xtitle},
        yaxis={"title": "ms per step", "rangemode": "tozero"},
        hovermode="x unified",
        showlegend=False,
    )
    return fig


def rank_states(snap: RunSnapshot, stall_after_s: float, run_status: str | None) -> pd.DataFrame:
    """Each rank's RankState and its facts, unformatted: counts are taken here, before any label."""
    return rank_status(snap, now=time.time(), stall_after_s=stall_after_s, run_status=run_status)


def state_count(states: pd.DataFrame, *wanted: RankState) -> int:
    """How many ranks are in one of `wanted` (0 for an empty table)."""
    return 0 if states.empty else int(states["state"].isin(list(wanted)).sum())


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
            "last loss": states["last_loss"].map(lambda v: num(v, ".5g")),
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
