"""The detached supervisor of a run: `python -m core.run.supervisor _supervise RUN_DIR`.

`core.run.launch` starts it in its own session so the run outlives the dashboard; it starts the
job (run.sh, the own-script argv, or a batch submission), waits for it, and records how it ended in
run.json, so the registry is right after any restart.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import psutil

from core.files import read_checked
from core.run.launch import fail_record, launcher_env, launcher_for_record
from core.run.launchers import BatchLauncher, is_batch
from core.run.processes import (
    ENV_RUN_DIR,
    ENV_RUN_ID,
    RunProcesses,
    create_time,
    send_signal,
    start_detached,
)
from core.run.record_check import DISK_FULL
from core.run.registry import (
    STOP_FILE,
    LaunchError,
    NodeEntry,
    RunRecord,
    RunStatus,
    exit_file_name,
    launcher_codes,
    launcher_log_name,
    record_end,
    update_record,
)
from core.workspace import ALERTS_FILE, REPO_ROOT

EXIT_WRAPPER = Path(__file__).with_name("exit_status.py")

POLL = 1.0  # seconds between two questions to a batch scheduler
SAVE_RETRY = (1.0, 10.0)  # s between two tries to save run.json on a full disk: first, at most
ALERT_END_S = 8.0  # s the run's alert watch gets, after the run ended, to judge the end and send (it drains 4 s)
ALERT_LOG = "alerts.log"  # the alert watch's output, in the run folder (its attempts: alerts.jsonl)


def log(message: str) -> None:
    """A line in supervisor.log (its stderr); on a full disk even that may fail, and is let go."""
    with contextlib.suppress(OSError):
        print(f"{time.strftime('%H:%M:%S')} supervisor: {message}", file=sys.stderr, flush=True)


def try_save(run_dir: Path, change: Callable[[RunRecord], bool | None], say: bool = True) -> RunRecord | None:
    """update_record, once; None (and why, in the log unless `say` is False) when run.json cannot be saved now."""
    try:
        return update_record(run_dir, change)
    except (LaunchError, OSError) as exc:  # RecordWriteError (a full disk) is a LaunchError
        if say:
            log(f"cannot save the record now: {exc}")
        return None


def save_final(run_dir: Path, change: Callable[[RunRecord], bool | None]) -> RunRecord | None:
    """The run's final record, saved as soon as it can be: on a full disk the supervisor stays alive (the run
    still counts as running for every reader) and tries again until space is freed, then notes the delay.
    Any other failure (the run folder gone) is logged and given up: None."""
    delay, waited = SAVE_RETRY[0], 0.0

    def late(latest: RunRecord) -> bool | None:
        result = change(latest)
        if waited and result is not False:
            latest.message = f"{latest.message} (saved {waited:.0f} s late: the disk was full)".lstrip()
        return result

    while True:
        try:
            return update_record(run_dir, late)
        except (LaunchError, OSError) as exc:  # RecordWriteError (a full disk) is a LaunchError
            if getattr(exc, "errno", None) not in DISK_FULL:
                log(f"cannot save the final record, given up: {exc}")
                return None
            if not waited:
                log(f"the disk is full, the final status waits in memory until it can be saved: {exc}")
        time.sleep(delay)
        waited += delay
        delay = min(delay * 2, SAVE_RETRY[1])


def supervise(run_dir: Path) -> int:
    """Run the job to its end and record how it ended (a local child, or a batch scheduler's job)."""
    extra = json.loads(read_checked(run_dir / "env.json", 1 << 20, "run environment file") or b"{}")

    def mine(latest: RunRecord) -> None:
        latest.supervisor_pid = os.getpid()
        latest.supervisor_create_time = create_time(os.getpid())

    record = try_save(run_dir, mine)
    if record is None:  # nothing started: the launch is judged failed by the one who started this supervisor
        log("not started: the supervisor could not record itself in run.json")
        return 1
    if not record.is_running:
        return 1  # judged meanwhile (stopped, or given up on): start nothing
    if (run_dir / STOP_FILE).exists():
        update_record(run_dir, _stopped_before_start)
        return 0
    env = launcher_env(record.run_id, record.run_dir, extra, own_python=bool(record.own and record.own.python))
    launcher = launcher_for_record(record)
    watch = start_alert_watch(record)
    try:
        if is_batch(launcher):
            return _supervise_batch(record, launcher, env)
        return _supervise_local(record, env)
    finally:
        end_alert_watch(watch)  # after the final record: the watch's last judgment reads it


def alert_watch_argv(record: RunRecord, workspace: Path) -> list[str]:
    """`python -m core watch LOG_DIR` sending the run's alerts to the workspace's standing targets (issue 34:
    a launched run alerts with no tab open), its attempts in the run's alerts.jsonl."""
    return [
        sys.executable,
        "-m",
        "core",
        "watch",
        str(record.log_dir),
        "--workspace",
        str(workspace),
        "--alert-targets-of-workspace",
        "--alert-run",
        record.run_id,
        "--alert-log",
        str(record.run_dir / "alerts.jsonl"),
        "--with-parent",
        str(os.getpid()),
        "--quiet",
        *(["--polling"] if record.shared_filesystem else []),  # inotify misses what other machines write
    ]


def alert_watch_env(base: dict[str, str]) -> dict[str, str]:
    """The watch's environment: without the run's tag (it is not one of the run's processes: stop and the
    orphan reaper must never count or kill it as such), with this checkout importable."""
    env = {k: v for k, v in base.items() if k not in (ENV_RUN_ID, ENV_RUN_DIR)}
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def start_alert_watch(record: RunRecord) -> subprocess.Popen[bytes] | None:
    """The run's alert watch when its workspace has alerts.json (runs/<id> lives in the workspace), else None.
    A watch that cannot start is logged: the run goes on without alerts."""
    workspace = record.run_dir.parent.parent
    if not (workspace / ALERTS_FILE).is_file():
        return None
    try:
        Path(record.log_dir).mkdir(parents=True, exist_ok=True)  # the launcher fills it; the watch follows it
        watch = start_detached(
            alert_watch_argv(record, workspace),
            record.run_dir / ALERT_LOG,
            str(REPO_ROOT),
            alert_watch_env(dict(os.environ)),
        )
    except OSError as exc:
        log(f"alerts: cannot start the run's alert watch: {exc}")
        return None
    log(f"alerts: watch started (pid {watch.pid}), its output in {ALERT_LOG}")
    return watch


def end_alert_watch(watch: subprocess.Popen[bytes] | None, grace: float = ALERT_END_S) -> None:
    """SIGTERM (the watch judges the end once more and drains its queues), SIGKILL after `grace` s."""
    if watch is None or watch.poll() is not None:
        return
    watch.terminate()
    try:
        watch.wait(grace)
    except subprocess.TimeoutExpired:
        log(f"alerts: the watch did not end within {grace:.0f} s: killed")
        watch.kill()
        watch.wait()


def _stopped_before_start(record: RunRecord) -> None:
    record.status, record.ended_at, record.message = RunStatus.STOPPED, time.time(), "stopped before it started"


def _supervise_local(record: RunRecord, env: dict[str, str]) -> int:
    run_dir = record.run_dir
    plan: list[NodeEntry] = record.nodes or [{"node": 0, "argv": record.argv or ["bash", "run.sh"]}]
    cwd = record.workdir or str(run_dir)
    procs: list[subprocess.Popen[bytes]] = []
    for entry in plan:
        log_name = launcher_log_name(entry["node"], len(plan))
        status_file = run_dir / exit_file_name(entry["node"] if record.nodes else None)
        try:
            _check_program(entry["argv"], cwd, env)
            proc = start_detached(wrapped(entry["argv"], status_file), run_dir / log_name, cwd, env)
        except OSError as exc:
            for other in procs:
                with contextlib.suppress(OSError):
                    os.killpg(other.pid, signal.SIGKILL)
            why = f"could not start {' '.join(map(str, entry['argv']))}: {exc}"
            log(why)
            try_save(run_dir, partial(fail_record, message=why))
            return 1
        procs.append(proc)
        entry["pid"] = entry["pgid"] = proc.pid
        entry["create_time"] = create_time(proc.pid)

    def started(latest: RunRecord) -> None:
        latest.pid, latest.pgid = procs[0].pid, procs[0].pid
        latest.pid_create_time = create_time(procs[0].pid)
        latest.nodes = plan if record.nodes else []
        if latest.status == RunStatus.STARTING:
            latest.status, latest.message = RunStatus.RUNNING, ""

    saved = try_save(run_dir, started)
    if saved is None:  # a full disk: the job runs on, the pids are kept here and saved when they can be
        started(record)
    record = saved or record
    if (run_dir / STOP_FILE).exists():  # a stop that came while the launcher was being started
        RunProcesses.of(record).signal_launchers(launcher_for_record(record).stop_signal)  # tagged: proven ours
    codes = _wait_saving(procs, run_dir, None if saved else started)
    if not record.join:
        _wait_detached(record)
    time.sleep(0.2)  # let the launcher's stragglers (msrun's tail, a scheduler after a crash) go first
    _reap_orphans(record)
    _finish_local(run_dir, codes)
    return 0


def _wait_saving(
    procs: list[subprocess.Popen[bytes]], run_dir: Path, pending: Callable[[RunRecord], None] | None
) -> list[int]:
    """The launchers' exit codes; meanwhile a change that could not be saved yet (a full disk) is tried again."""
    while pending is not None and any(proc.poll() is None for proc in procs):
        time.sleep(SAVE_RETRY[0])
        if try_save(run_dir, pending, say=False) is not None:
            pending = None
    return [proc.wait() for proc in procs]


def _check_program(argv: list[str], cwd: str, env: dict[str, str]) -> None:
    """OSError if argv[0] cannot be found: said here, as before the wrapper, not as an exit code 127."""
    program = str(argv[0])
    if os.sep in program:
        found = os.path.isfile(os.path.join(cwd, program)) and os.access(os.path.join(cwd, program), os.X_OK)
    else:
        found = shutil.which(program, path=env.get("PATH")) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", program)


def wrapped(argv: Sequence[str], status_file: Path) -> list[str | Path]:
    """The launcher's argv behind the exit-status wrapper (isolated Python: stdlib only), so its
    exit status reaches the run folder even if this supervisor is killed."""
    return [sys.executable, "-I", EXIT_WRAPPER, status_file, *argv]


def _reap_orphans(record: RunRecord) -> None:
    """The launcher is gone: whatever of the run still lives (msrun SIGKILLed leaves its scheduler and
    workers) has nobody to stop it; kill it so the final status matches reality."""
    for _attempt in range(3):
        left = RunProcesses.of(record).live()
        if not left:
            return
        send_signal(left, signal.SIGKILL)
        psutil.wait_procs(left, timeout=3)


def _wait_detached(record: RunRecord) -> None:
    """msrun --join=False returns at once: the run lasts while its tagged processes do."""

    def note(latest: RunRecord) -> None:
        latest.message = "msrun returned (join=False); waiting for the workers it left running"

    latest = try_save(record.run_dir, note) or record
    while RunProcesses.of(latest).live() and not (record.run_dir / STOP_FILE).exists():
        time.sleep(1.0)


def _finish_local(run_dir: Path, codes: list[int]) -> None:
    """The final status from the wrappers' files (the launchers' own exit statuses); a wrapper's
    return code only where its file is missing (the wrapper was killed before it could write)."""

    def end(latest: RunRecord) -> None:
        found = launcher_codes(latest)
        record_end(latest, [code if code is not None else rc for code, rc in zip(found, codes, strict=False)])

    save_final(run_dir, end)


def _supervise_batch(record: RunRecord, launcher: BatchLauncher, env: dict[str, str]) -> int:
    """Submit the batch file, then follow the scheduler's state (queued, running, the end) into run.json."""
    run_dir = record.run_dir
    try:
        job_id = launcher.submit(run_dir, env)
    except LaunchError as exc:
        why = str(exc)
        try_save(run_dir, lambda r: fail_record(r, why))
        return 1

    def submitted(latest: RunRecord) -> None:
        latest.slurm_job_id, latest.status = job_id, RunStatus.QUEUED
        latest.message = f"submitted as Slurm job {job_id}"

    record = save_final(run_dir, submitted) or record  # the job id must reach run.json: Stop cancels by it
    if (run_dir / STOP_FILE).exists():  # stopped while sbatch ran
        with contextlib.suppress(LaunchError):
            launcher.cancel(job_id)
    while True:
        try:
            status_, message, code = launcher.outcome(job_id, run_dir, (run_dir / STOP_FILE).exists())
        except LaunchError as exc:
            status_, message, code = RunStatus.RUNNING, f"cannot ask Slurm (will retry): {exc}", None
        if status_ not in (RunStatus.QUEUED, RunStatus.RUNNING):
            save_final(run_dir, partial(_batch_state, state=(status_, message, code), final=True))
            return 0
        try_save(run_dir, partial(_batch_state, state=(status_, message, code), final=False))
        time.sleep(POLL)


def _batch_state(latest: RunRecord, state: tuple[RunStatus, str, int | None], final: bool) -> bool:
    """The scheduler's word into the record: the end (final), or a change of state while it is active."""
    status_, message, code = state
    if final:
        latest.status, latest.message, latest.exit_code = status_, message, code
        latest.ended_at = time.time()
        return True
    if (latest.status, latest.message) == (status_, message) or not latest.is_running:
        return False
    latest.status, latest.message = status_, message
    return True


def _main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "_supervise":
        return supervise(Path(argv[1]))
    print("usage: python -m core.run.supervisor _supervise RUN_DIR (internal)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
