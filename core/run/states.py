"""The words every part of the run side shares: run statuses and the error users see.

Kept apart from the registry so low-level helpers (`core.run.slurm`) can use them without a cycle.
"""

from __future__ import annotations

from enum import StrEnum

from core.errors import UserError


class RunStatus(StrEnum):
    """A run's state as stored in run.json (plain strings on disk)."""

    STARTING = "starting"  # recorded, its supervisor not yet: never judged dead in this state
    QUEUED = "queued"  # submitted to a scheduler (Slurm PENDING), not started yet
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"


ACTIVE = frozenset({RunStatus.STARTING, RunStatus.QUEUED, RunStatus.RUNNING})


class LaunchError(UserError, RuntimeError):
    """A launch or stop that cannot be done, with a message for the user."""
