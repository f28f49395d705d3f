"""Run registry on disk and the start / stop of generated jobs (msrun, mpirun, rank table).

Layout: `<workspace>/runs/<run_id>/` holds a copy of the job files, the launcher's logs and
`run.json` (options, command, pids, times, status, exit code). A detached supervisor process
(`python -m core.launch _supervise RUN_DIR`) starts `bash run.sh` in its own process group, waits
for it and records the exit code, so the registry stays right after the dashboard restarts.

Stopping follows msrun's semantics: SIGINT to msrun (it stops its workers and scheduler), then
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
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from core.codegen import JOB_FILE, CodegenError, read_job
from core.codegen.launchers import log_dir as job_log_dir
from core.codegen.launchers import mpirun_argv, msrun_argv
from core.workspace import REPO_ROOT, WorkspaceError, check_name, child

RUN_FILE = "run.json"
STOP_FILE = "stop_requested"
LAUNCHER_LOG = "launcher.log"
STATUSES = ("running", "succeeded", "failed", "stopped")
ENV_RUN_ID = "SHARDSCOPE_RUN_ID"
_JOB_FILES = ("train.py", "run.sh", "README.md", JOB_FILE)


class LaunchError(RuntimeError):
    """A launch or stop that cannot be done, with a message for the user."""


@dataclass
class RunRecord:
    """One run as stored in run.json (paths resolved)."""

    run_id: str
    run_dir: Path
    log_dir: Path
    status: str = "running"
    scenario: str = ""
    design: str = ""
    command: list[str] = field(default_factory=list)
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    pid: int | None = None
    pgid: int | None = None
    pid_create_time: float | None = None
    supervisor_pid: int | None = None
    supervisor_create_time: float | None = None
    master_port: int | None = None
    launcher: str = "msrun"
    device_target: str = "CPU"
    device_num: int = 0
    job_dir: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    @property
    def is_running(self) -> bool:
        return self.status == "running"

    @property
    def duration(self) -> float | None:
        if self.started_at is None:
            return None
        return (self.ended_at or time.time()) - self.started_at

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k not in {"run_dir", "log_dir"}}
        data["log_dir"] = os.path.relpath(self.log_dir, self.run_dir)
        return data

    @classmethod
    def from_json(cls, run_dir: Path, data: dict[str, Any]) -> RunRecord:
        known = set(cls.__dataclass_fields__) - {"run_dir", "log_dir"}
        values = {k: v for k, v in data.items() if k in known}
        log_rel = str(data.get("log_dir") or ".")
        log_path = (run_dir / log_rel).resolve()
        if run_dir.resolve() not in (log_path, *log_path.parents):
            log_path = run_dir.resolve()
        return cls(run_dir=run_dir, log_dir=log_path, **values)


# ---------------------------------------------------------------------------------------------
# registry files
# ---------------------------------------------------------------------------------------------
def runs_root(workspace: Path) -> Path:
    return Path(workspace).resolve() / "runs"


def run_dir_of(run_id: str, workspace: Path) -> Path:
    return child(runs_root(workspace), run_id, "run id")


def _write_record(record: RunRecord) -> None:
    path = record.run_dir / RUN_FILE
    tmp = path.with_name(f"{RUN_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record.to_json(), indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _read_record(run_dir: Path) -> RunRecord:
    try:
        data = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LaunchError(f"run {run_dir.name} has no readable {RUN_FILE}: {exc}") from None
    return RunRecord.from_json(run_dir, data)


# ---------------------------------------------------------------------------------------------
# process helpers
# ---------------------------------------------------------------------------------------------
def _alive(pid: int | None, create_time: float | None) -> bool:
    """True if `pid` runs and is the same process we started (create time guards pid reuse)."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return create_time is None or abs(proc.create_time() - create_time) < 0.05
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _create_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def run_processes(record: RunRecord, include_supervisor: bool = False) -> list[psutil.Process]:
    """Every live process of the run: its process group, cwd in the run folder, or tagged env."""
    found: dict[int, psutil.Process] = {}
    run_dir = str(record.run_dir.resolve())
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "cwd", "cmdline", "status"]):
        try:
            if proc.pid == me or proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if not include_supervisor and proc.pid == record.supervisor_pid:
                continue
            mine = False
            if record.pgid and os.getpgid(proc.pid) == record.pgid:
                mine = True
            cwd = proc.info.get("cwd") or ""
            if cwd == run_dir or cwd.startswith(run_dir + os.sep):
                mine = True
            if not mine:
                cmdline = " ".join(proc.info.get("cmdline") or [])
                if run_dir in cmdline and "_supervise" not in cmdline:
                    mine = True
            if not mine:
                with contextlib.suppress(psutil.Error):
                    mine = proc.environ().get(ENV_RUN_ID) == record.run_id
            if mine:
                found[proc.pid] = proc
        except (psutil.Error, ProcessLookupError, PermissionError):
            continue
    return list(found.values())


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True if something listens on `port` (a bind with SO_REUSEADDR fails only for a listener)."""
    for addr in {host, "0.0.0.0"}:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((addr, port))
            except OSError:
                return True
    return False


def launcher_env(run_id: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The job's environment: this venv's bin first on PATH (msrun starts bare `python`), unbuffered."""
    env = dict(os.environ)
    env.update(extra or {})
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env[ENV_RUN_ID] = run_id
    return env


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------
def get_run(run_id: str, workspace: Path) -> RunRecord:
    """The run's record, refreshed against the live processes."""
    try:
        run_dir = run_dir_of(run_id, workspace)
    except WorkspaceError as exc:
        raise LaunchError(str(exc)) from None
    if not (run_dir / RUN_FILE).is_file():
        raise LaunchError(f"no run called {run_id!r} in {runs_root(workspace)}")
    return refresh(_read_record(run_dir))


