"""Which ranks one file's lines make ranks of the run, and which of its error lines are the job's (the launcher's)
rather than a rank's: the rule `rank_table` (core.logs.rows.snapshot) and `error_frame` apply to every file.

The rule (tests/fixtures/real_logs/README.md): a rank a launcher's report names (torchrun's ChildFailedError block
or `local_rank: N`, mpirun's `process rank N`, Paddle's `ABORT!!! ... rank=[N]`, srun's `task N`, msrun's worker
report, a spawn's `process N terminated`) is a rank of the run, with its status, even when it printed no row in the
stream; so is every rank a row, an error or an evaluation line names. The file's own rank (0 for a single file, or
its name's) stays one when the file has lines of its own: rows of no rank's, an error or evaluation line of its own,
or output of its own before the report (a trainer's config echo, PaddleClas#727). A pure launcher paste (its first
line a report, the launcher's traceback, the launcher's boilerplate, or another rank's tagged line, and nothing of
its own after) is the reported ranks only: torchrun's flattened rows for ranks 2-7 (litData#340) are ranks 2-7,
mpirun's `Primary job terminated normally ... process rank 7 ... exited on signal 9` (horovod#469) rank 7.
"""

from __future__ import annotations

import re

from core.logs.rows.filestate import FATAL_KINDS, JOB_RANK, ErrorKind, ErrorRow, FileState
from core.logs.rows.lineranks import line_rank
from core.logs.rows.taskends import kills_only, launcher_traceback, spawn_traceback

__all__ = ["jobs_word", "launcher_reports", "named_ranks", "stream_ranks"]

# A launcher's own words, the first line of a paste of it (the report after them is the launcher's too): OpenMPI's
# `Primary job  terminated normally, but 1 process returned` (Kay1794/Aware-of-the-history#2, horovod/horovod#469),
# `paddle.distributed.launch`'s `INFO 2021-05-24 17:17:14,611 launch_utils.py:307] terminate all the procs`
# (PaddlePaddle/Paddle#33074), msrun's `[WARNING] ME(162078:...,MainProcess):... [mindspore/parallel/cluster/
# process_entity/_api.py:318] There's worker exits with exception, kill all other workers.` (mindnlp#1983)
_LAUNCHER_LINE = re.compile(
    rb"^Primary job +terminated normally, but \d+ process"
    rb"|\blaunch_utils\.py:\d+\] "
    rb"|[/\\]parallel[/\\]cluster[/\\]process_entity[/\\]_api\.py:\d+\] "
)
_SEPARATOR = re.compile(rb"^[ \t]*[/|]?[-=_*]{8,}[ \t]*$")  # a report's rule line (mpirun's, pasted `/-----`)


def launcher_reports(st: FileState) -> bool:
    """Whether the file holds a launcher's report naming a task that failed (torchrun's `failed (exitcode: -9)
    local_rank: 3`): then the traceback the launcher raised after it (`bin/torchrun`, ..., `raise ChildFailedError(`,
    whole or cut) is that report's, not the file's rank's failure, nor the root cause. A report that it only killed
    its workers (DeepSpeed's `Killing subprocess`) names no failed task: the traceback stays the file's."""
    return any(_reports(e) for e in st.errors)


def _reports(err: ErrorRow) -> bool:
    """Whether `err` is a launcher's report of a task (a rank) that failed."""
    return err.kind == ErrorKind.TASK_EXIT and err.rank is not None and err.rank >= 0 and not kills_only(err.message)


def jobs_word(st: FileState, err: ErrorRow, reported: bool) -> bool:
    """Whether `err` is the job's word (rank -1), not a failure of the rank it stands under: the launcher's own
    traceback in a file whose reports name the failed tasks (`reported`: `launcher_reports(st)`), or a spawning
    parent's traceback beside another rank's failure (`_spawn_parent`)."""
    launcher = reported and err.kind == ErrorKind.EXCEPTION and _launchers(st, err)
    return launcher or _spawn_parent(st, err)


def _launchers(st: FileState, err: ErrorRow) -> bool:
    """Whether an exception is the launcher's: its traceback's outermost frame a launcher's entry point
    (`launcher_traceback`, whole or cut), or torch's agent's `ChildFailedError:` raised after a report of the failed
    task (egovlp#21: `failed (exitcode: -9) local_rank: 3`, then `raise ChildFailedError(` and the exception, the
    report's table cut off). Before its table (its usual place) the header is the root cause's stand-in until the
    table names that rank (core.logs.rows.childfailed.root_named)."""
    if launcher_traceback(err.context):
        return True
    return _RE_HEADER.search(err.message) is not None and any(_reports(e) and e.offset < err.offset for e in st.errors)


