"""The Planner page's figures and tables, built from `core.plan.explore.Plan` (plain data in, Plotly/pandas out)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from app.planner_data import GIB, ChartPoint, pareto_data
from core.plan.choices import EXPLAINED, Choices
from core.plan.explore import Evaluation, Plan
from core.plan.megatron import Difference


def why_not_frame(plan: Plan) -> pd.DataFrame:
    """Excluded recipes grouped by reason (invalid ones, then valid ones that do not fit), with counts."""
    counts = Counter(e.reason for e in plan.invalid)
    examples: dict[str, str] = {}
    for e in plan.invalid:
        examples.setdefault(e.reason, e.recipe.label())
    rows = [{"reason": reason, "recipes": n, "example": examples[reason]} for reason, n in counts.most_common()]
    too_big = [e for e in plan.valid if not e.fits]
    if too_big:
        least = min(too_big, key=lambda e: e.memory_bytes)
        rows.insert(
            0,
            {
                "reason": f"needs more than {plan.card_memory_bytes / GIB:g} GiB per card",
                "recipes": len(too_big),
                "example": f"{least.recipe.label()} ({least.memory_bytes / GIB:.1f} GiB)",
            },
        )
    return pd.DataFrame(rows, columns=["reason", "recipes", "example"])


def pareto_figure(plan: Plan, selected: Evaluation | None = None, marked: Evaluation | None = None) -> go.Figure:
    """Memory per card (x) against step time (y), colour = MFU; the card limit as a line. What is drawn is
    computed first (`app.planner_data.pareto_data`), then drawn trace by trace."""
    data = pareto_data(plan, selected, marked)
    fig = go.Figure()
    for part, fits in ((data.fitting, True), (data.too_big, False)):
        if not part.empty:
            fig.add_trace(_recipes_trace(part, fits, data.mfu_top))
    if not data.front.empty:
        fig.add_trace(
            go.Scatter(
                x=data.front["memory_gib"],
                y=data.front["step_s"],
                mode="lines",
                name="Pareto front",
                line={"color": "#64748b", "dash": "dot", "shape": "hv"},
                hoverinfo="skip",
            )
        )
    if data.step_span is not None:  # a trace, not a shape: shapes on log axes take log10 coordinates
        fig.add_trace(_limit_trace(data.limit_gib, data.step_span))
    if data.marked is not None:
        fig.add_trace(_marked_trace(data.marked))
    if data.selected is not None:
        fig.add_trace(_selected_trace(data.selected))
    fig.update_layout(
        xaxis_title="memory per card (GiB)",
        yaxis_title=f"step time (s) on {data.hardware}",
        height=440,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
    )
    fig.update_xaxes(**axis_scale(data.recipes["memory_gib"]))
    fig.update_yaxes(**axis_scale(data.recipes["step_s"]))
    return fig


def _recipes_trace(part: pd.DataFrame, fits: bool, mfu_top: float) -> go.Scatter:
    """The recipes that fit (circles, with the MFU colour bar) or do not (crosses)."""
    name = "fits" if fits else "does not fit"
    return go.Scatter(
        x=part["memory_gib"],
        y=part["step_s"],
        mode="markers",
        name=name,
        text=part["recipe"],
        marker={
            "symbol": "circle" if fits else "x",
            "size": 8,
            "color": part["mfu"],
            "colorscale": "Viridis",
            "cmin": 0,
            "cmax": mfu_top,
            "line": {"width": 0},
            "colorbar": {"title": {"text": "MFU"}, "tickformat": ".0%"} if fits else None,
            "showscale": fits,
        },
        customdata=part[["tokens_per_s", "comm_gib"]],
        hovertemplate="%{text}<br>memory %{x:.1f} GiB<br>step %{y:.3g} s, %{customdata[0]:,.0f} tokens/s/card"
        "<br>comm %{customdata[1]:.2f} GiB/step<extra>" + name + "</extra>",
    )


def _limit_trace(limit_gib: float, step_span: tuple[float, float]) -> go.Scatter:
    return go.Scatter(
        x=[limit_gib, limit_gib],
        y=list(step_span),
        mode="lines+text",
        name=f"card memory {limit_gib:g} GiB",
        line={"color": "#dc2626", "width": 2},
        text=["", f"  card memory {limit_gib:g} GiB"],
        textposition="middle right",
        textfont={"color": "#dc2626"},
        hoverinfo="skip",
    )


def _marked_trace(point: ChartPoint) -> go.Scatter:
    return go.Scatter(
        x=[point.memory_gib],
        y=[point.step_s],
        mode="markers+text",
        name="the YAML's recipe",
        text=["  YAML"],
        textposition="middle right",
        marker={"symbol": "diamond-open", "size": 22, "color": "#2563eb", "line": {"width": 3}},
        hovertemplate=point.label + "<extra>the YAML's recipe</extra>",
    )


def _selected_trace(point: ChartPoint) -> go.Scatter:
    return go.Scatter(
        x=[point.memory_gib],
        y=[point.step_s],
        mode="markers",
        name="selected",
        marker={"symbol": "star", "size": 18, "color": "#f97316", "line": {"color": "#111827", "width": 1}},
        text=[point.label],
        hovertemplate="%{text}<extra>selected</extra>",
    )


def axis_scale(values: pd.Series) -> dict[str, object]:
    """Log axis (labels at powers of ten) when the values span more than ~1.5 decades, else linear:
    70B on 1,024 cards spans 4 GiB to 1 TiB per card, 7B on 8 cards fits one decade."""
    positive = values[values > 0]
    if positive.empty or len(positive) < len(values) or positive.max() / positive.min() < 30:
        return {"type": "linear"}
    return {"type": "log", "dtick": 1}


def breakdown_rows(e: Evaluation) -> pd.DataFrame:
    """Where the selected recipe's memory and communication go, for a small table."""
    rows = [
        ("model states (weights + grads + Adam)", e.model_state_bytes / GIB),
        ("activations (stage at the peak)", e.activation_bytes / GIB),
        ("memory per card", e.memory_bytes / GIB),
        ("tensor-parallel comm / step", e.tp_comm_bytes / GIB),
        ("data-parallel comm / step", e.dp_comm_bytes / GIB),
        ("pipeline comm / step", e.pp_comm_bytes / GIB),
        ("context-parallel comm / step", e.cp_comm_bytes / GIB),
    ]
    return pd.DataFrame(rows, columns=["what", "GiB"])


