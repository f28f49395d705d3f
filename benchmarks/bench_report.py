"""Benchmark the shared report and the TensorBoard export at full size (not a test: it prints figures).

    .venv/bin/python benchmarks/bench_report.py [--ranks 1024] [--steps 2000] [--noise 0]

Writes a synthetic msrun folder (benchmarks/synth_logs.py: a straggler, a hung and a crashed rank), then
times `python -m core report` (with the cartesian plotly bundle, and with plotly's full bundle) and
`python -m core export --tensorboard`, and prints each one's size against the 5 MB bound of issue 34.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.synth_logs import write_run  # noqa: E402

BOUND = 5_000_000
FULL_BUNDLE = "import core.report.make as m, pathlib, sys; m.CARTESIAN_BUNDLE = pathlib.Path('/nonexistent'); "


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _tree_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=1024)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--noise", type=int, default=0, help="noise lines per loss line (the report does not depend on it)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_report_") as tmp:
        logs = Path(tmp) / "logs"
        t = time.perf_counter()
        write_run(logs, args.ranks, args.steps, straggler=1, hung=2, crashed=[3], noise_per_step=args.noise)
        print(f"{args.ranks} ranks x {args.steps} steps written in {time.perf_counter() - t:.1f} s")
        py = sys.executable
        html = Path(tmp) / "run.html"
        s = _timed([py, "-m", "core", "report", str(logs), "--out", str(html)])
        size = html.stat().st_size
        print(f"report (cartesian bundle): {size:,} bytes ({size / BOUND:.0%} of 5 MB) in {s:.1f} s")
        full = Path(tmp) / "full.html"
        run = f"sys.exit(main(['report', {str(logs)!r}, '--out', {str(full)!r}]))"
        code = FULL_BUNDLE + "from core.__main__ import main; " + run
        s = _timed([py, "-c", code])
        size = full.stat().st_size
        print(f"report (full plotly bundle): {size:,} bytes ({size / BOUND:.0%} of 5 MB) in {s:.1f} s")
        tb = Path(tmp) / "tb"
        s = _timed([py, "-m", "core", "export", str(logs), "--tensorboard", str(tb)])
        folders = len(list(tb.iterdir()))
        print(f"export --tensorboard: {_tree_bytes(tb) / 1e6:,.1f} MB in {folders} folders in {s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
