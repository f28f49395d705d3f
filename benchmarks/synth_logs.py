"""Synthetic N-rank msrun log folders with a straggler, a hung rank and a crashed rank injected.

    .venv/bin/python benchmarks/synth_logs.py OUT_DIR --ranks 1024 --steps 2000 [--noise 9] [--format NAME]

Formats (`LINE_FORMATS`): `lossmonitor` (MindSpore LossMonitor, full float repr), `mindformers` (MindFormers
2.x `[INFO] <date> [...callback.py:747] print_output_info: { Epoch:[..], step:[..], loss:[a/b], ...`, with
MindFormers' own real `[INFO]`/`[WARNING]` lines as extra noise), `mindcv` (MindCV/MindOCR
`[<date>] mindcv.utils.callbacks INFO - Epoch: [e/n], batch: [s/m], loss: ...`) and `megatron` (Megatron-LM /
MindSpeed-LLM ` iteration N/ M | ... | lm loss: 2.504220E+00 | ...`).

Each `worker_{r}.log` is what MindSpore 2.10 writes under msrun: noise in the shapes of real `[WARNING]`/`[INFO]`
lines (tests/fixtures/real_msrun_logs and the suite's own), each with its own rising time, the rank's pid and its own
numbers (benchmarks/synth_noise.py; `--noise-mode fixed`: the real lines verbatim, for comparison), LossMonitor
lines with full float repr values (`epoch: 1 step: 7, loss is 2.3139476776123047`), a TimeMonitor line per epoch,
and for a crashed rank a traceback after a time-stamped line. File mtimes are set to the time each rank last
wrote, so a reader sees the same time evidence as after a real run. Used by tests/test_diagnose.py
and benchmarks/bench_logs.py (importable: `write_run`).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
import synth_noise  # noqa: E402

NOISE_MODES = ("varied", "fixed")
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
        out.extend(
            line + b"\n" for line in path.read_bytes().splitlines() if line.startswith((b"[WARNING]", b"[INFO]"))
        )
    return out


def ms_stamp(t: float) -> str:
    """MindSpore's own log time format: 2026-11-22-07:04:43.493.282."""
    d = datetime.fromtimestamp(t)
    return d.strftime("%Y-%m-%d-%H:%M:%S") + f".{d.microsecond // 1000:03d}.{d.microsecond % 1000:03d}"


def _stamp(t: float) -> str:
    d = datetime.fromtimestamp(t)
    return d.strftime("%Y-%m-%d %H:%M:%S") + f",{d.microsecond // 1000:03d}"


def _lossmonitor(
    epoch: int, in_epoch: int, per_epoch: int, epochs: int, step: int, total: int, loss: float, step_ms: float, t: float
) -> bytes:
    return b"epoch: %d step: %d, loss is %r\n" % (epoch, in_epoch, loss)


def _mindformers(
    epoch: int, in_epoch: int, per_epoch: int, epochs: int, step: int, total: int, loss: float, step_ms: float, t: float
) -> bytes:
    return (
        f"[INFO] {_stamp(t)} [mindformers/core/callback/callback.py:747] print_output_info: "
        f"{{ Epoch:[{epoch:3d}/{epochs:3d}], step:[{in_epoch:5d}/{per_epoch:5d}], loss:[{loss:.6f}/{loss:.6f}], "
        f"per_step_time: {int(step_ms)}ms, lr: 0.003, overflow cond: False, loss_scale: 1.0, "
        f"global_norm: [{loss / 3:.8f}], train_throughput_per_npu: 0.000T\n"
    ).encode()


def _mindcv(
    epoch: int, in_epoch: int, per_epoch: int, epochs: int, step: int, total: int, loss: float, step_ms: float, t: float
) -> bytes:
    return (
        f"[{_stamp(t)[:19]}] mindcv.utils.callbacks INFO - Epoch: [{epoch}/{epochs}], batch: "
        f"[{in_epoch}/{per_epoch}], loss: {loss:.6f}, lr: 0.010000, time: {step_ms / 1000:.6f}s\n"
    ).encode()


