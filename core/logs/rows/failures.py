"""Lines that end a rank without a Python traceback: what `[CRITICAL]`, CANN, glibc, the kernel and the
collective libraries print when a process dies (issue 18 item 5).

The kinds are data, one entry each (core.logs.rows.failure_kinds: pattern, anchors, real samples); this
module compiles them. Why kinds at all: a rank killed by the OOM killer, a glibc abort after a CANN `EI0002` or a
segfault leaves no `Traceback`; such a rank used to look "stalled" and `diagnose` exited 0.
Healthy logs say "timeout" too (`[WARNING] DISTRIBUTED ... Topology build timed out., retry(1/1200)`
while the cluster forms, `HCCL_EXEC_TIMEOUT` in config dumps), so a time-out is fatal only on an
error-level line, and chatter (`[WARNING]`/`[INFO]`/`[DEBUG]`) is never fatal.

Real examples (tests/fixtures/real_logs_failures, from MindSpore's CANN error-case docs):
  `[CRITICAL] DEVICE(...) ... Ascend Error Message:EI0002: The wait execution of the Notify register times out.`
  `malloc_consolidate(): invalid chunk size`
  `EI0006: Getting socket times out. Reason: ...`
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from core.logs.bytes.discover import LogRole
from core.logs.rows.childfailed import report_blocks
from core.logs.rows.failure_kinds import FAILURE_KINDS, LAUNCHER_REPORTS
from core.logs.rows.filestate import JOB_RANK, ErrorKind, ErrorRow, add_error, last_log_time
from core.logs.rows.launches import superseded_launch
from core.logs.rows.lineranks import LAUNCHER_TAG, TORCH_TAG, host_prefix, line_rank
from core.logs.rows.processes import process_rank
from core.logs.rows.relaunch import relaunched
from core.logs.rows.taskends import TaskEnd, task_end, task_end_words
from core.logs.rows.trainedon import trained_on
from core.logs.tokens.anchors import AnchorSearch

if TYPE_CHECKING:
    from core.logs.rows.filestate import FileState

__all__ = [
    "CHATTER_SEARCH",
    "CHATTER_WINDOW",
    "CUT_TRACEBACK",
    "INTERRUPTED",
    "RE_LEVEL_RANK",
    "STOP_KINDS",
    "TaskEnd",
    "add_level_error",
    "add_line_failure",
    "chatter_failures",
    "close_traceback",
    "cut_by_next",
    "failure_anchors",
    "failure_weight",
    "fatal_quick",
    "fatal_reason",
    "ipython_header",
    "is_cut_traceback",
    "line_tag",
    "message_rank",
    "named_failure",
    "pending_traceback",
    "settle",
    "task_end",
    "task_end_words",
    "trained_on",
    "what_rank",
]

CHATTER = (b"[WARNING]", b"[INFO]", b"[DEBUG]", b"[TRACE]", b"[WARN]")
# An error level: a tag or word at the line's start, `ERROR:` / `FATAL -` anywhere, or torch's C++ log level with its
# source file (`[E ProcessGroupNCCL.cpp:828] `, `[E1206 18:44:12.715 ProcessGroupNCCL.cpp:607] `) anywhere: behind a
# launcher's or a log console's own prefix (a CloudWatch table's `  | 2023-10-05T04:00:22.612-07:00 | [1]:`), the
# file:line tells it from prose
ERROR_LEVEL = re.compile(
    rb"^\[(?:ERROR|EXCEPTION|E\d{0,4})\b|^\[?[0-9:\-T ,.]*\]?\s*(?:\S+\s+)?(?:ERROR|FATAL)\b|"
    rb"\b(?:ERROR|FATAL)\s*[-:|]|\[E(?:\d{4} [\d:.]+)? +(?:\d+ +)?[\w\-]+\.(?:cpp|cc|cu|h|hpp):\d+\]"
)
# The kinds of core.logs.rows.failure_kinds, compiled once. Ordered: the first that matches names the line;
# the error-level ones (time-outs) after the others, only on an error-level line.
FATAL_SIGNATURES: list[tuple[str, re.Pattern[bytes]]] = [
    (kind.name, re.compile(kind.pattern)) for kind in FAILURE_KINDS if not kind.error_level
]
LEVELLED_SIGNATURES: list[tuple[str, re.Pattern[bytes]]] = [
    (kind.name, re.compile(kind.pattern)) for kind in FAILURE_KINDS if kind.error_level
]
# the kinds printed at a chatter level (FailureKind.chatter): named on a chatter line too, found by their anchors
CHATTER_SIGNATURES: list[tuple[str, re.Pattern[bytes]]] = [
    (kind.name, re.compile(kind.pattern)) for kind in FAILURE_KINDS if kind.chatter
]
# (and the launcher reports printed at a chatter level: LauncherReport.chatter)
_CHATTER_ANCHORS = tuple(
    dict.fromkeys(
        [a for kind in FAILURE_KINDS if kind.chatter for a in kind.anchors]
        + [a for report in LAUNCHER_REPORTS if report.chatter for a in report.anchors]
    )
)
CHATTER_SEARCH = AnchorSearch(_CHATTER_ANCHORS)  # (their one search: `chatter_failures`)
_ONE_LINE = not any(b"\n" in anchor for anchor in _CHATTER_ANCHORS)  # (`chatter_by_file`)
# python logging's `[%(asctime)s] [%(levelname)s]` at a chatter level (DeepSpeed's launcher; hydra's
# `[%(asctime)s][%(name)s][%(levelname)s]`, fairseq's), which no scan makes a candidate either
# (core.logs.tokens.bulk.STAMPED_ERROR takes only the error levels): searched for a chatter report
_RE_STAMPED_CHATTER = re.compile(
    rb"\[\d[^\]\n]{0,40}\](?: (?:[^ \n]{1,64} )?|\[[^\]\s]{1,64}\])\[(?:INFO|WARNING|WARN|DEBUG)\]"
)
_WEIGHTS = {kind.name: kind.weight for kind in FAILURE_KINDS}
_CODE = rb"[A-Z][0-9]{4}"  # a CANN-style code as the scans find it (core.logs.tokens.linescan.worth_lines)


def failure_anchors() -> tuple[bytes, ...]:
    """Every literal one of which each failure kind's and launcher report's line holds (no digits): what
    the bulk path's literal search must find (core.logs.rows.linekinds.WORTH)."""
    anchors = [a for kind in FAILURE_KINDS if not kind.chatter for a in kind.anchors]  # (chatter: `settle`'s search)
    anchors += [a for report in LAUNCHER_REPORTS if not report.chatter for a in report.anchors]
    return tuple(dict.fromkeys(anchors))


