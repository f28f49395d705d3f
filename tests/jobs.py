"""Jobs for the launch tests: tiny fake ones (a generated job folder whose run.sh is a few shell lines) and
real 8-worker CPU ones generated through the CLI (`generate`), with the worker processes they start."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import psutil

from core.codegen import RunOptions, write_job
from core.sharding.design import load_design
from core.workspace import EXAMPLES_DIR, REPO_ROOT
from tests.browser import free_port

LOSS = re.compile(r"epoch: \d+ step: \d+, loss is [0-9.]+")
DP = load_design(EXAMPLES_DIR / "data_parallel_8.json")


def fake_job(tmp_path: Path, body: str, name: str = "job", port: int | None = None) -> Path:
    """A data-parallel job folder (its own free master port unless given) whose run.sh runs `body`.

    `force`: the folder may already hold a fake job (whose run.sh this helper edited)."""
    job = write_job(DP, RunOptions(master_port=port or free_port()), tmp_path / name, force=True)
    (job / "run.sh").write_text("#!/usr/bin/env bash\n" + body + "\n")
    return job


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600
    )


def generate(out: Path, samples: int, epochs: int) -> None:
    result = cli(
        "generate",
        "--scenario",
        "data_parallel",
        "--device-target",
        "CPU",
        "--devices",
        "8",
        "--out",
        str(out),
        "--master-port",
        str(free_port()),
        "--samples",
        str(samples),
        "--epochs",
        str(epochs),
        "--batch-size",
        "8",
        "--loss-interval",
        "1",
    )
    assert result.returncode == 0, result.stderr


def workers(record_dir: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        try:
            if proc.info["cwd"] == str(record_dir) and "train.py" in (proc.info["cmdline"] or [])[-1:]:
                found.append(proc)
        except (psutil.Error, TypeError):
            continue
    return found
