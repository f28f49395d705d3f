"""mpirun (OpenMPI): one process per card; mpirun forwards SIGINT to its ranks.

On CPU, run.sh also starts MindSpore's scheduler on the master port (MindSpore's CPU collectives need the
dynamic cluster; see `core.codegen.launchers.mpirun_cpu_lines`), so that port must be free.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from core.codegen import RunOptions
from core.codegen.launchers import mpirun_argv, mpirun_prefix
from core.run.launchers.base import Check

MPIRUN_CPU_SCRIPT = "mpirun_cpu.sh"  # an own CPU job: MindSpore's scheduler + mpirun (core.run.own.mpirun_cpu_script)


@dataclass(frozen=True)
class Mpirun:
    name: str = "mpirun"
    tool: str = "mpirun"
    install_hint: str = " (install OpenMPI: apt-get install openmpi-bin)"
    stop_signal: int = signal.SIGINT
    queued: bool = False
    node_exec: bool = False
    of_interpreter: bool = False

    def check_tool(self, found: str) -> Check:
        return check_openmpi(found)

    def own_note(self, options: RunOptions) -> str:
        if options.device_target != "CPU":
            return ""
        return (
            "Runs the run folder's mpirun_cpu.sh: MindSpore's scheduler, then mpirun for the workers "
            "(MS_NODE_ID = MPI rank):"
        )

    def command(self, options: RunOptions) -> list[str]:
        return mpirun_argv(options)

    def scheduler_port(self, options: RunOptions) -> int | None:
        if options.device_target == "CPU":
            return options.master_port  # the scheduler run.sh starts
        return None  # GPU/Ascend: MindSpore's MPI start-up needs no scheduler port of ours

    def own_argv(self, options: RunOptions, worker: list[str], log_dir: Path, join: bool) -> list[str]:
        if options.device_target == "CPU":
            return ["bash", str(log_dir.parent / MPIRUN_CPU_SCRIPT)]
        return [*mpirun_prefix(options.device_num, str(log_dir), cpu=False), "python", *worker]

    def own_wrapper(self, options: RunOptions) -> str | None:
        return MPIRUN_CPU_SCRIPT if options.device_target == "CPU" else None


def check_openmpi(mpirun: str, timeout: float = 20.0) -> Check:
    """The job relies on Open MPI (--output-filename, OMPI_COMM_WORLD_RANK, its root switch): say which
    mpirun this is, and that run.sh allows root explicitly when the dashboard runs as root."""
    try:
        result = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("Launcher", False, f"cannot run {mpirun} --version: {exc}")
    first = (result.stdout.strip().splitlines() or ["no version"])[0]
    if "Open MPI" not in result.stdout:
        return Check(
            "Launcher",
            False,
            f"{mpirun} is not Open MPI ({first}): the job uses Open MPI's "
            "--output-filename and OMPI_COMM_WORLD_RANK (install openmpi-bin)",
        )
    root = ""
    if os.geteuid() == 0:
        root = (
            "; running as root: the job sets OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
            "(Open MPI refuses root otherwise)"
        )
    return Check("Launcher", True, f"{first} at {mpirun}{root}")


LAUNCHER = Mpirun()