def refresh(record: RunRecord) -> RunRecord:
    """Re-attach: a 'running' record whose supervisor and launcher are both gone gets a final status."""
    if record.status != "running":
        return record
    if _alive(record.supervisor_pid, record.supervisor_create_time):
        return record
    if _alive(record.pid, record.pid_create_time):
        return record  # supervisor lost (killed); the job still runs and can be stopped
    time.sleep(0.05)  # the supervisor may have just written its final status
    latest = _read_record(record.run_dir)
    if latest.status != "running":
        return latest
    latest.ended_at = latest.ended_at or time.time()
    if (latest.run_dir / STOP_FILE).exists():
        latest.status, latest.message = "stopped", "stopped by the user"
    else:
        latest.status = "failed"
        latest.message = latest.message or "the launcher ended while nobody was watching: exit code unknown"
    _write_record(latest)
    return latest


def status(run_id: str, workspace: Path) -> str:
    return get_run(run_id, workspace).status


def list_runs(workspace: Path) -> list[RunRecord]:
    """Every run in the workspace, newest first (unreadable folders are skipped)."""
    root = runs_root(workspace)
    if not root.is_dir():
        return []
    records = []
    for run_dir in root.iterdir():
        if not (run_dir / RUN_FILE).is_file():
            continue
        try:
            records.append(refresh(_read_record(run_dir)))
        except (LaunchError, TypeError, ValueError):
            continue
    return sorted(records, key=lambda r: (r.started_at or 0.0, r.run_id), reverse=True)


def _new_run_id(scenario: str, root: Path) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = f"{stamp}-{scenario}"
    run_id, n = base, 1
    while (root / run_id).exists():
        n += 1
        run_id = f"{base}-{n}"
    return run_id


