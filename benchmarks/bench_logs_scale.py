"""Ingest, diagnosis and live-tick figures at 1,024 ranks (or any), side by side with `grep -c -F loss`.

    .venv/bin/python benchmarks/bench_logs_scale.py [--ranks 1024] [--steps 200,2000] [--noise 9] [--repeat 3]
        [--format lossmonitor,mindformers,mindcv,megatron,corpus] [--noise-mode varied|fixed] [--ticks 20]

Folders:
- the suites' formats (benchmarks/synth_logs.py `LINE_FORMATS`): each rank's loss lines with `--noise` noise lines
  per loss line that vary as real ones do (benchmarks/synth_noise.py: every line its own rising time, the
  rank's own pid and thread ids, its own numbers, in the shapes of each suite's real noise), a straggler, a hung
  and a crashed rank. `--noise-mode fixed` writes the earlier folders instead (real lines repeated verbatim,
  their fixture stamps and pids): for comparison only, they flatter a reader;
- `corpus` (benchmarks/synth_corpus.py): each rank a real log of tests/fixtures/real_logs, its times shifted
  per rank (its own length: `--steps` does not apply).

Per folder, in the same run, `--repeat` rounds of: `grep -c -F loss` over the worker logs (output captured,
its count printed: GNU grep stops at the first match when its output is /dev/null) and `read_run` in a fresh
child process (a cold read, then a warm one: a dashboard reading its next folder; the warm one is the
reader's time); with `--baseline`, another checkout's reader reads each folder in the same rounds (before/after
side by side). The medians are printed, and the ratio is the median of the rounds' grep / reader ratios
(each pair measured back to back: a load spike from other jobs hits both), on wall time and on CPU time (user +
system: grep's as its child's rusage, the reader's as its process's, every thread counted): on a shared machine
the CPU ratio is the fair one, as waiting for a core counts in neither. Then `diagnose` (whether it named
the injected ranks) and the live tick: new lines appended to every rank (one step: `--noise` varied noise
lines and a loss line; corpus: each log's last 10 lines again), then refresh + snapshot + diagnose, p50/p95
over 20 ticks in wall time and in CPU time (the process's, every thread: on a loaded machine the wall time
counts the wait for a core), `--repeat` times (median; the codes' rounds interleaved, each on the folder as written: the
child truncates what it appended), the heap settled as `RunWatcher` settles it (`settle_heap`). The load
average is printed with each row. Not a test: speed is never asserted, only printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import synth_corpus  # noqa: E402
import synth_logs  # noqa: E402
import synth_noise  # noqa: E402

FORMATS = (*synth_logs.LINE_FORMATS, "corpus")
TICKS = 20

_CHILD = r"""
import json, resource, statistics, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/benchmarks")
from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.rows.reader import RunReader
root, mode = sys.argv[2], sys.argv[3]
if mode == "read":
    t0 = time.perf_counter(); snap = read_run(root); cold = time.perf_counter() - t0
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter(); snap = read_run(root); warm = time.perf_counter() - t0  # a server's next folder
    r1 = resource.getrusage(resource.RUSAGE_SELF)  # every thread's CPU time (the read-ahead and scan helpers too)
    warm_cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    t0 = time.perf_counter(); d = diagnose(snap); ddt = time.perf_counter() - t0
    print(json.dumps({"cold_s": cold, "warm_s": warm, "warm_cpu_s": warm_cpu, "rows": len(snap.metrics),
                      "diagnose_s": ddt,
                      "stragglers": [s.rank for s in d.stragglers], "hung": [h.rank for h in d.hung],
                      "failed": [g.ranks for g in d.failure_groups]}))
