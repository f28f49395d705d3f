"""A launcher's word that its tasks (ranks) ended badly (srun, mpirun, torchrun, DeepSpeed, msrun, ...), compiled from
the `LauncherReport` entries (core.logs.rows.failure_kinds.LAUNCHER_REPORTS): which tasks, on which node, and why.
Split off core.logs.rows.failures, which reads them among a file's other failure lines."""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

from core.logs.rows.failure_kinds import LAUNCHER_REPORTS

__all__ = [
    "WORKERS_KILLED",
    "TaskEnd",
    "kills_only",
    "launcher_traceback",
    "spawn_traceback",
    "task_end",
    "task_end_words",
]

# What a launcher says when one of its tasks ends badly (core.logs.rows.failure_kinds.LAUNCHER_REPORTS)
_LAUNCHERS = [(report.launcher, re.compile(report.pattern), report.reason) for report in LAUNCHER_REPORTS]
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
    launcher: str  # a LauncherReport's: "srun" | "mpirun" | "torchrun" | "deepspeed" | "paddle" | ...

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


_RE_ENDED = re.compile(
    "^(" + "|".join(dict.fromkeys(re.escape(r.launcher) for r in LAUNCHER_REPORTS)) + r"): task \d+ on \S+ ended: (.+)$"
)


def task_end_words(message: str) -> tuple[str, str] | None:
    """(launcher, reason) of a `TaskEnd.message` ("srun", "Segmentation fault"), None for other messages."""
    m = _RE_ENDED.match(message)
    return (m.group(1), m.group(2)) if m else None


def _task_list(text: str) -> tuple[int, ...] | None:
    """A task list (Slurm's "7", "0-3", "0,2,5-6"; Paddle's "1, 3"; msrun's quoted "'3', '5'") as ranks; None when
    it is not one or is absurdly wide."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().strip("'").partition("-")
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
    for launcher, pattern, fixed in _LAUNCHERS:
        if (m := pattern.search(line)) is None:
            continue
        found = {k: v.decode("utf-8", "replace") for k, v in m.groupdict().items() if v is not None}
        if "code" in found:
            code = int(found["code"])
            reason = f"signal {-code}" if code < 0 else f"exit code {code}"
        else:
            reason = found.get("reason", fixed)
        ranks = _task_list(found.get("ranks", "0"))
        if ranks is None or reason in _COLLATERAL:
            return None
        return TaskEnd(ranks, found.get("node", "local"), reason, launcher)
    return None


# The fixed reasons of the reports a launcher prints at a chatter level (LauncherReport.chatter): they say the launcher
# killed its workers, the run's end, not how it ended
WORKERS_KILLED = frozenset(r.reason for r in LAUNCHER_REPORTS if r.chatter)


def kills_only(message: str) -> bool:
    """Whether a task report (`TaskEnd.message`) only says the launcher killed the task (DeepSpeed's `Killing
    subprocess`): a worker's own failure or the launcher's exit-code report, when either is there, names the end."""
    words = task_end_words(message)
    return words is not None and words[1] in WORKERS_KILLED


# A traceback's frame line (`  File "/x/bin/torchrun", line 8, in <module>`), maybe after a stream's tag
_RE_FRAME = re.compile(r'File "([^"\n]+)", line \d+')
# The outermost frame of a traceback the launcher raised itself (a worker's own script is there otherwise): torchrun's
# console script (`.../bin/torchrun`, hpcaitech/ColossalAI#3514; on Windows `torchrun-script.py`,
# `torchrun.exe\__main__.py`), `python -m torch.distributed.run` / `.launch` (past runpy's frames), DeepSpeed's and
# Accelerate's launchers; torch elastic's agent (`torch/distributed/launcher/api.py`, `in launch_agent`: only the
# launcher runs it), the outermost frame of its traceback cut at the start (vllm-project/speculators#1115)
_RE_LAUNCHER_ENTRY = re.compile(
    r"(?:^|[/\\])(?:(?:torchrun|deepspeed|accelerate)(?:-script\.py|\.exe[/\\]__main__\.py)?"
    r"|torch[/\\]distributed[/\\](?:run|launch|launcher[/\\]api)\.py"
    r"|deepspeed[/\\]launcher[/\\](?:runner|launch)\.py"
    r"|accelerate[/\\]commands[/\\](?:launch|accelerate_cli)\.py)$"
)


def launcher_traceback(context: str) -> bool:
    """Whether an exception's traceback (`context`, whole or cut: a log often ends inside it) is the launcher's own
    (raising ChildFailedError when a worker failed), not a rank's failure: its outermost frame, past runpy's (which
    `python -m` adds), is a launcher's entry point. The frames decide, not the exception's name: a bare
    `ChildFailedError:` report cut before its root cause's rank (deepinsight/insightface#2182) still stands for
    the file's rank."""
    for frame in _RE_FRAME.finditer(context):
        path = frame.group(1)
        if not path.endswith("runpy.py"):
            return _RE_LAUNCHER_ENTRY.search(path) is not None
    return False


# A frame of torch.multiprocessing's spawn (`.../torch/multiprocessing/spawn.py`, detectron2's launch and fairseq's
# call_main go through it), or the source line calling it where the log is cut before spawn's own frames (icefall's
# `mp.spawn(run, args=(world_size, args), nprocs=world_size, join=True)`)
_RE_SPAWN = re.compile(
    r'File "[^"\n]*[/\\]torch[/\\]multiprocessing[/\\]spawn\.py"'
    r"|^[ \t]*(?:mp|multiprocessing|torch\.multiprocessing)\.spawn\(",
    re.MULTILINE,
)


def spawn_traceback(context: str) -> bool:
    """Whether an exception's traceback (`context`, whole or cut) passes through torch.multiprocessing's spawn: the
    parent raised it when a child process died (`-- Process 1 terminated with the following error:`), a word on that
    child's failure, not a failure of the parent's own rank."""
    return _RE_SPAWN.search(context) is not None
