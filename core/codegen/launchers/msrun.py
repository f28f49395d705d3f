"""msrun, MindSpore's own launcher: one `msrun` per node starts the scheduler (node 0) and the workers."""

from __future__ import annotations

from dataclasses import dataclass

from core.codegen.launchers.base import JobLauncher, node_rank_lines, q
from core.codegen.options import RunOptions


def msrun_argv(
    options: RunOptions,
    node_rank: str | None = None,
    log_dir: str | None = None,
    join: bool = True,
    worker: tuple[str, ...] | list[str] = ("train.py",),
) -> list[str]:
    """msrun's argv: a generated job's (train.py, logs in options.log_dir) or an own script's (its argv, join)."""
    argv = [
        "msrun",
        f"--worker_num={options.device_num}",
        f"--local_worker_num={options.workers_per_node}",
        f"--master_addr={options.master_addr}",
        f"--master_port={options.master_port}",
    ]
    if node_rank is not None:
        argv.append(f"--node_rank={node_rank}")
    argv += [
        f"--log_dir={options.log_dir if log_dir is None else log_dir}",
        f"--join={join}",
        f"--cluster_time_out={options.cluster_time_out}",
        *worker,
    ]
    return argv


@dataclass(frozen=True)
class Msrun(JobLauncher):
    def body_lines(self, options: RunOptions) -> list[str]:
        lines = []
        if options.multi_node:
            lines += node_rank_lines()
            argv = msrun_argv(options, "$NODE_RANK")  # argv[5] is --node_rank
            cmd = " ".join(q(a) for a in argv[:5]) + ' --node_rank="$NODE_RANK" ' + " ".join(q(a) for a in argv[6:])
        else:
            cmd = " ".join(q(a) for a in msrun_argv(options))
        return [
            *lines,
            "# msrun starts the scheduler and the workers with the `python` found on PATH.",
            "# --join=True waits for them and exits non-zero if any rank fails; Ctrl-C (SIGINT) stops them all.",
            f"exec {cmd}",
        ]

    def readme_command(self, options: RunOptions) -> list[str]:
        return [" ".join(msrun_argv(options, "$NODE_RANK" if options.multi_node else None))]


LAUNCHER = Msrun("msrun", "msrun")
