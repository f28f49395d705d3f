"""run.sh and README.md for msrun, mpirun, Slurm and the legacy rank-table launch.

Slurm jobs also get job.sbatch (`core.codegen.sbatch`, via `extra_files`); their run.sh submits it.

Every value in the shell script is a validated number/host name or goes through `shlex.quote`.
"""

from __future__ import annotations

import shlex

from core.codegen.common import one_line
from core.codegen.options import LAUNCHERS, SCENARIOS, RunOptions
from core.codegen.sbatch import EXIT_FILE, SBATCH_FILE, job_sbatch

q = shlex.quote


def log_pattern(options: RunOptions) -> str:
    """Where each rank's stdout ends up, relative to the job folder."""
    if options.launcher in {"msrun", "slurm"}:
        return f"{options.log_dir}/worker_<rank>.log (and scheduler.log)"
    if options.launcher == "mpirun":
        scheduler = " (and scheduler.log)" if options.device_target == "CPU" else ""
        return f"{options.log_dir}/1/rank.<rank>/stdout{scheduler}"
    return "device<rank>/train.log<rank>"


def log_dir(options: RunOptions) -> str:
    """The folder a log watcher should watch, relative to the job folder ('.' for the rank table)."""
    return options.log_dir if options.launcher in {"msrun", "mpirun", "slurm"} else "."


def extra_files(options: RunOptions, design_name: str) -> dict[str, str]:
    """Files a launcher needs besides run.sh: job.sbatch for Slurm."""
    if options.launcher == "slurm":
        return {SBATCH_FILE: job_sbatch(options, design_name)}
    return {}


def _data_path_lines(options: RunOptions) -> list[str]:
    if options.dataset != "mnist":
        return []
    return [
        "# MNIST folder (train images + labels); override with DATA_PATH=/path bash run.sh",
        f"DEFAULT_DATA_PATH={q(options.data_path)}",
        'export DATA_PATH="${DATA_PATH:-$DEFAULT_DATA_PATH}"',
        'if [ ! -d "$DATA_PATH" ]; then echo "DATA_PATH $DATA_PATH is not a folder" >&2; exit 2; fi',
    ]


def msrun_argv(options: RunOptions, node_rank: str | None = None) -> list[str]:
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
        f"--log_dir={options.log_dir}",
        "--join=True",
        f"--cluster_time_out={options.cluster_time_out}",
        "train.py",
    ]
    return argv


def mpirun_argv(options: RunOptions) -> list[str]:
    """mpirun's argv as MindSpore's docs give it (GPU/Ascend: MindSpore reads the MPI rank itself)."""
    exports = ("DATA_PATH",) if options.dataset == "mnist" else ()
    cpu = options.device_target == "CPU"
    return [*mpirun_prefix(options.device_num, options.log_dir, cpu, exports), "python", "train.py"]


def mpirun_prefix(workers: int, log_dir: str, cpu: bool, exports: tuple[str, ...] = ()) -> list[str]:
    """mpirun's argv up to the worker command (generated jobs and own scripts); on CPU with the
    dynamic-cluster worker wrapper, and --oversubscribe: CPU workers share the cores (as under msrun),
    and Open MPI would refuse more ranks than cores."""
    argv = ["mpirun", "-n", str(workers), "--output-filename", log_dir, "--merge-stderr-to-stdout"]
    for name in exports:
        argv += ["-x", name]
    if cpu:
        argv += ["--oversubscribe", *MPIRUN_CPU_EXPORTS, *MPIRUN_CPU_WORKER]
    return argv


# CPU: MindSpore's collectives need its own scheduler (the dynamic cluster); plain `mpirun python train.py`
# fails in init() ("some processes in the cluster are not successfully spawned"). mpirun only starts the
# workers; each takes MS_NODE_ID from its MPI rank so that MPI rank N is MindSpore rank N (DESIGN.md).
MPIRUN_CPU_EXPORTS = ("-x", "MS_ROLE=MS_WORKER", "-x", "MS_SCHED_HOST", "-x", "MS_SCHED_PORT", "-x", "MS_WORKER_NUM")
MPIRUN_CPU_WORKER = ("bash", "-c", 'MS_NODE_ID="$OMPI_COMM_WORLD_RANK" exec "$@"', "mpirun-worker")
# OpenMPI refuses to start as root ("mpirun has detected an attempt to run as root") unless both are set.
MPIRUN_ROOT_ENV = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")


