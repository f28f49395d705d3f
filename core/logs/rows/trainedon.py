"""Failures that training followed did not end the rank (issue 30: a run that logs an error and then trains on is not
failed).

Decided again after every block, and undone as well as done: a stream learns only later that its lines name their
ranks (a line ending `rank 0` after the rows that followed `[rank2]: Traceback ...`), and then the rows after a
failure may turn out another rank's. A failure demoted on the rows read so far keeps the kind it had (`demoted`), and
gets it back when no row of its own rank follows it any more, so a read in two blocks and a read in one agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from core.logs.rows.filestate import ErrorKind, FileState
from core.logs.rows.kills import flushed_after_kill
from core.logs.rows.taskends import kills_only

__all__ = ["trained_on"]


def trained_on(st: FileState) -> None:
    """Failures followed by training rows in the same file did not end the rank (a caught exception
    printed, a retried download, an `[ERROR]` the run survived): they stay listed, as error lines.
    One rule for `watch`, `diagnose` and the Monitor, which all judge by the error kinds."""
    last = st.rows.last()
    if last is None or not st.errors:
        return
    after = _last_row_at(st)
    for i, err in enumerate(st.errors):
        if err.demoted is not None:  # demoted on an earlier block's rows: its own rank's rows must still follow
            if not err.offset < after(err.rank):
                st.errors[i] = replace(err, kind=err.demoted, demoted=None)
            continue
        # (a launcher's word that it killed its workers, too: a relaunch that trains on did not end there)
        killed = err.kind == ErrorKind.TASK_EXIT and kills_only(err.message)
        if (
            (err.kind == ErrorKind.EXCEPTION or killed)
            and err.offset < after(err.rank)
            and not flushed_after_kill(st, err)
        ):
            st.errors[i] = replace(err, kind=ErrorKind.ERROR_LOG, demoted=err.kind)


def _last_row_at(st: FileState) -> Callable[[int | None], float]:
    """Where the last training row of a rank is in the file (-1: none): the file's last row, or, when its
    lines name their ranks (one stream of several), the last row of the rank the error names (another
    rank training on says nothing of this one)."""
    if not st.rows.named_ranks:
        end = float((st.rows.last() or (-1.0,))[-1])
        return lambda _rank: end
    own = st.info.rank
    at = {rank: float(last[-1]) for rank, (_, last) in st.rows.per_rank().items()}
    if None in at:  # rows naming no rank are the file's own
        at[own] = max(at.pop(None), at.get(own, -1.0))
    return lambda rank: at.get(own if rank is None else rank, -1.0)
