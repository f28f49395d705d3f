"""msrun: MindSpore's own launcher. It starts a scheduler on the master port plus the workers.

Stop semantics (DESIGN.md, msrun 2.10): SIGINT to msrun (join=True) stops workers and scheduler;
SIGTERM would kill only msrun and leave them running.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from core.codegen import RunOptions
from core.codegen.launchers import msrun_argv
from core.run.launchers.base import Check, tool_found


@dataclass(frozen=True)
class Msrun:
    name: str = "msrun"
    tool: str = "msrun"
    install_hint: str = " (it comes with `pip install mindspore`)"
    stop_signal: int = signal.SIGINT
    queued: bool = False
    node_exec: bool = True  # run.sh K starts node K's msrun
    of_interpreter: bool = True  # python -m mindspore.parallel.cluster.run (the run's bin/msrun wrapper)

    def check_tool(self, found: str) -> Check:
        return tool_found(self.tool, found)

    def own_note(self, options: RunOptions) -> str:
        return ""

    def command(self, options: RunOptions) -> list[str]:
        return msrun_argv(options, "0" if options.multi_node else None)

    def scheduler_port(self, options: RunOptions) -> int | None:
        return options.master_port

    def own_argv(self, options: RunOptions, worker: list[str], log_dir: Path, join: bool) -> list[str]:
        return msrun_argv(options, log_dir=str(log_dir), join=join, worker=worker)

    def own_wrapper(self, options: RunOptions) -> str | None:
        return None


LAUNCHER = Msrun()
