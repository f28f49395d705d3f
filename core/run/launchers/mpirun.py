"""mpirun (OpenMPI): one process per card; mpirun forwards SIGINT to its ranks.

On CPU, run.sh also starts MindSpore's scheduler on the master port (MindSpore's CPU collectives need the
dynamic cluster; see `core.codegen.launchers.mpirun_cpu_lines`), so that port must be free.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from core.codegen import RunOptions
from core.codegen.launchers import mpirun_argv


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


LAUNCHER = Mpirun()
