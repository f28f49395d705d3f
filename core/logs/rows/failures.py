"""Lines that end a rank without a Python traceback: what `[CRITICAL]`, CANN, glibc, the kernel and the
collective libraries print when a process dies (issue 18 item 5).

Why a list of signatures: a rank killed by the OOM killer, a glibc abort after a CANN `EI0002` or a
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
import signal
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from core.logs.rows.filestate import ErrorKind, ErrorRow

if TYPE_CHECKING:
    from core.logs.rows.filestate import FileState

__all__ = [
    "CUT_TRACEBACK",
    "RE_LEVEL_RANK",
    "TaskEnd",
    "close_traceback",
    "failure_weight",
    "fatal_quick",
    "fatal_reason",
    "line_tag",
    "message_rank",
    "named_failure",
    "pending_traceback",
    "settle",
    "task_end",
    "task_end_words",
    "trained_on",
]

CHATTER = (b"[WARNING]", b"[INFO]", b"[DEBUG]", b"[TRACE]", b"[WARN]")
ERROR_LEVEL = re.compile(
    rb"^\[(?:ERROR|EXCEPTION|E\d{0,4})\b|^\[?[0-9:\-T ,.]*\]?\s*(?:\S+\s+)?(?:ERROR|FATAL)\b|"
    rb"\b(?:ERROR|FATAL)\s*[-:|]"
)
_SIGNALS = rb"Segmentation fault|Aborted|Killed|Bus error|Illegal instruction|Floating point exception"
# Ordered: the first name that matches is the reason's kind.
FATAL_SIGNATURES: list[tuple[str, re.Pattern[bytes]]] = [
    ("critical", re.compile(rb"^\[CRITICAL\]|\s(?:CRITICAL|FATAL)\s+-\s")),  # MindSpore's, python logging's
    # a trainer's own word that the training loop died or that it stops on a non-finite loss (issue 30):
    # Chainer's `Exception in main training loop: Caught RuntimeError in replica 0 on device 0.`,
    # `Loss in not finite. Terminate training.`, `WARNING: non-finite loss, ending training`,
    # `Loss is nan, stopping training`
    (
        "trainer stop",
        re.compile(
            rb"Exception in main training loop|(?i:(?:not finite|non-finite|\bnan\b|\binf\b)[^\n]{0,80}?\b"
            rb"(?:terminat(?:e|es|ed|ing)|stop(?:s|ped|ping)?|end(?:s|ed|ing)?|abort(?:s|ed|ing)?)"
            rb"[ \t]+(?:the[ \t]+)?training)"
        ),
    ),
    # CANN error codes are E + five characters (a letter or digit, then 4 digits), written as a code:
    # `EI0002:`, `[EE9999]`, `code EJ0001`, `E39999: Inner Error!`, `EZ9999`, `EH9999`, `EL0004`
    ("CANN error", re.compile(rb"(?<![A-Za-z0-9_.+\-])E[A-Z0-9][0-9]{4}(?=[:\]]|\s+(?:error|Error))")),
    (
        "glibc abort",
        re.compile(
            rb"(?:malloc_consolidate|malloc|free|munmap_chunk|realloc|corrupted)\(\): "
            rb"(?:invalid|corrupted|unaligned|memory corruption|unsorted)|"
            rb"double free or corruption|corrupted size vs\. prev_size|"
            rb"corrupted double-linked list|\*\*\* stack smashing detected"
        ),
    ),
    # the shell's or the kernel's word on a dead process: `run.sh: line 7: 4242 Killed  python train.py`,
    # `Segmentation fault (core dumped)`, `Fatal Python error: Segmentation fault`, `Out of memory: Killed process`;
    # OpenMPI's report (behind its `[host:pid] ` prefix): `*** Process received signal ***`,
    # `Signal: Segmentation fault (11)`
    (
        "signal",
        re.compile(
            rb"^\s*(?:" + _SIGNALS + rb")(?:\s*\(core dumped\))?[.!]?\s*$|"
            rb"(?:^|\s)\d+\s+(?:" + _SIGNALS + rb")(?:\s*\(core dumped\))?(?:\s|$)|"
            rb"\(core dumped\)|Fatal Python error|Killed process \d+|Out of memory: Kill|"
            rb"\*\*\* Process received signal \*\*\*|^\s*Signal: [A-Z][a-z]+(?: [a-z]+)* \(\d+\)\s*$|"
            # absl's / glog's failure handler (Ray actors): `*** SIGSEGV received at time=1785913868 on cpu 169 ***`
            rb"\*\*\* SIG[A-Z]+ received at time="
        ),
    ),
    # the device's word: MindSpore on Ascend (`RunGraph] run task error!`, `rtStreamSynchronize execute
    # failed`, `Allocate output memory failed`), CUDA / NPU out of memory
    (
        "device error",
        re.compile(
            # torch_npu's wrapper codes (a CANN code, when printed, names the cause better):
            # `[ERROR] ... (PID:144556, Device:0, RankID:0) ERR02200 DIST call hccl api failed.`
            rb"\bERR[0-9]{5}\b|\b[Rr]un task error\b|[Ss]ynchroni[sz]e\w*(?: execute)? (?:failed|error)|"
            rb"[Ss]ync ?(?:default )?[Ss]tream\w* (?:failed|error)|"
            rb"\b[Aa]llocate (?:output |device |workspace |static |dynamic )?memory failed|"
            rb"\b(?:CUDA|NPU|GPU|[Dd]evice) out of memory|\bOut of device memory|memory isn't enough|"
            # Paddle's summary: `Out of memory error on GPU 0. Cannot allocate 128.000000MB memory on GPU 0, ...`
            rb"\b[Oo]ut of memory (?:error )?on (?:GPU|NPU|XPU|device)\b"
        ),
    ),
    # NCCL's: a collective library error by name, or the torch process group aborting (its watchdog's
    # time-out is a "collective time-out", below)
    (
        "collective failure",
        re.compile(
            rb"\bnccl(?:Internal|System|UnhandledCuda|Remote|InvalidUsage|InvalidArgument)Error\b|"
            rb"\bNCCL error\b|NCCL communicator was aborted|taking the entire process down|"
            rb"^\[E\d{0,4}[ \]].*ProcessGroupNCCL.*(?:[Aa]bort|[Ee]rror|[Ee]xception|failed)"
        ),
    ),
    # --- signal: UCX's / a native signal handler's report of a process's own signal (heldout fold-in).
    # Sample (horovodrun, Keras; tests/fixtures/real_logs/horovodrun-keras-caught-signal-11-rank-1_horovod-3666,
    # https://github.com/horovod/horovod/issues/3666):
    #   [1,1]<stderr>:[datanode1:1071388:0:1071412] Caught signal 11 (Segmentation fault: address not mapped ...)
    ("signal", re.compile(rb"\b[Cc]aught signal \d+ \(")),
    # --- critical: glog's FATAL line (`F` + MMDD time thread file:line]), e.g. a failed `CHECK` in
    # OneFlow / any glog-using native library; the process aborts right after (heldout fold-in).
    # Sample (tests/fixtures/real_logs/oneflow-glog-check-failed-two-processes_oneflow-6746,
    # https://github.com/Oneflow-Inc/oneflow/issues/6746):
    #   F1122 13:50:47.079073 63928 user_op.cpp:299] Check failed: it != arg2tensor_desc_.end() Cannot find ...
    ("critical", re.compile(rb"^F\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w.\-]+:\d+\] ")),
]
COLLECTIVE_TIMEOUT = re.compile(
    rb"(?i)(?:\b(?:hccl|hcom|nccl|gloo|collective|cluster|topology|distributed|scheduler|"
    rb"meta server|watchdog|notify wait|socket|heartbeat|rendezvous)\b.*\b"
    rb"(?:time ?out|timed out|times out|timing out)\b|\b(?:time ?out|timed out|times out)\b.*\b"
    rb"(?:hccl|hcom|nccl|gloo|collective|cluster|topology|distributed|scheduler|watchdog)\b)"
)


# A quick test every signature passes (first letter, then the rest): one search of ~1 us a line instead
# of five regexes (~8 us); it may let an ordinary line through, never stop a fatal one.
_QUICK = re.compile(
    rb"[ABCEFIKOSTcdpst(](?:RITICAL|ATAL|[A-Z][0-9]{4}|\): |ouble free|orrupted|tack smashing|"
    rb"egmentation fault|borted|illed|us error|llegal instruction|loating point exception|"
    rb"ore dumped|atal Python error|ut of memory|ime ?[Oo]ut|imed out|imes out|iming out|IME ?OUT|"
    rb"run: error: |rocess rank \d)|"
    rb"E[0-9]{5}|exitcode: |Process received signal|Signal: |un task error|ynchroni|ync ?[Ss]tream|ync default|"
    rb"llocate |out of memory|"
    rb"ut of device memory|isn't enough|ccl[A-Za-z]+Error|NCCL error|communicator was aborted|"
    rb"entire process down|ProcessGroupNCCL|"
    # issue 30's trainer stops, Ascend `ERR` codes, absl's signal report, launcher reports (`task_end`)
    rb"Exception in main training loop|(?i:terminat|stop|end|abort)\w*[ \t]+(?:the[ \t]+)?[Tt]raining|ERR[0-9]{5}|"
    rb"SIG[A-Z]+ received at time|exits with return code|ABORT!!!|terminated with the following error|"
    rb"local_rank: \d+\)|"
    # heldout fold-in: a native handler's `Caught signal 11 (`, glog's FATAL line (`F1122 13:50:47.079073 ...`)
    rb"aught signal \d|^F\d{4} \d\d:"
)


def fatal_quick() -> re.Pattern[bytes]:
    """The quick test (a superset of every fatal line), for readers that test many lines at once."""
    return _QUICK


def fatal_reason(line: bytes) -> str | None:
    """What kind of fatal line `line` is ("critical", "CANN error", "glibc abort", "signal",
    "collective time-out"), or None for an ordinary line. Run only on lines that are not loss rows;
    a quick test first (`_QUICK`), the signature regexes only when it hits."""
    if line.startswith(CHATTER):
        return None
    if _QUICK.search(line) is None:
        return None
    for name, pattern in FATAL_SIGNATURES:
        if pattern.search(line):
            return name
    if COLLECTIVE_TIMEOUT.search(line) and ERROR_LEVEL.search(line):
        return "collective time-out"
    return None


# What a launcher says when one of its tasks ends badly; the task's own log may hold no trace of it (a
# segfault in MindSpore's finalize, a process killed from outside). Real lines (tests/fixtures):
#   srun: error: n2: task 7: Segmentation fault        (Slurm's output of the batch script, slurm-J.out)
#   srun: error: n1: tasks 0-3: Terminated             (srun ending the others: --kill-on-bad-exit)
#   mpirun noticed that process rank 3 with PID 4242 on node n1 exited on signal 11 (Segmentation fault).
_SRUN_TASKS = re.compile(rb"^srun: error: (\S+): tasks? ([0-9][0-9,\-]*): (.+?)\s*$")
_MPIRUN_RANK = re.compile(rb"process rank (\d+) with PID \d+ on node (\S+) exited on signal \d+ \(([^)]+)\)")
#   ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 2 (pid: 4242) of binary: ...
_TORCHRUN_RANK = re.compile(rb"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: \d+\)")
# torchrun's ChildFailedError report, one block per failed rank:   `  rank      : 1 (local_rank: 1)`
_TORCHRUN_TABLE = re.compile(rb"^\s*rank\s*: (\d+) \(local_rank: \d+\)\s*$")
# DeepSpeed's launcher: `[ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py',
# '--local_rank=0', ...] exits with return code = -9`
_DEEPSPEED_RANK = re.compile(rb"exits with return code = (-?[1-9]\d*)\s*$")
_LOCAL_RANK_ARG = re.compile(rb"--local_rank=(\d+)")
# Paddle's launcher: `ABORT!!! Out of all 4 trainers, the trainer process with rank=[3] was aborted. Please check
# its log.`
_PADDLE_ABORT = re.compile(rb"ABORT!!! .*?rank=\[(\d+(?:,\s*\d+)*)\] was aborted")
# torch.multiprocessing.spawn (detectron2's launch): `-- Process 2 terminated with the following error:`
_SPAWN_PROCESS = re.compile(rb"^-- Process (\d+) terminated with the following error:")
# SIGTERM is what srun / scancel send the tasks left when one failed or the job was cancelled: the
# task did not fail of its own, so it is no root cause (the failed one is named on its own line)
_COLLATERAL = {"Terminated"}
_MAX_TASKS = 1 << 20  # a task range wider than this is not a real job's (and would cost memory)


@dataclass(frozen=True)
class TaskEnd:
    """Tasks (ranks) that a launcher reports as ended badly, on which node, and its word for why."""

    ranks: tuple[int, ...]
    node: str
    reason: str  # "Segmentation fault", "Exited with exit code 1", "Killed", ...
    launcher: str  # "srun" | "mpirun" | "torchrun" | "deepspeed" | "paddle" | "torch.multiprocessing"

    def message(self, rank: int) -> str:
        return f"{self.launcher}: task {rank} on {self.node} ended: {self.reason}{_signal_name(self.reason)}"


def _signal_name(reason: str) -> str:
    """` (SIGKILL)` after a reason `signal 9`: the name a user looks up (torchrun prints only `exitcode: -9`)."""
    number = reason.removeprefix("signal ")
    if number == reason or not number.isdigit():
        return ""
    try:
        return f" ({signal.Signals(int(number)).name})"
    except ValueError:
        return ""


_RE_ENDED = re.compile(r"^(srun|mpirun|torchrun|deepspeed|paddle|torch\.multiprocessing): task \d+ on \S+ ended: (.+)$")


def task_end_words(message: str) -> tuple[str, str] | None:
    """(launcher, reason) of a `TaskEnd.message` ("srun", "Segmentation fault"), None for other messages."""
    m = _RE_ENDED.match(message)
    return (m.group(1), m.group(2)) if m else None


def _task_list(text: str) -> tuple[int, ...] | None:
    """Slurm's task list ("7", "0-3", "0,2,5-6") as ranks; None when it is not one or is absurdly wide."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        first, last = int(lo), int(hi or lo)
        if last < first or len(out) + last - first >= _MAX_TASKS:
            return None
        out.extend(range(first, last + 1))
    return tuple(out)


