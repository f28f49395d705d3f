"""mpirun on CPU: MindSpore's scheduler started by run.sh, mpirun for the workers, MPI rank N = MindSpore rank N.

The unit tests read the rendered run.sh; the integration tests run real Open MPI + MindSpore here (8 ranks, a
2-rank comparison with msrun, and Stop on a long run). DESIGN.md, "mpirun on CPU", has the recipe.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from core.codegen import RunOptions, render_job
from core.logs.rows.reader import read_run
from core.run.launch import stop
from core.run.launchers import launcher_for
from core.run.launchers.mpirun import check_openmpi
from core.run.registry import get_run
from core.sharding.design import load_design
from core.workspace import REPO_ROOT
from tests.browser import free_port
from tests.teardown import teardown_crash

DP = load_design(REPO_ROOT / "examples" / "data_parallel_8.json")
needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI is not installed (openmpi-bin)")


def run_sh(**options: object) -> str:
    return render_job(DP, RunOptions(launcher="mpirun", **options))["run.sh"]  # type: ignore[arg-type]


def test_cpu_job_starts_the_scheduler_and_numbers_workers_by_mpi_rank() -> None:
    script = run_sh(device_target="CPU", device_num=8, master_port=9123)
    assert "export MS_SCHED_HOST=127.0.0.1 MS_SCHED_PORT=9123 MS_WORKER_NUM=8" in script
    assert "MS_ROLE=MS_SCHED python train.py > log_output/scheduler.log 2>&1 &" in script
    assert "-x MS_ROLE=MS_WORKER -x MS_SCHED_HOST -x MS_SCHED_PORT -x MS_WORKER_NUM" in script
    assert """MS_NODE_ID="$OMPI_COMM_WORLD_RANK" exec "$@"' mpirun-worker python train.py &""" in script
    assert "--oversubscribe" in script  # 8 CPU workers on fewer cores, as under msrun
    assert "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" in script
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_gpu_job_stays_as_mindspores_docs_give_it() -> None:
    script = run_sh(device_target="GPU", device_num=8)
    assert "exec mpirun -n 8 --output-filename log_output --merge-stderr-to-stdout python train.py" in script
    assert "MS_SCHED" not in script and "--oversubscribe" not in script


def test_scheduler_port_is_checked_on_cpu_only() -> None:
    launcher = launcher_for(RunOptions(launcher="mpirun"))
    assert launcher.scheduler_port(RunOptions(launcher="mpirun", device_target="CPU", master_port=9200)) == 9200
    assert launcher.scheduler_port(RunOptions(launcher="mpirun", device_target="GPU", master_port=9200)) is None


def test_preflight_refuses_an_mpirun_that_is_not_open_mpi(tmp_path: Path) -> None:
    fake = tmp_path / "mpirun"
    fake.write_text("#!/bin/sh\necho 'HYDRA build details:'\necho '    Version: 4.1 (MPICH)'\n")
    fake.chmod(0o755)
    check = check_openmpi(str(fake))
    assert not check.ok
    assert "is not Open MPI (HYDRA build details:)" in check.message


@needs_mpirun
def test_preflight_names_open_mpi_and_the_root_switch() -> None:
    check = check_openmpi(shutil.which("mpirun") or "mpirun")
    assert check.ok and "Open MPI" in check.message
    assert ("OMPI_ALLOW_RUN_AS_ROOT=1" in check.message) == (os.geteuid() == 0)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, env=env
    )


def generate(out: Path, launcher: str, devices: int, epochs: int, samples: int = 256) -> None:
    result = cli(
        "generate",
        "--scenario",
        "data_parallel",
        "--device-target",
        "CPU",
        "--devices",
        str(devices),
        "--launcher",
        launcher,
        "--out",
        str(out),
        "--master-port",
        str(free_port()),
        "--samples",
        str(samples),
        "--epochs",
        str(epochs),
        "--loss-interval",
        "1",
    )
    assert result.returncode == 0, result.stderr


