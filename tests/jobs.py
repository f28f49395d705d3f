"""Tiny fake jobs for the launch tests: a generated job folder whose run.sh is a few shell lines."""

from __future__ import annotations

from pathlib import Path

from core.codegen import RunOptions, write_job
from core.sharding.design import load_design
from core.workspace import EXAMPLES_DIR
from tests.browser import free_port

DP = load_design(EXAMPLES_DIR / "data_parallel_8.json")


def fake_job(tmp_path: Path, body: str, name: str = "job", port: int | None = None) -> Path:
    """A data-parallel job folder (its own free master port unless given) whose run.sh runs `body`.

    `force`: the folder may already hold a fake job (whose run.sh this helper edited)."""
    job = write_job(DP, RunOptions(master_port=port or free_port()), tmp_path / name, force=True)
    (job / "run.sh").write_text("#!/usr/bin/env bash\n" + body + "\n")
    return job
