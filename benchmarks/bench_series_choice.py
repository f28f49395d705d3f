"""Cost of the training series decided per file (core.logs.rows.perfile) as a run grows: one file whose rows
the rules set aside (an Oscar-Paddle epoch summary every 100 steps, a TFLearn echo of every step) read at
several lengths; per length, the CPU time of the decision a snapshot makes (`MetricTable.set_aside` +
`split_series` over the file's rows), beside the time of the table's frame alone (what every snapshot costs).
Linear growth: the time per row stays flat as the run grows 10x. Then the live tick (refresh + snapshot,
CPU ms p50 / p95 over `--ticks` ticks, a step line appended to every rank) at `--ranks` ranks of 200 steps,
every file with epoch summaries (the rule decides over every row each tick) and none (LossMonitor rows).

    .venv/bin/python benchmarks/bench_series_choice.py [--rows 20000,200000,2000000] [--repeat 3] [--ranks 1024]

Not a test: speed is never asserted, only printed.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.logs import ReaderSettings
from core.logs.rows.reader import RunReader
from core.logs.rows.snapshot import split_series

STEP = "01/02/2022 23:11:34 - INFO - Epoch: [{e}], step: [{s}], lr: 0.000010, batch_loss: {b:.4f}, avg_loss: 0.0669\n"
DONE = "01/03/2022 02:19:43 - INFO - ** ** Epoch [{e}] done! Training loss: {x:.5f} ** **\n"
TF_STEP = "Training Step: {s}  | total loss: {x:.5f} | time: 0.275s\n"
TF_ADAM = "| Adam | epoch: 001 | loss: {x:.5f} - acc: 0.2720 -- iter: {i:05d}/55000\n"


def _oscar(rows: int) -> str:
    """Step rows, an epoch's summary after every 100."""
    return "".join(
        STEP.format(e=s // 100 + 1, s=s, b=1 / (s + 1)) + (DONE.format(e=s // 100 + 1, x=0.5) if s % 100 == 99 else "")
        for s in range(rows)
    )


def _tflearn(rows: int) -> str:
    """Every step twice, the same loss in two shapes."""
    return "".join(
        TF_STEP.format(s=s, x=2 - s / rows) + TF_ADAM.format(x=2 - s / rows, i=s % 99999) for s in range(rows // 2)
    )


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="20000,200000,2000000", help="loss lines per file, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=1024, help="ranks of the live-tick folders (0: no tick)")
    ap.add_argument("--ticks", type=int, default=20)
    args = ap.parse_args()
    print(f"{'shape':8} {'rows':>9} {'set aside':>9} {'frame ms':>9} {'decision ms':>12} {'decision ns/row':>16}")
    for name, make in (("oscar", _oscar), ("tflearn", _tflearn)):
        for rows in (int(x) for x in args.rows.split(",")):
            with tempfile.TemporaryDirectory() as tmp:
                (Path(tmp) / "workerlog.0").write_text(make(rows))
                reader = RunReader(Path(tmp), settings=ReaderSettings(), one_shot=True)
                reader.refresh()
                snap = reader.snapshot()
                table = reader._table  # the reader's own table (a benchmark times one step of its snapshot)
                evals, ranks = snap.evals, snap.ranks
                aside = table.set_aside()
                n_aside = int((aside != 0).sum()) if aside is not None else 0
                frame = _best(table.frame, args.repeat)
                split = functools.partial(split_series, evals=evals, ranks=ranks)
                decide = _best(lambda t=table, s=split: s(t.frame(), t.set_aside()), args.repeat)
                n = len(table)
                print(f"{name:8} {n:9,} {n_aside:9,} {frame * 1e3:9.1f} {decide * 1e3:12.1f} {decide / n * 1e9:16.1f}")

    if args.ranks:
        for name in ("summaries", "lossmonitor"):
            p50, p95 = _ticks(name, args.ranks, args.ticks)
            print(f"live tick, {args.ranks} ranks x 200 steps, {name}: CPU p50 {p50:.1f} ms, p95 {p95:.1f} ms")


def _ticks(shape: str, ranks: int, ticks: int) -> tuple[float, float]:
    """CPU ms (p50, p95) of `ticks` live ticks over `ranks` files, each given one step line per tick."""
    lossmonitor = "epoch: 1 step: {s}, loss is {b:.6f}\n"
    with tempfile.TemporaryDirectory() as tmp:
        files = [Path(tmp) / f"worker_{r}.log" for r in range(ranks)]
        for r, path in enumerate(files):
            path.write_text(
                _oscar(200)
                if shape == "summaries"
                else "".join(lossmonitor.format(s=s, b=1 / (s + r + 1)) for s in range(200))
            )
        reader = RunReader(Path(tmp))
        reader.refresh()
        reader.snapshot()
        took = []
        for t in range(ticks):
            for r, path in enumerate(files):
                with path.open("a") as f:
                    line = (
                        STEP.format(e=3, s=1000 + t, b=1 / (t + r + 2))
                        if shape == "summaries"
                        else lossmonitor.format(s=1000 + t, b=1 / (t + r + 2))
                    )
                    f.write(line)
            t0 = time.process_time()
            reader.refresh()
            reader.snapshot()
            took.append((time.process_time() - t0) * 1e3)
    took.sort()
    return statistics.median(took), took[max(0, int(len(took) * 0.95) - 1)]


if __name__ == "__main__":
    main()
