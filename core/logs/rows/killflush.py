"""Rows a process flushed after its scheduler killed it: they do not undo the kill (core.logs.rows.failures.trained_on).

Why: a failure followed by training rows did not end the rank (trained_on), but Slurm's step daemon writes its kill
(`slurmstepd: error: *** JOB 7518 ON xantipa CANCELLED AT 2022-06-10T17:11:35 ***`, a memory limit's `..., being
killed`) into the task's output while the task's own block-buffered stdout (a pipe, a file) still holds rows; the
SIGTERM that follows flushes them, after the kill's lines. Real log (coqui-ai/STT#2238, tests/fixtures/real_logs/
pipe-epoch-training-steps-loss-then-slurmstepd-memory-limit-cancelled_coqui-stt-2238): three rows, the memory-limit and
CANCELLED lines, then `Epoch 0 |   Training | Elapsed Time: 0:00:15 | Steps: 95 | Loss: 24.186966`, the file's last.
So rows within one stdio buffer after a scheduler's kill are that flush; a run that trains on past it (a requeued
job appending to the same file) is read as before.
"""

from __future__ import annotations

__all__ = ["FLUSH_BYTES", "SCHEDULER_KILLS", "flushed_after_kill"]

# the failure kinds that are a scheduler killing the job's tasks from outside (core.logs.rows.failure_kinds_more,
# core.logs.rows.failure_kinds_late)
SCHEDULER_KILLS = frozenset({"Slurm cancelled", "job cancelled", "job memory limit"})
# one stdio buffer: glibc's BUFSIZ and Python's io.DEFAULT_BUFFER_SIZE, what a killed process flushes at most per stream
FLUSH_BYTES = 8 << 10


def flushed_after_kill(kind: str | None, offset: int, last_row: float) -> bool:
    """Whether a failure of `kind` at byte `offset` still ends its rank though rows follow it (the last at byte
    `last_row`): it is a scheduler's kill and every row after it is within one stdio buffer of it."""
    return kind in SCHEDULER_KILLS and last_row - offset <= FLUSH_BYTES
