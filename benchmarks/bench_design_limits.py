"""Time and peak memory of loading the hostile design files of issue 12 (item 1).

Each file is loaded by `core.sharding.design.load_design` in a child process capped at 3 GB of
address space and 120 s, so the old code's 2^32-rank list ends in a MemoryError, not a dead machine.

    .venv/bin/python benchmarks/bench_design_limits.py                 # this tree
    .venv/bin/python benchmarks/bench_design_limits.py --ref 9cbbbb1   # a commit (git archive to a temp dir)

Columns: seconds to load, the child's peak RSS above its RSS after imports, how the load ended
(the exception type; DesignError is the only acceptable one) and the size of its message.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from core.sharding.design import load_design
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
try:
    load_design(sys.argv[2])
    outcome, size = "accepted", 0
except BaseException as exc:  # the point is to see what escapes
    outcome, size = type(exc).__name__, len(str(exc))
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "mb": (peak - base) / 1024, "outcome": outcome, "message": size}))
"""


def hostile_files(folder: Path) -> dict[str, Path]:
    """The reproductions from the issue, written to `folder`."""
    texts = {
        "device_matrix [65536, 65536]": '{"layouts":{"l":{"device_matrix":[65536,65536],"alias_name":["a","b"]}}}',
        "4,096 axes of size 2": json.dumps(
            {"layouts": {"l": {"device_matrix": [2] * 4096, "alias_name": [f"a{i}" for i in range(4096)]}}}
        ),
        "5,000-digit integer": '{"device_num": 1' + "0" * 5000 + "}",
        "JSON nested 3,000 deep": "[" * 3000 + "]" * 3000,
        "50 MB design (490k tensors)": json.dumps(
            {
                "tensors": {
                    f"tensor_{i:07d}": {"shape": [64, 64], "dtype": "float32", "role": "weight", "split": [1, 1]}
                    for i in range(490_000)
                }
            }
        ),
        "490k bad tensors": json.dumps({"tensors": {f"t{i}": {"shape": [0]} for i in range(490_000)}}),
        "4,096 bad tensors (1 MB cap)": json.dumps({"tensors": {f"t{i}": {"shape": [0]} for i in range(4096)}}),
        "4,096 tensors on 65,536 devices": json.dumps(
            {
                "device_num": 65536,
                "layouts": {"l": {"device_matrix": [256, 256], "alias_name": ["a", "b"]}},
                "tensors": {f"t{i}": {"shape": [256, 256], "layout": "l", "map": ["a", "b"]} for i in range(4096)},
            }
        ),
    }
    paths = {}
    for i, (name, text) in enumerate(texts.items()):
        paths[name] = folder / f"case{i}.json"
        paths[name].write_text(text)
    return paths


def tree_at(ref: str, folder: Path) -> Path:
    """The repository's `core/` at a commit, unpacked into `folder` (no worktree, no checkout)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "core"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def measure(root: Path, path: Path) -> dict[str, object]:
    def cap() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(root), str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=cap,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"seconds": 120.0, "mb": float("nan"), "outcome": "timeout", "message": 0}
    if done.returncode != 0 or not done.stdout.strip():
        return {"seconds": float("nan"), "mb": float("nan"), "outcome": f"died rc={done.returncode}", "message": 0}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", help="measure the code at this git commit instead of the working tree")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = tree_at(args.ref, Path(tmp) / "tree") if args.ref else ROOT
        files = hostile_files(Path(tmp))
        print(f"code: {args.ref or 'working tree'}")
        print(f"{'case':34} {'file':>10} {'seconds':>9} {'peak MB':>8}  outcome (message chars)")
        for name, path in files.items():
            r = measure(root, path)
            size = path.stat().st_size
            print(f"{name:34} {size:>10,} {r['seconds']:>9.3f} {r['mb']:>8.1f}  {r['outcome']} ({r['message']:,})")


if __name__ == "__main__":
    main()
