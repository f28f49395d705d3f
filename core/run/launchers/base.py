"""What the run side must know about a launcher: the command it records, its tool, ports and stop signal.

The shell script itself (run.sh) is rendered by `core.codegen.launchers`; this is the process side:
a launch, a preflight and a stop ask the job's launcher instead of branching on its name.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Protocol

from core.codegen import RunOptions


class Launcher(Protocol):
    """One way to start a distributed MindSpore job (msrun, mpirun, the rank table)."""

    name: str
    tool: str  # the executable preflight looks for on PATH
    install_hint: str  # appended to "not on PATH"
    stop_signal: int  # sent first on stop; the whole process group is killed after a grace period

    def command(self, options: RunOptions) -> list[str]:
        """The argv run.sh runs on node 0 (recorded in run.json and shown to the user)."""
        ...

    def scheduler_port(self, options: RunOptions) -> int | None:
        """The port this launcher's scheduler listens on (must be free and unique), or None."""
        ...


@dataclass(frozen=True)
class ScriptLauncher:
    """Launchers whose run.sh is the whole story: the rank-table loop is plain bash."""

    name: str
    tool: str = "bash"
    install_hint: str = ""
    stop_signal: int = signal.SIGINT

    def command(self, options: RunOptions) -> list[str]:
        return ["bash", "run.sh"]

    def scheduler_port(self, options: RunOptions) -> int | None:
        return None