def _quick() -> re.Pattern[bytes]:
    """One search for every anchor (and a CANN-style code): a line that passes none is no kind's. Each
    alternative begins with its literal byte, so sre skips to the bytes that can begin one (~1 us a line
    instead of the kinds' regexes, ~8 us)."""
    literals = sorted({*failure_anchors(), *_CHATTER_ANCHORS}, key=lambda a: (-len(a), a))
    codes = [bytes([c]) + rb"[0-9]{4}" for c in range(ord("A"), ord("Z") + 1)]  # _CODE, one branch a letter
    return re.compile(b"|".join([*(re.escape(a) for a in literals), *codes]))


# A quick test every kind passes: it may let an ordinary line through, never stop a fatal one.
_QUICK = _quick()


def fatal_quick() -> re.Pattern[bytes]:
    """The quick test (a superset of every fatal line), for readers that test many lines at once."""
    return _QUICK


def fatal_reason(line: bytes) -> str | None:
    """What kind of fatal line `line` is ("critical", "CANN error", "glibc abort", "signal",
    "collective time-out"), or None for an ordinary line. Run only on lines that are not loss rows;
    a quick test first (`_QUICK`), the signature regexes only when it hits."""
    if line.startswith(CHATTER):
        return next((name for name, pattern in CHATTER_SIGNATURES if pattern.search(line)), None)
    if _QUICK.search(line) is None:
        return None
    for name, pattern in FATAL_SIGNATURES:
        if pattern.search(line):
            return name
    for name, pattern in LEVELLED_SIGNATURES:
        if pattern.search(line) and ERROR_LEVEL.search(line):
            return name
    return None