def mpirun_root_lines() -> list[str]:
    names = " ".join(f"{name}=1" for name in MPIRUN_ROOT_ENV)
    return [
        "# OpenMPI refuses to run as root unless told to; as root, this job tells it to.",
        f'if [ "$(id -u)" = 0 ]; then export {names}; fi',
    ]


def mpirun_cpu_lines(workers: int, sched_host: str, sched_port: int, log_dir: str, mpirun_cmd: str,
                     worker_cmd: str) -> list[str]:
    """The CPU dynamic-cluster start under mpirun: MindSpore's scheduler here, mpirun for the workers.

    `mpirun_cmd` is mpirun's quoted argv up to the worker command; `worker_cmd` the quoted worker command
    (`python train.py ...`), run once as the scheduler (MS_ROLE=MS_SCHED) and once per MPI rank. On Ctrl-C or
    a failed rank the scheduler is ended too, so nothing is left behind.
    """
    return [
        *mpirun_root_lines(),
        "# CPU: MindSpore's collectives need its own scheduler; mpirun starts the workers (MS_NODE_ID = MPI rank).",
        f"export MS_SCHED_HOST={q(sched_host)} MS_SCHED_PORT={sched_port} MS_WORKER_NUM={workers}",
        f"mkdir -p {q(log_dir)}",
        f"MS_ROLE=MS_SCHED {worker_cmd} > {q(log_dir + '/scheduler.log')} 2>&1 &",
        "sched=$!",
        'stop_scheduler() { kill -TERM "$sched" 2>/dev/null || true; }',
        "trap stop_scheduler EXIT",
        "# mpirun runs in the background so that Ctrl-C (or Stop's SIGINT to this script) reaches the trap at once",
        "# (bash defers traps while a foreground command runs); the trap ends mpirun's ranks and the scheduler.",
        f"{mpirun_cmd} {worker_cmd} &",
        "mpi=$!",
        """trap 'kill -TERM "$mpi" 2>/dev/null || true; stop_scheduler' INT TERM""",
        "status=0",
        'wait "$mpi" || status=$?',
        'while kill -0 "$mpi" 2>/dev/null; do wait "$mpi" || status=$?; done',
        "# the scheduler ends by itself once every worker has finished; after a failure it would wait for the",
        "# cluster time-out, so it is stopped instead.",
        'if [ "$status" = 0 ]; then wait "$sched" || true; fi',
        'exit "$status"',
    ]


def node_commands(options: RunOptions) -> list[str]:
    """The command to type on every node, one per node."""
    if options.launcher == "msrun":
        if not options.multi_node:
            return ["bash run.sh"]
        return [f"bash run.sh {k}" for k in range(options.node_num)]
    if options.launcher == "mpirun":
        return ["HOSTFILE=hostfile bash run.sh" if options.multi_node else "bash run.sh"]
    if options.launcher == "slurm":
        return [f"sbatch {SBATCH_FILE}   # on the login node; Slurm starts every node"]
    if not options.multi_node:
        return ["bash run.sh"]
    return [f"bash run.sh {k}" for k in range(options.node_num)]


def _node_rank_lines() -> list[str]:
    return [
        'NODE_RANK="${1:-${NODE_RANK:-0}}"',
        'case "$NODE_RANK" in',
        "  '' | *[!0-9]*) echo \"node rank must be a number, got '$NODE_RANK'\" >&2; exit 2 ;;",
        "esac",
    ]


