"""Ingest, memory, diagnosis and live-tick figures at 8, 64, 256, 1,024 ranks, side by side with grep.

    .venv/bin/python benchmarks/bench_logs_scale.py [--ranks 8,64,256,1024] [--steps 500] [--noise 9]
                                                    [--format lossmonitor,mindformers,mindcv,megatron]

Each folder comes from benchmarks/synth_logs.py (real MindSpore noise, the suite's loss lines: `--format`
takes one or several of synth_logs.LINE_FORMATS, a straggler, a hung and a crashed rank). Per folder, in
the same run:
- two greps over the worker logs (output captured and checked: GNU grep stops at the first match when
  its output is /dev/null), best of 2 each: `grep -c -F loss` (grepL, ratioL: the warm read against it),
  the same word for every format, the one a user greps for (on these folders it counts exactly the loss
  lines) and the measure issue 18's own figure fits (319 MB of MindFormers lines in 0.21 s: 1.5 GB/s;
  `loss` runs at 1.6-1.9 GB/s here); and `grep -c -F` of the format's longest loss-line string (`loss is`,
  `print_output_info`, `mindcv.utils.callbacks INFO - Epoch`: grep s, ratio), a stricter reference that
  measures how far grep's skip loop can jump (3.5 GB/s for MindFormers', 5-6 GB/s for MindCV's), not the
  work of reading a log: a reader must look at every line for a failure;
- `read_run` in a fresh child process (best of 2): seconds, MB/s, ratio to grep, peak RSS growth
  against the loss table's own size; the first read of a process includes loading the compiled passes
  (numba's import and cached code, ~0.5 s once), so a second `read_run` in the same child ("warm": a
  dashboard server reading its next folder) is timed too;
- `diagnose` on the snapshot, and whether it named the injected ranks;
- a live tick: one new step (9 noise lines + a loss line) appended to every rank, then refresh +
  snapshot + diagnose, p50/p95 over 10 ticks;
- above 32 ranks, the Monitor's chart payload per tick (aggregate chart + heatmap, plotly JSON).
Not a test: speed is never asserted, only printed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import synth_logs  # noqa: E402

_CHILD = r"""
import json, resource, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.rows.reader import RunReader
root, mode = sys.argv[2], sys.argv[3]
sys.path.insert(0, sys.argv[1] + "/benchmarks")
import synth_logs
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if mode == "read":
    t0 = time.perf_counter(); snap = read_run(root); dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter(); read_run(root); warm = time.perf_counter() - t0  # a server's next folder
    table = int(snap.metrics.drop(columns="file").memory_usage(index=False, deep=False).sum()) + 8 * len(snap.metrics)
    t0 = time.perf_counter(); d = diagnose(snap); ddt = time.perf_counter() - t0
    payload = 0
    if len(snap.ranks) > 32:  # what one Monitor tick sends: aggregate chart + heatmap (plotly JSON)
        import plotly.io as pio
        from app.monitor import scale
        g = scale.grids(snap)
        look = scale.look_at(d, g)["rank"].tolist()[:8]
        payload = sum(len(pio.to_json(f, validate=False)) for f in (
            scale.aggregate_figure(g, look, 0.6), scale.heatmap_figure(g.loss, g.ranks, g.x, "loss", "step")))
    print(json.dumps({"read_s": dt, "warm_s": warm, "rows": len(snap.metrics), "rss_growth": (peak - base) * 1024,
                      "table_bytes": table, "diagnose_s": ddt, "payload": payload,
                      "stragglers": [s.rank for s in d.stragglers], "hung": [h.rank for h in d.hung],
                      "failed": [g.ranks for g in d.failure_groups]}))
else:
    noise = open(sys.argv[4], "rb").read()
    make = synth_logs.LINE_FORMATS[sys.argv[5]][0]
    state = RunReader(root); state.refresh(); state.snapshot()
    files = sorted(p for p in state.files if p.name.startswith("worker_"))
    ticks = []
    for k in range(10):
        for p in files:
            with open(p, "ab") as f:
                f.write(noise + make(99, k + 1, 100, 99, 9900 + k + 1, 10000, 2.3139476776123047, 500.0,
                                     synth_logs.START))
        t0 = time.perf_counter(); state.refresh(); diagnose(state.snapshot()); ticks.append(time.perf_counter() - t0)
    ticks.sort()
    print(json.dumps({"p50": statistics.median(ticks), "p95": ticks[int(0.95 * (len(ticks) - 1))]}))