# A launcher's or library's tag in front of a line when one stream carries several processes. Real lines:
#   [1,2]<stderr>:Traceback (most recent call last):          mpirun --tag-output: [job,rank]<stream>:
#   [6]<stderr>:  File "/home/idps/.../horovod/_keras/__init__.py", line 136, in _compute_gradients
#                                                              horovodrun (Gloo): [rank]<stream>: (tests/fixtures/
#                                                              real_logs/horovodrun-rank-6-stderr-tag-keras-allreduce-
#                                                              traceback-cut_horovod-3989, horovod/horovod#3989)
#   [rank6]:[E624 07:12:55.531 ProcessGroupNCCL.cpp:1537] ...  torch >= 2.2 (TORCH_LOGS prefix per rank)
#   [ubuntu:4242] *** Process received signal ***              OpenMPI's signal report: [host:pid]
#   (TaskRunner pid=30188) RuntimeError: ...                   Ray's prefix on an actor's or task's lines
# The launcher tags are the row reader's own (core.logs.rows.lineranks): one definition, so a rank's rows and its
# failure are read behind the same tags.
_RE_TAG = re.compile(
    rb"(?:" + LAUNCHER_TAG + rb"|" + TORCH_TAG + rb"|\[[A-Za-z0-9][\w.\-]*:\d+\] )|"
    rb"\([A-Za-z_][\w.]* pid=\d+(?:, ip=[\d.]+)?\) "
)


def line_tag(line: bytes) -> tuple[int | None, int]:
    """(the rank a launcher tag at the start of `line` names, or None; where the line after the tag starts),
    (None, 0) without a tag: what comes after it is read as a line of its own (a traceback, a signal report)."""
    m = _RE_TAG.match(line)
    if m is None:
        return None, 0
    rank = m.group(1) or m.group(2)
    return (int(rank) if rank is not None else None), m.end()


# an exception message that starts by naming its rank (Megatron's `AssertionError: Rank 3: found NaN in local grad
# norm ...`, torch's `RuntimeError: [Rank 0] Watchdog caught collective operation timeout`)
_RE_MESSAGE_RANK = re.compile(
    r"\s*\[?[Rr]ank (\d+)\]?[:,\s]|"
    # --- rank named in the message: torch.multiprocessing.spawn's ProcessExitedException names the process (its
    # rank) that died, raised in the parent's stream (heldout fold-in). Sample (tests/fixtures/real_logs/
    # torch-spawn-process-sigkill_higherhrnet-47, https://github.com/HRNet/HigherHRNet-Human-Pose-Estimation/issues/47):
    #   Exception: process 1 terminated with signal SIGKILL
    r"\s*process (\d+) terminated with (?:signal|exit code)\b"
)


# --- rank named in a fatal line: after a glog-style level prefix (`[E ProcessGroupNCCL.cpp:566] `), torch's NCCL
# watchdog names the rank whose collective timed out; on one stream of several ranks that rank failed (heldout fold-in).
# Sample (tests/fixtures/real_logs/nccl-watchdog-six-ranks-in-message_accelerate-157,
# https://github.com/huggingface/accelerate/issues/157):
#   [E ProcessGroupNCCL.cpp:566] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, ...
# The same after std::terminate's `what():` (the message of the C++ exception that aborted the process), sample
# (tests/fixtures/real_logs/nccl-watchdog-behind-host-prefix-rank5_llamafactory-5558, hiyouga/LlamaFactory#5558):
#   mpi-rc1ou1aw-launcher:   what():  [PG 1 Rank 5] Process group watchdog thread terminated with exception: ...
RE_LEVEL_RANK = re.compile(rb"(?:\[[EF]\d{0,4}[ \]][^\]\n]*\]|\s*what\(\):)\s*\[(?:PG \d+ )?[Rr]ank (\d+)\]")
RE_WHAT = re.compile(rb"\s*what\(\):\s")
_TERMINATE = "terminate called "


def what_rank(st: FileState, line: bytes, rank: int) -> None:
    """std::terminate prints `terminate called after throwing an instance of 'T'` and then `  what():  <message>`;
    when that message names a rank (`line`, the `what():` line, named `rank`), the terminate line just read is
    that rank's too: on one stream of several ranks its failure is not the stream's own rank's."""
    if RE_WHAT.match(line) is None or not st.errors:
        return
    last = st.errors[-1]
    if last.kind == ErrorKind.EXCEPTION and _TERMINATE in last.message and last.rank != rank:
        st.errors[-1] = replace(last, rank=rank)