else:
    fmt, steps, noise, mode_noise = sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
    ticks = int(sys.argv[8])
    import contextlib
    from core.logs.live import heap
    from core.logs.live.heap import settle_heap
    pause = getattr(heap, "paused_collector", contextlib.nullcontext)  # the watcher's tick policy (older code: none)
    state = RunReader(root, after_big_read=settle_heap); state.refresh(); state.snapshot()  # as RunWatcher does
    settle_heap()
    files = sorted((p for p in state.files if p.name.startswith("worker_")), key=lambda p: int(p.stem.split("_")[1]))
    if fmt == "corpus":
        tails = [b"".join(p.read_bytes().splitlines(keepends=True)[-10:]) for p in files]
        step = lambda k: tails
    else:
        import synth_logs, synth_noise
        make = synth_logs.LINE_FORMATS[fmt][0]
        shapes = synth_noise.shapes_for(fmt)
        fixed = b"".join(synth_logs.noise_lines()[30 : 30 + noise])
        gens = [synth_noise.VariedNoise(shapes, r, 20000 + r, 7) for r in range(len(files))]
        def step(k):
            s = steps + k + 1
            t0 = synth_logs.START + (s - 1) * 0.5
            loss = make(s // 100 + 1, s % 100 + 1, 100, s // 100 + 1, s, s, 2.3139476776123047, 500.0, t0 + 0.5)
            if mode_noise == "fixed":
                return [fixed + loss] * len(files)
            return [b"".join(g.line(t0 + (i + 1) * 0.5 / (noise + 1)) for i in range(noise)) + loss for g in gens]
    sizes = [p.stat().st_size for p in files]
    out, cpu = [], []
    for k in range(ticks):
        blocks = step(k)
        for p, b in zip(files, blocks):
            with open(p, "ab") as f:
                f.write(b)
        t0, c0 = time.perf_counter(), time.process_time()  # process_time: every thread's CPU (the read-ahead's too)
        with pause():  # as RunWatcher's refresh and snapshot each run
            state.refresh()
        with pause():
            snap = state.snapshot()
        diagnose(snap)
        out.append(time.perf_counter() - t0); cpu.append(time.process_time() - c0)
    import os
    for p, size in zip(files, sizes):  # the folder as it was: every code's every round ticks on the same history
        os.truncate(p, size)
    out.sort(); cpu.sort()
    print(json.dumps({"p50": statistics.median(out), "p95": out[int(0.95 * (len(out) - 1))],
                      "cpu_p50": statistics.median(cpu), "cpu_p95": cpu[int(0.95 * (len(cpu) - 1))]}))
"""


def _child(repo: Path, *args: str) -> dict:
    """The child in a fresh process, reading with the code of `repo` (this checkout, or --baseline's)."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(repo), *args], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


@dataclass
class Figures:
    """One folder's medians, for one checkout's code."""

    code: str
    fmt: str
    ranks: int
    steps: str
    mb: float
    grep_count: int
    rows_expected: int
    grep_s: float
    grep_cpu_s: float
    cold_s: float
    warm_s: float
    warm_cpu_s: float
    ratio: float
    ratios: list[float]
    cpu_ratio: float
    cpu_ratios: list[float]
    tick_p50_ms: float
    tick_p95_ms: float
    tick_cpu_p50_ms: float
    tick_cpu_p95_ms: float
    rows: int
    named: str
    load: str


def _grep(files: list[str]) -> tuple[float, float, int]:
    """grep's wall time, its CPU time (user + system, of the child: the machine may be shared) and its count."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(["grep", "-c", "-F", "loss", *files], capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return dt, cpu, sum(int(line.rsplit(":", 1)[1]) for line in out.stdout.split())


def bench(
    root: Path,
    fmt: str,
    ranks: int,
    steps: int,
    noise: int,
    repeat: int,
    noise_mode: str,
    codes: dict[str, Path],
    n_ticks: int = TICKS,
) -> list[Figures]:
    """One folder, read by each checkout of `codes` (name -> repo) in every round, after the round's grep."""
    run_dir = root / f"{fmt}_{ranks}_{steps}"
    t0 = time.perf_counter()
    if fmt == "corpus":
        crun = synth_corpus.write_corpus_run(run_dir, ranks)
        expected, size, injected = crun.loss_rows, crun.bytes, None
    else:
        run = synth_logs.write_run(
            run_dir,
            ranks,
            steps,
            straggler=ranks // 3,
            hung=ranks // 2,
            crashed=[2 * ranks // 3 + 1],
            noise_per_step=noise,
            fmt=fmt,
            noise=noise_mode,
            workers=2,
        )
        expected, size, injected = run.loss_lines, run.bytes, ([run.straggler], [run.hung], [run.crashed])
    shown = steps if fmt != "corpus" else "real"
    print(f"  {fmt} {ranks} x {shown}: written in {time.perf_counter() - t0:.0f} s", flush=True)
    files = sorted(str(p) for p in run_dir.glob("worker_*.log"))
    subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    greps: list[float] = []
    grep_cpus: list[float] = []
    reads: dict[str, list[dict]] = {name: [] for name in codes}
    ratios: dict[str, list[float]] = {name: [] for name in codes}
    cpu_ratios: dict[str, list[float]] = {name: [] for name in codes}
    count = 0
    for _ in range(repeat):
        g, gc, count = _grep(files)
        greps.append(g)
        grep_cpus.append(gc)
        for name, repo in codes.items():
            r = _child(repo, str(run_dir), "read")
            reads[name].append(r)
            ratios[name].append(g / r["warm_s"])
            cpu_ratios[name].append(gc / r["warm_cpu_s"])
    tick_args = (fmt, str(steps), str(noise), noise_mode, str(n_ticks))
    ticks: dict[str, list[dict]] = {name: [] for name in codes}
    for _ in range(repeat if n_ticks else 0):  # rounds interleaved, each on the folder as written (the child
        for name, repo in codes.items():  # truncates what it appended): neither code ticks on a longer history
            ticks[name].append(_child(repo, str(run_dir), "tick", *tick_args))
    for name in codes:
        nan = float("nan")  # --ticks 0: the reads only
        ticks[name] = ticks[name] or [{"p50": nan, "p95": nan, "cpu_p50": nan, "cpu_p95": nan}]
    shutil.rmtree(run_dir)
    out = []
    for name in codes:
        last = reads[name][-1]
        named = "-"
        if injected is not None:
            named = "yes" if (last["stragglers"], last["hung"], last["failed"]) == injected else "NO"
        out.append(
            Figures(
                name,
                fmt,
                ranks,
                str(shown),
                size / (1 << 20),
                count,
                expected,
                statistics.median(greps),
                statistics.median(grep_cpus),
                statistics.median(r["cold_s"] for r in reads[name]),
                statistics.median(r["warm_s"] for r in reads[name]),
                statistics.median(r["warm_cpu_s"] for r in reads[name]),
                statistics.median(ratios[name]),
                ratios[name],
                statistics.median(cpu_ratios[name]),
                cpu_ratios[name],
                statistics.median(t["p50"] for t in ticks[name]) * 1000,
                statistics.median(t["p95"] for t in ticks[name]) * 1000,
                statistics.median(t["cpu_p50"] for t in ticks[name]) * 1000,
                statistics.median(t["cpu_p95"] for t in ticks[name]) * 1000,
                last["rows"],
                named,
                " ".join(f"{x:.1f}" for x in os.getloadavg()),
            )
        )
    return out


HEAD = (
    "| code | format | ranks | steps | MB | grep -c loss (count) | grep s wall / cpu | reader s cold / warm / warm cpu "
    "| ratio wall (rounds) | ratio cpu (rounds) | tick p50 / p95 ms wall (cpu) | rows read / expected | injected named "
    "| load 1/5/15 |"
)


def row(f: Figures) -> str:
    rounds = ", ".join(f"{x:.2f}" for x in f.ratios)
    cpu_rounds = ", ".join(f"{x:.2f}" for x in f.cpu_ratios)
    return (
        f"| {f.code} | {f.fmt} | {f.ranks} | {f.steps} | {f.mb:.0f} | {f.grep_count} | {f.grep_s:.2f} / "
        f"{f.grep_cpu_s:.2f} | {f.cold_s:.2f} / {f.warm_s:.2f} / {f.warm_cpu_s:.2f} | **{f.ratio:.2f}x** ({rounds}) | "
        f"**{f.cpu_ratio:.2f}x** ({cpu_rounds}) | {f.tick_p50_ms:.0f} / {f.tick_p95_ms:.0f} "
        f"({f.tick_cpu_p50_ms:.0f} / {f.tick_cpu_p95_ms:.0f}) | "
        f"{f.rows} / {f.rows_expected} | {f.named} | {f.load} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="1024")
    ap.add_argument("--steps", default="200,2000", help="steps per rank, comma-separated (the issue's: 200,2000)")
    ap.add_argument("--noise", type=int, default=9, help="noise lines per loss line (9 = 90 %% noise)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds per folder (medians)")
    ap.add_argument("--format", default=",".join(FORMATS), help=f"comma-separated, of {', '.join(FORMATS)}")
    ap.add_argument("--noise-mode", default="varied", choices=synth_logs.NOISE_MODES)
    ap.add_argument("--ticks", type=int, default=TICKS, help="live ticks per round (0: the reads only, no tick)")
    ap.add_argument("--tmp", default=None, help="where folders are written (default: the system's temp dir)")
    ap.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another checkout (e.g. `git worktree add /tmp/base main`): its reader reads every folder too, in the "
        "same rounds, for before/after figures side by side",
    )
    args = ap.parse_args()
    formats = args.format.split(",")
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        ap.error(f"unknown format(s) {unknown}; use {list(FORMATS)}")
    steps = [int(x) for x in args.steps.split(",")]
    print(
        f"{args.noise} {args.noise_mode} noise lines per loss line; {args.repeat} rounds per folder; "
        f"load {os.getloadavg()}; {synth_noise.__name__}",
        flush=True,
    )
    codes = {"this": REPO} if args.baseline is None else {"baseline": args.baseline.resolve(), "this": REPO}
    results: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="bench_scale_", dir=args.tmp) as tmp:
        for n in (int(x) for x in args.ranks.split(",")):
            for s in steps:
                for fmt in formats:
                    if fmt == "corpus" and s != steps[0]:
                        continue  # its own length
                    got = bench(Path(tmp), fmt, n, s, args.noise, args.repeat, args.noise_mode, codes, args.ticks)
                    results.extend(got)
                    for f in got:
                        print(row(f), flush=True)
    print()
    print(HEAD)
    print("|---" * (HEAD.count("|") - 1) + "|")
    for f in results:
        print(row(f))


if __name__ == "__main__":
    main()
