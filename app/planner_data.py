"""What the Planner page shows, computed before anything is drawn: the recipe table's rows and the
Pareto chart's parts (plain pandas and dataclasses in, no Plotly here; app/planner_view.py draws them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from core.plan.explore import Evaluation, Plan

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


@dataclass(frozen=True)
class ChartPoint:
    """One recipe marked on the chart (the selected one, the YAML's): where it sits and its label."""

    memory_gib: float
    step_s: float
    label: str


@dataclass(frozen=True)
class ParetoData:
    """The Pareto chart's parts: every valid recipe split by whether it fits the card, the time Pareto
    front, the card limit and the span of step times its line covers (None: no recipe), the marked points."""

    recipes: pd.DataFrame
    fitting: pd.DataFrame
    too_big: pd.DataFrame
    front: pd.DataFrame
    mfu_top: float  # the colour scale's top (never 0: a scale of one value draws nothing)
    limit_gib: float
    step_span: tuple[float, float] | None
    hardware: str
    selected: ChartPoint | None = None
    marked: ChartPoint | None = None


def chart_point(evaluation: Evaluation | None) -> ChartPoint | None:
    """A recipe to mark, or None when there is none or it is invalid (it has no step time to sit at)."""
    if evaluation is None or not evaluation.valid:
        return None
    return ChartPoint(evaluation.memory_bytes / GIB, evaluation.step_s, evaluation.recipe.label())


def pareto_data(plan: Plan, selected: Evaluation | None = None, marked: Evaluation | None = None) -> ParetoData:
    """Everything `pareto_figure` draws, from the plan (memory per card against step time)."""
    frame = recipes_frame(plan.valid)
    fits = frame["fits"].astype(bool)
    span = None if frame.empty else (float(frame["step_s"].min()), float(frame["step_s"].max()))
    return ParetoData(
        recipes=frame,
        fitting=frame[fits],
        too_big=frame[~fits],
        front=recipes_frame(plan.time_pareto),
        mfu_top=max(0.01, float(frame["mfu"].max())) if not frame.empty else 0.01,
        limit_gib=plan.card_memory_bytes / GIB,
        step_span=span,
        hardware=plan.timing.hardware.name,
        selected=chart_point(selected),
        marked=chart_point(marked),
    )