_RE_HEADER = re.compile(r"\bChildFailedError:\s*$")  # (only torch's launcher raises it: launcher/api.py)


def _spawn_parent(st: FileState, err: ErrorRow) -> bool:
    """Whether `err` is a spawning parent's traceback (core.logs.rows.taskends.spawn_traceback) in a file that names
    another rank's failure (icefall's `(1/4) Saving batch to`, a spawn report's `-- Process 2 terminated`): the job's
    word on that child (rank -1), not a failure of the file's own rank; alone, it stays its rank's."""
    return (
        err.kind == ErrorKind.EXCEPTION
        and spawn_traceback(err.context)
        and any(e.kind in FATAL_KINDS and e.rank is not None and 0 <= e.rank != err.rank for e in st.errors)
    )


def stream_ranks(st: FileState) -> dict[int, tuple[int, tuple | None]]:
    """The ranks of the run one file gives, each with its row count and last row: every rank its rows, error lines
    (a launcher's report among them) and evaluation lines name, and its own rank when its rows name none (an
    untagged HF dict row before a `[rank2]:` watchdog line is the stream's own rank 0's, ms-swift#3264), when
    nothing names a rank, or when a report names others and the file has output of its own before it
    (`_own_opening`). An mpirun stream whose every line is tagged `[1,1]` is rank 1's, not rank 0's too."""
    own = st.info.rank if st.info.rank is not None else -1
    per = st.rows.per_rank()
    named = named_ranks(st)
    if not per and named <= {own}:
        return {own: (len(st.rows), st.rows.last())}
    out: dict[int, tuple[int, tuple | None]] = {r: (0, None) for r in named}
    for rank, (n, last) in per.items():
        out[own if rank is None else rank] = (n, last)
    if not per and len(st.rows):
        out[own] = (len(st.rows), st.rows.last())
    elif own not in out and not per and launcher_reports(st) and _own_opening(st):
        out[own] = (0, None)
    return out


def named_ranks(st: FileState) -> set[int]:
    """The ranks the file's error and evaluation lines name (a launcher's report's tasks among them; a rank with
    evaluation lines only: WeNet's CV), not counting the job's words (`jobs_word`). Counted again only when a line
    was added: both lists only grow (a reset file gets new ones), and at 1,024 ranks recounting every file's lines
    cost each live tick ~5 ms; the evaluation entries (tens of thousands in an eval-heavy log) only from the first
    one not counted yet."""
    key = (id(st.errors), len(st.errors), id(st.evals), len(st.evals))
    if st.named_memo and st.named_memo[0] == key:
        return st.named_memo[1]
    by_evals: set[int] = set()
    done = 0  # evaluation entries already counted (the same list, grown since)
    if st.named_memo and st.named_memo[0][2] == key[2]:
        by_evals, done = st.named_memo[2], st.named_memo[0][3]
    by_evals = by_evals | {e[6] for e in st.evals[done:] if e[6] is not None}
    reported = launcher_reports(st)
    named = {e.rank for e in st.errors if e.rank is not None and e.rank >= 0 and not jobs_word(st, e, reported)}
    st.named_memo = (key, named | by_evals, by_evals)
    return st.named_memo[1]


def _own_opening(st: FileState) -> bool:
    """Whether a single file (layout `single`: no rank in its name; a file named for its rank is that rank's
    always) opens with output of its own: its first line (blank and rule lines passed) is no launcher's report
    or boilerplate (`_LAUNCHER_LINE`), no first line of the launcher's traceback, and names no other rank (mpirun's
    `[1,1]<stderr>:` tag: rank 1's line). A file whose opening bytes are not kept (`head`) counts as its own."""
    if st.info.layout != "single":
        return True
    at, line = _first_line(st.head)
    if line is None:
        return not st.head
    if _LAUNCHER_LINE.search(line):
        return False
    tagged = line_rank(line)
    if tagged is not None and tagged.rank is not None and tagged.rank != st.info.rank:
        return False
    reported = launcher_reports(st)
    text = line.decode("utf-8", "replace").strip()
    for err in st.errors:
        jobs = err.rank == JOB_RANK or jobs_word(st, err, reported)
        if err.offset == at and (jobs or _reports(err)):
            return False
        if jobs and err.context.lstrip().startswith(text):
            return False  # (the launcher's traceback opens the file: speculators#1115's cut `launcher/api.py` frame)
    return True


def _first_line(head: bytes) -> tuple[int, bytes | None]:
    """The offset and text of the first line of `head` that is not blank or a rule line (None: none in it)."""
    at = 0
    for line in head.splitlines(keepends=True):
        body = line.rstrip(b"\r\n")
        if body.strip() and not _SEPARATOR.match(body):
            return at, body
        at += len(line)
    return at, None
