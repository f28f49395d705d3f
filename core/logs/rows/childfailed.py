"""When each failure of torchrun's ChildFailedError report happened: its block's `time` field.

torch.distributed.elastic ends a failed run with one block per failed rank, under `Failures:` and `Root Cause (first
observed failure):`, each a `[N]:` line then its fields. Real lines (vllm-project/speculators#1115,
tests/fixtures/real_logs/torchrun-childfailed-failures-ranks-3-0-2-root-cause-rank-1-npu_speculators-1115):
  [0]:
    time      : 2026-09-07_13:02:58
    host      : localhost
    rank      : 1 (local_rank: 1)
The `rank` line is the launcher report (core.logs.rows.failure_kinds, a `LauncherReport`); the `time` line before it
in the same block is when torch's agent observed that failure, and its Root Cause is the failure of the earliest
time (torch.distributed.elastic's first observed failure). The time becomes the task's error's log time, so
`diagnose` orders the report's ranks as torchrun does (its likely root cause is the Root Cause's rank, ties aside:
the lower rank then, as for any two failures at the same second). The time line is no candidate line of the scans:
it is read from the bytes before the `rank` line after each read, and the tail of the file's earlier reads
(`FileState.tail`) when the block began in one of them: a live tick cut inside a block reads what one read reads.

A block's `traceback :` field after its `rank` line (`  traceback : Signal 15 (SIGTERM) received by PID 14691`, rank
2's in speculators#1115; read as a signal failure) is that rank's word, not the stream's own rank's: it takes the
rank of the report line just before it in its block (`field_ranks`). The report's header, the exception torch's agent
raises (`torch.distributed.elastic.multiprocessing.errors.ChildFailedError:`, with or without the launcher's frames
above it), is the job's word (rank -1) once the report's `Root Cause` block names its rank (ZhehengJiangLancaster/
AMVUR#2: the root cause is rank 2, not the stream's rank 0); cut before that rank (deepinsight/insightface#2182),
the header stands for the root cause the reader could not see, the file's rank (`root_named`). A live tick cut
between the header and the Root Cause block's `rank` line leaves the header its file's rank until a later read reads
that line: that read re-attributes it (the heading looked for in the tail of earlier reads too), as one read does.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from core.logs.rows.filestate import JOB_RANK, ErrorKind

if TYPE_CHECKING:
    from core.logs.rows.filestate import FileState

__all__ = ["field_ranks", "report_blocks", "report_times", "root_named"]

_RE_RANK_FIELD = re.compile(r"^\s*rank\s*: \d+ \(local_rank: \d+\)\s*$")
# the block's `[N]:` line, then its fields up to the `rank` one: the `time` field among them
_RE_BLOCK = re.compile(rb"\n\[\d+\]:[ \t]*\r?\n(?:[ \t]+\w+[ \t]*:[^\n]*\n){0,4}?[ \t]+time[ \t]*: (\S+)[ \t]*\r?\n")
_BLOCK_MAX = 400  # the bytes before a `rank` line its block's `[N]:` and `time` lines are within
_RE_TRACEBACK_FIELD = re.compile(r"^\s*traceback\s*: ")
_FIELDS_MAX = 300  # the bytes from a block's `rank` line to its `traceback` field (`exitcode`, `error_file` between)


def report_blocks(st: FileState, buf: bytes | bytearray, floor: int, base: int, end: int) -> None:
    """After a read of buf[floor:end] (file offset `base` at buf[0]): the report's blocks read in it give their
    tasks their time (`report_times`), their `traceback :` fields their rank (`field_ranks`) and its header the
    job's rank once the Root Cause block names its rank (`root_named`)."""
    report_times(st, buf, floor, base, end)
    field_ranks(st, base + floor)
    root_named(st, buf, floor, base, end)


def _block_before(st: FileState, buf: bytes | bytearray, floor: int, end: int, at: int) -> bytes:
    """The `_BLOCK_MAX` bytes before buf[at] (this read's bytes: buf[floor:end]): this read's, and before them the
    tail of the file's earlier reads (`FileState.tail`, which ends at buf[end]: `carry_over` ran first), so a block
    a live tick cut is read whole, as one read reads it."""
    lo = at - _BLOCK_MAX
    if lo >= floor or not st.tail:
        return bytes(buf[max(floor, lo) : at])
    text = b"".join(st.tail)
    first = end - len(text)  # (where text[0] would be in buf)
    if first > floor:  # a read longer than the tail: nothing of earlier reads in it
        return bytes(buf[floor:at])
    return text[max(0, lo - first) : at - first]


_RE_HEADER = re.compile(r"\bChildFailedError:\s*$")
_ROOT = b"Root Cause (first observed failure)"


def root_named(st: FileState, buf: bytes | bytearray, floor: int, base: int, end: int) -> None:
    """When a task report read in buf[floor:] is the `Root Cause` block's (its heading within `_BLOCK_MAX` bytes
    before it, no other block's `[N]:` line between; an earlier read's bytes too), the report headers before it are
    the job's (rank -1)."""
    for i in range(len(st.errors) - 1, -1, -1):
        err = st.errors[i]
        if err.offset < base + floor:
            return
        if err.kind != ErrorKind.TASK_EXIT or err.rank is None or err.rank < 0:
            continue
        block = _block_before(st, buf, floor, end, err.offset - base)
        root = block.rfind(_ROOT)
        if root < 0 or block.count(b"\n[", root) > 1:
            continue
        for k in range(i):
            head = st.errors[k]
            if head.kind == ErrorKind.EXCEPTION and head.rank != JOB_RANK and _RE_HEADER.search(head.message):
                st.errors[k] = replace(head, rank=JOB_RANK)
        return


def field_ranks(st: FileState, start: int) -> None:
    """The `traceback :` fields read from file offset `start` on take the rank of their block's report line: the
    error just before the field, a torchrun report of its block's `rank` line, within `_FIELDS_MAX` bytes (a block
    between them would have its own report line between). The report line may come from an earlier read."""
    for i in range(len(st.errors) - 1, 0, -1):
        err = st.errors[i]
        if err.offset < start:
            return
        if err.kind != ErrorKind.EXCEPTION or not _RE_TRACEBACK_FIELD.match(err.message):
            continue
        task = st.errors[i - 1]
        if (
            task.kind == ErrorKind.TASK_EXIT
            and task.rank is not None
            and task.rank != err.rank
            and 0 < err.offset - task.offset <= _FIELDS_MAX
            and _RE_RANK_FIELD.match(task.context)
        ):
            st.errors[i] = replace(err, rank=task.rank)


def report_times(st: FileState, buf: bytes | bytearray, floor: int, base: int, end: int) -> None:
    """After a read of buf[floor:end] (file offset `base` at buf[0]): the report's task errors read in it get their
    block's time as their log time (the block's first lines maybe an earlier read's: `_block_before`)."""
    for i in range(len(st.errors) - 1, -1, -1):
        err = st.errors[i]
        if err.offset < base + floor:
            return
        if err.kind != ErrorKind.TASK_EXIT or not math.isnan(err.log_time) or not _RE_RANK_FIELD.match(err.context):
            continue
        block = _block_before(st, buf, floor, end, err.offset - base)
        found = list(_RE_BLOCK.finditer(block))
        if not found or b"\n[" in block[found[-1].end() - 1 :]:  # (another block's `[N]:` after it: not its own)
            continue
        try:
            t = datetime.strptime(found[-1].group(1).decode("ascii", "replace"), "%Y-%m-%d_%H:%M:%S").timestamp()
        except ValueError:
            continue
        st.errors[i] = replace(err, log_time=t)