def _command(options: Any) -> list[str]:
    if options.launcher == "msrun":
        return msrun_argv(options, "0" if options.multi_node else None)
    if options.launcher == "mpirun":
        return mpirun_argv(options)
    return ["bash", "run.sh"]


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
    root = runs_root(workspace)
    root.mkdir(parents=True, exist_ok=True)
    try:
        run_id = check_name(name, "run name") if name else _new_run_id(options.scenario, root)
        run_dir = child(root, run_id, "run name")
    except WorkspaceError as exc:
        raise LaunchError(str(exc)) from None
    if run_dir.exists():
        raise LaunchError(f"a run called {run_id!r} already exists: pick another name")
    if options.launcher in {"msrun", "mpirun"}:
        busy = [r for r in list_runs(workspace) if r.is_running and r.master_port == options.master_port]
        if busy:
            raise LaunchError(
                f"master port {options.master_port} is used by run {busy[0].run_id}, which is still running: "
                "stop it or generate the job with another master port"
            )
        if options.launcher == "msrun" and port_in_use(options.master_port):
            raise LaunchError(
                f"master port {options.master_port} is busy (another program listens on it): "
                "generate the job with another master port"
            )
    run_dir.mkdir(parents=True)
    for name_ in _JOB_FILES:
        if (job_dir / name_).is_file():
            shutil.copy2(job_dir / name_, run_dir / name_)
    record = RunRecord(
        run_id=run_id,
        run_dir=run_dir,
        log_dir=(run_dir / job_log_dir(options)).resolve(),
        status="running",
        scenario=options.scenario,
        design=design,
        command=_command(options),
        started_at=time.time(),
        master_port=options.master_port,
        launcher=options.launcher,
        device_target=options.device_target,
        device_num=options.device_num,
        job_dir=str(job_dir),
        options=options.to_dict(),
        message="starting",
    )
    _write_record(record)
    (run_dir / "env.json").write_text(json.dumps(env or {}), encoding="utf-8")
    sup_env = dict(os.environ)
    sup_env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + sup_env.get("PYTHONPATH", "")
    with open(run_dir / "supervisor.log", "ab") as log:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "core.launch", "_supervise", str(run_dir)],
            cwd=str(REPO_ROOT),
            env=sup_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.time() + wait_started
    while time.time() < deadline:
        record = _read_record(run_dir)
        if record.pid or record.status != "running":
            return record
        if supervisor.poll() is not None:
            break
        time.sleep(0.05)
    record = _read_record(run_dir)
    if not record.pid and record.status == "running":
        record.status, record.ended_at = "failed", time.time()
        record.message = "the supervisor did not start the job (see supervisor.log)"
        _write_record(record)
    return record


def supervise(run_dir: Path) -> int:
    """Start `bash run.sh` in its own process group, wait, record exit code and status."""
    record = _read_record(run_dir)
    extra = json.loads((run_dir / "env.json").read_text(encoding="utf-8") or "{}")
    record.supervisor_pid = os.getpid()
    record.supervisor_create_time = _create_time(os.getpid())
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
            record.status, record.ended_at, record.exit_code = "failed", time.time(), None
            record.message = f"could not start run.sh: {exc}"
            _write_record(record)
            return 1
        record.pid, record.pgid = proc.pid, proc.pid
        record.pid_create_time = _create_time(proc.pid)
        record.message = ""
        _write_record(record)
        code = proc.wait()
    # reap stragglers the launcher left behind (msrun's tail, a scheduler after a crash)
    time.sleep(0.2)
    latest = _read_record(run_dir)
    latest.ended_at = time.time()
    latest.exit_code = code
    if (run_dir / STOP_FILE).exists():
        latest.status, latest.message = "stopped", "stopped by the user"
    elif code == 0:
        latest.status = "succeeded"
    else:
        latest.status = "failed"
        latest.message = f"the launcher exited with code {code}" if code > 0 else f"killed by signal {-code}"
    _write_record(latest)
    return 0


def _signal(procs: Iterable[psutil.Process], sig: int) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)


def stop(run_id: str, workspace: Path, grace: float = 15.0) -> RunRecord:
    """SIGINT msrun, SIGKILL the group after `grace` s, then verify no process of the run is left."""
    record = get_run(run_id, workspace)
    (record.run_dir / STOP_FILE).write_text(str(time.time()), encoding="utf-8")
    if _alive(record.pid, record.pid_create_time):
        with contextlib.suppress(psutil.Error):
            psutil.Process(record.pid).send_signal(signal.SIGINT)
        deadline = time.time() + grace
        while time.time() < deadline and run_processes(record):
            time.sleep(0.2)
    for _attempt in range(5):
        left = run_processes(record)
        if record.pgid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(record.pgid, signal.SIGKILL)
        if not left:
            break
        _signal(left, signal.SIGKILL)
        psutil.wait_procs(left, timeout=3)
    left = run_processes(record)
    if left:
        raise LaunchError(f"run {run_id}: processes {sorted(p.pid for p in left)} survived SIGKILL")
    # the supervisor sees the launcher exit and writes 'stopped'; wait for it briefly
    deadline = time.time() + 10
    while time.time() < deadline and _alive(record.supervisor_pid, record.supervisor_create_time):
        time.sleep(0.1)
    final = _read_record(record.run_dir)
    if final.status == "running":
        final.status, final.ended_at, final.message = "stopped", time.time(), "stopped by the user"
        _write_record(final)
    return final


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
    print("usage: python -m core.launch _supervise RUN_DIR (internal)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
