"""The corpus test's forked `python -m core` runs (tests/corpus_cli.py) give what a real subprocess gives.

The corpus test judges the CLI through them, so a forked run that printed, exited or failed differently from
`python -m core` would make the corpus test measure something users never run.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.corpus_cli import run_cli

CORPUS = Path(__file__).resolve().parent / "fixtures" / "real_logs"
# a crash with a CANN code and no rows, a NaN ending, and an 8-rank Paddle folder
ENTRIES = [
    "absl-estimator-loss-step-line-then-tpu-shutdownhook-lame-workers_t5-japanese-1",
    "cann-EE9999-task-exec_mindspore-docs",
    "paddle-8-workerlogs-3-steps-then-keyboardinterrupt_rspnet-paddle",
]


def _timeless(text: str) -> str:
    """Ages and `N h ago` depend on when the command ran, not on how it was started."""
    return re.sub(r"\b\d+(\.\d+)?( ?h| ?min| ?s)\b", "T", text)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("command", [("watch", "--once"), ("diagnose", "--json")])
def test_forked_run_prints_and_exits_as_a_subprocess(entry: str, command: tuple[str, str]) -> None:
    args = (command[0], str(CORPUS / entry / "log"), command[1])
    fresh = run_cli(*args, timeout_s=120, fresh=True)
    forked = run_cli(*args, timeout_s=120)
    assert fresh.stdout.strip(), "the subprocess printed nothing: the comparison would prove nothing"
    assert forked.returncode == fresh.returncode
    assert _timeless(forked.stdout) == _timeless(fresh.stdout)
    assert _timeless(forked.stderr) == _timeless(fresh.stderr)


@pytest.mark.parametrize("args", [("watch",), ("diagnose", "/nonexistent/shardscope-corpus-cli", "--json")])
def test_forked_run_refuses_bad_input_as_a_subprocess(args: tuple[str, ...]) -> None:
    fresh = run_cli(*args, timeout_s=60, fresh=True)
    forked = run_cli(*args, timeout_s=60)
    assert fresh.returncode != 0 and fresh.stderr.strip()
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_forked_run_that_never_ends_is_killed_at_its_timeout(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 2.5\n", encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_cli("watch", str(tmp_path), "--interval", "1", timeout_s=3)  # no --once: watches until stopped
    assert time.monotonic() - started < 60
