"""Every command module is reachable from `python -m core` (a module left out of COMMANDS is a command
users cannot run), and the diagnosis contract holds through the real entry point."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import core.cli
from core.__main__ import build_parser
from core.workspace import REPO_ROOT

FAILED_RUN = REPO_ROOT / "tests" / "fixtures" / "real_msrun_logs" / "semi_auto_on_cpu_error"


def test_every_command_module_is_registered() -> None:
    modules = [
        importlib.import_module(f"core.cli.{info.name}") for info in pkgutil.iter_modules(core.cli.__path__)
    ]
    commands = [m for m in modules if hasattr(m, "register")]
    assert sorted(m.__name__ for m in commands) == sorted(m.__name__ for m in core.cli.COMMANDS)
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in ("preview", "model", "plan", "generate", "check", "launch", "stop", "runs", "watch", "diagnose"):
        assert name in choices


def test_diagnose_json_through_python_m_core() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "core", "diagnose", str(FAILED_RUN), "--json"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1  # a rank failed
    report = json.loads(result.stdout)
    assert report["ranks"] == 8
    assert {"stragglers", "hung", "failure_groups"} <= set(report)
    group = report["failure_groups"][0]
    assert {"exception", "ranks", "first_rank", "first_time"} <= set(group)
    assert "Invalid communication backend: CPU" in group["exception"]


def test_every_command_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`python -m core model ... | head -1`: the reader is gone before the summary is printed."""
    argv = [sys.executable, "-m", "core", "model", "llama", "--hidden", "256", "--heads", "4", "--ffn", "512",
            "--seq", "64", "--batch", "2", "--layers", "2", "--vocab", "1000", "--out", str(tmp_path / "d.json")]
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first print meets a closed pipe
    try:
        res = subprocess.run(argv, cwd=REPO_ROOT, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert "Traceback" not in res.stderr and "BrokenPipeError" not in res.stderr, res.stderr
    assert res.returncode == 0
