"""Slurm: the supervisor submits job.sbatch with `sbatch --parsable` and polls Slurm for the state.

The batch script (core.codegen.sbatch) starts MindSpore's dynamic cluster: the scheduler on the
first node, one `srun` task per worker. Stopping is `scancel`, then a check that Slurm runs no step
of the job and that no process of the run is left on this machine.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from core.codegen import RunOptions
from core.codegen.sbatch import EXIT_FILE, SBATCH_FILE
from core.run import slurm
from core.run.launchers.base import Check, tool_found
from core.run.states import RunStatus


@dataclass(frozen=True)
class Slurm:
    name: str = "slurm"
    tool: str = "sbatch"
    install_hint: str = " (install Slurm's client: apt-get install slurm-client, and point SLURM_CONF at the cluster)"
    stop_signal: int = signal.SIGTERM  # not used: scancel stops every node's tasks
    queued: bool = True
    node_exec: bool = False
    of_interpreter: bool = False
    batch_file: str = SBATCH_FILE

    def check_tool(self, found: str) -> Check:
        return tool_found(self.tool, found)

    def own_note(self, options: RunOptions) -> str:
        return (
            "Submitted as job.sbatch (MindSpore dynamic cluster: scheduler on the first node, one srun task "
            "per worker) from the run folder."
        )

    def command(self, options: RunOptions) -> list[str]:
        return ["sbatch", "--parsable", SBATCH_FILE]

    def scheduler_port(self, options: RunOptions) -> int | None:
        return options.master_port  # MindSpore's scheduler on the first node

    def own_argv(self, options: RunOptions, worker: list[str], log_dir: Path, join: bool) -> list[str]:
        return self.command(options)  # job.sbatch runs the script (core.run.own.batch_spec)

    def own_wrapper(self, options: RunOptions) -> str | None:
        return None

    def submit(self, run_dir: Path, env: dict[str, str]) -> str:
        (run_dir / EXIT_FILE).unlink(missing_ok=True)
        return slurm.submit(run_dir / SBATCH_FILE, run_dir, env)

    def outcome(self, job_id: str, run_dir: Path, stop_requested: bool) -> tuple[RunStatus, str, int | None]:
        status, message, code = slurm.outcome(
            slurm.job_state(job_id), slurm.read_exit_file(run_dir / EXIT_FILE), stop_requested
        )
        if status == "failed":
            detail = slurm.task_errors(run_dir / f"slurm-{job_id}.out")
            message = f"{message}; {detail}" if detail else message
        return status, message, code

    def cancel(self, job_id: str) -> None:
        slurm.cancel(job_id)

    def leftovers(self, job_id: str) -> list[str]:
        job = slurm.job_state(job_id)
        steps = slurm.job_steps(job_id)
        if job is not None and job.active:
            return steps or [f"{job_id} ({job.state})"]
        return steps


LAUNCHER = Slurm()
