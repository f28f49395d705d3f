"""mpirun: Open MPI starts one process per card; on CPU MindSpore's own scheduler runs beside it (DESIGN.md)."""

from __future__ import annotations

from dataclasses import dataclass

from core.codegen.launchers.base import JobLauncher, q
from core.codegen.options import RunOptions

# CPU: MindSpore's collectives need its own scheduler (the dynamic cluster); plain `mpirun python train.py`
# fails in init() ("some processes in the cluster are not successfully spawned"). mpirun only starts the
# workers; each takes MS_NODE_ID from its MPI rank so that MPI rank N is MindSpore rank N (DESIGN.md).
MPIRUN_CPU_EXPORTS = ("-x", "MS_ROLE=MS_WORKER", "-x", "MS_SCHED_HOST", "-x", "MS_SCHED_PORT", "-x", "MS_WORKER_NUM")
MPIRUN_CPU_WORKER = ("bash", "-c", 'MS_NODE_ID="$OMPI_COMM_WORLD_RANK" exec "$@"', "mpirun-worker")
# OpenMPI refuses to start as root ("mpirun has detected an attempt to run as root") unless both are set.
MPIRUN_ROOT_ENV = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")


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


def mpirun_root_lines() -> list[str]:
    names = " ".join(f"{name}=1" for name in MPIRUN_ROOT_ENV)
    return [
        "# OpenMPI refuses to run as root unless told to; as root, this job tells it to.",
        f'if [ "$(id -u)" = 0 ]; then export {names}; fi',
    ]


def mpirun_cpu_lines(
    workers: int, sched_host: str, sched_port: int, log_dir: str, mpirun_cmd: str, worker_cmd: str
) -> list[str]:
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


@dataclass(frozen=True)
class Mpirun(JobLauncher):
    def log_pattern(self, options: RunOptions) -> str:
        scheduler = " (and scheduler.log)" if options.device_target == "CPU" else ""
        return f"{options.log_dir}/1/rank.<rank>/stdout{scheduler}"

    def node_commands(self, options: RunOptions) -> list[str]:
        return ["HOSTFILE=hostfile bash run.sh" if options.multi_node else "bash run.sh"]

    def body_lines(self, options: RunOptions) -> list[str]:
        cmd = " ".join(q(a) for a in mpirun_argv(options)[:-2])
        if options.multi_node:
            cmd += ' ${HOSTFILE:+--hostfile "$HOSTFILE"}'
        if options.device_target == "CPU":
            return mpirun_cpu_lines(
                options.device_num, options.master_addr, options.master_port, options.log_dir, cmd, "python train.py"
            )
        return [
            *mpirun_root_lines(),
            "# One process per card; each rank's output goes to <log dir>/1/rank.<rank>/stdout.",
            f"exec {cmd} python train.py",
        ]

    def readme_command(self, options: RunOptions) -> list[str]:
        lines = []
        if options.device_target == "CPU":
            lines.append(f"MS_ROLE=MS_SCHED python train.py &   # MindSpore's scheduler on port {options.master_port}")
        return [*lines, " ".join(q(a) for a in mpirun_argv(options))]

    def readme_notes(self, options: RunOptions) -> list[str]:
        if not options.multi_node:
            return []
        return [f"Hostfile: one line per node, `<host> slots={options.workers_per_node}`.", ""]


LAUNCHER = Mpirun("mpirun", "mpirun")
