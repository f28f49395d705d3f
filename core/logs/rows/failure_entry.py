"""The shape of a failure-kind entry (core.logs.rows.failure_kinds, core.logs.rows.failure_kinds_more): a kind of
line that ends a rank, or a launcher's report of tasks that ended, with the real lines it was written from. Split
off so both tables share it (as core.logs.rows.notation for the notations)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FailureKind", "FailureSample", "LauncherReport"]


@dataclass(frozen=True)
class FailureSample:
    """A real line of a failure kind, where it was seen, and the rank a launcher's tag in front of it names
    (None: no tag, the file's own rank)."""

    line: str
    source: str
    rank: int | None = None


@dataclass(frozen=True)
class FailureKind:
    """A kind of line that ends a rank without (or besides) a Python traceback.

    `pattern` is searched in the line (after a launcher's tag); `anchors` are literals (no digits) one of
    which every matching line holds: the quick test before the patterns and the bulk path's search;
    `coded`: every matching line holds a CANN-style code (a capital, then four digits), which the scans
    look for anyway (no literal then). `error_level`: a failure only on an error-level line (a time-out:
    healthy chatter mentions time-outs too). `weight`: how well it names its failure (3: the root cause
    a user looks up; 2: a signature; 1: a line that says a failure happened, not which; 0: a line of a report
    whose other lines, when there, name it better; see
    `core.logs.rows.failures.failure_weight`). `chatter`: the line is printed at a chatter level (`[WARNING]`,
    MindSpore's Ctrl-C report), which no scan makes a candidate (skipping chatter in one pass keeps the reader at
    grep's pace): the end of each read (`CHATTER_WINDOW` bytes) is searched for the kind's anchors instead, as the
    lines that say how a run ended are its last (`core.logs.rows.failures.chatter_failures`). `quotes_loss`: the
    line quotes the loss that ended the run (TensorFlow's `Model diverged with loss = NaN.`): it is the failure,
    never a training row (`core.logs.rows.general.read_line` refuses it).
    The first kind whose pattern matches names the line."""

    name: str
    pattern: bytes
    anchors: tuple[bytes, ...]
    samples: tuple[FailureSample, ...]
    coded: bool = False
    error_level: bool = False
    weight: int = 2
    chatter: bool = False
    quotes_loss: bool = False


@dataclass(frozen=True)
class LauncherReport:
    """A launcher's line saying which of its tasks (ranks) ended badly; the task's own log may hold no trace
    of it. `pattern`'s named groups: `ranks` (a task list: `7`, `0-3`, `0,2,5-6`, `1, 3`; optional: rank 0
    without it, DeepSpeed's report of a command without `--local_rank`), `node` (optional: `local` without it),
    and `reason` or `code` (an exit code; negative: the signal); a report whose line says no reason has
    `reason`, its fixed one. `chatter`: the launcher says it at a chatter level (DeepSpeed's `[INFO]` word that it
    killed its workers), found as a chatter failure kind is (`FailureKind.chatter`); such a report says the run
    ended, not how: the lowest tier, below a worker's own failure and the launcher's exit-code report."""

    launcher: str
    pattern: bytes
    anchors: tuple[bytes, ...]
    samples: tuple[tuple[FailureSample, tuple[int, ...], str], ...]  # (line, its ranks, its reason)
    reason: str = ""
    chatter: bool = False
