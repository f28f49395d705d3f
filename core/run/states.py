"""The words every part of the run side shares: run statuses and the error users see.

Kept apart from the registry so low-level helpers (`core.run.slurm`) can use them without a cycle.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NotRequired, TypedDict

from core.errors import UserError


class RunStatus(StrEnum):
    """A run's state as stored in run.json (plain strings on disk)."""

    STARTING = "starting"  # recorded, its supervisor not yet: never judged dead in this state
    QUEUED = "queued"  # submitted to a scheduler (Slurm PENDING), not started yet
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"


class RunKind(StrEnum):
    """Where a run came from: a generated job folder, the user's own script, or a watched folder."""

    GENERATED = "generated"
    OWN = "own"
    EXTERNAL = "external"  # watch only: ShardScope did not start it and cannot stop it


class NodeEntry(TypedDict):
    """One node of a multi-node run started on this machine, as run.json keeps it."""

    node: int
    argv: list[str]  # what the supervisor execs for this node (a prefix, then bash run.sh NODE)
    pid: NotRequired[int]
    pgid: NotRequired[int]
    create_time: NotRequired[float | None]
    exit_code: NotRequired[int]


ACTIVE = frozenset({RunStatus.STARTING, RunStatus.QUEUED, RunStatus.RUNNING})


class LaunchError(UserError, RuntimeError):
    """A launch or stop that cannot be done, with a message for the user."""