def task_end(line: bytes) -> TaskEnd | None:
    """A launcher's report of tasks that ended by their own failure (a signal, a non-zero exit), or None:
    for any other line, and for tasks only terminated because another one failed (srun's `Terminated`)."""
    if (m := _SRUN_TASKS.match(line)) is not None:
        launcher = "srun"
        node, tasks, reason = (g.decode("utf-8", "replace") for g in m.groups())
        ranks = _task_list(tasks)
    elif (m := _MPIRUN_RANK.search(line)) is not None:
        launcher = "mpirun"
        rank, node, reason = (g.decode("utf-8", "replace") for g in m.groups())
        ranks = (int(rank),)
    elif (m := _TORCHRUN_RANK.search(line)) is not None:
        launcher, node = "torchrun", "local"
        code = int(m.group(1))
        reason = f"signal {-code}" if code < 0 else f"exit code {code}"
        ranks = (int(m.group(2)),)
    else:
        return _task_end_more(line)
    if ranks is None or reason in _COLLATERAL:
        return None
    return TaskEnd(ranks, node, reason, launcher)


def _task_end_more(line: bytes) -> TaskEnd | None:
    """The other launchers' reports of a failed task (torchrun's ChildFailedError table, DeepSpeed, Paddle,
    torch.multiprocessing.spawn), each naming its rank; None for any other line."""
    if (m := _TORCHRUN_TABLE.match(line)) is not None:
        return TaskEnd((int(m.group(1)),), "local", "failed (ChildFailedError report)", "torchrun")
    if (m := _DEEPSPEED_RANK.search(line)) is not None:
        arg = _LOCAL_RANK_ARG.search(line)
        code = int(m.group(1))
        reason = f"signal {-code}" if code < 0 else f"exit code {code}"
        return TaskEnd((int(arg.group(1)) if arg else 0,), "local", reason, "deepspeed")
    if (m := _PADDLE_ABORT.search(line)) is not None:
        ranks = tuple(int(r) for r in m.group(1).split(b","))
        return TaskEnd(ranks, "local", "aborted (ABORT!!!)", "paddle")
    if (m := _SPAWN_PROCESS.match(line)) is not None:
        return TaskEnd((int(m.group(1)),), "local", "terminated with the following error", "torch.multiprocessing")
    return None


