"""Where a run's per-rank logs are: msrun, mpirun and rank-table layouts, one `LogFile` per file.

msrun writes `log_dir/worker_{rank}.log` + `scheduler.log`; mpirun `--output-filename out` writes
`out/1/rank.{r}/stdout`; the legacy rank-table launch writes `device{r}/train.log{r}`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LogFile", "discover_logs"]


@dataclass(frozen=True)
class LogFile:
    """One log file and what it is: a rank's output, the msrun scheduler, or a launcher's stdout."""

    path: Path
    rel: str
    role: str  # "worker" | "scheduler" | "launcher"
    rank: int | None
    layout: str  # "msrun" | "mpirun" | "rank_table" | "other"


_LAYOUT_RULES: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"^worker_(\d+)\.log$"), "worker", "msrun"),
    (re.compile(r"^scheduler\.log$"), "scheduler", "msrun"),
    (re.compile(r"^(?:[^/]+/)?rank\.(\d+)/(?:stdout|stderr)$"), "worker", "mpirun"),
    (re.compile(r"^device_?(\d+)/[^/]*\.log\d*$"), "worker", "rank_table"),
]
_LAUNCHER_NAME = re.compile(r"^[^/]+\.(?:log|out|txt|err)$")


def discover_logs(log_dir: Path | str, max_entries: int = 20000) -> list[LogFile]:
    """Find per-rank logs under `log_dir` (msrun, mpirun and rank-table layouts), sorted by rank.

    Top-level `*.log/*.out/*.txt` files that are not rank logs (e.g. msrun's own stdout) are
    returned as "launcher" files: they are only scanned for failures (`Worker process <pid> exit`).
    """
    root = Path(log_dir)
    found: list[LogFile] = []
    seen = 0
    stack: list[tuple[Path, str, int]] = [(root, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                break
            rel = prefix + entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                if depth == 0 and _LAYOUT_RULES[0][0].match(rel):  # a folder named worker_N.log: say so
                    found.append(LogFile(Path(entry.path), rel, "worker", int(rel[7:-4]), "msrun"))
                    continue
                if depth < 2:
                    stack.append((Path(entry.path), rel + "/", depth + 1))
                continue
            for pattern, role, layout in _LAYOUT_RULES:
                m = pattern.match(rel)
                if m:
                    rank = int(m.group(1)) if m.groups() else None
                    found.append(LogFile(Path(entry.path), rel, role, rank, layout))
                    break
            else:
                if depth == 0 and _LAUNCHER_NAME.match(rel):
                    found.append(LogFile(Path(entry.path), rel, "launcher", None, "other"))
    order = {"worker": 0, "scheduler": 1, "launcher": 2}
    found.sort(key=lambda f: (order[f.role], -1 if f.rank is None else f.rank, f.rel))
    return found
