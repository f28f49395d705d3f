"""Which processes belong to a run, and whether a pid is still the process we started."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterable
from pathlib import Path

import psutil

ENV_RUN_ID = "SHARDSCOPE_RUN_ID"


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


def processes_of(
    run_id: str, run_dir: Path, pgid: int | None, exclude: Iterable[int | None] = ()
) -> list[psutil.Process]:
    """Every live process of a run: its process group, cwd in the run folder, or tagged environment."""
    found: dict[int, psutil.Process] = {}
    run_path = str(run_dir.resolve())
    skip = {os.getpid(), *(p for p in exclude if p)}
    for proc in psutil.process_iter(["pid", "cwd", "cmdline", "status"]):
        try:
            if proc.pid in skip or proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if _belongs(proc, run_id, run_path, pgid):
                found[proc.pid] = proc
        except (psutil.Error, ProcessLookupError, PermissionError):
            continue
    return list(found.values())


def _belongs(proc: psutil.Process, run_id: str, run_path: str, pgid: int | None) -> bool:
    if pgid and os.getpgid(proc.pid) == pgid:
        return True
    cwd = proc.info.get("cwd") or ""
    if cwd == run_path or cwd.startswith(run_path + os.sep):
        return True
    cmdline = " ".join(proc.info.get("cmdline") or [])
    if run_path in cmdline and "_supervise" not in cmdline:
        return True
    with contextlib.suppress(psutil.Error):
        return proc.environ().get(ENV_RUN_ID) == run_id
    return False


def send_signal(procs: Iterable[psutil.Process], sig: int) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)


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
