"""Start and stop jobs as runs of the registry (msrun, mpirun, rank table, Slurm).

A detached supervisor process (`python -m core.run.supervisor _supervise RUN_DIR`) execs the argv list
stored in run.json (`bash run.sh` for a generated job, the msrun/mpirun argv for an own script; one
process per node started here) in its own process group, waits for it and records the exit code,
so the registry stays right after the dashboard restarts. For a queued launcher (Slurm) the
supervisor submits the batch file and polls the scheduler instead.

Stopping: the launcher's stop signal (SIGINT for msrun: it stops its workers and scheduler), then
SIGKILL to the whole process group after a grace period, then every process of the run that is
still alive (in its launcher's session, or carrying the run's tag SHARDSCOPE_RUN_ID +
SHARDSCOPE_RUN_DIR in its environment: never a path in a command line) is killed and the stop is
verified. run.json is only a claim: a pid it names is signalled (and its group killed) only once
proven the run's own (`core.run.processes.RunProcesses`: the tag in its environment, never pid 1, this
program, its parent, session or group); a refused pid is named in the one-line error stop raises.
A watched folder's run is only forgotten: ShardScope did not start it, nothing is signalled.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from core.codegen import JOB_FILE, CodegenError, Job, RunOptions, load_job, validate_options
from core.codegen.sbatch import SBATCH_FILE
from core.run.interpreter import BIN_DIR
from core.run.launchers import BatchLauncher, Launcher, is_batch, launcher_for
from core.run.preflight import check_launcher, check_partition
from core.run.processes import (
    Proof,
    RunProcesses,
    port_in_use,
    run_tag,
    start_detached,
)
from core.run.record_types import BadValue, PlannedRun
from core.run.registry import (
    LOCK_FILE,
    RUN_FILE,
    STOP_FILE,
    LaunchError,
    NodeEntry,
    RecordWriteError,
    RunKind,
    RunRecord,
    RunStatus,
    get_run,
    launch_lock,
    list_runs,
    new_run_id,
    read_record,
    request_stop,
    runs_root,
    update_record,
    write_record,
)
from core.workspace import REPO_ROOT, WorkspaceError, check_name, short

_JOB_FILES = ("train.py", "run.sh", "README.md", JOB_FILE, SBATCH_FILE)


def launcher_env(
    run_id: str, run_dir: Path, extra: dict[str, str] | None = None, own_python: bool = False
) -> dict[str, str]:
    """The job's environment: the interpreter's bin first on PATH (msrun starts bare `python`): this venv's,
    or with `own_python` the run's `bin/` wrappers of the user's interpreter; unbuffered, and the run's tag
    that identifies its processes (every worker inherits it)."""
    env = dict(os.environ)
    env.update(extra or {})
    bin_dir = str(run_dir / BIN_DIR) if own_python else os.path.dirname(sys.executable)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(run_tag(run_id, run_dir))
    return env


def check_scheduler_port(port: int | None, workspace: Path) -> None:
    if port is None:
        return
    busy = [r for r in list_runs(workspace) if r.is_running and r.master_port == port]
    if busy:
        raise LaunchError(
            f"master port {port} is used by run {busy[0].run_id}, which is still {busy[0].status} "
            "(the port is reserved for it): stop it or generate the job with another master port"
        )
    if port_in_use(port):
        raise LaunchError(
            f"master port {port} is busy (another program listens on it): generate the job with another master port"
        )


def check_queue(launcher: Launcher, options: RunOptions) -> None:
    """A queued launcher's preflight that must pass: its tool (sbatch), the partition, enough nodes."""
    if launcher.queued:
        for check in (check_launcher(options), check_partition(options)):
            if not check.ok:
                raise LaunchError(check.message)


def new_run_dir(workspace: Path, name: str | None, default_stem: str) -> tuple[str, Path]:
    """A fresh run folder name under runs/ (a user name is checked so it cannot escape)."""
    root = runs_root(workspace)
    root.mkdir(parents=True, exist_ok=True)
    try:
        run_id = check_name(name, "run name") if name else new_run_id(default_stem, root)
    except WorkspaceError as exc:
        raise LaunchError(str(exc)) from None
    run_dir = root / run_id  # never resolved: a link of that name is a name taken, not a way elsewhere
    if os.path.lexists(run_dir):
        raise LaunchError(f"a run called {run_id!r} already exists: pick another name")
    return run_id, run_dir