def choices_frame(choices: Choices, sources: dict[str, str] | None = None) -> pd.DataFrame:
    """The modelling choices of an estimate: value, where it came from, what it changes."""
    rows = [
        {
            "choice": name,
            "value": str(value),
            "from": (sources or {}).get(name, "the planner's default"),
            "what it changes": EXPLAINED[name],
        }
        for name, value in choices.to_dict().items()
    ]
    return pd.DataFrame(rows, columns=["choice", "value", "from", "what it changes"])


def counted_frame(differences: Sequence[Difference]) -> pd.DataFrame:
    """What is counted on stage 0 of the selected recipe, part by part, and the choice behind each number."""
    rows = [{"part": d.part, "GiB": d.shardscope / GIB, "counted as": d.cause} for d in differences]
    return pd.DataFrame(rows, columns=["part", "GiB", "counted as"])


def second_opinion_frame(differences: Sequence[Difference]) -> pd.DataFrame:
    """ShardScope next to Megatron-LM's formulas, the difference and its cause."""
    rows = [
        {
            "part": d.part,
            "ShardScope (GiB)": d.shardscope / GIB,
            "Megatron-LM (GiB)": d.megatron / GIB,
            "difference": d.relative if d.megatron else None,
            "because": d.cause,
        }
        for d in differences
    ]
    return pd.DataFrame(rows, columns=["part", "ShardScope (GiB)", "Megatron-LM (GiB)", "difference", "because"])
