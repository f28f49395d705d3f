"""Slurm: run.sh submits job.sbatch (`core.codegen.sbatch`), which starts the dynamic cluster on every node."""

from __future__ import annotations

from dataclasses import dataclass

from core.codegen.launchers.base import JobLauncher
from core.codegen.options import RunOptions
from core.codegen.sbatch import EXIT_FILE, SBATCH_FILE, job_sbatch


@dataclass(frozen=True)
class Slurm(JobLauncher):
    def extra_files(self, options: RunOptions, design_name: str) -> dict[str, str]:
        return {SBATCH_FILE: job_sbatch(options, design_name)}

    def node_commands(self, options: RunOptions) -> list[str]:
        return [f"sbatch {SBATCH_FILE}   # on the login node; Slurm starts every node"]

    def usage_lines(self, options: RunOptions) -> list[str]:
        return [f"# Submits {SBATCH_FILE} ({options.node_num} node(s) x {options.workers_per_node} workers)."]

    def body_lines(self, options: RunOptions) -> list[str]:
        return [
            "# Slurm runs the job; sbatch prints the job id. Follow it with squeue, stop it with scancel.",
            f"rm -f {EXIT_FILE}",
            f"exec sbatch --parsable {SBATCH_FILE}",
        ]

    def readme_by_hand(self, options: RunOptions) -> list[str]:
        where = f"partition `{options.slurm_partition}`" if options.slurm_partition else "the default partition"
        return [
            f"{options.node_num} node(s) x {options.workers_per_node} workers on {where}. From the job folder on "
            "the login node (a filesystem every node sees):",
            "",
            "```bash",
            f"sbatch {SBATCH_FILE}            # prints 'Submitted batch job <id>' (or: bash run.sh)",
            "squeue -j <id>                  # PD = queued (the REASON column says why), R = running",
            "scontrol show job <id>          # JobState and ExitCode, also after the end (no sacct needed)",
            "scancel <id>                    # stop every rank",
            "```",
            "",
            f"The batch script starts MindSpore's scheduler on the first node (port {options.master_port}) and "
            "one `srun` task per worker (MS_ROLE=MS_WORKER, MS_NODE_ID=$SLURM_PROCID); it writes its exit status "
            f"to `{EXIT_FILE}` and Slurm's own output to `slurm-<id>.out`.",
        ]

    def readme_command(self, options: RunOptions) -> list[str]:
        return [f"sbatch --parsable {SBATCH_FILE}"]


LAUNCHER = Slurm("slurm", "Slurm (sbatch + srun, MindSpore dynamic cluster)")
