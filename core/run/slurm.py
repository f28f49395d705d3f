"""Talking to Slurm through its own client commands: submit, state, cancel, partition checks.

Clusters without accounting have no `sacct`, so a job's state and exit code come from
`scontrol show job` (kept for MinJobAge after the end) and `squeue`; the batch script also writes
its own exit status into the run folder for when Slurm has forgotten the job. Every call is an
argv list; job ids and partition names are checked before they reach a command.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from core.files import open_checked, read_checked
from core.run.states import LaunchError, RunStatus

ACTIVE_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "RESV_DEL_HOLD",
    }
)
_JOB_ID = re.compile(r"^\d{1,12}$")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")
_TIMEOUT = 30.0


@dataclass(frozen=True)
class SlurmJob:
    """What Slurm says about a job (one `scontrol -o show job` line)."""

    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    reason: str = ""  # why a job waits (Resources, Priority, PartitionConfig, ...) or ended
    exit_code: int | None = None
    signal: int | None = None
    nodes: str = ""

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES


def check_job_id(job_id: object) -> str:
    if not isinstance(job_id, str) or not _JOB_ID.fullmatch(job_id):
        raise LaunchError(f"not a Slurm job id: {job_id!r}")
    return job_id


def _run(
    argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=_TIMEOUT, env=env, cwd=cwd, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise LaunchError(f"{argv[0]} is not on PATH: install Slurm's client (apt-get install slurm-client)") from None
    except subprocess.TimeoutExpired:
        raise LaunchError(f"{argv[0]} did not answer within {_TIMEOUT:.0f} s: is slurmctld up?") from None


def submit(batch_file: Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    """`sbatch --parsable FILE` in `cwd` (the submit folder); returns the job id."""
    result = _run(["sbatch", "--parsable", batch_file.name], env=env, cwd=cwd)
    if result.returncode != 0:
        raise LaunchError(f"sbatch refused the job: {_last_line(result.stderr)}")
    job_id = result.stdout.strip().split(";")[0]
    return check_job_id(job_id)


def parse_job_line(line: str) -> SlurmJob | None:
    """One `scontrol -o show job` line -> SlurmJob (None if it has no JobId)."""
    fields = dict(re.findall(r"(?:^|\s)(JobId|JobState|Reason|ExitCode|NodeList)=(\S*)", line))
    if "JobId" not in fields:
        return None
    code, sig = None, None
    match = re.fullmatch(r"(\d+):(\d+)", fields.get("ExitCode", ""))
    if match:
        code, sig = int(match.group(1)), int(match.group(2))
    reason = fields.get("Reason", "")
    nodes = fields.get("NodeList", "")
    return SlurmJob(
        job_id=fields["JobId"],
        state=fields.get("JobState", "UNKNOWN"),
        reason="" if reason in {"None", "(null)"} else reason,
        exit_code=code,
        signal=sig,
        nodes="" if nodes == "(null)" else nodes,
    )


def job_state(job_id: str, env: dict[str, str] | None = None) -> SlurmJob | None:
    """The job as Slurm knows it, or None when Slurm has forgotten it (purged after MinJobAge)."""
    result = _run(["scontrol", "-o", "show", "job", check_job_id(job_id)], env=env)
    if result.returncode != 0:
        if "Invalid job id" in result.stderr:
            return None
        raise LaunchError(f"scontrol show job {job_id} failed: {_last_line(result.stderr)}")
    for line in result.stdout.splitlines():
        job = parse_job_line(line)
        if job is not None and job.job_id == job_id:
            return job
    return None


def cancel(job_id: str, env: dict[str, str] | None = None) -> None:
    result = _run(["scancel", check_job_id(job_id)], env=env)
    harmless = ("already completing or completed", "Invalid job id")
    if result.returncode != 0 and not any(text in result.stderr for text in harmless):
        raise LaunchError(f"scancel {job_id} failed: {_last_line(result.stderr)}")


def job_steps(job_id: str, env: dict[str, str] | None = None) -> list[str]:
    """The job's steps Slurm still runs (batch, srun steps); empty when nothing of it is left."""
    result = _run(["squeue", "-h", "-s", "-j", check_job_id(job_id), "-o", "%i"], env=env)
    if result.returncode != 0:
        return []  # squeue: "Invalid job id specified" once the job is gone
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


@dataclass(frozen=True)
class Partition:
    name: str
    nodes: int  # nodes that can take jobs (not down, drained or failing)
    total: int


