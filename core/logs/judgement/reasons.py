"""A failure group's reason where its ranks have no exception row of their own: what the launcher, msrun or the
scheduler said of them, in diagnose's words (the group's key, alike on every rank) and in the line's own (quoted
beside them: a user searches the log for the words it printed, torchrun's `exitcode: -7` where diagnose says
`signal 7 (SIGBUS)`, msrun's `Worker process 130673 exit with exception.`)."""

from __future__ import annotations

import pandas as pd

from core.logs.rows.failures import task_end_words
from core.logs.rows.filestate import ErrorKind

__all__ = ["launcher_reason", "with_own_words"]

_QUOTED = 240  # characters of a failure line quoted in a group's reason


def launcher_reason(rows: pd.DataFrame, ended: pd.DataFrame) -> tuple[str, str]:
    """A rank with no exception row: what its launcher, msrun or the scheduler said, paraphrased (the group's key,
    alike on every rank), and its first failure line, whose own words the reason quotes beside it (a user searches
    the log for them: torchrun's `failed (exitcode: -7) local_rank: 0`, said `signal 7 (SIGBUS)`)."""
    if not ended.empty and (words := task_end_words(str(ended["message"].iloc[0]))) is not None:
        launcher, reason = words
        return f"{reason} ({launcher}'s word on the task; no trace in its own log)", _text(ended["context"].iloc[0])
    worker = rows.loc[rows["kind"] == ErrorKind.WORKER_EXIT, "message"]  # MindSpore's text after its log header
    if not worker.empty:
        return "msrun: worker exited with an exception (no traceback in its log)", _text(worker.iloc[0])
    node = rows.loc[rows["kind"] == ErrorKind.TIMEOUT, "message"]
    return "scheduler: node timed out (no traceback in its log)", _text(node.iloc[0]) if not node.empty else ""


def _text(cell: object) -> str:
    """A message or context cell as text ("" where the frame holds none: NaN, None)."""
    return cell.strip() if isinstance(cell, str) else ""


def with_own_words(reason: str, said: str) -> str:
    """`reason: "said"`, the failure line quoted (cut at _QUOTED characters), or the reason alone without one."""
    if not said:
        return reason
    return f'{reason}: "{said if len(said) <= _QUOTED else said[: _QUOTED - 1] + "…"}"'
