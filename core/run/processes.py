"""Which processes belong to a run, and whether a pid is still the process we started.

A run record is only a claim: anyone who can write run.json can name any pid, with its create time
(world-readable in /proc) and group. So a process is signalled only once it is proven the run's own
(`RunProcesses`): it is still the process started at the recorded time, its environment carries the
run's tag (`run_tag`, set by the supervisor on every launcher and inherited by every worker), and it
is none of the processes no record may ever aim at (`protected`: pid 1, the caller, its parent, its
session and its process group).
"""

from __future__ import annotations

import contextlib
import os
import reprlib
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

import psutil

from core.run.states import LaunchError

ENV_RUN_ID = "SHARDSCOPE_RUN_ID"
ENV_RUN_DIR = "SHARDSCOPE_RUN_DIR"


def start_detached(argv: Sequence[object], log: Path, cwd: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start `argv` (a list, never a shell) in a session of its own (so its process group can be
    signalled as one), stdin closed, stdout and stderr appended to `log`. OSError if it cannot start."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [str(a) for a in argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def alive(pid: int | None, create_time: float | None) -> bool:
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


def create_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


CLOCK_SLACK = 1.0  # s: psutil's create times are rounded to clock ticks and boot-time drift


def run_tag(run_id: str, run_dir: Path) -> dict[str, str]:
    """The environment every process of a run inherits: its id and its folder (two workspaces may
    hold runs of the same name, so the id alone is not unique on a machine)."""
    return {ENV_RUN_ID: run_id, ENV_RUN_DIR: str(Path(run_dir).resolve())}


_SHORT = reprlib.Repr()
_SHORT.maxstring = 60


def protected(pid: int) -> str:
    """Why no record may ever aim a signal at `pid` ('' if none may be refused on that ground): pid 1
    (init; in the Docker image the dashboard itself), this program, its parent, and any process of this
    program's session or process group (signalling them would stop the caller or its terminal)."""
    if pid <= 1:
        return "is pid 1 (init: in the Docker image, the dashboard itself)" if pid == 1 else "is not a process id"
    if pid == os.getpid():
        return "is this program itself"
    if pid == os.getppid():
        return "is this program's parent"
    try:
        if os.getsid(pid) == os.getsid(0):
            return "is in this program's own session"
        if os.getpgid(pid) == os.getpgrp():
            return "is in this program's own process group"
    except OSError:
        return ""  # gone (or not visible): nothing here to protect
    return ""


class Standing(StrEnum):
    """What a pid named by a run record is to the run."""

    OWN = "own"  # proven the run's own: it may be signalled
    GONE = "gone"  # not running, or the pid now names a process started at another time
    REFUSED = "refused"  # runs, but is not proven the run's own: never signalled


@dataclass(frozen=True)
class Proof:
    """A recorded pid's standing, and (refused) why, as a phrase after 'pid N'."""

    pid: int | None
    standing: Standing
    why: str = ""


def prove(pid: object, created: float | None, tag: Mapping[str, str]) -> Proof:
    """Whether `pid` (as a record names it, started at `created`) is the run's own process: never a
    `protected` one, still the process started then, and carrying the run's `tag` in its environment.
    An environment that cannot be read (another user's process) proves nothing: refused."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid == 0:
        return Proof(None, Standing.GONE)  # no pid recorded (yet)
    if pid > 0 and (created is None or not alive(pid, created)):
        return Proof(pid, Standing.GONE)
    why = protected(pid)
    if why:
        return Proof(pid, Standing.REFUSED, why)
    try:
        env = psutil.Process(pid).environ()
    except (psutil.NoSuchProcess, ProcessLookupError):
        return Proof(pid, Standing.GONE)
    except psutil.Error as exc:
        return Proof(pid, Standing.REFUSED, f"has an environment this program cannot read ({type(exc).__name__})")
    if not carries(env, tag):
        wanted = ", ".join(f"{key}={_SHORT.repr(value)}" for key, value in tag.items())
        return Proof(pid, Standing.REFUSED, f"does not carry the run's tag ({wanted}) in its environment")
    return Proof(pid, Standing.OWN)


class Recorded(Protocol):
    """What `RunProcesses` reads of a run record (core.run.registry.RunRecord)."""

    @property
    def run_id(self) -> str: ...
    @property
    def run_dir(self) -> Path: ...
    @property
    def pid(self) -> int | None: ...
    @property
    def pgid(self) -> int | None: ...
    @property
    def pid_create_time(self) -> float | None: ...
    @property
    def nodes(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def supervisor_pid(self) -> int | None: ...
    @property
    def supervisor_create_time(self) -> float | None: ...
    @property
    def started_at(self) -> float | None: ...


@dataclass(frozen=True)
class Launched:
    """One launcher a record names: pid, create time, and the group it leads (as recorded)."""

    pid: int | None
    created: float | None
    pgid: int | None


@dataclass(frozen=True)
class RunProcesses:
    """The one view of a run's processes that stop, clean-up, status and the supervisor ask: the
    launchers its record names, and every live process proven the run's own. Signals go only
    through here, so only to proven processes."""

    run_id: str
    run_dir: Path
    launchers: tuple[Launched, ...]
    supervisor_pid: int | None = None
    since: float | None = None
    supervisor_created: float | None = None

    @classmethod
    def of(cls, record: Recorded) -> RunProcesses:
        """The view of `record`'s run: its launcher (or one per node started here)."""
        launchers = [Launched(record.pid, record.pid_create_time, record.pgid)]
        for node in record.nodes:
            if node.get("pid") != record.pid:
                launchers.append(Launched(node.get("pid"), node.get("create_time"), node.get("pgid")))
        return cls(
            record.run_id,
            Path(record.run_dir),
            tuple(launchers),
            record.supervisor_pid,
            record.started_at,
            record.supervisor_create_time,
        )

    @property
    def tag(self) -> dict[str, str]:
        return run_tag(self.run_id, self.run_dir)

    def proofs(self) -> list[Proof]:
        """Each recorded launcher's standing (gone ones included)."""
        tag = self.tag
        return [prove(launched.pid, launched.created, tag) for launched in self.launchers]

    def live(self, include_supervisor: bool = False) -> list[psutil.Process]:
        """Every live process of the run (see `processes_of`), the supervisor only if asked."""
        leaders = [(launched.pid, launched.created) for launched in self.launchers]
        exclude = () if include_supervisor else (self.supervisor_pid,)
        return processes_of(self.run_id, self.run_dir, leaders, exclude, since=self.since)

    def launcher_alive(self) -> bool:
        """A recorded launcher (or, multi-node, any node's launcher started here) still runs and is proven
        the run's own: a forged record naming a foreign process is not kept 'running' by that process."""
        return any(proof.standing is Standing.OWN for proof in self.proofs())

    def refused(self) -> list[Proof]:
        """The recorded launchers that run but are not proven the run's own (a forged or stale record)."""
        return [proof for proof in self.proofs() if proof.standing is Standing.REFUSED]

    def supervisor_alive(self) -> bool:
        """The run's supervisor is still the process started at the recorded time."""
        return alive(self.supervisor_pid, self.supervisor_created)

    def interrupt(self, sig: int, grace: float) -> list[Proof]:
        """`sig` to each proven launcher, then up to `grace` s for the run's processes to end; returns the
        refused launchers (named in the stop's error, never signalled)."""
        sent, refused = self.signal_launchers(sig)
        deadline = time.time() + grace
        while sent and time.time() < deadline and self.live():
            time.sleep(0.2)
        return refused

    def kill_all(self) -> None:
        """SIGKILL to the groups the proven launchers lead and to every live process of the run; a
        LaunchError names any process that survived."""
        for _attempt in range(5):
            left = self.live()
            self.kill_groups(signal.SIGKILL)  # a group only while its leader is proven the run's own
            if not left:
                break
            send_signal(left, signal.SIGKILL)
            psutil.wait_procs(left, timeout=3)
        left = self.live()
        if left:
            raise LaunchError(f"run {self.run_id}: processes {sorted(p.pid for p in left)} survived SIGKILL")

    def wait_supervisor(self, timeout: float = 10.0) -> None:
        """Give the supervisor (it sees the launcher exit and writes the final status) `timeout` s to end."""
        deadline = time.time() + timeout
        while time.time() < deadline and self.supervisor_alive():
            time.sleep(0.1)

    def signal_launchers(self, sig: int) -> tuple[int, list[Proof]]:
        """`sig` to each launcher proven the run's own; (how many were sent, the refused launchers)."""
        sent, refused = 0, []
        for launched, proof in zip(self.launchers, self.proofs(), strict=True):
            if proof.standing == Standing.OWN:
                sent += signal_verified(launched.pid, launched.created, sig)
            elif proof.standing == Standing.REFUSED:
                refused.append(proof)
        return sent, refused

    def kill_groups(self, sig: int) -> None:
        """`sig` to each process group a proven launcher still leads (never this program's own group)."""
        for launched, proof in zip(self.launchers, self.proofs(), strict=True):
            if proof.standing == Standing.OWN and launched.pgid and launched.pgid == launched.pid:
                signal_verified(launched.pid, launched.created, sig, group=True)

    def refusal(self, refused: Sequence[Proof]) -> str:
        """One line for the user: which recorded pids were not signalled, and why."""
        said = "; ".join(f"pid {proof.pid} named in run.json {proof.why}" for proof in refused)
        return f"run {self.run_id}: {said}: not proven the run's own process, so it was not signalled"


def processes_of(
    run_id: str,
    run_dir: Path,
    leaders: Iterable[tuple[int | None, float | None]],
    exclude: Iterable[int | None] = (),
    since: float | None = None,
) -> list[psutil.Process]:
    """Every live process of a run, identified exactly: a member of a session led by one of its
    launchers (`leaders`: pid and create time, counted only while that pid is still the launcher and
    proven the run's own by its tag, so a forged record cannot lend the run a foreign session), or a
    process whose environment carries the run's tag (`run_tag`, compared for equality). Never a
    `protected` process.

    Never by a path in a command line or a working folder: a user's `tail -f` of a run's log, or a
    run whose name extends this one's (`xa` / `xab`), has the path too and is not the run's.
    With `since` (the run's start), a process older than the run is never one of its processes.
    """
    tag = run_tag(run_id, run_dir)
    sessions = {
        pid for pid, created in leaders if pid is not None and prove(pid, created, tag).standing == Standing.OWN
    }
    skip = {os.getpid(), *(p for p in exclude if p)}
    found: list[psutil.Process] = []
    for proc in psutil.process_iter(["pid", "status", "create_time"]):
        try:
            if proc.pid in skip or proc.info["status"] == psutil.STATUS_ZOMBIE or protected(proc.pid):
                continue
            if since is not None and (proc.info.get("create_time") or 0.0) < since - CLOCK_SLACK:
                continue
            if _belongs(proc, tag, sessions):
                found.append(proc)
        except (psutil.Error, ProcessLookupError, PermissionError):
            continue
    return found


def _belongs(proc: psutil.Process, tag: dict[str, str], sessions: set[int]) -> bool:
    """In a session one of the run's launchers leads (only its descendants can be), or tagged."""
    if sessions and os.getsid(proc.pid) in sessions:
        return True
    try:
        return carries(proc.environ(), tag)
    except psutil.Error:
        return False


def carries(env: Mapping[str, str], tag: Mapping[str, str]) -> bool:
    """The environment holds every key of the run's tag with exactly its value."""
    return all(env.get(key) == value for key, value in tag.items())


def send_signal(procs: Iterable[psutil.Process], sig: int) -> None:
    """Signal each process only if it is still the one found (psutil checks pid + create time), never
    a `protected` one."""
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            if proc.is_running() and not protected(proc.pid):
                proc.send_signal(sig)


def signal_verified(pid: int | None, created: float | None, sig: int, group: bool = False) -> bool:
    """Send `sig` to pid (or its process group, led by it) only if pid is still the process started
    at `created` and not `protected`; False (nothing sent) when it is gone or is someone else now.
    This proves no ownership: signal a run's processes through `RunProcesses`, which does."""
    if not pid or created is None or not alive(pid, created) or protected(pid):
        return False
    try:
        if group:
            if os.getpgid(pid) != pid or pid == os.getpgrp():
                return False  # no longer the leader of its own group (or it is ours): not ours to kill
            os.killpg(pid, sig)
        else:
            psutil.Process(pid).send_signal(sig)
    except (ProcessLookupError, PermissionError, psutil.Error):
        return False
    return True


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
