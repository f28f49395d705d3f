"""What a report or an export reads: a run of the registry (by id) or a log folder, checked first."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import UserError
from core.logs.bytes.guard import LogDirError, validate_log_dir
from core.run.registry import RunRecord, get_run, list_runs
from core.workspace import is_safe_name, short

__all__ = ["ReportSource", "resolve_source", "source_of_folder"]


@dataclass(frozen=True)
class ReportSource:
    """The log folder to read and, when ShardScope knows the run, its record (options, plan, status)."""

    log_dir: Path
    record: RunRecord | None

    @property
    def plan(self) -> dict[str, Any] | None:
        return self.record.plan.to_json() if self.record and self.record.plan else None

    @property
    def run_status(self) -> str | None:
        return str(self.record.status) if self.record else None


def resolve_source(target: str, workspace: Path) -> ReportSource:
    """A run id of the workspace's registry, else a log folder (and the record of the run that logs there).

    Raises UserError with one line naming `target` when it is neither."""
    if is_safe_name(target) and (Path(workspace) / "runs" / target).is_dir() and not os.path.isdir(target):
        record = get_run(target, workspace)
        return ReportSource(validate_log_dir(record.log_dir), record)
    try:
        log_dir = validate_log_dir(target)
    except LogDirError:
        if os.path.lexists(os.path.expanduser(target)) or not is_safe_name(target):
            raise
        raise UserError(f"{short(target)} is neither a run of {Path(workspace) / 'runs'} nor a folder") from None
    return source_of_folder(log_dir, workspace)


def source_of_folder(log_dir: Path, workspace: Path) -> ReportSource:
    """A checked log folder (the Monitor's) with the record of the run that logs there, if any."""
    return ReportSource(log_dir, _record_of(log_dir, workspace))


def _record_of(log_dir: Path, workspace: Path) -> RunRecord | None:
    """The registry's run whose logs are `log_dir` (None: a folder ShardScope did not launch or watch)."""
    try:
        runs = list_runs(workspace)
    except (OSError, UserError):
        return None
    target = Path(log_dir).resolve()
    return next((r for r in runs if Path(r.log_dir).resolve() == target), None)
