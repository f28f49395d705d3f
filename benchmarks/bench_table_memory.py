"""Memory per loss row (issue 31 item 6): the loss table's own bytes per row, and RSS against the log's size
for `read_run` and `python -m core watch --once`, on any log folder (e.g. one ~100 MB log from
`benchmarks/synth_logs.py OUT --ranks 1 --steps 2400000 --noise 0`).

    .venv/bin/python benchmarks/bench_table_memory.py LOG_DIR [--repo REPO]

`--repo` runs another checkout's code (the figures before a change). Each measure runs in a fresh child
process: RSS after the imports and a small warm-up read that loads the compiled passes (idle), after the
read (the snapshot held), and the peak. A benchmark,
not a test: it prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
import numpy, pandas
from core.logs.rows.reader import RunReader
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
import tempfile, pathlib
with tempfile.TemporaryDirectory() as warm:  # load the compiled passes (numba) first: idle includes them
    lines = "".join(f"epoch: 1 step: {s}, loss is {1 / s!r}\n" for s in range(1, 40000))
    pathlib.Path(warm, "worker_0.log").write_text(lines)
    from core.logs import read_run
    read_run(warm)
idle = rss()
reader = RunReader(sys.argv[2], one_shot=True)
reader.refresh()
snap = reader.snapshot()
table = reader._table
n = len(table)
if hasattr(table, "nbytes"):
    nbytes = table.nbytes
else:  # before issue 31: one array per column, no `nbytes`
    nbytes = sum(a[:n].nbytes for a in table._cols.values())
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"rows": n, "table_bytes": nbytes, "idle": idle, "after": rss(), "peak": peak}))
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("log_dir", type=Path)
    p.add_argument("--repo", type=Path, default=REPO, help="the checkout whose code is measured")
    args = p.parse_args(argv)
    log_bytes = sum(f.stat().st_size for f in args.log_dir.rglob("*") if f.is_file())
    # watch first: RUSAGE_CHILDREN is the peak of every child waited for so far
    watch = subprocess.run(
        [sys.executable, "-m", "core", "watch", "--once", str(args.log_dir)], cwd=args.repo, capture_output=True
    )
    watch_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(args.repo), str(args.log_dir)], capture_output=True, text=True, check=True
    )
    r = json.loads(out.stdout)
    n, mb = max(r["rows"], 1), 1e6
    held, peak = r["after"] - r["idle"], r["peak"] - r["idle"]
    print(
        f"{args.log_dir}: {log_bytes / mb:.0f} MB of logs, {r['rows']:,} loss rows ({log_bytes / n:.0f} B of log a row)"
    )
    print(f"  table: {r['table_bytes'] / n:.1f} B/row ({r['table_bytes'] / mb:.0f} MB)")
    print(f"  read_run: RSS idle {r['idle'] / mb:.0f} MB; held after {held / mb:.0f} MB more ({held / n:.0f} B/row,")
    print(
        f"    {held / log_bytes:.2f}x the log); peak {peak / mb:.0f} MB more"
        f" ({peak / n:.0f} B/row, {peak / log_bytes:.2f}x)"
    )
    print(
        f"  watch --once: exit {watch.returncode}, peak RSS {watch_peak / mb:.0f} MB"
        f" = {watch_peak / log_bytes:.2f}x the log"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