def _megatron(
    epoch: int, in_epoch: int, per_epoch: int, epochs: int, step: int, total: int, loss: float, step_ms: float, t: float
) -> bytes:
    return (
        f" iteration {step:8d}/{total:8d} | consumed samples: {step * 1024:12d} | elapsed time per iteration "
        f"(ms): {step_ms:.1f} | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: {loss:.6E} | "
        f"loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 | number of nan iterations:"
        f"   0 |\n"
    ).encode()


LINE_FORMATS = {
    "lossmonitor": (_lossmonitor, "loss is"),
    "mindformers": (_mindformers, "print_output_info"),
    "mindcv": (_mindcv, "mindcv.utils.callbacks INFO - Epoch"),
    "megatron": (_megatron, "lm loss:"),
}
"""Format name -> (loss line maker, the fixed string `grep -c` counts the loss lines by)."""


def suite_noise(fmt: str) -> list[bytes]:
    """The suite's own real non-loss lines (added to the MindSpore noise), from tests/fixtures/logs/formats."""
    formats = REPO / "tests" / "fixtures" / "logs" / "formats"
    if fmt == "mindformers":
        return [line + b"\n" for line in (formats / "mindformers_2x_noise.log").read_bytes().splitlines()]
    if fmt == "mindcv":
        return [
            line + b"\n"
            for line in (formats / "mindcv" / "worker_0.log").read_bytes().splitlines()
            if b"loss" not in line.lower() and b"vali" not in line.lower()
        ]
    return []


def _loss(rank: int, step: int) -> float:
    """A decreasing loss with per-rank jitter; printed with repr, as MindSpore does (17 digits)."""
    return 2.3 / (1.0 + 0.002 * step) + ((rank * 7919 + step * 104729) % 1000) * 1e-6


