"""mpirun (OpenMPI): one process per card; mpirun forwards SIGINT to its ranks.

On CPU, run.sh also starts MindSpore's scheduler on the master port (MindSpore's CPU collectives need the
dynamic cluster; see `core.codegen.launchers.mpirun_cpu_lines`), so that port must be free.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from core.codegen import RunOptions
from core.codegen.launchers import mpirun_argv, mpirun_prefix

MPIRUN_CPU_SCRIPT = "mpirun_cpu.sh"  # an own CPU job: MindSpore's scheduler + mpirun (core.run.own.mpirun_cpu_script)


@dataclass(frozen=True)
class Mpirun:
    name: str = "mpirun"
    tool: str = "mpirun"
    install_hint: str = " (install OpenMPI: apt-get install openmpi-bin)"
    stop_signal: int = signal.SIGINT
    queued: bool = False

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


LAUNCHER = Mpirun()
