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
it is read from the bytes before the `rank` line after each read (a block cut by the read's start keeps no time).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from core.logs.rows.filestate import ErrorKind

if TYPE_CHECKING:
    from core.logs.rows.filestate import FileState

__all__ = ["report_times"]

_RE_RANK_FIELD = re.compile(r"^\s*rank\s*: \d+ \(local_rank: \d+\)\s*$")
# the block's `[N]:` line, then its fields up to the `rank` one: the `time` field among them
_RE_BLOCK = re.compile(rb"\n\[\d+\]:[ \t]*\r?\n(?:[ \t]+\w+[ \t]*:[^\n]*\n){0,4}?[ \t]+time[ \t]*: (\S+)[ \t]*\r?\n")
_BLOCK_MAX = 400  # the bytes before a `rank` line its block's `[N]:` and `time` lines are within


def report_times(st: FileState, buf: bytes | bytearray, floor: int, base: int) -> None:
    """After a read of buf[floor:] (file offset `base` at buf[0]): the report's task errors read in it get their
    block's time as their log time."""
    for i in range(len(st.errors) - 1, -1, -1):
        err = st.errors[i]
        if err.offset < base + floor:
            return
        if err.kind != ErrorKind.TASK_EXIT or not math.isnan(err.log_time) or not _RE_RANK_FIELD.match(err.context):
            continue
        at = err.offset - base
        block = bytes(buf[max(floor, at - _BLOCK_MAX) : at])
        found = list(_RE_BLOCK.finditer(block))
        if not found or b"\n[" in block[found[-1].end() - 1 :]:  # (another block's `[N]:` after it: not its own)
            continue
        try:
            t = datetime.strptime(found[-1].group(1).decode("ascii", "replace"), "%Y-%m-%d_%H:%M:%S").timestamp()
        except ValueError:
            continue
        st.errors[i] = replace(err, log_time=t)