def write_run(
    root: Path | str,
    ranks: int,
    steps: int,
    *,
    straggler: int | None = None,
    hung: int | None = None,
    crashed: list[int] | tuple[int, ...] = (),
    first_crashed: int | None = None,
    noise_per_step: int = 9,
    steps_per_epoch: int = 100,
    step_ms: float = 500.0,
    straggler_factor: float = 1.6,
    hung_at: float = 0.5,
    crash_at: float = 0.8,
    seed: int = 0,
    fmt: str = "lossmonitor",
    noise: str = "varied",
    workers: int = 1,
) -> SynthRun:
    """Write an msrun log folder. `crashed` ranks raise the same exception at `crash_at` of the run,
    `first_crashed` (default the first of them) 3 s before the others; `hung` stops at `hung_at`;
    `straggler` reports `straggler_factor` x the step time. The others run every step.

    `noise`: "varied" (as real logs: every noise line its own rising time, the rank's pid and thread ids,
    its own numbers; benchmarks/synth_noise.py) or "fixed" (the earlier folders, kept for comparison only:
    real lines repeated verbatim, their stamps and pids as in the fixtures, the pid of the first 24 rewritten).
    `workers` > 1: ranks written by that many forked processes (the same files)."""
    if noise not in NOISE_MODES:
        raise ValueError(f"noise must be one of {NOISE_MODES}, not {noise!r}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    shapes = synth_noise.shapes_for(fmt) if noise == "varied" else []
    fixed = noise_lines() + suite_noise(fmt) * 4
    make = LINE_FORMATS[fmt][0]
    epochs = -(-steps // steps_per_epoch)
    crashed = list(crashed)
    first = first_crashed if first_crashed is not None else (crashed[0] if crashed else None)
    step_s = step_ms / 1000.0

    def one(r: int) -> tuple[int, int]:
        """Write rank r's log; (its loss lines, its bytes)."""
        rng = random.Random(seed * 1_000_003 + r)
        pid = b"%d" % (20000 + r)
        if shapes:
            varied = synth_noise.VariedNoise(shapes, r, 20000 + r, seed)
            header = [varied.line(START - 30.0 + i, pick=i) for i in range(24)]
        else:
            header = [_RE_PID.sub(lambda m, p=pid: b"(" + p + m.group(2), line, count=1) for line in fixed[:24]]
        last = steps
        if r == hung:
            last = int(steps * hung_at)
        crash_step = int(steps * crash_at) if r in crashed else None
        if crash_step is not None:
            last = crash_step
        out: list[bytes] = header
        per_step = step_ms * (straggler_factor if r == straggler else 1.0)
        for s in range(1, last + 1):
            if shapes:
                t0, dt = START + (s - 1) * step_s, step_s / (noise_per_step + 1)
                out.extend(varied.line(t0 + (k + 1) * dt) for k in range(noise_per_step))
            else:
                for _ in range(noise_per_step):
                    out.append(fixed[rng.randrange(len(fixed))])
            epoch, in_epoch = (s - 1) // steps_per_epoch + 1, (s - 1) % steps_per_epoch + 1
            out.append(
                make(epoch, in_epoch, steps_per_epoch, epochs, s, steps, _loss(r, s), per_step, START + s * step_s)
            )
            if in_epoch == steps_per_epoch and fmt == "lossmonitor":
                jitter = 1.0 + ((r * 31 + s) % 7) * 0.002
                out.append(
                    b"Train epoch time: %.3f ms, per step time: %.3f ms\n"
                    % (per_step * jitter * steps_per_epoch, per_step * jitter)
                )
        end_time = START + last * step_s
        if crash_step is not None:
            end_time += (0.0 if r == first else 3.0) + (r % 5) * 0.01
            out.append(
                f"[WARNING] DEVICE({20000 + r},7f727a665e40,python):{ms_stamp(end_time)} "
                f"[mindspore/ccsrc/plugin/cpu/res_manager/mem_manager.cc:86] MallocMemFromMemPool] "
                f"Malloc failed, retry.\n".encode()
            )
            out.append(TRACEBACK.format(exception=EXCEPTION).encode())
        data = b"".join(out)
        path = root / f"worker_{r}.log"
        path.write_bytes(data)
        os.utime(path, (end_time, end_time))
        return last, len(data)

    if workers > 1:  # forked: the children see `one` as it is
        global _JOB
        _JOB = one
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            done = pool.map(_run_job, range(ranks), chunksize=max(1, ranks // (8 * workers)))
    else:
        done = [one(r) for r in range(ranks)]
    loss_lines = sum(d[0] for d in done)
    total = sum(d[1] for d in done)
    sched = root / "scheduler.log"
    sched.write_bytes(b"".join(fixed[:5]))
    os.utime(sched, (START, START))
    return SynthRun(root, ranks, steps, straggler, hung, crashed, first, loss_lines, total)


_JOB: Callable[[int], tuple[int, int]] | None = None  # write_run's rank writer, for forked workers


def _run_job(r: int) -> tuple[int, int]:
    assert _JOB is not None
    return _JOB(r)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--ranks", type=int, default=256)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--noise", type=int, default=9, help="noise lines per loss line (9 = 90 %% noise)")
    p.add_argument("--format", default="lossmonitor", choices=sorted(LINE_FORMATS))
    p.add_argument("--noise-mode", default="varied", choices=NOISE_MODES, help="fixed: the earlier verbatim repeat")
    args = p.parse_args(argv)
    n = args.ranks
    run = write_run(
        args.out,
        n,
        args.steps,
        straggler=n // 3,
        hung=n // 2,
        crashed=[2 * n // 3],
        noise_per_step=args.noise,
        fmt=args.format,
        noise=args.noise_mode,
    )
    print(
        f"{run.root}: {n} ranks, {run.loss_lines} loss lines, {run.bytes / 1e6:.0f} MB; "
        f"straggler {run.straggler}, hung {run.hung}, crashed {run.crashed}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
