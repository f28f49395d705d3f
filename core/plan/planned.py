"""What a run was planned to use: device memory per card the planner expects for a MindFormers YAML's recipe
or for a Planner-made design, kept with the job and the run's record so `diagnose` and the Monitor can set
it beside what MindSpore measured (issue 21 item 5).

Why at render / launch time: the YAML or the design may change after the run started; the record keeps
what was planned then.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from core.plan.activations import Recompute
from core.plan.explore import Evaluation, StructureCache, apply_recipe, evaluate, model_from_design
from core.plan.hardware import DEFAULT_HARDWARE, PRESETS
from core.plan.mfconfig import read_config
from core.plan.recipes import PlanError, PlanModel, Recipe, recipe_candidate
from core.plan.steptime import TimeChoices, model_flops_per_step
from core.sharding.design import Design

__all__ = ["achieved_time", "design_recipe", "plan_for_config", "plan_for_design"]

# The card a run's device target stands for when its plan gets a step time (the planner's presets).
TARGET_HARDWARE = {"CPU": "cpu", "Ascend": DEFAULT_HARDWARE, "GPU": "a100-80g"}

_NO_CARD_GB = 65536.0  # "fits" is not asked here; any card size gives the same memory figures


def _time(model: PlanModel, recipe: Recipe, choices: Any, hardware: str, per_micro_batch: bool) -> dict[str, Any]:
    """The planned step time on `hardware` and what MFU needs later (the model's FLOPs per card and step, the
    card's peak). A Planner design's train.py steps one micro-batch on one stage's cards (no pipeline, no
    accumulation), so its step is planned as that; a MindFormers YAML's step is the recipe's whole step."""
    timed = replace(recipe, pp=1, micro_batches=1) if per_micro_batch else recipe
    timing = TimeChoices(hardware=PRESETS[hardware])
    result = evaluate(recipe_candidate(model, timed), model, StructureCache(model), 1 << 60, choices, timing)
    if result.time is None:
        return {}
    flops = model_flops_per_step(model, timed, timing.attention_flops == "causal") / timed.devices
    what = "one micro-batch on one stage's cards (train.py's step)" if per_micro_batch else "the recipe's step"
    return {
        "step_s": result.time.step_s,
        "hardware": hardware,
        "peak_tflops": timing.hardware.peak_tflops,
        "model_flops_per_card_step": flops,
        "source": f"planned on the {hardware} preset, efficiency {timing.efficiency:g}, overlap {timing.overlap:g}: "
        + what,
    }


def _planned(
    model: PlanModel,
    recipe: Recipe,
    choices: Any,
    card_gb: float | None,
    source: str,
    hardware: str = DEFAULT_HARDWARE,
    per_micro_batch: bool = False,
) -> dict[str, Any]:
    cache = StructureCache(model)
    card = int((_NO_CARD_GB if card_gb is None else card_gb) * (1 << 30))
    result: Evaluation = evaluate(recipe_candidate(model, recipe), model, cache, card, choices)
    if not result.valid:
        return {"memory_bytes": None, "why": f"{source}: the planner cannot plan its recipe: {result.reason}"}
    return {
        "time": _time(model, recipe, choices, hardware, per_micro_batch),
        "memory_bytes": result.memory_bytes,
        "model_state_bytes": result.model_state_bytes,
        "activation_bytes": result.activation_bytes,
        "recipe": result.recipe.label(),
        "peak_stage": result.peak_stage,
        "source": f"planned from {source} ({result.recipe.label()}; the busiest pipeline stage)",
    }


def plan_for_config(path: Path | str) -> dict[str, Any]:
    """`{"memory_bytes": int, "recipe": label, "peak_stage": n, "source": ...}` for a MindFormers YAML's own
    recipe (the busiest pipeline stage's memory per card), or `{"memory_bytes": None, "why": ...}` when
    the planner cannot plan it (an unreadable YAML, a model the planner does not know, a recipe it refuses)."""
    name = Path(path).name
    try:
        config = read_config(Path(path))
        return _planned(config.model, config.recipe, config.choices, config.max_device_memory_gb, name)
    except (PlanError, OSError) as exc:
        return {"memory_bytes": None, "why": f"{name}: {exc}"}


def design_recipe(design: Design) -> Recipe | None:
    """The recipe the Planner made `design` from (its `planner_recipe` field, set by `apply_recipe`), or None.

    Design files the Planner wrote before the field existed held the recipe only as text in their
    description; that text is not read back (a run of such a design has no plan, as any hand-made design)."""
    kept = design.planner_recipe
    if kept is None:
        return None
    return Recipe(
        kept.dp,
        kept.mp,
        kept.pp,
        kept.sp,
        kept.optimizer_shard,
        Recompute(kept.recompute),
        kept.micro_batches,
        kept.micro_batch_size,
    )


def plan_for_design(design: Design, device_target: str = "CPU") -> dict[str, Any] | None:
    """The plan of a design the Planner made ("New design from this recipe / config"), as `plan_for_config`
    gives it; None for any other design; `{"memory_bytes": None, "why": ...}` when the design was edited
    since (its plan no longer describes it)."""
    recipe = design_recipe(design)
    if recipe is None:
        return None
    model = model_from_design(design)
    planner_made = None if model is None else apply_recipe(model, recipe)
    if model is None or planner_made is None or _shape(planner_made) != _shape(design):
        why = f"the design was edited after the Planner made it ({recipe.label()}): its plan no longer applies"
        return {"memory_bytes": None, "why": why}
    try:
        hardware = TARGET_HARDWARE.get(device_target, DEFAULT_HARDWARE)  # "CPU": RunOptions' default
        return _planned(model, recipe, None, None, f"the Planner's design {design.name}", hardware, True)
    except PlanError as exc:
        return {"memory_bytes": None, "why": f"{design.name}: {exc}"}


def _shape(design: Design) -> Design:
    """A design without its name and description: what the planner's figures depend on."""
    return replace(design, name="", description="")


def achieved_time(plan: dict[str, Any] | None, measured_step_ms: float | None) -> dict[str, Any] | None:
    """`{planned_step_s, measured_step_s, achieved_mfu}` for a run whose plan has a step time (None otherwise):
    the measured median step beside the planned one, and the model's FLOPs per card over the measured step
    and the preset's peak (None when nothing was measured)."""
    planned = (plan or {}).get("time") or {}
    if not planned.get("step_s"):
        return None
    measured = measured_step_ms / 1000.0 if measured_step_ms else None
    mfu = None
    if measured and planned.get("model_flops_per_card_step") and planned.get("peak_tflops"):
        mfu = planned["model_flops_per_card_step"] / measured / (planned["peak_tflops"] * 1e12)
    return {
        "planned_step_s": planned["step_s"],
        "measured_step_s": measured,
        "achieved_mfu": mfu,
        "hardware": planned.get("hardware"),
        "source": planned.get("source"),
    }