# MindSpore's level-prefixed line (`[ERROR] ME(123,7f...,python):2024-...] [file:line] func] message`), and the
# two of its messages that name a node or a worker rather than the line's rank
_RE_MS_LOG = re.compile(rb"^\[(\w+)\]\s+(\w+)\((\d+)[,:][^)]*\):(\S+)\s+\[[^\]]*\](?:\s+\w+\])?\s?(.*)$")
_RE_TIMED_OUT = re.compile(rb"The node: (\d+) is timed out")
_RE_WORKER_EXIT = re.compile(rb"Worker process (\d+) exit with exception")


def add_level_error(st: FileState, line: bytes, off: int, rank: int | None, obs_time: float) -> None:
    """An `[ERROR]`/`[CRITICAL]` line as the file's error row: a node's time-out, a worker's exit, a launcher's
    report naming its tasks, else an error that ends the rank's run unless training follows (`trained_on`)."""
    m = _RE_MS_LOG.match(line)
    msg = (m.group(5) if m else line).decode("utf-8", "replace").strip()
    lt = last_log_time(line)
    if (mt := _RE_TIMED_OUT.search(line)) is not None:
        add_error(st, ErrorKind.TIMEOUT, msg, "", off, int(mt.group(1)), None, obs_time, lt)
    elif (mw := _RE_WORKER_EXIT.search(line)) is not None:
        add_error(st, ErrorKind.WORKER_EXIT, msg, "", off, None, int(mw.group(1)), obs_time, lt)
    elif task_end(line) is not None:  # a launcher's report naming its tasks (msrun's `Time out nodes are`)
        add_line_failure(st, line, off, rank, obs_time)
    else:
        kind = ErrorKind.EXCEPTION if fatal_reason(line) or st.info.role == LogRole.WORKER else ErrorKind.ERROR_LOG
        if st.info.layout == "single":
            if (said := line_rank(line)) is not None and said.rank is not None:
                rank = said.rank  # one stream of several ranks: torch_npu's `RankID:3` says whose error it is
            else:
                rank = same_source_rank(st, line, rank)
            rank = process_rank(st, line, off, rank, _own(st))  # the rank its process names on another line
        add_error(st, kind, msg, "", off, rank, st.pid, obs_time, lt)


ORIGIN = "C++ exception origin"  # (core.logs.rows.failure_kinds_late): a failure of its own only when none precedes it


def add_line_failure(
    st: FileState, line: bytes, off: int, rank: int | None, obs_time: float, tagged: bool = False
) -> bool:
    """A line that is no loss row but ends the rank (glibc abort, signal, CANN code: `fatal_reason`), or a
    launcher's word that tasks ended badly (srun, mpirun: each named task is failed), as the file's error rows.
    False when the line is neither (a pure function of its text: the parser remembers such lines). `tagged`: a
    launcher's tag before the line named `rank`, the global rank, which a `[Rank N]` in the message (a rank within
    a process group: NVIDIA/nccl#1610's `[rank8]:[E218 ...] [Rank 0] Watchdog caught ...`) does not override."""
    if (ended := task_end(line)) is not None:
        text = line.decode("utf-8", "replace").strip()
        for task in ended.ranks:
            add_error(st, ErrorKind.TASK_EXIT, ended.message(task), text, off, task, None, obs_time)
        return True
    if (reason := fatal_reason(line)) is None:
        return False
    if reason == ORIGIN and st.errors and st.errors[-1].kind == ErrorKind.EXCEPTION:
        return True  # a C++ exception's origin line goes on with the failure just read: its words name it, and its rank
    text = line.decode("utf-8", "replace").strip()
    if st.info.layout == "single" and not tagged:
        if (named := RE_LEVEL_RANK.search(line)) is not None:
            rank = int(named.group(1))  # one stream of several ranks: the line names whose failure it is
            what_rank(st, line, rank)
        elif (said := line_rank(line)) is not None and said.rank is not None:
            rank = said.rank  # torch_npu's `RankID:2` behind a Ray actor's prefix, as on an `[ERROR]` line
        else:
            rank = same_source_rank(st, line, rank)
    if st.info.layout == "single":
        rank = process_rank(st, line, off, rank, _own(st))  # the rank its process names on another line
    add_error(st, ErrorKind.EXCEPTION, text, "", off, rank, st.pid, obs_time, last_log_time(line))
    return True


