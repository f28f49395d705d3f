"""The launchers a job can use, one module each; `launcher_for` picks the job's."""

from __future__ import annotations

from core.codegen import CodegenError, RunOptions
from core.run.launchers import mpirun, msrun, ranktable, slurm
from core.run.launchers.base import BatchLauncher, Launcher, is_batch

LAUNCHERS: dict[str, Launcher] = {module.LAUNCHER.name: module.LAUNCHER for module in (msrun, mpirun, ranktable, slurm)}
QUEUED_LAUNCHERS = frozenset(name for name, launcher in LAUNCHERS.items() if launcher.queued)  # Slurm


def launcher_for(options: RunOptions) -> Launcher:
    try:
        return LAUNCHERS[options.launcher]
    except KeyError:
        raise CodegenError(f"unknown launcher {options.launcher!r}: use one of {', '.join(LAUNCHERS)}") from None


__all__ = ["LAUNCHERS", "QUEUED_LAUNCHERS", "BatchLauncher", "Launcher", "is_batch", "launcher_for"]
