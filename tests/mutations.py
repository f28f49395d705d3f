"""Issue 30's mutation harness: real corpus lines under the notations users' log pipelines add.

A log nobody here has seen is mostly a known fact behind a notation not seen before: a launcher's, a
collector's or a logger's prefix on every line, a failure glued behind a progress bar's redraw, a NaN spelled
another way. This module builds those logs from real ones (tests/fixtures/real_logs) and reads what a user
checks (`Facts`): rows, first/last loss, failed or not, the failure's kind, the failing rank. A mutated log must
give the plain log's facts on every read path (tests/helpers.READ_PATHS); `benchmarks/prefix_matrix.py` prints
the matrix families x facts, tests/test_issue30_mutations.py asserts it.

Every prefix family is cited: a real line or the tool's documented format.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from core.logs import FATAL_KINDS, ReaderSettings, read_run
from core.logs.judgement.status import failed_ranks

CORPUS = Path(__file__).resolve().parent / "fixtures" / "real_logs"
T0 = datetime(2026, 11, 26, 10, 0, 0)


@dataclass(frozen=True)
class Prefix:
    """One family of line prefixes: `make(t)` is a line's prefix at time t; `rank` the rank it names."""

    name: str
    source: str
    make: Callable[[datetime], str]
    rank: int | None = None


def _fixed(text: str) -> Callable[[datetime], str]:
    """A prefix that is the same on every line (a service's, a host's, a rank's tag)."""

    def make(_t: datetime) -> str:
        return text

    return make


def _ms(t: datetime) -> str:
    return f"{t.microsecond // 1000:03d}"


PREFIXES: tuple[Prefix, ...] = (
    Prefix(
        "determined",
        "Determined trial logs: `[rank=1] || INFO: ...` (docs.determined.ai, distributed training logs)",
        _fixed("[rank=1] || "),
        rank=1,
    ),
    Prefix(
        "rfc3339",
        "a collector's RFC 3339 stamp (`kubectl logs --timestamps`: `2026-11-26T10:00:00.123456789Z `)",
        lambda t: f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}123Z ",
    ),
    Prefix(
        "compose",
        "docker compose's service column: `trainer_1  | ` (docs.docker.com compose logs)",
        _fixed("trainer_1  | "),
    ),
    Prefix(
        "kubectl_pod",
        "`kubectl logs --prefix`: `[pod/train-worker-0/pytorch] ` (kubernetes.io kubectl logs)",
        _fixed("[pod/train-worker-0/pytorch] "),
    ),
    Prefix(
        "stern",
        "stern / kubetail: the pod name then a space, `train-worker-0-7f9c pytorch `",
        _fixed("train-worker-0-7f9c pytorch "),
    ),
    Prefix(
        "loguru",
        "loguru's default format: `2026-11-26 10:00:00.123 | INFO     | __main__:train:42 - `",
        lambda t: f"{t:%Y-%m-%d %H:%M:%S}.{_ms(t)} | INFO     | __main__:train:42 - ",
    ),
    Prefix(
        "glog",
        "glog / absl: `I1126 10:00:00.123456 1234 train.py:12] ` (google/glog README, log line prefix)",
        lambda t: f"I{t:%m%d %H:%M:%S}.{t.microsecond:06d} 1234 train.py:12] ",
    ),
    Prefix(
        "mpirun",
        "Open MPI `mpirun --tag-output`: `[1,2]<stderr>:` (jobid, rank)",
        _fixed("[1,2]<stderr>:"),
        rank=2,
    ),
    Prefix(
        "pdsh",
        "pdsh: `node03: ` (the host, then the remote line)",
        _fixed("node03: "),
    ),
    Prefix(
        "syslog",
        "syslog / journald short format: `Nov 26 10:00:00 node03 python[1234]: `",
        lambda t: f"{t:%b %d %H:%M:%S} node03 python[1234]: ",
    ),
    Prefix(
        "ray_actor",
        "Ray's worker prefix: `(RayTrainWorker pid=1234) ` (docs.ray.io, logging: actor name and pid)",
        _fixed("(RayTrainWorker pid=1234) "),
    ),
    Prefix(
        "ray_task",
        "Ray's task prefix: `(pid=1234, ip=10.0.0.1) `",
        _fixed("(pid=1234, ip=10.0.0.1) "),
    ),
    Prefix(
        "srun",
        "SLURM `srun -l` (--label): `3: ` (the task id)",
        _fixed("3: "),
        rank=3,
    ),
    Prefix(
        "torchrun",
        "torchrun `--tee 3`/`--redirects`: `[default1]:` (the local rank)",
        _fixed("[default1]:"),
        rank=1,
    ),
    Prefix(
        "deepspeed",
        "DeepSpeed / Accelerate logger: `[2026-11-26 10:00:00,123] [INFO] `",
        lambda t: f"[{t:%Y-%m-%d %H:%M:%S},{_ms(t)}] [INFO] ",
    ),
    Prefix(
        "sagemaker",
        "SageMaker / Azure ML MPI: `[1,mpirank:2,algo-1]<stdout>:`",
        _fixed("[1,mpirank:2,algo-1]<stdout>:"),
        rank=2,
    ),
    Prefix(
        "lightning",
        "PyTorch Lightning's rank tag: `[rank: 1] ` (rank_prefixed_message)",
        _fixed("[rank: 1] "),
        rank=1,
    ),
)