def losses_by_rank(log_dir: Path) -> dict[int, list[float]]:
    metrics = read_run(log_dir).metrics
    return {int(r): rows["loss"].tolist() for r, rows in metrics.groupby("rank")}


@pytest.mark.integration
@needs_mpirun
def test_eight_cpu_ranks_train_under_mpirun(tmp_path: Path) -> None:
    job = tmp_path / "job"
    generate(job, "mpirun", devices=8, epochs=1)
    result = cli("launch", str(job), "--wait", "--name", "mpi8", "--workspace", str(tmp_path / "ws"))
    run_dir = tmp_path / "ws" / "runs" / "mpi8"
    crashed_at_exit = teardown_crash(run_dir)
    if result.returncode != 0:  # only MindSpore's own crash at exit may fail it, and it is reported as a failure
        assert crashed_at_exit, result.stdout + result.stderr
        assert "failed (exit code 139)" in result.stdout
    log_dir = run_dir / "log_output"
    watched = cli("watch", str(log_dir), "--once")
    # a crash at exit is a rank's failure, which `watch` finds in mpirun's output beside the folder and reports
    # with exit 1 (README); a clean run exits 0
    assert watched.returncode == (1 if crashed_at_exit else 0), watched.stdout + watched.stderr
    if crashed_at_exit:
        assert "Segmentation fault" in watched.stdout and "also read mpi8/launcher.log" in watched.stdout
    assert "layout=mpirun, ranks=8," in watched.stdout
    rows = losses_by_rank(log_dir)
    assert sorted(rows) == list(range(8)) and all(rows[r] for r in rows)
    assert (log_dir / "scheduler.log").is_file()


@pytest.mark.integration
@needs_mpirun
def test_mpi_rank_n_is_mindspore_rank_n(tmp_path: Path) -> None:
    """Each rank trains on data shard get_rank(): with the right numbering, mpirun's rank N reads the same
    shard as msrun's rank N, so their loss curves are identical (DESIGN.md: bit-identical)."""
    for launcher in ("mpirun", "msrun"):
        generate(tmp_path / launcher, launcher, devices=2, epochs=1, samples=64)
        result = cli(
            "launch", str(tmp_path / launcher), "--wait", "--name", launcher, "--workspace", str(tmp_path / "ws")
        )
        assert result.returncode == 0 or teardown_crash(tmp_path / "ws" / "runs" / launcher), result.stdout
    mpi = losses_by_rank(tmp_path / "ws" / "runs" / "mpirun" / "log_output")
    ms = losses_by_rank(tmp_path / "ws" / "runs" / "msrun" / "log_output")
    assert sorted(mpi) == [0, 1] and mpi[0] != mpi[1]  # two shards, two curves
    assert mpi == ms


@pytest.mark.integration
@needs_mpirun
def test_stop_ends_scheduler_and_every_rank(tmp_path: Path) -> None:
    job, ws = tmp_path / "job", tmp_path / "ws"
    generate(job, "mpirun", devices=4, epochs=500)
    result = cli("launch", str(job), "--name", "long", "--workspace", str(ws))
    assert result.returncode == 0, result.stderr
    log_dir = ws / "runs" / "long" / "log_output"
    deadline = time.time() + 180
    while time.time() < deadline and not (log_dir / "1" / "rank.3" / "stdout").is_file():
        time.sleep(0.5)
    time.sleep(3)
    mine = [p for p in psutil.process_iter(["cwd", "cmdline"]) if p.info["cwd"] == str(ws / "runs" / "long")]
    assert any("mpirun" in (p.info["cmdline"] or [""])[0] for p in mine)
    record = stop("long", ws, grace=10)
    assert record.status == "stopped", record.message
    left = [p for p in mine if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert left == []
    # the SIGINT reached run.sh's trap, which ended mpirun and the scheduler: no SIGKILL of the group was needed
    assert get_run("long", ws).exit_code != -signal.SIGKILL