"""


def _child(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(REPO), *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(root: Path, ranks: int, steps: int, noise: int, fmt: str) -> None:
    run_dir = root / f"r{ranks}"
    t0 = time.perf_counter()
    run = synth_logs.write_run(
        run_dir,
        ranks,
        steps,
        straggler=ranks // 3,
        hung=ranks // 2,
        crashed=[2 * ranks // 3 + 1],
        noise_per_step=noise,
        fmt=fmt,
    )
    needle = synth_logs.LINE_FORMATS[fmt][1]
    gen = time.perf_counter() - t0
    files = sorted(str(p) for p in run_dir.glob("worker_*.log"))
    mb = run.bytes / (1 << 20)
    subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)  # warm the page cache

    def grep(text: str) -> float:
        t = time.perf_counter()
        out = subprocess.run(["grep", "-c", "-F", text, *files], capture_output=True, text=True, check=True)
        dt = time.perf_counter() - t
        count = sum(int(line.rsplit(":", 1)[1]) for line in out.stdout.split())
        assert count == run.loss_lines, (text, count, run.loss_lines)
        return dt

    t_grep = min(grep(needle) for _ in range(2))
    t_grep_loss = min(grep("loss") for _ in range(2))  # the word a user greps for; every format has it
    reads = [_child(str(run_dir), "read") for _ in range(2)]
    best = min(reads, key=lambda r: r["read_s"])
    warm = min(r["warm_s"] for r in reads)
    rows_ok = best["rows"] == run.loss_lines  # a reader that misses lines is reported, not timed as if fine
    named = best["stragglers"] == [run.straggler] and best["hung"] == [run.hung] and best["failed"] == [run.crashed]
    noise_block = root / "noise.bin"
    noise_block.write_bytes(b"".join(synth_logs.noise_lines()[30 : 30 + noise]))
    tick = _child(str(run_dir), "tick", str(noise_block), fmt)
    print(
        f"{fmt:>11} {ranks:6d} {mb:8.0f} {run.loss_lines:10d} {t_grep:8.2f} {mb / t_grep:8.0f} "
        f"{best['read_s']:8.2f} {mb / best['read_s']:8.0f} {t_grep / best['read_s']:6.2f}x "
        f"{warm:7.2f} {t_grep / warm:6.2f}x {t_grep_loss:7.2f} {t_grep_loss / warm:6.2f}x "
        f"{best['rss_growth'] / 1e6:8.0f} {best['table_bytes'] / 1e6:8.0f} "
        f"{best['rss_growth'] / max(best['table_bytes'], 1):6.2f}x {best['diagnose_s'] * 1000:7.0f} "
        f"{tick['p50'] * 1000:7.0f} {tick['p95'] * 1000:7.0f} {best['payload'] / 1e3:7.0f}  "
        f"{'yes' if named else 'NO'}  {'all' if rows_ok else 'ROWS ' + str(best['rows'])}  (gen {gen:.0f} s)",
        flush=True,
    )
    shutil.rmtree(run_dir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="8,64,256,1024")
    ap.add_argument("--steps", type=int, default=500, help="steps per rank (the issue's figure is 2000)")
    ap.add_argument("--noise", type=int, default=9, help="noise lines per loss line (9 = 90 %% noise)")
    ap.add_argument(
        "--format",
        default="lossmonitor",
        help=f"one or several (comma-separated) of {', '.join(synth_logs.LINE_FORMATS)}",
    )
    args = ap.parse_args()
    formats = args.format.split(",")
    unknown = [f for f in formats if f not in synth_logs.LINE_FORMATS]
    if unknown:
        ap.error(f"unknown format(s) {unknown}; use {sorted(synth_logs.LINE_FORMATS)}")
    print(f"steps per rank {args.steps}, {args.noise} real noise lines per loss line, full float repr losses")
    print(
        "     format  ranks       MB  loss rows   grep s   grep/s   ours s   ours/s  ratio  warm s  ratio "
        "grepL s ratioL   "
        "RSS MB table MB  RSS/tbl diag ms tick50 tick95 chartKB  named rows"
    )
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmp:
        for fmt in formats:
            for n in (int(x) for x in args.ranks.split(",")):
                bench(Path(tmp), n, args.steps, args.noise, fmt)


if __name__ == "__main__":
    main()