# torch's C++ log prefix and its source file (`[E ProcessGroupNCCL.cpp:455] `, `[E1206 18:44:12.715 ProcessGroup
# NCCL.cpp:607] `): one message block of one process is several such lines in a row, only the first naming the rank
# (torch < 2.2, whose `logPrefix()` was empty). Real lines (tests/fixtures/real_logs/composer-nccl-watchdog-rank-7-
# broadcast-terminate_llm-foundry-224, mosaicml/llm-foundry#224):
#   [E ProcessGroupNCCL.cpp:828] [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, ...
#   [E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the asynchronous nature ...
#   [E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down.
_RE_CPP_SOURCE = re.compile(rb"\[[EF](?:\d{4} [\d:.]+)? +(?:\d+ +)?([\w\-]+\.(?:cpp|cc|cu|h|hpp)):\d+\]")


def same_source_rank(st: FileState, line: bytes, rank: int | None) -> int | None:
    """The rank of an error line of torch's C++ log that names none (nor does a tag before it: `rank` is the file's
    own): the rank of the file's error just before it when that one is a line of the same source file (the same
    message block, a stream's lines of one process), else `rank`. Only the last error is looked at: another failure
    between them ends the block."""
    if rank != _own(st) or not st.errors or (m := _RE_CPP_SOURCE.search(line)) is None:
        return rank
    last = st.errors[-1]
    if last.rank is None or last.rank == rank or (before := _RE_CPP_SOURCE.search(last.message.encode())) is None:
        return rank
    return last.rank if before.group(1) == m.group(1) else rank


def _own(st: FileState) -> int | None:
    """The rank a file's line has when it names none (as `Parser.parse_line` gives it)."""
    return st.info.rank if st.info.role in (LogRole.WORKER, LogRole.ERRORS) else JOB_RANK


def message_rank(text: str, start: int, rank: int | None) -> int | None:
    """The rank an exception's message names right after its name (`text[start:]`), else `rank`: on a stream of
    several ranks the message, not the file, says whose failure it is."""
    named = _RE_MESSAGE_RANK.match(text, start)
    return int(named.group(1) or named.group(2)) if named is not None else rank


# ----------------------------------------------------------------------------- which failures ended the rank

_RE_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure)(?:\([A-Za-z_][\w.]*\))?(?::|$)|"
    r"^Exception"
)


CUT_TRACEBACK = "Traceback (most recent call last): cut off, no exception line after it (the log ends inside it)"


def failure_weight(message: str) -> int:
    """How well an error's message names its failure: 3 a Python exception or a CANN code (the root cause
    a user looks up), 2 another signature (a signal, a device or collective failure), 1 a traceback cut
    off, 0 a bare `[ERROR]` line that only ended the log. `diagnose` names a rank's failure by its first
    message of the highest weight."""
    if _RE_EXCEPTION.match(message) is not None:
        # an exception with no message (Paddle's `MemoryError:` before its summary) names a type, not the cause
        return 1 if message.rstrip().endswith(":") and message.count(":") == 1 else 3
    kind = fatal_reason(message.encode("utf-8", "replace"))
    if kind is not None:
        return _WEIGHTS[kind]
    return 1 if is_cut_traceback(message) else 0


def is_cut_traceback(message: str) -> bool:
    """Whether an error stands for a traceback whose exception line has not come (IPython's header names its
    exception up front: `TypeError: ` before the words, `ipython_header`)."""
    return message.endswith(CUT_TRACEBACK)


# IPython (Jupyter) prints the exception's name on the traceback's header line, then the frames, then the
# exception line. Real line (mindspore-lab/mindnlp#1863, tests/fixtures/real_logs/
# jupyter-tqdm-then-typeerror-traceback-in-train-step_mindnlp-1863):
#   TypeError                                 Traceback (most recent call last)
_RE_IPYTHON_HEADER = re.compile(rb"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*) {2,}Traceback \(most recent call last\)\s*$")


def ipython_header(line: bytes) -> str | None:
    """The failure a cut IPython traceback stands for (its exception's name, then CUT_TRACEBACK), or None when
    `line` is no IPython traceback header."""
    m = _RE_IPYTHON_HEADER.match(line)
    return None if m is None else f"{m.group(1).decode()}: {CUT_TRACEBACK}"


def named_failure(message: str) -> bool:
    """Whether an error's message names its failure (`failure_weight` above 0)."""
    return failure_weight(message) > 0


