"""What the run side must know about a launcher: the command it records, its tool, ports and stop signal.

The shell script itself (run.sh) is rendered by `core.codegen.launchers`; this is the process side:
a launch, a preflight and a stop ask the job's launcher instead of branching on its name.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol, TypeGuard

from core.codegen import CodegenError, RunOptions
from core.run.states import RunStatus


class Check(NamedTuple):
    """One preflight check's outcome: what was checked, whether it passed, and one line saying why."""

    name: str
    ok: bool
    message: str


class Launcher(Protocol):
    """One way to start a distributed MindSpore job (msrun, mpirun, the rank table)."""

    name: str
    tool: str  # the executable preflight looks for on PATH
    install_hint: str  # appended to "not on PATH"
    stop_signal: int  # sent first on stop; the whole process group is killed after a grace period
    queued: bool  # True: a batch scheduler runs the job (submit/status/cancel below), not a local child
    node_exec: bool  # True: more nodes of a multi-node job may start here (`launch --node-exec`: run.sh K)
    of_interpreter: bool  # True: the tool comes with MindSpore, so the user's own interpreter runs it

    def check_tool(self, found: str) -> Check:
        """Preflight of the tool found on PATH at `found` (Open MPI's version for mpirun)."""
        ...

    def own_note(self, options: RunOptions) -> str:
        """What the Launch page says about how an own script runs under this launcher ('' for nothing)."""
        ...

    def command(self, options: RunOptions) -> list[str]:
        """The argv run.sh runs on node 0 (recorded in run.json and shown to the user)."""
        ...

    def scheduler_port(self, options: RunOptions) -> int | None:
        """The port this launcher's scheduler listens on (must be free and unique), or None."""
        ...

    def own_argv(self, options: RunOptions, worker: list[str], log_dir: Path, join: bool) -> list[str]:
        """What the supervisor execs for an own script; `worker` is what every rank runs after `python`."""
        ...

    def own_wrapper(self, options: RunOptions) -> str | None:
        """The script an own job's run folder needs around the launcher (mpirun's CPU scheduler), or None."""
        ...


class BatchLauncher(Launcher, Protocol):
    """A launcher whose jobs a batch scheduler runs (Slurm): the supervisor submits and polls."""

    batch_file: str  # the script submitted from the run folder

    def submit(self, run_dir: Path, env: dict[str, str]) -> str:
        """Submit the run folder's batch file; returns the scheduler's job id."""
        ...

    def outcome(self, job_id: str, run_dir: Path, stop_requested: bool) -> tuple[RunStatus, str, int | None]:
        """(run status, message, exit code) as the scheduler and the batch script report it."""
        ...

    def cancel(self, job_id: str) -> None:
        """Ask the scheduler to stop the job (every node)."""
        ...

    def leftovers(self, job_id: str) -> list[str]:
        """What the scheduler still runs of the job (steps); empty when nothing is left."""
        ...


def is_batch(launcher: Launcher) -> TypeGuard[BatchLauncher]:
    """True when a batch scheduler runs the launcher's jobs (its `queued` flag): it has submit / outcome / cancel."""
    return launcher.queued


@dataclass(frozen=True)
class ScriptLauncher:
    """Launchers whose run.sh is the whole story: the rank-table loop is plain bash."""

    name: str
    tool: str = "bash"
    install_hint: str = ""
    stop_signal: int = signal.SIGINT
    queued: bool = False
    node_exec: bool = False
    of_interpreter: bool = False

    def check_tool(self, found: str) -> Check:
        return tool_found(self.tool, found)

    def own_note(self, options: RunOptions) -> str:
        return ""

    def command(self, options: RunOptions) -> list[str]:
        return ["bash", "run.sh"]

    def scheduler_port(self, options: RunOptions) -> int | None:
        return None

    def own_argv(self, options: RunOptions, worker: list[str], log_dir: Path, join: bool) -> list[str]:
        raise CodegenError(f"the {self.name} launch cannot start an own script")

    def own_wrapper(self, options: RunOptions) -> str | None:
        return None


def tool_found(tool: str, found: str) -> Check:
    """A launcher's tool passes preflight by being on PATH (no version to check)."""
    return Check("Launcher", True, f"{tool} at {found}")
