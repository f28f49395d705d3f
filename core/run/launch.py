"""Start and stop generated jobs as runs of the registry (msrun, mpirun, rank table).

A detached supervisor process (`python -m core.run.launch _supervise RUN_DIR`) starts `bash run.sh`
in its own process group, waits for it and records the exit code, so the registry stays right after
the dashboard restarts.

Stopping: the launcher's stop signal (SIGINT for msrun: it stops its workers and scheduler), then
SIGKILL to the whole process group after a grace period, then every process of the run that is
still alive (same process group, cwd inside the run folder, or SHARDSCOPE_RUN_ID in its
environment) is killed and the stop is verified.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from core.codegen import JOB_FILE, CodegenError, RunOptions, read_job
from core.codegen.launchers import log_dir as job_log_dir
from core.run.launchers import Launcher, launcher_for
from core.run.processes import ENV_RUN_ID, alive, create_time, port_in_use, processes_of, send_signal
from core.run.registry import (
    LAUNCHER_LOG,
    STOP_FILE,
    LaunchError,
    RunRecord,
    RunStatus,
    get_run,
    list_runs,
    new_run_id,
    read_record,
    runs_root,
    write_record,
)
from core.workspace import REPO_ROOT, WorkspaceError, check_name, child

_JOB_FILES = ("train.py", "run.sh", "README.md", JOB_FILE)


def run_processes(record: RunRecord, include_supervisor: bool = False) -> list[psutil.Process]:
    """Every live process of the run: its process group, cwd in the run folder, or tagged env."""
    exclude = () if include_supervisor else (record.supervisor_pid,)
    return processes_of(record.run_id, record.run_dir, record.pgid, exclude)


def launcher_env(run_id: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The job's environment: this venv's bin first on PATH (msrun starts bare `python`), unbuffered."""
    env = dict(os.environ)
    env.update(extra or {})
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env[ENV_RUN_ID] = run_id
    return env


def _check_port(port: int | None, workspace: Path) -> None:
    if port is None:
        return
    busy = [r for r in list_runs(workspace) if r.is_running and r.master_port == port]
    if busy:
        raise LaunchError(
            f"master port {port} is used by run {busy[0].run_id}, which is still running: "
            "stop it or generate the job with another master port"
        )
    if port_in_use(port):
        raise LaunchError(
            f"master port {port} is busy (another program listens on it): generate the job with another master port"
        )


def launch(
    job_dir: str | Path,
    workspace: Path,
    name: str | None = None,
    env: dict[str, str] | None = None,
    wait_started: float = 10.0,
) -> RunRecord:
    """Copy the job into runs/<id>/ and start it under a detached supervisor. Returns the record."""
    job_dir = Path(job_dir).resolve()
    if not (job_dir / "run.sh").is_file():
        raise LaunchError(f"{job_dir} has no run.sh: generate the job first")
    try:
        design, options = read_job(job_dir)
    except CodegenError as exc:
        raise LaunchError(str(exc)) from None
    launcher = launcher_for(options)
    root = runs_root(workspace)
    root.mkdir(parents=True, exist_ok=True)
    try:
        run_id = check_name(name, "run name") if name else new_run_id(options.scenario, root)
        run_dir = child(root, run_id, "run name")
    except WorkspaceError as exc:
        raise LaunchError(str(exc)) from None
    if run_dir.exists():
        raise LaunchError(f"a run called {run_id!r} already exists: pick another name")
    _check_port(launcher.scheduler_port(options), workspace)
    run_dir.mkdir(parents=True)
    for name_ in _JOB_FILES:
        if (job_dir / name_).is_file():
            shutil.copy2(job_dir / name_, run_dir / name_)
    record = RunRecord(
        run_id=run_id,
        run_dir=run_dir,
        log_dir=(run_dir / job_log_dir(options)).resolve(),
        status=RunStatus.RUNNING,
        scenario=options.scenario,
        design=design,
        command=launcher.command(options),
        started_at=time.time(),
        master_port=options.master_port,
        launcher=options.launcher,
        device_target=options.device_target,
        device_num=options.device_num,
        job_dir=str(job_dir),
        options=options.to_dict(),
        message="starting",
    )
    write_record(record)
    (run_dir / "env.json").write_text(json.dumps(env or {}), encoding="utf-8")
    return _start_supervisor(run_dir, wait_started)


