"""The plan a run was launched from: device memory per card the planner expects for a MindFormers YAML's
recipe, kept in the run's record so `diagnose` and the Monitor can set it beside what MindSpore measured.

Why at launch: the YAML may change or move after the run started; the record keeps what was planned then.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.errors import UserError
from core.plan.explore import StructureCache, evaluate
from core.plan.mfconfig import read_config
from core.plan.recipes import PlanError, recipe_candidate
from core.run.registry import list_runs

__all__ = ["plan_for_config", "plan_for_log_dir"]

_NO_CARD_GB = 65536.0  # "fits" is not asked here; any card size gives the same memory figures


def plan_for_config(path: Path | str) -> dict[str, Any]:
    """`{"memory_bytes": int, "recipe": label, "peak_stage": n, "source": ...}` for a MindFormers YAML's own
    recipe (the busiest pipeline stage's memory per card), or `{"memory_bytes": None, "why": ...}` when
    the planner cannot plan it (an unreadable YAML, a model the planner does not know, a recipe it refuses)."""
    name = Path(path).name
    try:
        config = read_config(Path(path))
        cache = StructureCache(config.model)
        card = _NO_CARD_GB if config.max_device_memory_gb is None else config.max_device_memory_gb
        result = evaluate(
            recipe_candidate(config.model, config.recipe), config.model, cache, int(card * (1 << 30)), config.choices
        )
    except (PlanError, OSError) as exc:
        return {"memory_bytes": None, "why": f"{name}: {exc}"}
    if not result.valid:
        return {"memory_bytes": None, "why": f"{name}: the planner cannot plan its recipe: {result.reason}"}
    return {
        "memory_bytes": result.memory_bytes,
        "model_state_bytes": result.model_state_bytes,
        "activation_bytes": result.activation_bytes,
        "recipe": result.recipe.label(),
        "peak_stage": result.peak_stage,
        "source": f"planned from {name} ({result.recipe.label()}; the busiest pipeline stage)",
    }


def plan_for_log_dir(workspace: Path, log_dir: Path) -> dict[str, Any] | None:
    """The plan kept in the record of the workspace's run whose logs are `log_dir`, or None (a folder
    ShardScope did not launch, or a run launched without a plan)."""
    try:
        runs = list_runs(workspace)
        target = log_dir.resolve()
    except (OSError, UserError):  # no workspace yet, or an unreadable one: nothing was planned
        return None
    return next((rec.options.get("plan") for rec in runs if Path(rec.log_dir).resolve() == target), None)
