"""The Planner page's figures and tables, built from `core.plan.explore.Plan` (plain data in, Plotly/pandas out)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from core.plan.choices import EXPLAINED, Choices
from core.plan.explore import Evaluation, Plan
from core.plan.megatron import Difference

GIB = float(1 << 30)
TABLE_COLUMNS = {
    "recipe": "recipe",
    "dp": "dp",
    "mp": "mp",
    "pp": "pp",
    "cp": "cp",
    "sp": "sp",
    "optimizer_shard": "optimizer parallel",
    "recompute": "recompute",
    "micro_batches": "micro-batches",
    "micro_batch_size": "micro-batch size",
    "step_s": "step (s)",
    "tokens_per_s": "tokens/s/card",
    "mfu": "MFU",
    "memory_gib": "memory/card (GiB)",
    "states_gib": "model states (GiB)",
    "activations_gib": "activations (GiB)",
    "comm_gib": "comm/step (GiB)",
    "tp_gib": "TP comm (GiB)",
    "dp_gib": "DP comm (GiB)",
    "pp_gib": "PP comm (GiB)",
    "cp_gib": "CP comm (GiB)",
    "bubble": "bubble",
    "fits": "fits",
}


def recipes_frame(evaluations: Sequence[Evaluation]) -> pd.DataFrame:
    """One row per valid recipe, sizes in GiB, for the sortable table and the chart."""
    rows = []
    for e in evaluations:
        r = e.recipe
        rows.append(
            {
                "recipe": r.label(),
                "dp": r.dp,
                "mp": r.mp,
                "pp": r.pp,
                "cp": r.cp_label() or "1",
                "sp": r.sp,
                "optimizer_shard": r.optimizer_shard,
                "recompute": r.recompute.value,
                "micro_batches": r.micro_batches,
                "micro_batch_size": r.micro_batch_size,
                "step_s": e.step_s,
                "tokens_per_s": e.time.tokens_per_s_per_card if e.time else None,
                "mfu": e.time.mfu if e.time else None,
                "memory_gib": e.memory_bytes / GIB,
                "states_gib": e.model_state_bytes / GIB,
                "activations_gib": e.activation_bytes / GIB,
                "comm_gib": e.comm_bytes / GIB,
                "tp_gib": e.tp_comm_bytes / GIB,
                "dp_gib": e.dp_comm_bytes / GIB,
                "pp_gib": e.pp_comm_bytes / GIB,
                "cp_gib": e.cp_comm_bytes / GIB,
                "bubble": e.bubble,
                "fits": e.fits,
            }
        )
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


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
    """Memory per card (x) against step time (y), colour = MFU; the card limit as a line."""
    frame = recipes_frame(plan.valid)
    fig = go.Figure()
    for fits, symbol, name in ((True, "circle", "fits"), (False, "x", "does not fit")):
        part = frame[frame["fits"] == fits]
        if part.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=part["memory_gib"],
                y=part["step_s"],
                mode="markers",
                name=name,
                text=part["recipe"],
                marker={
                    "symbol": symbol,
                    "size": 8,
                    "color": part["mfu"],
                    "colorscale": "Viridis",
                    "cmin": 0,
                    "cmax": max(0.01, float(frame["mfu"].max())),
                    "line": {"width": 0},
                    "colorbar": {"title": {"text": "MFU"}, "tickformat": ".0%"} if fits else None,
                    "showscale": bool(fits),
                },
                customdata=part[["tokens_per_s", "comm_gib"]],
                hovertemplate="%{text}<br>memory %{x:.1f} GiB<br>step %{y:.3g} s, %{customdata[0]:,.0f} tokens/s/card"
                "<br>comm %{customdata[1]:.2f} GiB/step<extra>" + name + "</extra>",
            )
        )
    front = recipes_frame(plan.time_pareto)
    if not front.empty:
        fig.add_trace(
            go.Scatter(
                x=front["memory_gib"],
                y=front["step_s"],
                mode="lines",
                name="Pareto front",
                line={"color": "#64748b", "dash": "dot", "shape": "hv"},
                hoverinfo="skip",
            )
        )
    limit = plan.card_memory_bytes / GIB
    if not frame.empty:  # a trace, not a shape: shapes on log axes take log10 coordinates
        low, high = float(frame["step_s"].min()), float(frame["step_s"].max())
        fig.add_trace(
            go.Scatter(
                x=[limit, limit],
                y=[low, high],
                mode="lines+text",
                name=f"card memory {limit:g} GiB",
                line={"color": "#dc2626", "width": 2},
                text=["", f"  card memory {limit:g} GiB"],
                textposition="middle right",
                textfont={"color": "#dc2626"},
                hoverinfo="skip",
            )
        )
    if marked is not None and marked.valid:
        fig.add_trace(
            go.Scatter(
                x=[marked.memory_bytes / GIB],
                y=[marked.step_s],
                mode="markers+text",
                name="the YAML's recipe",
                text=["  YAML"],
                textposition="middle right",
                marker={"symbol": "diamond-open", "size": 22, "color": "#2563eb", "line": {"width": 3}},
                hovertemplate=marked.recipe.label() + "<extra>the YAML's recipe</extra>",
            )
        )
    if selected is not None and selected.valid:
        fig.add_trace(
            go.Scatter(
                x=[selected.memory_bytes / GIB],
                y=[selected.step_s],
                mode="markers",
                name="selected",
                marker={"symbol": "star", "size": 18, "color": "#f97316", "line": {"color": "#111827", "width": 1}},
                text=[selected.recipe.label()],
                hovertemplate="%{text}<extra>selected</extra>",
            )
        )
    fig.update_layout(
        xaxis_title="memory per card (GiB)",
        yaxis_title=f"step time (s) on {plan.timing.hardware.name}",
        height=440,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
    )
    fig.update_xaxes(**axis_scale(frame["memory_gib"]))
    fig.update_yaxes(**axis_scale(frame["step_s"]))
    return fig


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
