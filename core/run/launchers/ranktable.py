"""The legacy Ascend rank-table launch: run.sh loops over the node's devices (seed 001)."""

from __future__ import annotations

from core.run.launchers.base import ScriptLauncher

LAUNCHER = ScriptLauncher(name="rank_table")