def node_plan(options: RunOptions, node_exec: dict[int, list[str]] | None, run_sh: str = "run.sh") -> list[NodeEntry]:
    """Which nodes of a multi-node msrun job start here: node 0, plus every node given a command prefix.

    A prefix is an argv list put before `bash RUN_SH K` (e.g. `ip netns exec ns2`): it is never parsed
    by a shell here. `run_sh` is the run folder's run.sh, absolute, so a prefix may change directory.
    """
    if not node_exec:
        return []
    if not launcher_for(options).node_exec or not options.multi_node:
        raise LaunchError("per-node commands need a multi-node msrun job (generate it with --local-workers)")
    plan: list[NodeEntry] = []
    for node in sorted({0, *node_exec}):
        if not 0 <= node < options.node_num:
            raise LaunchError(f"node {node} does not exist: the job has nodes 0..{options.node_num - 1}")
        prefix = list(node_exec.get(node, []))
        if not all(isinstance(a, str) and a and "\0" not in a for a in prefix):
            raise LaunchError(f"the command for node {node} must be a list of non-empty words")
        plan.append({"node": node, "argv": [*prefix, "bash", run_sh, str(node)]})
    return plan


def launch(
    job_dir: str | Path,
    workspace: Path,
    name: str | None = None,
    env: dict[str, str] | None = None,
    wait_started: float = 10.0,
    node_exec: dict[int, list[str]] | None = None,
) -> RunRecord:
    """Copy the job into runs/<id>/ and start it under a detached supervisor. Returns the record.

    `node_exec` starts more nodes of a multi-node msrun job on this machine: {node: argv prefix}.
    """
    if "\0" in str(job_dir) or len(str(job_dir)) > 4096:
        raise LaunchError(f"job folder {short(str(job_dir))} contains a NUL character or is too long")
    job_dir = Path(job_dir).resolve()
    if not (job_dir / "run.sh").is_file():
        raise LaunchError(f"{job_dir} has no run.sh: generate the job first")
    try:
        job = load_job(job_dir)
        validate_options(job.options)
    except CodegenError as exc:
        raise LaunchError(str(exc)) from None
    options = job.options
    launcher = launcher_for(options)
    batch_file = getattr(launcher, "batch_file", None)
    if batch_file and not (job_dir / batch_file).is_file():
        raise LaunchError(f"{job_dir} has no {batch_file}: generate the job again")
    node_plan(options, node_exec)  # refuse bad node commands before anything is written
    check_queue(launcher, options)
    with reserving(workspace) as reserve:
        run_id, run_dir = new_run_dir(workspace, name, options.scenario)
        nodes = node_plan(options, node_exec, str(run_dir / "run.sh"))
        check_scheduler_port(launcher.scheduler_port(options), workspace)
        reserve(run_dir)
        run_dir.mkdir(parents=True)
        for name_ in _JOB_FILES:
            if (job_dir / name_).is_file():
                shutil.copy2(job_dir / name_, run_dir / name_)
        record = _generated_record(run_id, run_dir, job_dir, job, launcher, nodes)
        register_run(record, env)
    return start_supervisor(run_dir, wait_started)


def _generated_record(
    run_id: str,
    run_dir: Path,
    job_dir: Path,
    job: Job,
    launcher: Launcher,
    nodes: list[NodeEntry],
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        run_dir=run_dir,
        log_dir=(run_dir / job.log_dir).resolve(),
        status=RunStatus.STARTING,
        scenario=job.options.scenario,
        design=job.design,
        command=launcher.command(job.options),
        started_at=time.time(),
        master_port=job.options.master_port,
        launcher=job.options.launcher,
        device_target=job.options.device_target,
        device_num=job.options.device_num,
        job_dir=str(job_dir),
        options=job.options,
        plan=_job_plan(job),
        message="starting",
        kind=RunKind.GENERATED,
        argv=["bash", "run.sh"],
        nodes=nodes,
    )


def _job_plan(job: Job) -> PlannedRun | None:
    """The plan job.json keeps (a Planner design's), typed; a malformed one is one LaunchError line."""
    try:
        return None if job.plan is None else PlannedRun.from_json(job.plan)
    except BadValue as exc:
        raise LaunchError(f"{JOB_FILE} has plan {short(str(job.plan))}, {exc}: generate the job again") from None