def run_sh(options: RunOptions, design_name: str) -> str:
    title = f"{SCENARIOS[options.scenario]}: {options.device_num} x {options.device_target}, {options.launcher}"
    lines = [
        "#!/usr/bin/env bash",
        f"# {one_line(title)} (design {design_name}). Generated by ShardScope.",
    ]
    if options.launcher == "slurm":
        lines.append(f"# Submits {SBATCH_FILE} ({options.node_num} node(s) x {options.workers_per_node} workers).")
    elif options.multi_node:
        lines.append(f"# {options.node_num} nodes x {options.workers_per_node} workers; run on every node:")
        lines += [f"#   node {k}: {cmd}" for k, cmd in enumerate(node_commands(options))]
    else:
        lines.append("# Usage: bash run.sh")
    lines.append(f"# Logs: {log_pattern(options)}")
    lines += ["set -euo pipefail", 'cd "$(dirname "$0")"', ""]
    lines += _data_path_lines(options)
    if options.launcher == "msrun":
        if options.multi_node:
            lines += _node_rank_lines()
            argv = msrun_argv(options, "$NODE_RANK")  # argv[5] is --node_rank
            cmd = " ".join(q(a) for a in argv[:5]) + ' --node_rank="$NODE_RANK" ' + " ".join(q(a) for a in argv[6:])
        else:
            cmd = " ".join(q(a) for a in msrun_argv(options))
        lines += [
            "# msrun starts the scheduler and the workers with the `python` found on PATH.",
            "# --join=True waits for them and exits non-zero if any rank fails; Ctrl-C (SIGINT) stops them all.",
            f"exec {cmd}",
        ]
    elif options.launcher == "slurm":
        lines += [
            "# Slurm runs the job; sbatch prints the job id. Follow it with squeue, stop it with scancel.",
            f"rm -f {EXIT_FILE}",
            f"exec sbatch --parsable {SBATCH_FILE}",
        ]
    elif options.launcher == "mpirun":
        lines += _mpirun_lines(options)
    else:
        lines += _rank_table_lines(options)
    return "\n".join(lines) + "\n"


def _mpirun_lines(options: RunOptions) -> list[str]:
    argv = mpirun_argv(options)
    cmd = " ".join(q(a) for a in argv[:-2])
    if options.multi_node:
        cmd += ' ${HOSTFILE:+--hostfile "$HOSTFILE"}'
    if options.device_target == "CPU":
        return mpirun_cpu_lines(options.device_num, options.master_addr, options.master_port, options.log_dir,
                                cmd, "python train.py")
    return [
        *mpirun_root_lines(),
        "# One process per card; each rank's output goes to <log dir>/1/rank.<rank>/stdout.",
        f"exec {cmd} python train.py",
    ]


def _rank_table_lines(options: RunOptions) -> list[str]:
    lines = []
    if options.multi_node:
        lines += _node_rank_lines()
    else:
        lines.append("NODE_RANK=0")
    lines += [
        "# The rank table lists every card's IP (see README); generate it with MindSpore's hccl_tools.py.",
        'export RANK_TABLE_FILE="${RANK_TABLE_FILE:-$PWD/rank_table.json}"',
        'if [ ! -f "$RANK_TABLE_FILE" ]; then echo "rank table $RANK_TABLE_FILE not found" >&2; exit 2; fi',
        f"export RANK_SIZE={options.device_num}",
        f"LOCAL_SIZE={options.workers_per_node}",
        "pids=()",
        "for ((i = 0; i < LOCAL_SIZE; i++)); do",
        "  rank=$((NODE_RANK * LOCAL_SIZE + i))",
        '  rm -rf "device$rank"',
        '  mkdir "device$rank"',
        '  cp train.py "device$rank/"',
        '  echo "start training for rank $rank on device $i"',
        '  (cd "device$rank" && DEVICE_ID=$i RANK_ID=$rank exec python train.py > "train.log$rank" 2>&1) &',
        '  pids+=("$!")',
        "done",
        "status=0",
        'for pid in "${pids[@]}"; do',
        '  wait "$pid" || status=1',
        "done",
        'exit "$status"',
    ]
    return lines


