"""MindFormers mode with a real MindFormers 2.1.0, launched through ShardScope as a user would.

`scripts/mindformers_cpu.sh` sets up MindFormers in its own virtualenv (cached under ~/.cache/shardscope;
the first run installs it, a few minutes), writes a tiny LLaMA YAML and its data, and runs
`python -m core launch --script scripts/mindformers_entry.py --python <mf-venv>/bin/python
--mindformers-config ... --wait`. These tests run it for real: one worker, two data-parallel workers, and
a Stop of a longer run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from core.logs.rows.reader import read_run
from core.run.processes import ENV_RUN_DIR, ENV_RUN_ID
from core.workspace import REPO_ROOT
from tests.browser import free_port

pytestmark = pytest.mark.integration
SCRIPT = REPO_ROOT / "scripts" / "mindformers_cpu.sh"
CORPUS_RANK0 = (
    REPO_ROOT
    / "tests"
    / "fixtures"
    / "real_logs"
    / "mindformers-2.1.0-cpu-tiny-llama_produced-here"
    / "log"
    / "output"
    / "log"
    / "rank_0"
    / "info.log"
)
LOSS_LINE = re.compile(r"print_output_info: (\{ Epoch:.*?loss:\[[^\]]*\])")
RE_STEP = re.compile(r"Epoch:\[\s*(\d+)/\s*(\d+)\], step:\[\s*(\d+)/\s*(\d+)\]")
RE_LOSS = re.compile(r"loss:\[([-\d.e+]+)/([-\d.e+]+)\]")
RUN_LINE = re.compile(r"run (\S+) (started|succeeded|failed|stopped)")


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "SHARDSCOPE_WORKSPACE": str(tmp_path / "ws"), "MF_MASTER_PORT": str(free_port()), **extra}


def run_script(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    # the first run in a fresh cache installs MindFormers' venv: allow for it
    tmp_path.mkdir(exist_ok=True)
    return subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "mf")],
        cwd=tmp_path,
        env=env_for(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=1800,
    )


def run_dir(tmp_path: Path, stdout: str) -> Path:
    run_id = RUN_LINE.search(stdout)
    assert run_id, stdout
    return tmp_path / "ws" / "runs" / run_id[1]


def test_one_worker_trains_and_the_monitor_reads_both_logs(tmp_path: Path) -> None:
    result = run_script(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "preflight: mindspore 2.10.0 in" in result.stdout and "succeeded (exit code 0)" in result.stdout
    info = (tmp_path / "mf" / "output" / "log" / "rank_0" / "info.log").read_text(encoding="utf-8")
    # the same training as the corpus run, up to the last printed digit: MindSpore's CPU kernels reduce in
    # threads, and under load a sum can round the other way (5.003780 against 5.003781 at step 10, seen here)
    ours, corpus = LOSS_LINE.findall(info), LOSS_LINE.findall(CORPUS_RANK0.read_text(encoding="utf-8"))
    assert [RE_STEP.findall(line) for line in ours] == [RE_STEP.findall(line) for line in corpus]
    assert [float(x) for line in ours for pair in RE_LOSS.findall(line) for x in pair] == pytest.approx(
        [float(x) for line in corpus for pair in RE_LOSS.findall(line) for x in pair], rel=1e-4
    )
    from_msrun = read_run(run_dir(tmp_path, result.stdout) / "log_output").metrics
    from_mindformers = read_run(tmp_path / "mf" / "output").metrics  # MindFormers' own output/log/rank_0
    assert len(from_msrun) == len(from_mindformers) == 64
    assert from_msrun["loss"].tolist() == pytest.approx(from_mindformers["loss"].tolist())
    assert from_msrun["loss"].iloc[0] == pytest.approx(5.547178)


def losses_per_rank(tmp_path: Path, launcher: str) -> dict[int, list[float]]:
    result = run_script(tmp_path, MF_DEVICES="2", MF_LAUNCHER=launcher)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    metrics = read_run(run_dir(tmp_path, result.stdout) / "log_output").metrics
    return {int(r): rows["loss"].tolist() for r, rows in metrics.groupby("rank")}


def test_two_data_parallel_workers_train_on_cpu_under_msrun_and_mpirun(tmp_path: Path) -> None:
    per_rank = losses_per_rank(tmp_path / "msrun", "msrun")
    assert sorted(per_rank) == [0, 1]
    assert len(per_rank[0]) == len(per_rank[1]) == 32  # 64 samples / (batch 4 x 2 ranks) x 4 epochs
    assert per_rank[0] != per_rank[1]  # each rank reads its own shard
    assert losses_per_rank(tmp_path / "mpirun", "mpirun") == per_rank  # MPI rank N is MindSpore rank N


def test_stop_leaves_nothing(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        ["bash", str(SCRIPT), str(tmp_path / "mf")],
        cwd=tmp_path,
        env=env_for(tmp_path, MF_EPOCHS="400"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    info = tmp_path / "mf" / "output" / "log" / "rank_0" / "info.log"
    deadline = time.time() + 900
    while time.time() < deadline and proc.poll() is None:
        if info.is_file() and "print_output_info: { Epoch" in info.read_text(encoding="utf-8", errors="replace"):
            break
        time.sleep(1)
    assert proc.poll() is None, proc.communicate()
    runs = tmp_path / "ws" / "runs"
    (run_id,) = [p.parent.name for p in runs.glob("*/run.json")]
    stopped = subprocess.run(
        [sys.executable, "-m", "core", "stop", run_id, "--workspace", str(tmp_path / "ws")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert stopped.returncode == 0 and "no process of it is left" in stopped.stdout, stopped.stdout + stopped.stderr
    out, _err = proc.communicate(timeout=120)
    assert f"run {run_id} stopped" in out and proc.returncode != 0
    # The run's processes carry its id AND its folder: another test's run (another workspace) may have started in
    # the same second and so have the same id (`new_run_id` is a time stamp and a name); it is not this run's.
    tag = {ENV_RUN_ID: run_id, ENV_RUN_DIR: str((runs / run_id).resolve())}
    left = []
    for candidate in psutil.process_iter(["pid"]):
        try:
            env = candidate.environ()
            if all(env.get(key) == value for key, value in tag.items()):
                left.append((candidate.pid, candidate.cmdline()))
        except psutil.Error:
            continue
    assert left == []
