"""Your own job as a run: an existing script (or MindFormers' run_mindformer.py) under msrun, mpirun
or Slurm, and "watch an existing log folder" (an external, watch-only run).

Every user string reaches processes as an argv item stored in run.json and exec'd by the
supervisor (no shell); the Slurm batch script renders them with `shlex.quote`. Environment names
are identifiers; the variables the launcher itself sets cannot be overridden.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.codegen import OWN_LAUNCHERS, CodegenError, RunOptions, validate_options
from core.codegen.launchers import mpirun_cpu_lines, mpirun_prefix
from core.codegen.options import LaunchFields
from core.codegen.sbatch import SBATCH_FILE, BatchSpec, check_env_key, job_name, sbatch_script
from core.files import expand_home
from core.plan.planned import plan_for_config
from core.run.interpreter import check_python, write_bin_dir
from core.run.launch import check_queue, check_scheduler_port, new_run_dir, register_run, reserving, start_supervisor
from core.run.launchers import launcher_for
from core.run.mindformers import parallel_devices, read_parallel_config
from core.run.processes import ENV_RUN_DIR, ENV_RUN_ID
from core.run.record_types import OwnRun, PlannedRun, options_to_json
from core.run.registry import LaunchError, RunKind, RunRecord, RunStatus, write_record
from core.workspace import short

LOG_DIR = "log_output"
RESERVED_ENV = frozenset(
    {
        ENV_RUN_ID,
        ENV_RUN_DIR,
        "MS_ROLE",
        "MS_NODE_ID",
        "MS_WORKER_NUM",
        "MS_SCHED_HOST",
        "MS_SCHED_PORT",
        "MS_TOPO_TIMEOUT",
        "RANK_ID",
        "RANK_SIZE",
        "PYTHONUNBUFFERED",
    }
)
_RUN_MODES = ("train", "finetune", "eval", "predict")
MAX_ARGS, MAX_ARG = 256, 4096


@dataclass(frozen=True, kw_only=True)
class OwnJob(LaunchFields):
    """An existing training script and how to start it; paths become absolute in `check_own`.

    Its launch fields (devices, launcher, master, Slurm) are RunOptions' own (`LaunchFields`)."""

    script: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    device_num: int = 1
    join: bool = True
    workdir: str = ""  # "" = the script's folder
    mindformers_config: str = ""  # MindFormers mode: run_mindformer.py --config YAML --run_mode MODE
    run_mode: str = "train"
    python: str = ""  # the user's interpreter (their training environment); "" = the dashboard's

    def to_options(self) -> RunOptions:
        """The RunOptions a generated job with this launcher shape would have (shared checks, preflight)."""
        return RunOptions(**self.launch_fields(), log_dir=LOG_DIR)


