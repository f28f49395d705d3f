"""Which process wrote an error line, so that one process's lines share the rank one of them names.

A stream that carries one process's output often names its rank on a few lines only: torch's C++ log prefixes its
lines with `[rankN]:`, while torch_npu's Python logger, CANN and the NPU error prefix print the process id and
`RankID:-1` (not known yet). Real lines, one process (tests/fixtures/real_logs/pid-prefix-507011-EL0003-rank9-hccl-
watchdog_vllm-ascend-8360, vllm-project/vllm-ascend#8360):

    [758] [2026-05-08 03:20:32:000] torch.distributed: [ERROR] [859] Find exception ... error code is 507011
    [ERROR] 2026-05-08-03:20:31 (PID:758, Device:9, RankID:-1) ERR00100 PTA call acl api failed
    [PID: 758] 2026-05-08-03:20:31.532.507 Invalid_Argument(EL0003): The argument is invalid.
    [rank9]:[E508 03:20:31.678676591 compiler_depend.ts:1693] [Rank 9] HCCL watchdog thread terminated with exception:

The rule (`process_rank`, its state a file's `ProcessRanks`; asked only for error lines, never for a row): an error
line's process is the process id its prefix names (`PID_SOURCES`). A process whose line names a rank is that rank.
A rank-naming line without a process id links the rank to the stream's process when the stream's error lines name
one process and its lines one rank (the lines above); a second process or a second rank undoes that link (the lines
then cannot be told apart: each keeps its file's rank). Every linked process's error lines take its rank, those read
before the link too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from core.logs.rows.filestate import FileState

__all__ = ["PID_SOURCES", "PidSample", "PidSource", "line_pid", "process_rank"]


@dataclass(frozen=True, slots=True)
class PidSample:
    """A real line with the process id a person reading it finds, and where the line comes from."""

    line: bytes
    pid: int
    source: str


@dataclass(frozen=True, slots=True)
class PidSource:
    """One way a line names its process: the pattern (group 1 the process id) and real lines it must read."""

    name: str
    pattern: re.Pattern[bytes]
    samples: tuple[PidSample, ...]


_VLLM = (
    "github.com/vllm-project/vllm-ascend/issues/8360 (tests/fixtures/real_logs/"
    "pid-prefix-507011-EL0003-rank9-hccl-watchdog_vllm-ascend-8360)"
)

PID_SOURCES: tuple[PidSource, ...] = (
    PidSource(
        "torch_npu logger [pid] [date]",
        re.compile(rb"^\[(\d+)\] \[\d{4}-\d\d-\d\d "),
        (
            PidSample(
                b"[758] [2026-05-08 03:20:32:000] torch.distributed: [ERROR] [859] Find exception when "
                b"finishedNPUExecutionInternal, error code is 507011",
                758,
                _VLLM,
            ),
        ),
    ),
    PidSource(
        "torch_npu (PID, Device, RankID)",
        re.compile(rb"\(PID:(\d+), Device:"),
        (
            PidSample(
                b"[ERROR] 2026-05-08-03:20:31 (PID:758, Device:9, RankID:-1) ERR00100 PTA call acl api failed",
                758,
                _VLLM,
            ),
        ),
    ),
    PidSource(
        "CANN [PID: N]",
        re.compile(rb"^\[PID: (\d+)\] "),
        (
            PidSample(
                b"[PID: 758] 2026-05-08-03:20:31.532.507 Invalid_Argument(EL0003): The argument is invalid.", 758, _VLLM
            ),
        ),
    ),
    PidSource(
        "MindSpore [LEVEL] MODULE(pid,thread,process)",
        re.compile(rb"^\[[A-Z]+\] [A-Z_]+\((\d+)[,:]"),
        (
            PidSample(
                b"[ERROR] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:38.722.000 [mindspore/parallel/"
                b"cluster/process_entity/_api.py:431] Time out nodes are ['3']",
                162078,
                "github.com/candle-org/MindAct/issues/1983 (tests/fixtures/real_logs/"
                "msrun-launcher-timeout-node-3-scheduler-grep-lines_mindnlp-1983)",
            ),
        ),
    ),
    PidSource(
        "Ray (Actor pid=N)",
        re.compile(rb"^\([A-Za-z_][\w.]* pid=(\d+)(?:, ip=[\d.]+)?\) "),
        (
            PidSample(
                b"(TaskRunner pid=30188) RuntimeError: CUDA error: an illegal memory access was encountered",
                30188,
                "github.com/volcengine/verl (a Ray actor's line, as failures.line_tag reads it)",
            ),
        ),
    ),
)
_RE_PID = re.compile(b"|".join(b"(?:" + s.pattern.pattern + b")" for s in PID_SOURCES))


def line_pid(line: bytes) -> int | None:
    """The process id a line's prefix names (`PID_SOURCES`), else None. One search of every source at once."""
    m = _RE_PID.search(line)
    if m is None:
        return None
    return int(next(g for g in m.groups() if g is not None))


def process_rank(st: FileState, line: bytes, off: int, rank: int | None, own: int | None) -> int | None:
    """The rank of the error line `line` (at `off`) of a single stream: `rank` when the line named it (it differs
    from the file's rank `own`), else its process's rank once known, else `own`; links the line's process to a
    rank as the module's rule says, re-ranking the process's error lines read before."""
    pid = line_pid(line)
    procs = st.procs
    if rank is not None and rank != own:  # the line names its rank
        procs.named.add(rank)
        if pid is not None and procs.ranks.get(pid) is None:
            _link(st, pid, rank)
        elif pid is None and len(procs.named) == 1 and list(procs.ranks.values()) == [None]:
            procs.inferred = next(iter(procs.ranks))  # one process, one rank: the rank is that process's
            _link(st, procs.inferred, rank)
        elif len(procs.named) > 1:
            _unlink_inferred(st)
        return rank
    if pid is None:
        return rank
    procs.lines[off] = (pid, rank)
    if pid not in procs.ranks:
        procs.ranks[pid] = None
        if len(procs.ranks) > 1:
            _unlink_inferred(st)
        elif len(procs.named) == 1:  # the rank was named first, then its one process's lines come
            procs.inferred = pid
            _link(st, pid, next(iter(procs.named)))
    linked = procs.ranks[pid]
    return rank if linked is None else linked


def _link(st: FileState, pid: int, rank: int) -> None:
    """Process `pid` is `rank`: its error lines read so far take it."""
    st.procs.ranks[pid] = rank
    _rerank(st, {off: rank for off, (p, _) in st.procs.lines.items() if p == pid})


def _unlink_inferred(st: FileState) -> None:
    """The stream turned out to hold another process or rank: the inferred link goes, its lines take their file's
    rank again."""
    procs = st.procs
    if procs.inferred is None:
        return
    procs.ranks[procs.inferred] = None
    _rerank(st, {off: own for off, (p, own) in procs.lines.items() if p == procs.inferred})
    procs.inferred = None


def _rerank(st: FileState, at: dict[int, int | None]) -> None:
    """The file's error rows at these offsets take these ranks."""
    if not at:
        return
    for i, err in enumerate(st.errors):
        if err.offset in at and err.rank != at[err.offset]:
            st.errors[i] = replace(err, rank=at[err.offset])
