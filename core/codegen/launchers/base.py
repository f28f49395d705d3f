"""One object per launcher for the job folder: its label, checks, log layout, run.sh lines and README text.

`render_job` asks the job's launcher (`job_launcher(options)`) instead of branching on its name; adding a
launcher is one module here (and, for the process side, one in `core.run.launchers`).
Every value in the shell script is a validated number/host name or goes through `shlex.quote`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from core.codegen.common import lit
from core.codegen.options import RunOptions

q = shlex.quote


@dataclass(frozen=True)
class JobLauncher:
    """The defaults suit a launcher that `bash run.sh` starts on every node (msrun, the rank table)."""

    name: str
    label: str
    own_scripts: bool = True  # whether an own script may be launched with it

    def check(self, options: RunOptions) -> str | None:
        """Why these options cannot use this launcher, or None."""
        return None

    def log_pattern(self, options: RunOptions) -> str:
        """Where each rank's stdout ends up, relative to the job folder."""
        return f"{options.log_dir}/worker_<rank>.log (and scheduler.log)"

    def log_dir(self, options: RunOptions) -> str:
        """The folder a log watcher should watch, relative to the job folder."""
        return options.log_dir

    def extra_files(self, options: RunOptions, design_name: str) -> dict[str, str]:
        """Files the launcher needs besides run.sh (job.sbatch for Slurm)."""
        return {}

    def node_commands(self, options: RunOptions) -> list[str]:
        """The command to type on every node, one per node."""
        if not options.multi_node:
            return ["bash run.sh"]
        return [f"bash run.sh {k}" for k in range(options.node_num)]

    def usage_lines(self, options: RunOptions) -> list[str]:
        """run.sh's comment lines that say how to start it."""
        if not options.multi_node:
            return ["# Usage: bash run.sh"]
        lines = [f"# {options.node_num} nodes x {options.workers_per_node} workers; run on every node:"]
        return lines + [f"#   node {k}: {cmd}" for k, cmd in enumerate(self.node_commands(options))]

    def body_lines(self, options: RunOptions) -> list[str]:
        """run.sh after the shared preamble (strict mode, cd, DATA_PATH)."""
        raise NotImplementedError

    def readme_by_hand(self, options: RunOptions) -> list[str]:
        """README's "Run it by hand" section."""
        if not options.multi_node:
            return ["```bash", "bash run.sh", "```"]
        return [
            f"{options.node_num} nodes x {options.workers_per_node} workers, scheduler on "
            f"`{options.master_addr}:{options.master_port}`. Copy this folder to every node and run:",
            "",
            "```bash",
            *[f"# node {k}\n{cmd}" for k, cmd in enumerate(self.node_commands(options))],
            "```",
        ]

    def readme_command(self, options: RunOptions) -> list[str]:
        """README's "The command run.sh runs" lines."""
        raise NotImplementedError

    def readme_notes(self, options: RunOptions) -> list[str]:
        """What else the README must say for this launcher (a rank table, a hostfile)."""
        return []

    def device_lines(self, options: RunOptions) -> list[str]:
        """train.py's lines that pick the device (inside setup_distributed)."""
        return [f"    ms.set_device({lit(options.device_target)})  # msrun/mpirun assign each process its card"]


def node_rank_lines() -> list[str]:
    """run.sh's node rank: the first argument, else $NODE_RANK, else 0; a number or the script stops."""
    return [
        'NODE_RANK="${1:-${NODE_RANK:-0}}"',
        'case "$NODE_RANK" in',
        "  '' | *[!0-9]*) echo \"node rank must be a number, got '$NODE_RANK'\" >&2; exit 2 ;;",
        "esac",
    ]