def _start_supervisor(run_dir: Path, wait_started: float) -> RunRecord:
    sup_env = dict(os.environ)
    sup_env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + sup_env.get("PYTHONPATH", "")
    with open(run_dir / "supervisor.log", "ab") as log:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "core.run.launch", "_supervise", str(run_dir)],
            cwd=str(REPO_ROOT),
            env=sup_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.time() + wait_started
    while time.time() < deadline:
        record = read_record(run_dir)
        if record.pid or record.status != RunStatus.RUNNING:
            return record
        if supervisor.poll() is not None:
            break
        time.sleep(0.05)
    record = read_record(run_dir)
    if not record.pid and record.status == RunStatus.RUNNING:
        record.status, record.ended_at = RunStatus.FAILED, time.time()
        record.message = "the supervisor did not start the job (see supervisor.log)"
        write_record(record)
    return record


def supervise(run_dir: Path) -> int:
    """Start `bash run.sh` in its own process group, wait, record exit code and status."""
    record = read_record(run_dir)
    extra = json.loads((run_dir / "env.json").read_text(encoding="utf-8") or "{}")
    record.supervisor_pid = os.getpid()
    record.supervisor_create_time = create_time(os.getpid())
    with open(run_dir / LAUNCHER_LOG, "ab") as out:
        try:
            proc = subprocess.Popen(
                ["bash", "run.sh"],
                cwd=str(run_dir),
                env=launcher_env(record.run_id, extra),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            record.status, record.ended_at, record.exit_code = RunStatus.FAILED, time.time(), None
            record.message = f"could not start run.sh: {exc}"
            write_record(record)
            return 1
        record.pid, record.pgid = proc.pid, proc.pid
        record.pid_create_time = create_time(proc.pid)
        record.message = ""
        write_record(record)
        code = proc.wait()
    time.sleep(0.2)  # let the launcher's stragglers (msrun's tail, a scheduler after a crash) go first
    latest = read_record(run_dir)
    latest.ended_at = time.time()
    latest.exit_code = code
    if (run_dir / STOP_FILE).exists():
        latest.status, latest.message = RunStatus.STOPPED, "stopped by the user"
    elif code == 0:
        latest.status = RunStatus.SUCCEEDED
    else:
        latest.status = RunStatus.FAILED
        latest.message = f"the launcher exited with code {code}" if code > 0 else f"killed by signal {-code}"
    write_record(latest)
    return 0


def stop(run_id: str, workspace: Path, grace: float = 15.0) -> RunRecord:
    """The launcher's stop signal, SIGKILL to the group after `grace` s, then verify nothing is left."""
    record = get_run(run_id, workspace)
    (record.run_dir / STOP_FILE).write_text(str(time.time()), encoding="utf-8")
    if alive(record.pid, record.pid_create_time):
        stop_signal = launcher_for_record(record).stop_signal
        with contextlib.suppress(psutil.Error):
            psutil.Process(record.pid).send_signal(stop_signal)
        deadline = time.time() + grace
        while time.time() < deadline and run_processes(record):
            time.sleep(0.2)
    _kill_leftovers(record)
    # the supervisor sees the launcher exit and writes 'stopped'; wait for it briefly
    deadline = time.time() + 10
    while time.time() < deadline and alive(record.supervisor_pid, record.supervisor_create_time):
        time.sleep(0.1)
    final = read_record(record.run_dir)
    if final.status == RunStatus.RUNNING:
        final.status, final.ended_at, final.message = RunStatus.STOPPED, time.time(), "stopped by the user"
        write_record(final)
    return final


def launcher_for_record(record: RunRecord) -> Launcher:
    """The launcher a recorded run was started with (msrun when the record predates the field)."""
    try:
        return launcher_for(RunOptions(launcher=record.launcher))
    except CodegenError:
        return launcher_for(RunOptions())


def _kill_leftovers(record: RunRecord) -> None:
    for _attempt in range(5):
        left = run_processes(record)
        if record.pgid and alive(record.pid, record.pid_create_time):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(record.pgid, signal.SIGKILL)
        if not left:
            break
        send_signal(left, signal.SIGKILL)
        psutil.wait_procs(left, timeout=3)
    left = run_processes(record)
    if left:
        raise LaunchError(f"run {record.run_id}: processes {sorted(p.pid for p in left)} survived SIGKILL")


def wait(run_id: str, workspace: Path, timeout: float | None = None, poll: float = 0.5) -> RunRecord:
    """Block until the run ends (or `timeout` s pass); returns the latest record."""
    deadline = None if timeout is None else time.time() + timeout
    while True:
        record = get_run(run_id, workspace)
        if not record.is_running or (deadline is not None and time.time() > deadline):
            return record
        time.sleep(poll)


def delete_run(run_id: str, workspace: Path) -> None:
    """Remove a finished run's folder."""
    record = get_run(run_id, workspace)
    if record.is_running:
        raise LaunchError(f"run {run_id} is still running: stop it first")
    shutil.rmtree(record.run_dir)


def _main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "_supervise":
        return supervise(Path(argv[1]))
    print("usage: python -m core.run.launch _supervise RUN_DIR (internal)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
