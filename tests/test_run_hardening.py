"""Issue 12, run side: the registry cannot lie under races, kills, reused pids or a read-only workspace.

Each test reproduces one numbered item of the issue with tiny fake jobs (a run.sh of shell lines).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from core.run import launch as launch_mod
from core.run.launch import launch, start_supervisor, stop, wait
from core.run.processes import RunProcesses, processes_of, signal_verified
from core.run.registry import (
    STARTING_TIMEOUT,
    STOP_FILE,
    LaunchError,
    RunRecord,
    RunStatus,
    get_run,
    list_runs,
    read_record,
    refresh,
    runs_root,
    update_record,
    write_record,
)
from core.workspace import REPO_ROOT
from tests.browser import free_port
from tests.jobs import fake_job


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, text=True, cwd=REPO_ROOT)


def _starting_record(ws: Path, run_id: str, started_at: float | None = None) -> RunRecord:
    run_dir = runs_root(ws) / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "env.json").write_text("{}")
    (run_dir / "run.sh").write_text("#!/usr/bin/env bash\nsleep 30\n")
    record = RunRecord(
        run_id=run_id,
        run_dir=run_dir,
        log_dir=run_dir,
        status=RunStatus.STARTING,
        started_at=time.time() if started_at is None else started_at,
        argv=["bash", "run.sh"],
    )
    write_record(record)
    return record


# --- item 2: a running job is reported failed ----------------------------------------------------


def test_a_record_without_its_supervisor_is_starting_not_failed(tmp_path: Path) -> None:
    """The exact window of the bug: run.json written, supervisor pid not yet. Reading it must not judge it."""
    ws = tmp_path / "ws"
    record = _starting_record(ws, "young")
    for _ in range(3):
        assert refresh(read_record(record.run_dir)).status == "starting"
        assert [r.status for r in list_runs(ws)] == ["starting"]
    assert read_record(record.run_dir).status == "starting"  # nothing was written by the readers
    assert get_run("young", ws).is_running


def test_a_start_that_never_came_is_failed_after_the_timeout(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _starting_record(ws, "lost", started_at=time.time() - STARTING_TIMEOUT - 5)
    lost = get_run("lost", ws)
    assert lost.status == "failed" and "supervisor never started" in lost.message


def test_launch_raced_by_registry_readers_is_never_failed(tmp_path: Path) -> None:
    """Launch while two threads read the registry in a loop (the Launch page and `runs`), 3 times."""
    ws = tmp_path / "ws"
    seen: dict[str, set[str]] = {}
    done = threading.Event()

    def read_loop() -> None:
        while not done.is_set():
            for r in list_runs(ws):
                seen.setdefault(r.run_id, set()).add(r.status)

    readers = [threading.Thread(target=read_loop) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        for i in range(3):
            record = launch(fake_job(tmp_path, "sleep 1; exit 0", f"j{i}"), ws, name=f"race{i}")
            assert record.status in ("starting", "running"), record.message
            assert wait(f"race{i}", ws, timeout=60).status == "succeeded"
    finally:
        done.set()
        for t in readers:
            t.join()
    for i in range(3):
        assert "failed" not in seen.get(f"race{i}", set()), seen


def test_concurrent_writers_cannot_interleave(tmp_path: Path) -> None:
    """Read-modify-writes from several writers under the per-run lock: no update is lost."""
    ws = tmp_path / "ws"
    record = _starting_record(ws, "counter")
    record.device_num = 0  # the counter: an integer field of run.json
    write_record(record)

    def bump(r: RunRecord) -> None:
        n = r.device_num
        time.sleep(0.001)  # widen the read-modify-write window
        r.device_num = n + 1

    def worker() -> None:
        for _ in range(40):
            update_record(record.run_dir, bump)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert read_record(record.run_dir).device_num == 160


def test_a_stop_during_the_start_stops_before_anything_runs(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    record = _starting_record(ws, "early")
    (record.run_dir / STOP_FILE).write_text("now")
    final = start_supervisor(record.run_dir, wait_started=20)
    deadline = time.time() + 20
    while final.is_running and time.time() < deadline:
        time.sleep(0.1)
        final = read_record(record.run_dir)
    assert final.status == "stopped" and final.pid is None


def test_cli_status_column_lists_starting(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _starting_record(ws, "shown")
    result = _cli("runs", "--workspace", str(ws))
    assert result.returncode == 0
    assert any(line.split()[:2] == ["shown", "starting"] for line in result.stdout.splitlines())


# --- item 3: two launches of the same job --------------------------------------------------------


def test_two_concurrent_launches_on_one_port_start_exactly_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    port = free_port()
    jobs = [fake_job(tmp_path, "sleep 60", f"same{i}", port) for i in range(2)]
    barrier = threading.Barrier(2)
    results: list[RunRecord | Exception] = []

    def go(job: Path) -> None:
        barrier.wait()
        try:
            results.append(launch(job, ws))
        except LaunchError as exc:
            results.append(exc)

    threads = [threading.Thread(target=go, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    started = [r for r in results if isinstance(r, RunRecord)]
    refused = [r for r in results if isinstance(r, LaunchError)]
    try:
        assert len(started) == 1 and len(refused) == 1
        assert started[0].is_running
        assert f"master port {port}" in str(refused[0]) and "reserved" in str(refused[0])
        assert [r.run_id for r in list_runs(ws)] == [started[0].run_id]  # the refused launch left nothing
    finally:
        for r in started:
            stop(r.run_id, ws, grace=1.0)


# --- item 4: stop of a finished run; reused pgid ------------------------------------------------


def test_stop_of_a_finished_run_sends_no_signal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    launch(fake_job(tmp_path, "exit 0"), ws, name="over")
    assert wait("over", ws, timeout=30).status == "succeeded"
    sent: list[tuple[object, ...]] = []
    monkeypatch.setattr(os, "killpg", lambda *a: sent.append(("killpg", *a)))
    monkeypatch.setattr(os, "kill", lambda *a: sent.append(("kill", *a)))
    monkeypatch.setattr(psutil.Process, "send_signal", lambda self, sig: sent.append(("send", self.pid, sig)))
    monkeypatch.setattr(psutil.Process, "kill", lambda self: sent.append(("kill", self.pid)))
    final = stop("over", ws, grace=1.0)
    assert final.status == "succeeded" and sent == []
    assert not (final.run_dir / STOP_FILE).exists()
    monkeypatch.undo()
    result = _cli("stop", "over", "--workspace", str(ws))
    assert result.returncode == 0 and "already succeeded: nothing to stop, no signal sent" in result.stdout


def test_a_reused_pgid_is_left_alone(tmp_path: Path) -> None:
    """An unrelated process leading the group id a finished run once had, started before the record says
    the run started: neither process matching nor stop may touch it."""
    ws = tmp_path / "ws"
    victim = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        time.sleep(1.5)  # older than the run by more than the clock slack
        launch(fake_job(tmp_path, "exit 0"), ws, name="old")
        done = wait("old", ws, timeout=30)
        data = json.loads((done.run_dir / "run.json").read_text())
        data.update(
            status="running",
            pid=victim.pid,
            pgid=victim.pid,
            pid_create_time=1.0,
            supervisor_pid=None,
            supervisor_create_time=None,
            nodes=[],
        )
        (done.run_dir / "run.json").write_text(json.dumps(data))
        record = read_record(done.run_dir)
        # the group's leader is not the launcher the record started (create time): not the run's session
        assert victim.pid not in [p.pid for p in processes_of("old", record.run_dir, [(victim.pid, 1.0)])]
        assert victim.pid not in [p.pid for p in RunProcesses.of(record).live()]
        assert not signal_verified(victim.pid, 1.0, signal.SIGKILL, group=True)  # wrong create time
        final = stop("old", ws, grace=1.0)
        assert not final.is_running
        assert victim.poll() is None and psutil.Process(victim.pid).status() != psutil.STATUS_ZOMBIE
    finally:
        victim.kill()
        victim.wait()


def test_signal_verified_needs_pid_and_create_time() -> None:
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        created = psutil.Process(proc.pid).create_time()
        assert not signal_verified(proc.pid, None, signal.SIGTERM)
        assert not signal_verified(proc.pid, created - 10, signal.SIGTERM)
        assert proc.poll() is None
        assert signal_verified(proc.pid, created, signal.SIGKILL, group=True)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --- item 6 (run side): read-only workspace -----------------------------------------------------


def test_unwritable_runs_folder_is_one_clear_error(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "runs").write_text("not a folder")  # as root chmod does not stop writes: force the OSError
    job = fake_job(tmp_path, "exit 0")
    with pytest.raises(LaunchError, match="cannot write the run folder") as info:
        launch(job, ws)
    assert "\n" not in str(info.value)
    result = _cli("launch", str(job), "--workspace", str(ws))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "cannot write" in result.stderr


def test_a_write_failing_midway_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    job = fake_job(tmp_path, "exit 0")

    def read_only(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(ws / "runs" / "x" / "train.py"))

    monkeypatch.setattr(launch_mod.shutil, "copy2", read_only)
    with pytest.raises(LaunchError, match="Read-only file system"):
        launch(job, ws, name="half")
    assert not (runs_root(ws) / "half").exists()
    assert list_runs(ws) == []


def test_run_json_status_and_kind_are_typed_and_a_bad_word_is_named(tmp_path: Path) -> None:
    """run.json keeps plain words; reading it back gives the enums, and a hand-edited word is refused by name."""
    from core.run.registry import RunKind

    record = _starting_record(tmp_path, "typed")
    record.kind, record.nodes = RunKind.OWN, [{"node": 0, "argv": ["bash", "run.sh", "0"], "pid": 12}]
    write_record(record)
    on_disk = json.loads((record.run_dir / "run.json").read_text())
    assert (on_disk["status"], on_disk["kind"]) == ("starting", "own")
    back = read_record(record.run_dir)
    assert (type(back.status), type(back.kind)) == (RunStatus, RunKind)
    assert (back.status, back.kind, back.nodes) == (RunStatus.STARTING, RunKind.OWN, record.nodes)

    for key, word in (("status", "finished"), ("kind", "remote"), ("status", 3)):
        (record.run_dir / "run.json").write_text(json.dumps({**on_disk, key: word}))
        with pytest.raises(LaunchError, match=rf"run typed: run.json has {key} {word!r}, not one of "):
            read_record(record.run_dir)
