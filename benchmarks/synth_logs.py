"""Synthetic N-rank msrun log folders with a straggler, a hung rank and a crashed rank injected.

    .venv/bin/python benchmarks/synth_logs.py OUT_DIR --ranks 1024 --steps 2000 [--noise 9]

Each `worker_{r}.log` is what MindSpore 2.10 writes under msrun: real `[WARNING]`/`[INFO]` lines
(taken from tests/fixtures/real_msrun_logs, pid rewritten per rank), LossMonitor lines with full float
repr values (`epoch: 1 step: 7, loss is 2.3139476776123047`), a TimeMonitor line per epoch, and for a
crashed rank a traceback after a time-stamped line. File mtimes are set to the time each rank last
wrote, so a reader sees the same time evidence as after a real run. Used by tests/test_diagnose.py
and benchmarks/bench_logs.py (importable: `write_run`).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "real_msrun_logs"
START = 1_790_000_000.0  # unix time of every synthetic run's first step

_RE_PID = re.compile(rb"\((\d+)([,:])")
EXCEPTION = "RuntimeError: The pointer[device_address] is null."
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/job/train.py", line 61, in <module>\n'
    "    model.train(epochs, dataset, callbacks=[LossMonitor(), TimeMonitor()])\n"
    '  File "/opt/venv/lib/python3.11/site-packages/mindspore/train/model.py", line 1090, in train\n'
    "    self._train(epoch,\n"
    "{exception}\n"
    "\n"
    "----------------------------------------------------\n"
    "- C++ Call Stack: (For framework developers)\n"
    "----------------------------------------------------\n"
    "mindspore/ccsrc/runtime/device/device_address_utils.cc:1032 CreateDeviceAddress\n"
    "\n"
)


@dataclass(frozen=True)
class SynthRun:
    """What was injected where (the answers a diagnosis must find)."""

    root: Path
    ranks: int
    steps: int
    straggler: int | None
    hung: int | None
    crashed: list[int]
    first_crashed: int | None
    loss_lines: int
    bytes: int


def noise_lines() -> list[bytes]:
    """Every real `[WARNING]`/`[INFO]` line of the fixture logs (the realistic noise)."""
    out: list[bytes] = []
    for path in sorted(FIXTURES.glob("*/*.log")):
        out.extend(line + b"\n" for line in path.read_bytes().splitlines()
                   if line.startswith((b"[WARNING]", b"[INFO]")))
    return out


def ms_stamp(t: float) -> str:
    """MindSpore's own log time format: 2026-11-22-07:04:43.493.282."""
    d = datetime.fromtimestamp(t)
    return d.strftime("%Y-%m-%d-%H:%M:%S") + f".{d.microsecond // 1000:03d}.{d.microsecond % 1000:03d}"


def _loss(rank: int, step: int) -> float:
    """A decreasing loss with per-rank jitter; printed with repr, as MindSpore does (17 digits)."""
    return 2.3 / (1.0 + 0.002 * step) + ((rank * 7919 + step * 104729) % 1000) * 1e-6


def write_run(root: Path | str, ranks: int, steps: int, *, straggler: int | None = None,
              hung: int | None = None, crashed: list[int] | tuple[int, ...] = (), first_crashed: int | None = None,
              noise_per_step: int = 9, steps_per_epoch: int = 100, step_ms: float = 500.0,
              straggler_factor: float = 1.6, hung_at: float = 0.5, crash_at: float = 0.8,
              seed: int = 0) -> SynthRun:
    """Write an msrun log folder. `crashed` ranks raise the same exception at `crash_at` of the run,
    `first_crashed` (default the first of them) 3 s before the others; `hung` stops at `hung_at`;
    `straggler` reports `straggler_factor` x the step time. The others run every step."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    noise = noise_lines()
    rng = random.Random(seed)
    crashed = list(crashed)
    first = first_crashed if first_crashed is not None else (crashed[0] if crashed else None)
    step_s = step_ms / 1000.0
    loss_lines = 0
    total = 0
    for r in range(ranks):
        pid = b"%d" % (20000 + r)
        header = [_RE_PID.sub(lambda m, p=pid: b"(" + p + m.group(2), line, count=1) for line in noise[:24]]
        last = steps
        if r == hung:
            last = int(steps * hung_at)
        crash_step = int(steps * crash_at) if r in crashed else None
        if crash_step is not None:
            last = crash_step
        out: list[bytes] = header
        per_step = step_ms * (straggler_factor if r == straggler else 1.0)
        for s in range(1, last + 1):
            for _ in range(noise_per_step):
                out.append(noise[rng.randrange(len(noise))])
            epoch, in_epoch = (s - 1) // steps_per_epoch + 1, (s - 1) % steps_per_epoch + 1
            out.append(b"epoch: %d step: %d, loss is %r\n" % (epoch, in_epoch, _loss(r, s)))
            if in_epoch == steps_per_epoch:
                jitter = 1.0 + ((r * 31 + s) % 7) * 0.002
                out.append(b"Train epoch time: %.3f ms, per step time: %.3f ms\n"
                           % (per_step * jitter * steps_per_epoch, per_step * jitter))
        end_time = START + last * step_s
        if crash_step is not None:
            end_time += (0.0 if r == first else 3.0) + (r % 5) * 0.01
            out.append(f"[WARNING] DEVICE({20000 + r},7f727a665e40,python):{ms_stamp(end_time)} "
                       f"[mindspore/ccsrc/plugin/cpu/res_manager/mem_manager.cc:86] MallocMemFromMemPool] "
                       f"Malloc failed, retry.\n".encode())
            out.append(TRACEBACK.format(exception=EXCEPTION).encode())
        data = b"".join(out)
        path = root / f"worker_{r}.log"
        path.write_bytes(data)
        os.utime(path, (end_time, end_time))
        loss_lines += last
        total += len(data)
    sched = root / "scheduler.log"
    sched.write_bytes(b"".join(noise[:5]))
    os.utime(sched, (START, START))
    return SynthRun(root, ranks, steps, straggler, hung, crashed, first, loss_lines, total)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--ranks", type=int, default=256)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--noise", type=int, default=9, help="noise lines per loss line (9 = 90 %% noise)")
    args = p.parse_args(argv)
    n = args.ranks
    run = write_run(args.out, n, args.steps, straggler=n // 3, hung=n // 2, crashed=[2 * n // 3],
                    noise_per_step=args.noise)
    print(f"{run.root}: {n} ranks, {run.loss_lines} loss lines, {run.bytes / 1e6:.0f} MB; "
          f"straggler {run.straggler}, hung {run.hung}, crashed {run.crashed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