def pending_traceback(st: FileState) -> ErrorRow | None:
    """The failure standing for the traceback still open in this file (its exception line not read yet)."""
    for err in reversed(st.errors[-8:]):
        if is_cut_traceback(err.message) and err.offset == st.tb_start:
            return err
    return None


def close_traceback(st: FileState, rank: int | None) -> int | None:
    """The traceback's exception line came: the failure standing for it goes (the exception's replaces it);
    the rank is the one its header named (a launcher's tag is on the header, maybe not on every line)."""
    cut = pending_traceback(st)
    if cut is None:
        return rank
    del st.errors[next(i for i, e in enumerate(st.errors) if e is cut)]
    return cut.rank if cut.rank is not None else rank


def _keep_cut(st: FileState, raw: bytes) -> None:
    """The open traceback's failure holds `raw`, what was read of it."""
    if st.tb_start is not None and (cut := pending_traceback(st)) is not None:
        at = next(i for i in range(len(st.errors) - 1, -1, -1) if st.errors[i] is cut)
        st.errors[at] = replace(cut, context=raw.decode("utf-8", "replace").replace("\r\n", "\n"))


def cut_by_next(st: FileState, buf: bytes | bytearray, base: int, ls: int, limit: int, floor: int = 0) -> None:
    """Another traceback begins at `buf[ls]` before the open one's exception line: the open one's failure
    holds what was read of it (its first `limit` bytes), as at a block's end, so any chunking gives one
    context (`buf` starts at absolute offset `base`, this read's bytes at `buf[floor]`: a batch holds other
    files' before; `st.tb_carry` holds what earlier blocks read)."""
    if st.tb_start is None:
        return
    head = st.tb_start - base
    seen = bytes(buf[head:ls]) if head >= floor else st.tb_carry + bytes(buf[floor:ls])
    _keep_cut(st, seen[:limit])


def settle(
    st: FileState, buf: bytes | bytearray, floor: int, base: int, end: int, chatter: list[int] | None = None
) -> None:
    """After each block read (`buf[floor:end]`, file offset `base` at `buf[0]`): the failures printed at a chatter
    level in it (`chatter_failures`; `chatter`: its anchors' starts there, from a batch's one search); an open
    traceback's failure holds what was read of it (should the log end there), and failures followed by training
    are no longer failures (`trained_on`). The steps after the chatter's do nothing to a file without errors, and
    `report_blocks` nothing when no error was read in this block: skipped then (a live tick's files mostly)."""
    chatter_failures(st, buf, floor, base, end, chatter)
    if st.tb_start is not None:
        _keep_cut(st, bytes(st.tb_carry))
    if not st.errors:
        return
    trained_on(st)
    superseded_launch(st)
    relaunched(st, buf, floor, base, end)  # (the file's opening printed again: core.logs.rows.relaunch)
    if st.errors[-1].offset >= base + floor:  # (each of its passes walks back from the last error to this block's)
        report_blocks(st, buf, floor, base, end)  # (torchrun's report blocks: core.logs.rows.childfailed)


def chatter_by_file(buf: bytes | bytearray, spans: Sequence[tuple[int, int]]) -> list[list[int] | None]:
    """The chatter anchors' starts in each file's bytes buf[lo:hi] of a batch (`spans`), from one search over the
    batch (a live tick's ~1,000 files: one compiled call, not one each). Only when every file's bytes lie within
    its `CHATTER_WINDOW` and no anchor holds a newline (a hit then never spans two files); else None each."""
    if not spans or not _ONE_LINE or any(hi - lo > CHATTER_WINDOW for lo, hi in spans):
        return [None] * len(spans)
    hits = CHATTER_SEARCH.starts(buf, spans[0][0], spans[-1][1])
    cuts = [(bisect_left(hits, lo), bisect_left(hits, hi)) for lo, hi in spans]
    return [hits[a:b] for a, b in cuts]


INTERRUPTED = "interrupted"  # the kind of a Ctrl-C / SIGINT report (core.logs.rows.failure_kinds_more)
# the kinds that say the run was stopped from outside (a Ctrl-C, the scheduler's time limit or its cancel, a shell's
# `Terminated`), not that it crashed
STOP_KINDS = frozenset({INTERRUPTED, "job cancelled", "Slurm cancelled", "terminated", "stop signal"})


