"""A 1,024-rank folder built from the real corpus: each rank's log is a real log of tests/fixtures/real_logs
(the long single-rank training logs: LossMonitor, MindFormers, MindCV, MindNLP, MindSpeed-LLM / Megatron, ...),
its time stamps shifted by the rank's own offset.

    .venv/bin/python benchmarks/synth_corpus.py OUT_DIR [--ranks 1024]

Why: synthetic lines, however varied, are lines someone wrote for a benchmark; these are lines a run wrote.
What the reader must find in them is known: each log's `expect.json` (its loss rows, written by hand).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "fixtures" / "real_logs"
START = 1_790_000_000.0
MIN_BYTES = 2 << 10  # the long logs only

# `2026-11-23 21:19:42`, `2026-11-23T21:19:42`, MindSpore's `2026-11-22-07:09:00` (its fraction stays as written)
_RE_STAMP = re.compile(rb"(\d{4}-\d\d-\d\d)([ T-])(\d\d:\d\d:\d\d)")


@dataclass(frozen=True)
class CorpusRun:
    """The folder, how many ranks, which real log each rank got, and the loss rows their expectations give."""

    root: Path
    ranks: int
    logs: tuple[str, ...]
    loss_rows: int
    bytes: int


def corpus_logs() -> list[tuple[str, Path, int]]:
    """(entry, its log file, its loss rows by expect.json) for every single-rank entry whose reading has rows
    and no failure and whose log (its largest file) has at least MIN_BYTES, longest first."""
    out = []
    for entry in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        expect = json.loads((entry / "expect.json").read_text(encoding="utf-8"))
        files = sorted((p for p in (entry / "log").rglob("*") if p.is_file()), key=lambda p: -p.stat().st_size)
        rows = sum(expect.get("loss_rows", {}).values())
        if len(expect.get("ranks", [])) != 1 or expect.get("failed") or rows == 0:
            continue
        if files[0].stat().st_size >= MIN_BYTES:
            out.append((entry.name, files[0], rows))
    return sorted(out, key=lambda e: -e[1].stat().st_size)


def shift_times(data: bytes, seconds: float) -> tuple[bytes, float | None]:
    """`data` with every time stamp moved by `seconds` (each in its own style), and the latest one (unix time)."""
    cache: dict[bytes, bytes] = {}
    latest: list[float] = []

    def move(m: re.Match) -> bytes:
        text = m.group(0)
        new = cache.get(text)
        if new is None:
            try:
                d = datetime.strptime(f"{m.group(1).decode()} {m.group(3).decode()}", "%Y-%m-%d %H:%M:%S")
            except ValueError:
                return text
            d += timedelta(seconds=seconds)
            new = d.strftime("%Y-%m-%d").encode() + m.group(2) + d.strftime("%H:%M:%S").encode()
            cache[text] = new
            latest.append(d.timestamp())
        return new

    out = _RE_STAMP.sub(move, data)
    return out, (max(latest) if latest else None)


def write_corpus_run(root: Path | str, ranks: int = 1024, shift_s: float = 1.0) -> CorpusRun:
    """Rank r gets log r mod n of `corpus_logs()`, its times shifted by r * `shift_s`, as `worker_{r}.log`
    (the msrun layout, the rank from the name); its mtime is its last shifted stamp."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    logs = corpus_logs()
    raw = [(name, path.read_bytes(), rows) for name, path, rows in logs]
    total = rows_sum = 0
    for r in range(ranks):
        _name, data, rows = raw[r % len(raw)]
        shifted, latest = shift_times(data, r * shift_s)
        path = root / f"worker_{r}.log"
        path.write_bytes(shifted)
        t = latest if latest is not None else START + r * shift_s
        os.utime(path, (t, t))
        total += len(shifted)
        rows_sum += rows
    return CorpusRun(root, ranks, tuple(name for name, _, _ in logs), rows_sum, total)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--ranks", type=int, default=1024)
    args = p.parse_args(argv)
    run = write_corpus_run(args.out, args.ranks)
    print(f"{run.root}: {run.ranks} ranks from {len(run.logs)} real logs, {run.loss_rows} loss rows, ", end="")
    print(f"{run.bytes / 1e6:.0f} MB")
    print("  " + ", ".join(run.logs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