@contextlib.contextmanager
def reserving(workspace: Path) -> Iterator[Callable[[Path], None]]:
    """Hold the workspace's launch lock from the port check until the 'starting' record holding the
    port is written, so two launches cannot both pass the check. A filesystem error inside becomes a
    one-line LaunchError and the half-written run folder (given to `reserve`) is removed."""
    made: list[Path] = []
    try:
        with launch_lock(workspace):
            yield made.append
    except (OSError, RecordWriteError) as exc:
        for run_dir in made:
            shutil.rmtree(run_dir, ignore_errors=True)
        if isinstance(exc, RecordWriteError):
            raise LaunchError(f"{exc} (the run folder was removed)") from None
        where = exc.filename or runs_root(workspace)
        raise LaunchError(f"cannot write the run folder ({where}): {exc.strerror or exc}") from None


def register_run(record: RunRecord, env: dict[str, str] | None) -> None:
    """Write the extra environment, then run.json (status 'starting': it now holds its port)."""
    (record.run_dir / "env.json").write_text(json.dumps(env or {}), encoding="utf-8")
    write_record(record)


def start_supervisor(run_dir: Path, wait_started: float = 10.0) -> RunRecord:
    """Start the detached supervisor and wait (up to `wait_started` s) until it has started the job.

    A supervisor that is merely slow leaves the run 'starting' (never 'failed'); one that exited
    without starting the job makes it 'failed'.
    """
    sup_env = dict(os.environ)
    sup_env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + sup_env.get("PYTHONPATH", "")
    try:
        supervisor = start_detached(
            [sys.executable, "-m", "core.run.supervisor", "_supervise", run_dir],
            run_dir / "supervisor.log",
            str(REPO_ROOT),
            sup_env,
        )
    except OSError as exc:
        why = f"cannot start the supervisor: {exc.strerror or exc}"
        return _record_failed_start(run_dir, lambda r: fail_record(r, why))
    deadline = time.time() + wait_started
    while time.time() < deadline:
        record = read_record(run_dir)
        if record.status != RunStatus.STARTING:
            return record
        if supervisor.poll() is not None:
            break
        time.sleep(0.05)
    if supervisor.poll() is None:
        return read_record(run_dir)  # slow, not dead: still 'starting', refresh() judges it later
    supervisor.wait()
    return _record_failed_start(
        run_dir,
        lambda r: (
            r.status == RunStatus.STARTING
            and fail_record(r, "the supervisor did not start the job (see supervisor.log)")
        ),
    )


def _record_failed_start(run_dir: Path, change: Callable[[RunRecord], bool]) -> RunRecord:
    """Record that the job never started; when even that cannot be saved (a full disk), the run folder goes,
    so no 'starting' record is left holding its master port, and the launch fails in one line."""
    try:
        return update_record(run_dir, change)
    except (RecordWriteError, OSError) as exc:
        why = exc if isinstance(exc, RecordWriteError) else f"cannot save {run_dir / RUN_FILE}: {exc.strerror or exc}"
    with contextlib.suppress(LaunchError, OSError):
        if read_record(run_dir).pid:
            raise LaunchError(f"run {run_dir.name}: {why}")  # started after all: its record stays
    shutil.rmtree(run_dir, ignore_errors=True)
    raise LaunchError(f"the launch failed and could not be recorded ({why}): the run folder {run_dir} was removed")


def fail_record(record: RunRecord, message: str) -> bool:
    record.status, record.ended_at, record.message = RunStatus.FAILED, time.time(), message
    return True


def stop(run_id: str, workspace: Path, grace: float = 15.0) -> RunRecord:
    """The launcher's stop signal, SIGKILL to the group after `grace` s, then verify nothing is left.

    Only processes proven the run's own are signalled (`RunProcesses`); a live pid the record names that
    is not (a forged or stale run.json) is left alone and named in a LaunchError, the record left as it is.
    """
    record = get_run(run_id, workspace)
    if record.watch_only:
        return forget(record)
    if not record.is_running:
        return record  # finished: its pids and group may belong to others now, so nothing is sent
    request_stop(record.run_dir)
    record = _wait_started(record)
    if not record.is_running:
        return record  # the supervisor saw the stop request before starting anything
    view = RunProcesses.of(record)
    launcher = launcher_for_record(record)
    if is_batch(launcher):
        refused = _stop_batch(record, launcher, grace)  # scancel: the scheduler stops every node's tasks
    else:
        refused = view.interrupt(launcher.stop_signal, grace)
    view.kill_all()
    view.wait_supervisor()  # it sees the launcher exit and writes 'stopped'
    if refused:
        raise LaunchError(view.refusal(refused))
    return update_record(record.run_dir, _stopped, keep_unwritten=True)  # a full disk: stopped all the same