# A launcher's or library's tag in front of a line when one stream carries several processes. Real lines:
#   [1,2]<stderr>:Traceback (most recent call last):          mpirun --tag-output: [job,rank]<stream>:
#   [rank6]:[E624 07:12:55.531 ProcessGroupNCCL.cpp:1537] ...  torch >= 2.2 (TORCH_LOGS prefix per rank)
#   [ubuntu:4242] *** Process received signal ***              OpenMPI's signal report: [host:pid]
#   (TaskRunner pid=30188) RuntimeError: ...                   Ray's prefix on an actor's or task's lines
_RE_TAG = re.compile(
    rb"\[(?:\d+,(\d+)\]<std(?:out|err)>:|rank(\d+)\]:|[A-Za-z0-9][\w.\-]*:\d+\] )|"
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
RE_LEVEL_RANK = re.compile(rb"\[[EF]\d{0,4}[ \]][^\]\n]*\]\s*\[(?:PG \d+ )?[Rr]ank (\d+)\]")


def message_rank(text: str, start: int, rank: int | None) -> int | None:
    """The rank an exception's message names right after its name (`text[start:]`), else `rank`: on a stream of
    several ranks the message, not the file, says whose failure it is."""
    named = _RE_MESSAGE_RANK.match(text, start)
    return int(named.group(1) or named.group(2)) if named is not None else rank


# ----------------------------------------------------------------------------- which failures ended the rank

_RE_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure)(?::|$)|^Exception"
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
        return 3 if kind in ("CANN error", "critical") else 2
    return 1 if message == CUT_TRACEBACK else 0


