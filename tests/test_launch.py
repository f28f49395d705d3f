"""Run registry, supervisor, stop, preflight and CLI errors, with tiny fake jobs (fast)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from core.codegen import RunOptions, write_job
from core.run.launch import launch, stop, wait
from core.run.preflight import can_launch, check_dataset, check_devices, check_port, run_preflight
from core.run.processes import RunProcesses
from core.run.registry import LaunchError, get_run, list_runs
from core.sharding.design import load_design
from core.workspace import EXAMPLES_DIR, REPO_ROOT
from tests.browser import free_port
from tests.jobs import fake_job


def test_success_and_failure_are_recorded(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ok = launch(fake_job(tmp_path, "echo hello; exit 0", "ok"), ws, name="ok-run")
    bad = launch(fake_job(tmp_path, "echo oops >&2; exit 3", "bad"), ws, name="bad-run")
    assert wait("ok-run", ws, timeout=30).status == "succeeded"
    failed = wait("bad-run", ws, timeout=30)
    assert failed.status == "failed" and failed.exit_code == 3
    assert "oops" in (failed.run_dir / "launcher.log").read_text()
    runs = list_runs(ws)
    assert [r.run_id for r in runs] == ["bad-run", "ok-run"]  # newest first
    assert runs[0].scenario == "data_parallel" and runs[0].command[0] == "msrun"
    assert ok.log_dir == ok.run_dir / "log_output"
    data = json.loads((bad.run_dir / "run.json").read_text())
    assert data["exit_code"] == 3 and data["status"] == "failed"


def test_workers_get_the_venv_python_first_on_path(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    launch(fake_job(tmp_path, 'command -v python; echo "U=$PYTHONUNBUFFERED"'), ws, name="env")
    record = wait("env", ws, timeout=30)
    out = (record.run_dir / "launcher.log").read_text().split()
    assert out[0] == str(Path(sys.executable).parent / "python") and "U=1" in out


def test_stop_kills_the_whole_tree(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    # a launcher that ignores SIGINT and leaves a child in another session (like msrun's workers)
    body = "trap '' INT\nsetsid sleep 300 &\nsleep 300 &\nwait"
    record = launch(fake_job(tmp_path, body), ws, name="stubborn")
    deadline = time.time() + 10
    while len(RunProcesses.of(record).live()) < 3 and time.time() < deadline:
        time.sleep(0.1)
    pids = [p.pid for p in RunProcesses.of(record).live()]
    assert len(pids) >= 3
    final = stop("stubborn", ws, grace=1.0)
    assert final.status == "stopped"
    assert not RunProcesses.of(final).live()
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_busy_port_and_duplicate_names_are_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    port = free_port()
    launch(fake_job(tmp_path, "sleep 60", "a", port), ws, name="first")
    try:
        with pytest.raises(LaunchError, match=f"master port {port} is used by run first"):
            launch(fake_job(tmp_path, "true", "b", port), ws)
        with pytest.raises(LaunchError, match="already exists"):
            launch(fake_job(tmp_path, "true", "c"), ws, name="first")
    finally:
        stop("first", ws, grace=1.0)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        busy = listener.getsockname()[1]
        with pytest.raises(LaunchError, match=f"master port {busy} is busy"):
            launch(fake_job(tmp_path, "true", "d", busy), ws)


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", "x;rm -rf /", "$(id)", "a\nb", ""])
def test_run_names_cannot_escape(tmp_path: Path, name: str) -> None:
    ws = tmp_path / "ws"
    with pytest.raises(LaunchError):
        launch(fake_job(tmp_path, "true"), ws, name=name or "..")
    with pytest.raises(LaunchError):
        get_run(name or "..", ws)
    assert not (tmp_path / "escape").exists()


def test_reattach_after_supervisor_death(tmp_path: Path) -> None:
    """Kill the supervisor (as if the machine lost it): the run is still seen running, then stoppable."""
    ws = tmp_path / "ws"
    record = launch(fake_job(tmp_path, "sleep 120"), ws, name="orphan")
    psutil.Process(record.supervisor_pid).kill()
    time.sleep(0.3)
    assert get_run("orphan", ws).status == "running"
    assert stop("orphan", ws, grace=1.0).status == "stopped"


def test_dead_launcher_with_reused_pid_is_not_running(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    record = launch(fake_job(tmp_path, "exit 0"), ws, name="done")
    wait("done", ws, timeout=30)
    data = json.loads((record.run_dir / "run.json").read_text())
    # pretend the dashboard crashed mid-run and the pids now belong to other processes
    data.update(status="running", pid=1, supervisor_pid=1, pid_create_time=1.0, supervisor_create_time=1.0)
    (record.run_dir / "run.json").write_text(json.dumps(data))
    (record.run_dir / "launcher_exit_code").unlink()  # and the launcher's exit status was never written
    again = get_run("done", ws)
    assert again.status == "failed" and "exit code unknown" in again.message


def test_launch_refuses_non_jobs(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match=r"no run\.sh"):
        launch(tmp_path, tmp_path / "ws")


def test_a_slurm_job_without_its_batch_file_is_refused_not_re_rendered(tmp_path: Path) -> None:
    job = write_job(
        load_design(EXAMPLES_DIR / "data_parallel_8.json"),
        RunOptions(launcher="slurm", device_num=2, master_port=free_port()),
        tmp_path / "job",
    )
    (job / "job.sbatch").unlink()
    with pytest.raises(LaunchError, match=r"no job\.sbatch: generate the job again"):
        launch(job, tmp_path / "ws")
    assert not (tmp_path / "ws" / "runs").exists() or not any((tmp_path / "ws" / "runs").iterdir())


def test_preflight(tmp_path: Path) -> None:
    cpu = RunOptions(master_port=free_port())
    checks = run_preflight(cpu, import_check=False)
    assert can_launch(checks), checks
    ascend = check_devices(RunOptions(scenario="layout_parallel", device_target="Ascend"))
    assert not ascend.ok and "no Ascend devices" in ascend.message and "npu-smi" in ascend.message
    gpu = check_devices(RunOptions(scenario="multi_copy", device_target="GPU"))
    assert not gpu.ok and "nvidia-smi" in gpu.message
    missing = check_dataset(RunOptions(dataset="mnist", data_path=str(tmp_path / "nope")))
    assert not missing.ok and "does not exist" in missing.message
    assert check_dataset(RunOptions(dataset="mnist", data_path=str(tmp_path))).ok
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert not check_port(RunOptions(master_port=listener.getsockname()[1])).ok


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, env=env
    )


def test_cli_errors_are_messages_not_tracebacks(tmp_path: Path) -> None:
    result = _cli("generate", "--scenario", "layout_parallel", "--device-target", "CPU", "--out", str(tmp_path / "j"))
    assert result.returncode == 2 and "data-parallel mode only" in result.stderr
    assert "Traceback" not in result.stderr
    result = _cli("generate", "--master-addr", "x; rm -rf /", "--out", str(tmp_path / "j"))
    assert result.returncode == 2 and "master address" in result.stderr and "Traceback" not in result.stderr
    result = _cli("generate", "--design", str(tmp_path / "missing.json"), "--out", str(tmp_path / "j"))
    assert result.returncode == 2 and "cannot read" in result.stderr
    result = _cli("stop", "../etc", "--workspace", str(tmp_path))
    assert result.returncode == 2 and "not allowed" in result.stderr and "Traceback" not in result.stderr
    result = _cli("launch", str(tmp_path), "--workspace", str(tmp_path / "ws"))
    assert result.returncode == 2 and "no run.sh" in result.stderr


def test_cli_generate_launch_runs(tmp_path: Path) -> None:
    out = tmp_path / "job"
    assert (
        _cli(
            "generate",
            "--device-target",
            "Ascend",
            "--scenario",
            "layout_parallel",
            "--design",
            str(EXAMPLES_DIR / "seed004_mlp.json"),
            "--out",
            str(out),
        ).returncode
        == 0
    )
    assert 'Layout((2, 2, 2), ("dp", "sp", "mp"))' in (out / "train.py").read_text()
    job = fake_job(tmp_path, "exit 5", "five")
    result = _cli("launch", str(job), "--wait", "--name", "five", "--workspace", str(tmp_path / "ws"))
    assert result.returncode == 5 and "failed (exit code 5)" in result.stdout
    listing = _cli("runs", "--workspace", str(tmp_path / "ws"))
    assert "five" in listing.stdout and "failed" in listing.stdout