def _stopped(final: RunRecord) -> bool:
    """Under the record lock: 'stopped by the user', unless the supervisor wrote a final status first."""
    if not final.is_running:
        return False
    final.status, final.ended_at, final.message = RunStatus.STOPPED, time.time(), "stopped by the user"
    return True


def _wait_started(record: RunRecord, timeout: float = 30.0) -> RunRecord:
    """A 'starting' run has no pids yet: wait until its supervisor records them (or ends, or is lost)."""
    deadline = time.time() + timeout
    while record.status == RunStatus.STARTING and time.time() < deadline:
        if record.supervisor_pid and not RunProcesses.of(record).supervisor_alive():
            break
        time.sleep(0.1)
        record = read_record(record.run_dir)
    return record


def forget(record: RunRecord) -> RunRecord:
    """Stop watching a watched folder's run: marked ended, nothing signalled (ShardScope did not start
    the job, so no process is its to stop); the folder is left as it is."""

    def ended(latest: RunRecord) -> bool:
        if not latest.is_running:
            return False
        latest.status, latest.ended_at = RunStatus.STOPPED, time.time()
        latest.message = "forgotten: no longer watched (nothing was signalled: ShardScope did not start this job)"
        return True

    return update_record(record.run_dir, ended)


def _stop_batch(record: RunRecord, launcher: BatchLauncher, grace: float) -> list[Proof]:
    """scancel, then wait until the scheduler runs no step of the job (grace + the kill wait). Nothing
    recorded is signalled here, so nothing is refused."""
    deadline = time.time() + 15
    while not record.slurm_job_id and time.time() < deadline and RunProcesses.of(record).supervisor_alive():
        time.sleep(0.2)  # the supervisor is still submitting
        record = read_record(record.run_dir)
    if not record.slurm_job_id:
        return []
    launcher.cancel(record.slurm_job_id)
    deadline = time.time() + grace + 60
    left = launcher.leftovers(record.slurm_job_id)
    while left and time.time() < deadline:
        time.sleep(0.5)
        left = launcher.leftovers(record.slurm_job_id)
    if left:
        raise LaunchError(f"Slurm still runs {', '.join(left)} of job {record.slurm_job_id} after scancel")
    return []


def launcher_for_record(record: RunRecord) -> Launcher:
    """The launcher a recorded run was started with (msrun when the record predates the field)."""
    try:
        return launcher_for(RunOptions(launcher=record.launcher))
    except CodegenError:
        return launcher_for(RunOptions())


def wait(run_id: str, workspace: Path, timeout: float | None = None, poll: float = 0.5) -> RunRecord:
    """Block until the run ends (or `timeout` s pass); returns the latest record."""
    deadline = None if timeout is None else time.time() + timeout
    while True:
        record = get_run(run_id, workspace)
        if not record.is_running or (deadline is not None and time.time() > deadline):
            return record
        time.sleep(poll)


def delete_run(run_id: str, workspace: Path) -> RunRecord:
    """Remove a finished run's folder (a watched folder's run: only its record, never the watched folder)."""
    record = get_run(run_id, workspace)
    if record.watch_only:
        _delete_record_only(record.run_dir)
        return record
    if record.is_running:
        raise LaunchError(f"run {run_id} is still {record.status}: stop it first")
    try:
        shutil.rmtree(record.run_dir)
    except OSError as exc:
        where = exc.filename or record.run_dir
        raise LaunchError(f"cannot delete run {run_id} ({where}): {exc.strerror or exc}") from None
    return record


_RECORD_FILES = (RUN_FILE, LOCK_FILE, STOP_FILE)


def _delete_record_only(run_dir: Path) -> None:
    """A watch-only run's folder holds only its record: remove those files by name, then the empty
    folder. Never a recursive delete, so nothing else (and never the watched folder) can go."""
    for name in _RECORD_FILES:
        with contextlib.suppress(FileNotFoundError):
            (run_dir / name).unlink()
    try:
        run_dir.rmdir()
    except OSError as exc:
        raise LaunchError(
            f"the record of {run_dir.name} is deleted but {run_dir} still holds other files "
            f"({exc.strerror or exc}): left as it is"
        ) from None