@dataclass(frozen=True)
class Facts:
    """What a user checks in a log: rows, the first and last loss, failed or not, the kinds, the ranks judged."""

    rows: int
    first: float | None
    last: float | None
    failed: bool
    kinds: frozenset[str]
    ranks: frozenset[int]

    def same_losses(self, other: Facts) -> bool:
        """First and last loss equal (NaN equals NaN)."""
        return all(_same(a, b) for a, b in ((self.first, other.first), (self.last, other.last)))


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return (math.isnan(a) and math.isnan(b)) or a == b


def facts(folder: Path, settings: ReaderSettings | None = None) -> Facts:
    """The facts of one folder's logs as `read_run` reads them."""
    snap = read_run(folder, settings=settings)
    m = snap.metrics.sort_values(["file", "offset"], kind="stable")
    judged = failed_ranks(snap)
    errs = snap.errors
    kinds = frozenset(str(k) for k in errs["kind"] if k in FATAL_KINDS) if not errs.empty else frozenset()
    return Facts(
        rows=len(m),
        first=float(m["loss"].iloc[0]) if len(m) else None,
        last=float(m["loss"].iloc[-1]) if len(m) else None,
        failed=bool(judged),
        kinds=kinds,
        ranks=frozenset(judged),
    )


def prefixed(lines: list[str], prefix: Prefix) -> list[str]:
    """Every line behind the family's prefix, the time rising a second a line."""
    return [prefix.make(T0 + timedelta(seconds=i, microseconds=1000 * i)) + line for i, line in enumerate(lines)]


def entry_lines(entry: Path) -> list[str]:
    """A one-file corpus entry's lines (`\\r` redraws kept inside their line)."""
    return _one_file(entry).read_text(encoding="utf-8", errors="replace").split("\n")


def _one_file(entry: Path) -> Path:
    exp = json.loads((entry / "expect.json").read_text(encoding="utf-8"))
    root = entry / exp["watch_path"]
    files = [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else [root]
    if len(files) != 1:
        raise ValueError(f"{entry.name}: {len(files)} files, the harness takes one-file entries")
    return files[0]


def harness_entries(max_bytes: int = 12_000) -> list[Path]:
    """The one-file corpus entries the harness mutates: small, no known gap, one stream without rank tags (a
    prefix naming a rank must not contradict the lines' own), read right today."""
    out = []
    for exp_path in sorted(CORPUS.glob("*/expect.json")):
        exp = json.loads(exp_path.read_text(encoding="utf-8"))
        if exp.get("known_gap") or exp.get("line_ranks") or len(exp["ranks"]) > 1:
            continue
        try:
            f = _one_file(exp_path.parent)
        except ValueError:
            continue
        if f.stat().st_size <= max_bytes:
            out.append(exp_path.parent)
    return out


def write_log(folder: Path, lines: list[str]) -> Path:
    """One rank's log file in `folder` (rank 0 by its name)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "worker_0.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    return folder


def compare(plain: Facts, mutated: Facts, rank: int | None) -> dict[str, bool]:
    """The harness's five facts: the mutated reading against the plain one. A prefix naming a rank moves the
    failure to that rank (or leaves it on the file's)."""
    if plain.ranks and rank is not None:
        rank_ok = mutated.ranks <= {rank, *plain.ranks} and bool(mutated.ranks)
    else:
        rank_ok = mutated.ranks == plain.ranks
    return {
        "rows": plain.rows == mutated.rows,
        "losses": plain.same_losses(mutated),
        "failed": plain.failed == mutated.failed,
        "kind": plain.kinds == mutated.kinds,
        "rank": rank_ok,
    }
