"""Help for logs we cannot read: the most frequent line shapes that carry numbers, and what a run's
metrics are called.

When a folder's logs give no loss row, the Monitor and `watch --once` show these shapes (every digit run
masked as `#`, so 10,000 loss lines of one format are one shape) with an example line each, so the user
can write a `--loss-regex` for their format instead of staring at "0 rows".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from core.files import FileCheckError, open_checked

__all__ = ["LineShape", "line_shapes", "metric_labels"]

_RE_DIGITS = re.compile(rb"\d+")
_RE_NUMBER = re.compile(rb"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_RE_CHATTER = re.compile(rb"^\[(?:WARNING|INFO|DEBUG|ERROR)\] [A-Z_]+\(\d+[,:]")
_HEAD_BYTES = 256 << 10  # read per file: shapes come from the start of a log (bounded, whatever its size)
_MAX_FILES = 64
_NOT_METRICS = frozenset({"epoch", "step", "epochs_total", "steps_total", "loss", "time"})


@dataclass(frozen=True)
class LineShape:
    """A line shape (digits masked as `#`), how many lines had it, and one real line of it."""

    shape: str
    count: int
    example: str


def line_shapes(paths: Iterable[Path], limit: int = 5, max_len: int = 200) -> list[LineShape]:
    """The `limit` most frequent shapes of lines that carry a number (MindSpore's own chatter left out),
    from the first 256 KiB of up to 64 files. Files that cannot be read are skipped."""
    counts: Counter[bytes] = Counter()
    examples: dict[bytes, bytes] = {}
    for path in list(paths)[:_MAX_FILES]:
        try:
            with open_checked(path, None, "log file") as f:
                data = f.read(_HEAD_BYTES)
        except (OSError, FileCheckError):
            continue
        for line in data.splitlines()[:-1] if len(data) == _HEAD_BYTES else data.splitlines():
            line = line.strip()
            if not line or _RE_CHATTER.match(line) or not _RE_NUMBER.search(line):
                continue
            shape = _RE_DIGITS.sub(b"#", line[:max_len])
            counts[shape] += 1
            examples.setdefault(shape, line[:max_len])
    return [
        LineShape(s.decode("utf-8", "replace"), n, examples[s].decode("utf-8", "replace"))
        for s, n in counts.most_common(limit)
    ]


def metric_labels(metric_keys: dict[str, str]) -> list[str]:
    """The metrics a run's loss lines carry, as a user reads them: `per_step_time (step_time_ms)` where
    the log's key fills a column of another name, else the name; epoch/step/loss are not listed."""
    return [
        key if key == column else f"{key} ({column})"
        for column, key in metric_keys.items()
        if column not in _NOT_METRICS
    ]
