"""Check mode: run a generated job's `train.py --check` on this machine's CPU and report the result.

`train.py --check` trains the design's own network for 2 real steps in MindSpore stand-alone mode,
where `.shard()` strategies are accepted and ignored (DESIGN.md, verified on MindSpore 2.10). It
proves the network, its shapes, the loss and the optimizer before a card is spent.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

_LOSS = re.compile(r"^check step (\d+): loss is (\S+)$", re.M)
_VERDICT = re.compile(r"^CHECK (PASSED|FAILED|REFUSED): .*$", re.M)
OUTPUT_TAIL = 40  # lines of output kept for the user when the check fails


@dataclass(frozen=True)
class CheckResult:
    """What `train.py --check` did: passed or not, how long, the losses it printed, why it failed."""

    passed: bool
    seconds: float
    message: str
    losses: list[float] = field(default_factory=list)
    output_tail: list[str] = field(default_factory=list)


def _reason(output: str, code: int | None) -> str:
    """The one line that says why: the script's own verdict, else its last exception, else the exit code."""
    verdicts = [m.group(0) for m in _VERDICT.finditer(output)]
    if verdicts:
        return verdicts[-1]
    lines = [ln for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.match(r"^\w*(Error|Exception)\b", ln)]
    if errors:
        return errors[-1]
    return f"train.py --check exited with code {code}" + (f": {lines[-1]}" if lines else "")


def check_job(
    job_dir: str | Path,
    layers: int | None = None,
    batch: int | None = None,
    timeout: float = 900.0,
    python: str = sys.executable,
) -> CheckResult:
    """Run `python train.py --check` in the job folder (its own process group, killed on time-out)."""
    job_dir = Path(job_dir)
    if not (job_dir / "train.py").is_file():
        return CheckResult(False, 0.0, f"{job_dir} has no train.py: generate the job first")
    argv = [python, "train.py", "--check"]
    if layers is not None:
        argv += ["--layers", str(int(layers))]
    if batch is not None:
        argv += ["--batch", str(int(batch))]
    env = {**os.environ, "GLOG_v": "3", "PYTHONUNBUFFERED": "1"}  # MindSpore errors only, no INFO noise
    start = time.time()
    proc = subprocess.Popen(
        argv,
        cwd=str(job_dir),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        seconds = time.time() - start
        return CheckResult(
            False,
            seconds,
            f"the check did not finish within {timeout:.0f} s",
            output_tail=output.splitlines()[-OUTPUT_TAIL:],
        )
    seconds = time.time() - start
    losses = [float(v) for _, v in _LOSS.findall(output)]
    passed = proc.returncode == 0 and "CHECK PASSED" in output
    message = _reason(output, proc.returncode)
    return CheckResult(passed, seconds, message, losses, [] if passed else output.splitlines()[-OUTPUT_TAIL:])
