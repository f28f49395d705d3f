"""Real 8-worker msrun runs on CPU: CLI generate + launch, stop without orphans, a killed worker,
and the Launch page's button. Slow (~40 s each on two cores)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from core.run.launch import stop, wait
from core.run.processes import RunProcesses
from core.run.registry import get_run, list_runs
from core.workspace import REPO_ROOT
from tests.browser import free_port
from tests.jobs import LOSS, cli, generate, workers

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def no_orphans(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Whatever happens in a test, stop every run it started so no worker outlives it."""
    yield
    for record in list_runs(tmp_path / "ws"):
        if record.is_running:
            stop(record.run_id, tmp_path / "ws", grace=2)


def wait_for(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.3)
    return False


def test_cli_runs_8_workers_for_real(tmp_path: Path) -> None:
    job = tmp_path / "job"
    generate(job, samples=256, epochs=2)
    result = cli("launch", str(job), "--wait", "--name", "dp8", "--workspace", str(tmp_path / "ws"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "succeeded (exit code 0)" in result.stdout
    record = get_run("dp8", tmp_path / "ws")
    assert record.status == "succeeded" and record.exit_code == 0
    for rank in range(8):
        text = (record.log_dir / f"worker_{rank}.log").read_text(errors="replace")
        assert len(LOSS.findall(text)) == 4, f"rank {rank}"  # 256/8 samples / the design's batch 16 = 2 steps x 2
        assert "per step time" in text
    assert not RunProcesses.of(record).live()


def test_stop_leaves_no_process(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    job = tmp_path / "job"
    generate(job, samples=64_000, epochs=50)
    assert cli("launch", str(job), "--name", "long", "--workspace", str(ws)).returncode == 0
    record = get_run("long", ws)
    assert wait_for(lambda: len(workers(record.run_dir)) >= 9, 90)
    log0 = record.log_dir / "worker_0.log"
    assert wait_for(lambda: log0.exists() and LOSS.search(log0.read_text(errors="replace")) is not None, 120)
    pids = [p.pid for p in RunProcesses.of(record).live()]
    assert len(pids) >= 10  # msrun, the scheduler and 8 workers all run train.py under msrun
    result = cli("stop", "long", "--workspace", str(ws), "--grace", "10")
    assert result.returncode == 0, result.stderr
    final = get_run("long", ws)
    assert final.status == "stopped"
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert alive == [] and RunProcesses.of(final).live() == []


def test_killed_worker_fails_the_run(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    job = tmp_path / "job"
    generate(job, samples=64_000, epochs=50)
    assert cli("launch", str(job), "--name", "crash", "--workspace", str(ws)).returncode == 0
    record = get_run("crash", ws)
    assert wait_for(lambda: len(workers(record.run_dir)) >= 9, 90)
    log3 = record.log_dir / "worker_3.log"
    assert wait_for(lambda: log3.exists() and LOSS.search(log3.read_text(errors="replace")) is not None, 120)
    victim = next(p for p in workers(record.run_dir) if f"DISTRIBUTED({p.pid}," in log3.read_text(errors="replace"))
    os.kill(victim.pid, signal.SIGKILL)
    final = wait("crash", ws, timeout=180)
    if final.status == "running":
        stop("crash", ws, grace=1)
        pytest.fail("msrun did not end after a worker was killed")
    assert final.status == "failed" and final.exit_code not in (None, 0)
    assert wait_for(lambda: not RunProcesses.of(final).live(), 30)


def test_launch_button_starts_a_real_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    ws = tmp_path / "ws"
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(ws))
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    at = AppTest.from_file(str(REPO_ROOT / "app" / "main.py"), default_timeout=180)
    at.switch_page("../pages/launch.py")  # through the app's navigation: the page links to the Monitor
    at.run()
    at.number_input(key="launch_port").set_value(free_port())
    at.number_input(key="launch_samples").set_value(64_000)
    at.number_input(key="launch_epochs").set_value(50)
    at.run()
    at.button(key="launch_button").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Started run" in s.value for s in at.success)
    runs = list_runs(ws)
    assert [link.label for link in at.get("page_link")][-1] == f"Watch {runs[0].run_id} on the Monitor"
    assert len(runs) == 1 and runs[0].status == "running"
    record = runs[0]
    assert wait_for(lambda: len(workers(record.run_dir)) >= 9, 90)
    at.run()
    at.button(key="launch_stop").click().run()
    assert any("no process of it is left" in s.value for s in at.success), [e.value for e in at.error]
    final = get_run(record.run_id, ws)
    assert final.status == "stopped" and RunProcesses.of(final).live() == []
