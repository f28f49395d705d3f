"""The run registry on disk: one folder per run with its `run.json`, read back after any restart.

Layout: `<workspace>/runs/<run_id>/` holds a copy of the job files, the launcher's logs and
`run.json` (options, command, pids, times, status, exit code). The final status of a run is
decided here (`refresh`) or by its supervisor (`core.run.supervisor.supervise`), nowhere else.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.codegen.options import RunOptions
from core.files import is_regular, read_checked, write_replacing
from core.run import slurm
from core.run.launchers import QUEUED_LAUNCHERS
from core.run.processes import ENV_RUN_ID, RunProcesses
from core.run.record_check import (
    MAX_RUN_FILE_BYTES,
    RUN_FILE,
    RecordError,
    RecordWriteError,
    check_fields,
    check_trusted,
    parse,
    short,
)
from core.run.record_types import OwnRun, PlannedRun, options_to_json
from core.run.states import ACTIVE, LaunchError, NodeEntry, RunKind, RunStatus
from core.workspace import WorkspaceError, check_name, is_safe_name

STOP_FILE = "stop_requested"
LAUNCHER_LOG = "launcher.log"
LOCK_FILE = "run.lock"  # flock'ed around every read-modify-write of run.json
LAUNCH_LOCK = ".launch.lock"  # under runs/: held from the port check until the record holding it is written
STARTING_TIMEOUT = 120.0  # s a record may stay 'starting' with no supervisor before the start is judged lost
SLURM_EXIT_FILE = "slurm_exit_code"  # written by job.sbatch (core.codegen.sbatch.EXIT_FILE)
EXIT_FILE = "launcher_exit_code"  # written by core/run/exit_status.py when the launcher ends
__all__ = [
    "ENV_RUN_ID",
    "LAUNCHER_LOG",
    "RUN_FILE",
    "STOP_FILE",
    "LaunchError",
    "NodeEntry",
    "OwnRun",
    "PlannedRun",
    "RecordError",
    "RecordWriteError",
    "RunKind",
    "RunRecord",
    "RunStatus",
]


@dataclass
class RunRecord:
    """One run as stored in run.json (paths resolved)."""

    run_id: str
    run_dir: Path
    log_dir: Path
    status: RunStatus = RunStatus.RUNNING
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
    options: RunOptions = field(default_factory=RunOptions)  # run.json's `options` object, typed (record_types)
    message: str = ""
    kind: RunKind = RunKind.GENERATED
    argv: list[str] = field(default_factory=list)  # what the supervisor execs (no shell); [] = bash run.sh
    workdir: str = ""  # the argv's working folder; "" = the run folder
    nodes: list[NodeEntry] = field(default_factory=list)  # one entry per node started here
    slurm_job_id: str = ""
    own: OwnRun | None = None  # an own script's run: its script, args, interpreter, --join
    plan: PlannedRun | None = None  # what the planner expected of it (a Planner design, a MindFormers YAML)

    @property
    def join(self) -> bool:
        """msrun --join: False (an own script's choice) leaves the workers' exit codes unknown."""
        return self.own is None or self.own.join

    @property
    def is_running(self) -> bool:
        """Still active: running, or queued at a scheduler."""
        return self.status in ACTIVE

    @property
    def watch_only(self) -> bool:
        return self.kind == RunKind.EXTERNAL

    @property
    def shared_filesystem(self) -> bool:
        """Logs written by other machines (Slurm nodes, a watched folder, nodes started elsewhere):
        inotify misses remote writes there, so a watcher should poll."""
        return self.launcher in QUEUED_LAUNCHERS or self.kind == RunKind.EXTERNAL or len(self.nodes) > 1

    @property
    def duration(self) -> float | None:
        if self.started_at is None:
            return None
        return (self.ended_at or time.time()) - self.started_at

    def to_json(self) -> dict[str, Any]:
        """run.json's object, in the layout of every earlier release (own and plan inside `options`)."""
        data = {k: v for k, v in self.__dict__.items() if k not in {"run_dir", "log_dir", "own", "plan"}}
        data["status"], data["kind"] = str(self.status), str(self.kind)
        data["options"] = options_to_json(self.options, self.own, self.plan)
        data["log_dir"] = (
            str(self.log_dir)
            if self.kind == RunKind.EXTERNAL
            else os.path.relpath(Path(self.log_dir).resolve(), self.run_dir.resolve())
        )
        return data

    @classmethod
    def from_json(cls, run_dir: Path, data: dict[str, Any]) -> RunRecord:
        """The record of `run_dir` from run.json's object, every field checked (RecordError says which not)."""
        values = check_fields(run_dir.name, data)
        text = values.pop("log_dir", "") or "."
        home = run_dir.resolve()
        log_path = (home / text).resolve()
        if log_path.parent == log_path:
            raise RecordError(run_dir.name, f"has log_dir {short(text)}, the filesystem root: not a run's log folder")
        external = values.get("kind") == RunKind.EXTERNAL
        if external and not Path(text).is_absolute():
            raise RecordError(run_dir.name, f"has log_dir {short(text)}: a watched folder's path must be absolute")
        if not external and home not in (log_path, *log_path.parents):
            raise RecordError(
                run_dir.name, f"has log_dir {short(text)}, outside its run folder (a launched run logs inside it)"
            )
        return cls(run_dir=run_dir, log_dir=log_path, **values)


def runs_root(workspace: Path) -> Path:
    return Path(workspace).resolve() / "runs"


def run_dir_of(run_id: str, workspace: Path) -> Path:
    """runs/<run_id>, the name checked and the folder not resolved: a run folder that is a link is
    refused when read (`read_record`), never followed to another run or out of the workspace."""
    return runs_root(workspace) / check_name(run_id, "run id")


def write_record(record: RunRecord) -> None:
    """Atomic (a fresh temp file + rename): a reader never sees half a record, and no planted link is
    written through (write_replacing). A write that fails (a full disk) leaves no temp file and raises
    RecordWriteError, one line naming the file."""
    try:
        write_replacing(record.run_dir / RUN_FILE, (json.dumps(record.to_json(), indent=2) + "\n").encode("utf-8"))
    except OSError as exc:
        raise RecordWriteError(record.run_id, exc) from None


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on `path` (created if missing), released on exit or process death."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def record_lock(run_dir: Path) -> contextlib.AbstractContextManager[None]:
    """Serialises read-modify-writes of one run.json (supervisor, refreshers, stop)."""
    return _flock(run_dir / LOCK_FILE)


def launch_lock(workspace: Path) -> contextlib.AbstractContextManager[None]:
    """Serialises launches of one workspace so a port check and the record reserving it are atomic."""
    root = runs_root(workspace)
    root.mkdir(parents=True, exist_ok=True)
    return _flock(root / LAUNCH_LOCK)


def update_record(run_dir: Path, change: Callable[[RunRecord], bool | None], keep_unwritten: bool = False) -> RunRecord:
    """Read, change and write run.json under its lock; `change` returning False skips the write.

    `keep_unwritten`: a write that fails (a full disk) still returns the changed record, its status
    judged in memory (a reader's refresh), instead of raising RecordWriteError."""
    with record_lock(run_dir):
        record = read_record(run_dir)
        if change(record) is not False:
            try:
                write_record(record)
            except RecordWriteError as exc:
                if not keep_unwritten:
                    raise
                record.message += f" (not saved: {exc.reason})"
        return record


def read_record(run_dir: Path) -> RunRecord:
    """The record of `run_dir`, checked (see core.run.record_check), or a LaunchError naming the run."""
    name = run_dir.name
    check_trusted(run_dir)
    try:
        data = read_checked(run_dir / RUN_FILE, MAX_RUN_FILE_BYTES, "run file")
    except OSError as exc:
        why = f"cannot be read: {getattr(exc, 'reason', None) or exc.strerror or exc}"
        raise RecordError(name, why, f"run {name} has no readable {RUN_FILE}: {exc}") from None
    return RunRecord.from_json(run_dir, parse(name, data))


def request_stop(run_dir: Path) -> None:
    """Leave the stop request the supervisor and the judges look for (its presence is what counts: on a
    full disk an empty file still can be made, so a stop is never refused for want of space)."""
    path = run_dir / STOP_FILE
    try:
        path.write_text(str(time.time()), encoding="utf-8")
    except OSError:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644))