# How far from the end of what was read a chatter-level failure line counts: the lines that say how a run ended are
# its last ones (MindSpore's Ctrl-C report is its process's last word, or a Python traceback follows, which the scans
# read anyway). A window, not the whole block: one search of 96 MB of logs cost the reader ~10 % of its time
CHATTER_WINDOW = 32 << 10


def chatter_failures(
    st: FileState, buf: bytes | bytearray, floor: int, base: int, end: int, found: list[int] | None = None
) -> None:
    """The file's lines that a chatter-level failure kind names (MindSpore's `[WARNING] ... IntHandler] Process N
    receive KeyboardInterrupt signal.`) and that start within the last `CHATTER_WINDOW` bytes of what was read, as
    its error rows in file order. No scan makes a chatter line a candidate, so a search for the anchors (one pass) over
    the end of the block (`buf[floor:end]`, file offset `base` at `buf[0]`) finds them; a row whose line is no
    longer within the window (more was read after it) goes. A line is within the last bytes of its own block
    whenever it is within the file's, so a one-shot read and a live one that read the same bytes list the same
    rows; a line that is no chatter was `parse_line`'s. `found`: the anchors' starts in buf[floor:end], searched."""
    if not _CHATTER_ANCHORS:
        return
    cut = end - CHATTER_WINDOW  # (in `buf`: may lie before this read's bytes, in earlier reads)
    if st.chatter_at and min(st.chatter_at) < base + cut:
        _drop_chatter(st, base + cut)
    le = max(floor, cut)
    # (all anchors in one pass once the compiled scans are loaded)
    for at in CHATTER_SEARCH.starts(buf, le, end) if found is None else found:
        if at < le:
            continue  # another anchor of a line already read
        ls = max(buf.rfind(b"\n", floor, at) + 1, floor)
        le = buf.find(b"\n", at, end)
        le = end if le == -1 else le
        line = bytes(buf[ls:le]).rstrip(b"\r")
        if ls >= cut and _chatter_level(line):
            _add_chatter_failure(st, line, base + ls)


def _chatter_level(line: bytes) -> bool:
    """Whether `line` is printed at a chatter level, also behind pdsh's `host: ` prefix (DeepSpeed's multi-node
    launcher: `192.169.83.120: [2023-10-13 11:31:28,593] [INFO] [launch.py:315:sigkill_handler] Killing subprocess
    249`, deepspeedai/DeepSpeed#4510): the node's launcher says the same words there as on one node."""
    host = host_prefix(line)
    body = line if host is None else line[host[1] :]
    return body.startswith(CHATTER) or _RE_STAMPED_CHATTER.match(body) is not None


def _drop_chatter(st: FileState, start: int) -> None:
    """The chatter-level failure rows whose line starts before `start` (no longer among the last bytes read) go."""
    gone = {off for off in st.chatter_at if off < start}
    st.chatter_at = [off for off in st.chatter_at if off >= start]
    st.errors[:] = [err for err in st.errors if err.offset not in gone]


def _add_chatter_failure(st: FileState, line: bytes, off: int) -> None:
    """A chatter-level failure line as an exception row of the file's rank (or a launcher's chatter-level report as
    its tasks' rows, `task_end`), at its place in file order (the block's other errors were added while it was
    read); its message is MindSpore's text after the log header (`Process N receive KeyboardInterrupt signal.`),
    which `fatal_reason` names too (fairseq's `crash.pt` save behind hydra's stamp). A line of neither is no
    failure."""
    if off in st.chatter_at or any(off <= err.offset < off + len(line) for err in st.errors):
        return  # a line already listed is never listed twice (the line reader took one behind a pdsh host prefix)
    ended = task_end(line)
    if ended is None and fatal_reason(line) is None:
        return
    obs_time = time.time() if st.live else float("nan")
    at, n = len(st.errors), len(st.errors)
    while at and st.errors[at - 1].offset > off:
        at -= 1
    if ended is not None:
        text = line.decode("utf-8", "replace").strip()
        for task in ended.ranks:
            add_error(st, ErrorKind.TASK_EXIT, ended.message(task), text, off, task, None, obs_time)
    else:
        m = _RE_MS_LOG.match(line)
        msg = (m.group(5) if m else line).decode("utf-8", "replace").strip()
        add_error(st, ErrorKind.EXCEPTION, msg, "", off, _own(st), st.pid, obs_time, last_log_time(line))
    st.errors[at:] = [*st.errors[n:], *st.errors[at:n]]
    st.chatter_at.append(off)
