"""The plan a run was launched with, found by its log folder: what `diagnose` sets beside the memory and step
time MindSpore measured. The plan itself is made by core.plan.planned and kept, typed, in the run's record
(`RunRecord.plan`, core.run.record_types)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.errors import UserError
from core.run.registry import list_runs

__all__ = ["plan_for_log_dir"]


def plan_for_log_dir(workspace: Path, log_dir: Path) -> dict[str, Any] | None:
    """The plan kept in the record of the workspace's run whose logs are `log_dir`, as core.plan.planned gives
    it, or None (a folder ShardScope did not launch, or a run launched without a plan)."""
    try:
        runs = list_runs(workspace)
        target = log_dir.resolve()
    except (OSError, UserError):  # no workspace yet, or an unreadable one: nothing was planned
        return None
    record = next((rec for rec in runs if Path(rec.log_dir).resolve() == target), None)
    return None if record is None or record.plan is None else record.plan.to_json()