def readme(options: RunOptions, design_name: str, description: str, notes: list[str]) -> str:
    scenario = SCENARIOS[options.scenario]
    lines = [
        f"# {scenario}",
        "",
        f"Generated by ShardScope from design `{design_name}`: {options.device_num} x {options.device_target}, "
        f"launched with {LAUNCHERS[options.launcher]}.",
    ]
    desc = one_line(description)
    if desc:
        lines += ["", f"> {desc}"]
    lines += ["", "## Run it by hand", ""]
    if options.launcher == "slurm":
        lines += _slurm_readme(options)
    elif options.multi_node:
        lines.append(
            f"{options.node_num} nodes x {options.workers_per_node} workers, scheduler on "
            f"`{options.master_addr}:{options.master_port}`. Copy this folder to every node and run:"
        )
        lines += ["", "```bash"]
        lines += [f"# node {k}\n{cmd}" for k, cmd in enumerate(node_commands(options))]
        lines += ["```"]
    else:
        lines += ["```bash", "bash run.sh", "```"]
    lines += ["", "The command `run.sh` runs:", "", "```bash"]
    if options.launcher == "slurm":
        lines.append(f"sbatch --parsable {SBATCH_FILE}")
    elif options.launcher == "msrun":
        node_rank = "$NODE_RANK" if options.multi_node else None
        lines.append(" ".join(msrun_argv(options, node_rank)))
    elif options.launcher == "mpirun":
        if options.device_target == "CPU":
            lines.append(f"MS_ROLE=MS_SCHED python train.py &   # MindSpore's scheduler on port {options.master_port}")
        lines.append(" ".join(q(a) for a in mpirun_argv(options)))
    else:
        lines.append("# per card i: DEVICE_ID=i RANK_ID=<rank> python train.py > device<rank>/train.log<rank>")
    lines += ["```", "", f"Logs: `{log_pattern(options)}`.", ""]
    if options.dataset == "mnist":
        lines += [
            f"Data: the MNIST folder in `DATA_PATH` (default `{options.data_path}`); "
            "set `DATA_PATH=/path/to/MNIST_Data/train` to use another.",
            "",
        ]
    else:
        lines += ["Data: built-in synthetic MNIST-shaped samples, no download needed.", ""]
    if options.launcher == "rank_table":
        lines += [
            "Rank table: put the cluster's `rank_table.json` (device IPs from `/etc/hccn.conf`) next to `run.sh` "
            "or set `RANK_TABLE_FILE`.",
            "",
        ]
    if options.launcher == "mpirun" and options.multi_node:
        lines += [f"Hostfile: one line per node, `<host> slots={options.workers_per_node}`.", ""]
    if options.device_target == "CPU":
        lines += ["CPU runs data parallel only (MindSpore's distributed CPU backend).", ""]
    if notes:
        lines += ["## Notes", ""] + [f"- {one_line(n, 200)}" for n in notes] + [""]
    return "\n".join(lines)


def _slurm_readme(options: RunOptions) -> list[str]:
    where = f"partition `{options.slurm_partition}`" if options.slurm_partition else "the default partition"
    return [
        f"{options.node_num} node(s) x {options.workers_per_node} workers on {where}. From the job folder on the "
        "login node (a filesystem every node sees):",
        "",
        "```bash",
        f"sbatch {SBATCH_FILE}            # prints 'Submitted batch job <id>' (or: bash run.sh)",
        "squeue -j <id>                  # PD = queued (the REASON column says why), R = running",
        "scontrol show job <id>          # JobState and ExitCode, also after the end (no sacct needed)",
        "scancel <id>                    # stop every rank",
        "```",
        "",
        f"The batch script starts MindSpore's scheduler on the first node (port {options.master_port}) and one "
        "`srun` task per worker (MS_ROLE=MS_WORKER, MS_NODE_ID=$SLURM_PROCID); it writes its exit status to "
        f"`{EXIT_FILE}` and Slurm's own output to `slurm-<id>.out`.",
    ]