def _text(value: object, what: str, limit: int = MAX_ARG) -> str:
    if not isinstance(value, str):
        raise LaunchError(f"{what} must be text, got {type(value).__name__}")
    if "\0" in value:
        raise LaunchError(f"{what} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise LaunchError(f"{what} is not valid UTF-8 text") from None
    if len(value) > limit:
        raise LaunchError(f"{what} is longer than {limit} characters")
    return value


def _path(value: object, what: str) -> Path:
    text = _text(value, what, 1024)
    if not text.strip() or not text.isprintable():
        raise LaunchError(f"{what} {short(text)} must be a printable path")
    return expand_home(text).resolve()


def parse_env(items: list[str]) -> tuple[tuple[str, str], ...]:
    """`K=V` strings (the CLI's --env) -> pairs; the value is kept verbatim, '=' included."""
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise LaunchError(f"--env {item!r} is not KEY=VALUE")
        pairs.append((key, value))
    return tuple(pairs)


def check_env(env: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    for key, value in env:
        try:
            check_env_key(key)
        except CodegenError as exc:
            raise LaunchError(str(exc)) from None
        if key in RESERVED_ENV:
            raise LaunchError(f"{key} is set by the launcher for every rank: it cannot be overridden")
        _text(value, f"the value of {key}")
    return env


def check_own(job: OwnJob) -> OwnJob:
    """The job with absolute paths, or LaunchError saying what to change."""
    if job.launcher not in OWN_LAUNCHERS:
        choices = ", ".join(OWN_LAUNCHERS)
        raise LaunchError(f"launcher {job.launcher!r} cannot start an own script: use one of {choices}")
    script = _path(job.script, "script")
    if not script.is_file():
        raise LaunchError(f"script {script} does not exist")
    if script.suffix != ".py":
        raise LaunchError(f"script {script.name} is not a Python file: msrun and the workers run `python SCRIPT`")
    workdir = _path(job.workdir, "working folder") if job.workdir else script.parent
    if not workdir.is_dir():
        raise LaunchError(f"working folder {workdir} does not exist")
    if not isinstance(job.args, tuple | list) or len(job.args) > MAX_ARGS:
        raise LaunchError(f"script arguments must be a list of at most {MAX_ARGS} items")
    args = tuple(_text(a, f"argument {i + 1}") for i, a in enumerate(job.args))
    env = check_env(tuple(job.env))
    if not isinstance(job.join, bool):
        raise LaunchError("join must be true or false")
    config = ""
    if job.mindformers_config:
        config = str(_path(job.mindformers_config, "MindFormers config"))
        if job.run_mode not in _RUN_MODES:
            raise LaunchError(f"run mode {job.run_mode!r}: use one of {', '.join(_RUN_MODES)}")
    python = check_python(job.python) if job.python else ""
    job = dataclasses.replace(
        job, script=str(script), workdir=str(workdir), args=args, env=env, mindformers_config=config, python=python
    )
    try:
        validate_options(job.to_options())
    except CodegenError as exc:
        raise LaunchError(str(exc)) from None
    if config:
        check_mindformers(job)
    return job


def check_mindformers(job: OwnJob) -> dict[str, int]:
    """The YAML's parallel_config, checked against the device count (a clear message if they differ)."""
    try:
        parallel = read_parallel_config(Path(job.mindformers_config))
    except (OSError, ValueError) as exc:
        raise LaunchError(f"cannot read the MindFormers config {job.mindformers_config}: {exc}") from None
    needed, formula = parallel_devices(parallel)
    if needed != job.device_num:
        raise LaunchError(
            f"the MindFormers config asks for {formula} = {needed} devices but the job has {job.device_num}: "
            "change --devices or the config's parallel_config"
        )
    return parallel


def script_argv(job: OwnJob) -> list[str]:
    """What every rank runs after `python`: the script, MindFormers' flags, then the user's arguments."""
    argv = [job.script]
    if job.mindformers_config:
        argv += ["--config", job.mindformers_config, "--run_mode", job.run_mode]
        if job.device_num > 1 and "--use_parallel" not in job.args:
            argv += ["--use_parallel", "True"]
    return argv + list(job.args)


def launcher_argv(job: OwnJob, log_dir: Path) -> list[str]:
    """The argv list the supervisor execs (no shell), as the job's launcher builds it."""
    options = job.to_options()
    return launcher_for(options).own_argv(options, script_argv(job), log_dir, job.join)


def shown_command(job: OwnJob, log_dir: Path) -> str | None:
    """What the Launch page shows of an own job's start: the wrapper script its launcher needs (mpirun's
    CPU scheduler + mpirun), else the argv quoted (it is exec'd as a list); None for a queued launcher
    (its batch file runs the script)."""
    options = job.to_options()
    launcher = launcher_for(options)
    if launcher.queued:
        return None
    if launcher.own_wrapper(options):
        return mpirun_cpu_script(job, log_dir)
    return shlex.join(launcher_argv(job, log_dir))


def own_note(job: OwnJob) -> str:
    """What the Launch page says about how the job's launcher runs the script ('' for nothing)."""
    options = job.to_options()
    return launcher_for(options).own_note(options)


def mpirun_cpu_script(job: OwnJob, log_dir: Path) -> str:
    """The script an own CPU job runs under mpirun: MindSpore's scheduler, then mpirun for the workers (the
    same lines as a generated job's run.sh; every user string quoted)."""
    mpirun_cmd = " ".join(shlex.quote(a) for a in mpirun_prefix(job.device_num, str(log_dir), cpu=True))
    worker_cmd = " ".join(shlex.quote(a) for a in ["python", *script_argv(job)])
    lines = mpirun_cpu_lines(job.device_num, job.master_addr, job.master_port, str(log_dir), mpirun_cmd, worker_cmd)
    head = [
        "#!/usr/bin/env bash",
        f"# own script {Path(job.script).name} under mpirun on CPU. Written by ShardScope.",
        "set -euo pipefail",
        f"cd {shlex.quote(job.workdir)}",
    ]
    return "\n".join([*head, *lines]) + "\n"


def batch_spec(job: OwnJob, run_dir: Path, run_id: str) -> BatchSpec:
    """job.sbatch for an own script: the script's folder as working folder, logs in the run folder."""
    options = job.to_options()
    return BatchSpec(
        job_name=job_name(run_id),
        nodes=options.node_num,
        tasks_per_node=options.workers_per_node,
        worker_argv=(job.python or "python", *script_argv(job)),  # nodes share the filesystem
        sched_port=job.master_port,
        log_dir=str(run_dir / LOG_DIR),
        workdir=job.workdir,
        partition=job.slurm_partition,
        account=job.slurm_account,
        time=job.slurm_time,
        gres=job.slurm_gres,
        cpus_per_task=job.slurm_cpus_per_task,
        cluster_time_out=job.cluster_time_out,
        env=job.env,
        title=f"own script {Path(job.script).name}: {job.device_num} workers",
    )


def launch_own(job: OwnJob, workspace: Path, name: str | None = None, wait_started: float = 10.0) -> RunRecord:
    """Start an own script as a run of the registry (status, Monitor, Stop, restart survival)."""
    job = check_own(job)
    options = job.to_options()
    launcher = launcher_for(options)
    check_queue(launcher, options)
    with reserving(workspace) as reserve:
        run_id, run_dir = new_run_dir(workspace, name, "own-" + job_name(Path(job.script).stem)[:40])
        check_scheduler_port(launcher.scheduler_port(options), workspace)
        reserve(run_dir)
        run_dir.mkdir(parents=True)
        log_dir = (run_dir / LOG_DIR).resolve()
        log_dir.mkdir()
        if launcher.queued:
            (run_dir / SBATCH_FILE).write_text(sbatch_script(batch_spec(job, run_dir, run_id)), encoding="utf-8")
        wrapper = launcher.own_wrapper(options)
        if wrapper:  # mpirun on CPU: MindSpore's scheduler beside mpirun
            (run_dir / wrapper).write_text(mpirun_cpu_script(job, log_dir), encoding="utf-8")
        if job.python:
            write_bin_dir(run_dir, job.python)
        register_run(_own_record(job, options, run_id, run_dir, log_dir, launcher.queued), dict(job.env))
    return start_supervisor(run_dir, wait_started)


def record_options(job: OwnJob, options: RunOptions) -> dict[str, Any]:
    """The `options` object an own run's run.json keeps (core.run.record_types: the run options, the script's
    keys and, with a MindFormers YAML, the plan)."""
    return options_to_json(options, own_run(job), planned_run(job))


def own_run(job: OwnJob) -> OwnRun:
    """What an own run's record keeps of its job."""
    return OwnRun(script=job.script, args=tuple(job.args), python=job.python, join=job.join)


def planned_run(job: OwnJob) -> PlannedRun | None:
    """With a MindFormers YAML, what the planner expected of its recipe (memory per card), for `diagnose` and
    the Monitor to compare with the measured memory; None without one."""
    return PlannedRun.from_json(plan_for_config(job.mindformers_config)) if job.mindformers_config else None


def _own_record(job: OwnJob, options: RunOptions, run_id: str, run_dir: Path, log_dir: Path, queued: bool) -> RunRecord:
    argv = launcher_argv(job, log_dir)
    return RunRecord(
        run_id=run_id,
        run_dir=run_dir,
        log_dir=log_dir,
        status=RunStatus.STARTING,
        scenario="mindformers" if job.mindformers_config else "own",
        design=Path(job.script).name,
        command=argv,
        started_at=time.time(),
        master_port=job.master_port,
        launcher=job.launcher,
        device_target=job.device_target,
        device_num=job.device_num,
        job_dir=job.workdir,
        options=options,
        own=own_run(job),
        plan=planned_run(job),
        message="starting",
        kind=RunKind.OWN,
        argv=argv,
        workdir="" if queued else job.workdir,
    )


FolderCheck = Callable[[str], Path]  # a log folder's text -> its resolved path, or ValueError saying why not


def watch_folder(folder: str | Path, workspace: Path, check: FolderCheck, name: str | None = None) -> RunRecord:
    """Register an existing log folder as an external run: the Monitor watches it; Stop only forgets it.

    `check` is `watch`'s own folder check (core.logs.bytes.guard.validate_log_dir, passed in by the CLI and
    the page: core.run may not import core.logs), so a folder `watch` refuses (`/`, `/proc`, a folder
    of 100k files) is refused here with the same sentence.
    """
    text = _text(str(folder), "log folder", 4096)
    try:
        path = check(text)
    except ValueError as exc:
        raise LaunchError(f"cannot watch {text!r}: {exc}") from None
    stem = "watch-" + re.sub(r"[^A-Za-z0-9._-]+", "-", path.name).strip("-.")[:40]
    with reserving(workspace) as reserve:
        run_id, run_dir = new_run_dir(workspace, name, stem or "watch")
        reserve(run_dir)
        run_dir.mkdir(parents=True)
        record = _watch_record(run_id, run_dir, path)
        write_record(record)
    return record


def _watch_record(run_id: str, run_dir: Path, path: Path) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        run_dir=run_dir,
        log_dir=path,
        status=RunStatus.RUNNING,
        scenario="external",
        design=path.name,
        started_at=time.time(),
        launcher="",
        kind=RunKind.EXTERNAL,
        message="watch only: ShardScope did not start this job; Stop forgets it (nothing is signalled)",
    )