def launcher_log_name(node: int, n_nodes: int) -> str:
    """The file a node's launcher writes its own output to (one launcher: launcher.log)."""
    return LAUNCHER_LOG if n_nodes <= 1 else f"launcher_node{node}.log"


def launcher_output_paths(record: RunRecord) -> tuple[Path, ...]:
    """Where the run's launchers write their own output, written yet or not: launcher.log (one per node when
    several were started here) and, under Slurm, sbatch's slurm-<job>.out (core.codegen.sbatch)."""
    nodes = [n["node"] for n in record.nodes] or [0]
    paths = [record.run_dir / launcher_log_name(n, len(nodes)) for n in nodes if isinstance(n, int)]
    if re.fullmatch(r"\d+", record.slurm_job_id or ""):  # run.json is a file: a name from it stays a name
        paths.append(record.run_dir / f"slurm-{record.slurm_job_id}.out")
    return tuple(paths)


def launcher_outputs(log_dir: Path) -> tuple[Path, ...]:
    """The launchers' outputs of the run whose log folder this is, those written so far.

    mpirun and srun report a rank killed by a signal there, not in the rank's log: a diagnosis of the
    run's log folder alone would miss it. Empty unless `log_dir` is the log folder of the run in its
    parent folder; only regular files (never a link), so nothing outside that run folder is read.
    """
    run_dir = Path(log_dir).resolve().parent
    try:
        record = read_record(run_dir)
    except LaunchError:
        return ()
    if record.log_dir != Path(log_dir).resolve():
        return ()
    return tuple(p for p in launcher_output_paths(record) if is_regular(p))