def partition(name: str, env: dict[str, str] | None = None) -> Partition | None:
    """The partition's usable node count, or None if Slurm has no such partition. '' = the default one."""
    if name and not _NAME.fullmatch(name):
        raise LaunchError(f"partition {name!r} is not a Slurm name")
    argv = ["sinfo", "-h", "-N", "-o", "%N %t %P"]
    if name:
        argv[2:2] = ["-p", name]
    result = _run(argv, env=env)
    if result.returncode != 0:
        raise LaunchError(f"sinfo failed: {_last_line(result.stderr)}")
    rows = [line.split() for line in result.stdout.splitlines() if len(line.split()) == 3]
    if not name:
        defaults = [r for r in rows if r[2].endswith("*")]
        if not defaults:
            return None
        name, rows = defaults[0][2].rstrip("*"), defaults
    if not rows:
        return None
    nodes = {r[0]: r[1] for r in rows}
    bad = ("down", "drain", "drng", "drained", "fail", "failg", "maint", "unk", "npc", "inval", "boot", "futr")
    usable = [n for n, state in nodes.items() if not state.rstrip("*~#!%$@^-").startswith(bad)]
    return Partition(name=name, nodes=len(usable), total=len(nodes))


def outcome(
    job: SlurmJob | None, exit_file_code: int | None, stop_requested: bool
) -> tuple[RunStatus, str, int | None]:
    """(status, message, exit code) of a Slurm job from what Slurm and the batch script say.

    PENDING is 'queued' with Slurm's reason; a job Slurm has forgotten is judged by the exit status
    its batch script wrote; CANCELLED is 'stopped' when ShardScope asked for it, else a failure.
    """
    if job is not None and job.active:
        if job.state == "PENDING":
            return RunStatus.QUEUED, f"queued: {job.reason or 'waiting for resources'} (Slurm job {job.job_id})", None
        where = f" on {job.nodes}" if job.nodes else ""
        return RunStatus.RUNNING, f"Slurm job {job.job_id} {job.state.lower()}{where}", None
    if job is None:
        if exit_file_code is None:
            if stop_requested:
                return RunStatus.STOPPED, "stopped by the user", None
            return RunStatus.FAILED, "Slurm no longer knows the job and its batch script left no exit status", None
        code: int | None = exit_file_code
        if stop_requested:
            return RunStatus.STOPPED, "stopped by the user", code
        if code == 0:
            return RunStatus.SUCCEEDED, "the batch script exited 0", 0
        return RunStatus.FAILED, f"the batch script exited {code}", code
    code = job.exit_code if job.exit_code is not None else exit_file_code
    if job.state == "CANCELLED":
        if stop_requested:
            return RunStatus.STOPPED, "stopped by the user (scancel)", code
        return RunStatus.FAILED, f"Slurm job {job.job_id} was cancelled outside ShardScope", code
    if job.state == "COMPLETED" and not code:
        return RunStatus.SUCCEEDED, f"Slurm job {job.job_id} completed", 0
    if stop_requested:
        return RunStatus.STOPPED, "stopped by the user", code
    detail = {
        "TIMEOUT": "hit its time limit",
        "NODE_FAIL": "lost a node",
        "OUT_OF_MEMORY": "ran out of memory",
        "PREEMPTED": "was preempted",
        "BOOT_FAIL": "could not boot a node",
        "DEADLINE": "missed its deadline",
    }
    why = detail.get(job.state, f"ended {job.state}")
    tail = f" with exit code {code}" if code else (f" (signal {job.signal})" if job.signal else "")
    return RunStatus.FAILED, f"Slurm job {job.job_id} {why}{tail}", code


def task_errors(output_file: Path, limit: int = 3) -> str:
    """Which node and task failed, from srun's own lines in slurm-<id>.out ('n1: task 1: Exited with exit code 1')."""
    try:  # srun's own lines are at the end: read the last 64 KiB, not a job's whole output
        with open_checked(output_file, None, "Slurm output file") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - (64 << 10)))
            lines = f.read(64 << 10).decode("utf-8", errors="replace").splitlines()[-200:]
    except OSError:
        return ""
    found = [line.split("srun: error: ", 1)[1] for line in lines if line.startswith("srun: error: ")]
    first = [line for line in found if "Exited with exit code" in line] or found
    return "; ".join(first[:limit])


def read_exit_file(path: Path) -> int | None:
    """The exit status the batch script wrote, or None (missing, half-written or not a number)."""
    try:
        text = read_checked(path, 64, "exit status file").decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):  # missing, a FIFO, a device, too long, not text: not a status
        return None
    return int(text) if re.fullmatch(r"\d{1,3}", text) else None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"
