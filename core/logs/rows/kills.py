"""A process the scheduler killed may still flush the row it was writing: that one row is no training after the kill.

Slurm's step daemon writes its kill into the tasks' output (`slurmstepd: error: Job 7518 exceeded memory limit
(626359956 > 512000000), being killed`, `slurmstepd: error: *** JOB 7518 ON xantipa CANCELLED AT 2022-06-10T17:11:35
***`), then signals the tasks: SIGTERM first, SIGKILL after its grace time, so a task's last row can land after those
lines. Real log (coqui-ai/STT#2238, tests/fixtures/real_logs/pipe-epoch-training-steps-loss-then-slurmstepd-memory-
limit-cancelled_coqui-stt-2238): three rows, the two kill lines and `Exceeded job memory limit`, then one more row,
`Epoch 0 |   Training | Elapsed Time: 0:00:15 | Steps: 95 | Loss: 24.186966`, and nothing after it. A failure that
training follows is no failure (core.logs.rows.failures.trained_on); a scheduler's kill followed by one row only
still is. Two rows or more after it are a run that went on (requeued into the same file, or a kill of another step):
trained past, as for every other kind. Counted by the file's row before its last (`Rows.before_last`, which outlives
the table's takes: a live tick may end between the kill and the late row), so any chunking judges alike; a stream
whose lines name several ranks keeps the common rule (its rows are per rank).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from core.logs.rows.failure_kinds import FAILURE_KINDS
from core.logs.rows.filestate import ErrorKind, ErrorRow

if TYPE_CHECKING:
    from core.logs.rows.filestate import FileState

__all__ = ["KILL_KINDS", "flushed_after_kill"]

# the kinds that are the scheduler's own kill of the job: its memory limit, its cancel (time limit, scancel, preemption)
KILL_KINDS = frozenset({"job memory limit", "job cancelled", "Slurm cancelled"})
_RE_KILL = re.compile(b"|".join(b"(?:" + k.pattern + b")" for k in FAILURE_KINDS if k.name in KILL_KINDS))


def flushed_after_kill(st: FileState, err: ErrorRow) -> bool:
    """Whether `err` is a scheduler's kill that at most one row of its file follows (the killed task's late row)."""
    if err.kind != ErrorKind.EXCEPTION or st.rows.named_ranks or _RE_KILL.search(err.message.encode()) is None:
        return False
    before = st.rows.before_last()
    return before is None or before[-1] < err.offset