def get_run(run_id: str, workspace: Path) -> RunRecord:
    """The run's record, refreshed against the live processes."""
    try:
        run_dir = run_dir_of(run_id, workspace)
    except WorkspaceError as exc:
        raise LaunchError(str(exc)) from None
    if not run_dir.is_symlink() and not os.path.lexists(run_dir / RUN_FILE):
        raise LaunchError(f"no run called {run_id!r} in {runs_root(workspace)}")
    return refresh(read_record(run_dir))


def refresh(record: RunRecord) -> RunRecord:
    """Re-attach: an active record whose supervisor, launcher and processes are all gone gets a final status.

    A 'starting' record whose supervisor is not recorded yet is left alone (the launch is under way),
    unless it has waited STARTING_TIMEOUT s. A Slurm run outlives its supervisor on purpose: Slurm is
    asked for its state instead.
    """
    if not record.is_running or record.watch_only:
        return record
    view = RunProcesses.of(record)
    if view.supervisor_alive():
        return record
    if record.status == RunStatus.STARTING and not record.supervisor_pid and not _start_lost(record):
        return record
    if record.slurm_job_id:
        return refresh_slurm(record)
    if view.launcher_alive():
        return record  # supervisor lost (killed); the job still runs and can be stopped
    if view.live():
        return record  # launcher gone, its workers still run (started after it, supervisor excluded): Stop kills them
    try:
        return update_record(record.run_dir, _judge_unwatched, keep_unwritten=True)
    except OSError as exc:  # no lock file can be made (a read-only or full workspace): judged here alone
        if _judge_unwatched(record) is not False:
            record.message += f" (not saved: {exc.strerror or exc})"
        return record