def named_failure(message: str) -> bool:
    """Whether an error's message names its failure (`failure_weight` above 0)."""
    return failure_weight(message) > 0


def pending_traceback(st: FileState) -> ErrorRow | None:
    """The failure standing for the traceback still open in this file (its exception line not read yet)."""
    for err in reversed(st.errors[-8:]):
        if err.message == CUT_TRACEBACK and err.offset == st.tb_start:
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


def settle(st: FileState) -> None:
    """After each block read: an open traceback's failure holds what was read of it (should the log end
    there), and failures followed by training are no longer failures (`trained_on`)."""
    if st.tb_start is not None and (cut := pending_traceback(st)) is not None:
        at = next(i for i in range(len(st.errors) - 1, -1, -1) if st.errors[i] is cut)
        st.errors[at] = replace(cut, context=bytes(st.tb_carry).decode("utf-8", "replace").replace("\r\n", "\n"))
    trained_on(st)


def trained_on(st: FileState) -> None:
    """Failures followed by training rows in the same file did not end the rank (a caught exception
    printed, a retried download, an `[ERROR]` the run survived): they stay listed, as error lines.
    One rule for `watch`, `diagnose` and the Monitor, which all judge by the error kinds."""
    last = st.rows.last()
    if last is None or not st.errors:
        return
    after = _last_row_at(st)
    for i, err in enumerate(st.errors):
        if err.kind == ErrorKind.EXCEPTION and err.offset < after(err.rank):
            st.errors[i] = replace(err, kind=ErrorKind.ERROR_LOG)


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
