"""Which processes belong to a run, and whether a pid is still the process we started."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

import psutil

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


def same_process(pid: int | None, created: float | None) -> bool:
    """True if `pid` exists (a zombie too: its pid is still taken) and was started at `created`."""
    if not pid or created is None:
        return False
    try:
        return abs(psutil.Process(pid).create_time() - created) < 0.05
    except psutil.Error:
        return False


def processes_of(
    run_id: str,
    run_dir: Path,
    leaders: Iterable[tuple[int | None, float | None]],
    exclude: Iterable[int | None] = (),
    since: float | None = None,
) -> list[psutil.Process]:
    """Every live process of a run, identified exactly: a member of a session led by one of its
    launchers (`leaders`: pid and create time, counted only while that pid is still the launcher),
    or a process whose environment carries the run's tag (`run_tag`, compared for equality).

    Never by a path in a command line or a working folder: a user's `tail -f` of a run's log, or a
    run whose name extends this one's (`xa` / `xab`), has the path too and is not the run's.
    With `since` (the run's start), a process older than the run is never one of its processes.
    """
    tag = run_tag(run_id, run_dir)
    sessions = {pid for pid, created in leaders if pid and same_process(pid, created)}
    skip = {os.getpid(), *(p for p in exclude if p)}
    found: list[psutil.Process] = []
    for proc in psutil.process_iter(["pid", "status", "create_time"]):
        try:
            if proc.pid in skip or proc.info["status"] == psutil.STATUS_ZOMBIE:
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
        env = proc.environ()
    except psutil.Error:
        return False
    return all(env.get(key) == value for key, value in tag.items())


def send_signal(procs: Iterable[psutil.Process], sig: int) -> None:
    """Signal each process only if it is still the one found (psutil checks pid + create time)."""
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            if proc.is_running():
                proc.send_signal(sig)


def signal_verified(pid: int | None, created: float | None, sig: int, group: bool = False) -> bool:
    """Send `sig` to pid (or its process group, led by it) only if pid is still the process started
    at `created`; False (nothing sent) when it is gone or is someone else now."""
    if not pid or created is None or not alive(pid, created):
        return False
    try:
        if group:
            if os.getpgid(pid) != pid:
                return False  # no longer the leader of its own group: the group is not ours to kill
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