def _start_lost(record: RunRecord) -> bool:
    return time.time() - (record.started_at or 0.0) > STARTING_TIMEOUT


def exit_file_name(node: int | None = None) -> str:
    """Where the exit-status wrapper of a launcher writes (one file per node of a multi-node plan)."""
    return EXIT_FILE if node is None else f"{EXIT_FILE}_node{node}"


def launcher_codes(record: RunRecord) -> list[int | None]:
    """The launchers' real exit statuses from their wrappers' files, one per launcher (None: no file)."""
    names = [exit_file_name(n.get("node")) for n in record.nodes] if record.nodes else [exit_file_name()]
    return [_read_code(record.run_dir / name) for name in names]


def _read_code(path: Path) -> int | None:
    """A small integer file, checked first: a regular file (no link, FIFO or device), a few bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > 16:
            return None
        text = os.read(fd, 16).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return int(text) if re.fullmatch(r"-?\d{1,3}", text) else None


def record_end(latest: RunRecord, codes: list[int]) -> None:
    """The final status from the launchers' exit codes (one per node started here), or 'stopped'."""
    latest.ended_at = latest.ended_at or time.time()
    bad = [code for code in codes if code != 0]
    latest.exit_code = bad[0] if bad else 0
    for entry, code in zip(latest.nodes, codes, strict=False):
        entry["exit_code"] = code
    multi = len(codes) > 1
    per_node = ", ".join(f"node {e['node']} {ended(c)}" for e, c in zip(latest.nodes, codes, strict=False))
    if (latest.run_dir / STOP_FILE).exists():
        latest.status, latest.message = RunStatus.STOPPED, "stopped by the user"
    elif not bad:
        latest.status, latest.message = RunStatus.SUCCEEDED, per_node if multi else ""
    else:
        latest.status = RunStatus.FAILED
        latest.message = per_node if multi else f"the launcher {ended(bad[0])}"
    if not latest.join and latest.status == RunStatus.SUCCEEDED:
        latest.message = "msrun --join=False: the workers' exit codes are unknown; read their logs"


def ended(code: int) -> str:
    return f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}"


def _judge_unwatched(latest: RunRecord) -> bool:
    """Under the record lock: the final status of a run nobody watches any more (False: nothing to do)."""
    view = RunProcesses.of(latest)
    if not latest.is_running or view.supervisor_alive():
        return False  # the supervisor wrote its final status, or was recorded meanwhile
    if latest.status == RunStatus.STARTING and not latest.supervisor_pid and not _start_lost(latest):
        return False
    if view.launcher_alive():
        return False
    codes = launcher_codes(latest) if latest.pid else [None]
    ended = [c for c in codes if c is not None]
    if len(ended) == len(codes):  # the launchers' wrappers outlived the supervisor: their real exit
        record_end(latest, ended)
        return True
    latest.ended_at = latest.ended_at or time.time()
    if (latest.run_dir / STOP_FILE).exists():
        latest.status, latest.message = RunStatus.STOPPED, "stopped by the user"
    elif latest.status == RunStatus.STARTING:
        latest.status = RunStatus.FAILED
        latest.message = (
            "the supervisor died before starting the job (see supervisor.log)"
            if latest.supervisor_pid
            else "the supervisor never started (the launching process died?)"
        )
    else:
        latest.status = RunStatus.FAILED
        refused = view.refused()
        if refused:  # a forged or stale record: the live process it names is someone else's
            latest.message = "no process of this run is left: " + "; ".join(
                f"pid {p.pid} named in run.json {p.why}, so it is not the run's" for p in refused
            )
        else:
            latest.message = latest.message or "the launcher ended while nobody was watching: exit code unknown"
    return True


def slurm_outcome(record: RunRecord) -> tuple[RunStatus, str, int | None]:
    """(status, message, exit code) of a Slurm run, from Slurm and the batch script's exit file."""
    job = slurm.job_state(record.slurm_job_id)
    exit_code = slurm.read_exit_file(record.run_dir / SLURM_EXIT_FILE)
    return slurm.outcome(job, exit_code, (record.run_dir / STOP_FILE).exists())


def refresh_slurm(record: RunRecord) -> RunRecord:
    """Ask Slurm (no supervisor watches the job any more) and store what it says."""
    try:
        status_, message, code = slurm_outcome(record)
    except LaunchError as exc:
        record.message = f"cannot ask Slurm about job {record.slurm_job_id}: {exc}"
        return record
    if (status_, message) == (record.status, record.message):
        return record

    def store(latest: RunRecord) -> bool:
        if not latest.is_running:
            return False
        latest.status, latest.message = status_, message
        if status_ not in ACTIVE:
            latest.exit_code, latest.ended_at = code, latest.ended_at or time.time()
        return True

    return update_record(record.run_dir, store, keep_unwritten=True)


def status(run_id: str, workspace: Path) -> str:
    return get_run(run_id, workspace).status


MAX_RUN_FOLDERS = 10_000  # entries of runs/ looked at; a workspace holds a few hundred runs


@dataclass(frozen=True)
class RunListing:
    """The registry as read: the runs (newest first) and each run folder that was not read, and why."""

    records: list[RunRecord]
    unread: list[RecordError]

    @property
    def lines(self) -> list[str]:
        """One 'not read: runs/NAME/run.json: why' line per folder that was not read."""
        return [error.line for error in self.unread]


def scan_runs(workspace: Path) -> RunListing:
    """Every run of the workspace, each record read alone: a malformed, forged or oversized run.json, or a
    run folder that is a link or another user's, is one `unread` entry and every other run is listed."""
    root = runs_root(workspace)
    if not root.is_dir():
        return RunListing([], [])
    records: list[RunRecord] = []
    unread: list[RecordError] = []
    with os.scandir(root) as entries:
        for count, entry in enumerate(entries):
            if count >= MAX_RUN_FOLDERS:
                unread.append(RecordError("*", f"not looked at: runs/ holds more than {MAX_RUN_FOLDERS:,} entries"))
                break
            problem = _read_entry(entry, records)
            if problem is not None:
                unread.append(problem)
    records.sort(key=lambda r: (r.started_at or 0.0, r.run_id), reverse=True)
    return RunListing(records, sorted(unread, key=lambda e: e.name))


def _read_entry(entry: os.DirEntry[str], records: list[RunRecord]) -> RecordError | None:
    """Read one entry of runs/ into `records`, or say why not (None: not a run folder, nothing to say)."""
    name = entry.name if is_safe_name(entry.name) else short(entry.name)
    if entry.is_symlink():
        return RecordError(name, f"runs/{name} is a symbolic link: never read or deleted through")
    if not entry.is_dir(follow_symlinks=False) or not os.path.lexists(os.path.join(entry.path, RUN_FILE)):
        return None  # a lock file, or a run folder whose record is being written
    if not is_safe_name(entry.name):
        return RecordError(name, "is in a folder whose name is not a run name")
    try:
        records.append(refresh(read_record(Path(entry.path))))
    except RecordError as exc:
        return exc
    except (LaunchError, OSError) as exc:
        return RecordError(name, f"cannot be read: {short(str(exc))}")
    return None


def list_runs(workspace: Path) -> list[RunRecord]:
    """Every run in the workspace that could be read, newest first (`scan_runs` also says which were not)."""
    return scan_runs(workspace).records


def new_run_id(scenario: str, root: Path) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = f"{stamp}-{scenario}"[:56]  # room for "-N...": a run id is a name check_name allows (64)
    run_id, n = base, 1
    while os.path.lexists(root / run_id):
        n += 1
        run_id = f"{base}-{n}"
    return run_id
