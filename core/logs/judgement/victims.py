"""Ranks that did not fail of their own: a launcher, a scheduler or another process stopped them after some other rank
failed (issue 30). Paddle's launcher SIGTERMs the ranks left when one dies; torchrun, srun and DeepSpeed do alike. Such
a rank's log ends in a termination it received, often before the failed rank's own log was last written, so the
earliest-failing rank by time is a victim; a person reads the rank with a failure of its own.

Judged by the kind of each failure line (core.logs.rows.failure_kinds' names, `fatal_reason`), never by a file's name.
Real lines (tests/fixtures/real_logs/paddledet-rtdetr-4-workerlogs-gather-assert-cuda-719-rank0-sigterm-others_
fabric-defect-detection-workerlog, OrionZJ/Fabric-Defect-Detection log/workerlog.1):
  FatalError: `Termination signal` is detected by the operating system.
  [SignalInfo: *** SIGTERM (@0x3e8000002ae) received by PID 768 (TID 0x7ff0b57ad700) from PID 686 ***]
and the rank that failed of its own (workerlog.0): `[SignalInfo: *** SIGABRT (@0x3e8000002fe) received by PID 766 (TID
0x7f9b6946c700) from PID 766 ***]`, a signal it raised itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

import pandas as pd

from core.logs.rows.cells import as_int
from core.logs.rows.failures import STOP_KINDS, fatal_reason, task_end_words
from core.logs.rows.filestate import FATAL_KINDS
from core.logs.rows.taskends import kills_only

__all__ = ["TimedGroup", "first_failure", "received_only", "stopped_ranks"]

# Paddle's signal handler names a SIGTERM it caught `Termination signal` (its `FatalError: ...` line, an exception
# by its shape, so no failure kind names it)
_RE_PADDLE_TERM = re.compile(r"^FatalError: `Termination signal` is detected by the operating system")
# a native signal handler's report (the "signal report" kind): which signal, which process got it, who sent it
_RE_SENT = re.compile(r"\*\*\* (SIG[A-Z]+) \(@0x[0-9A-Fa-f]+\) received by PID (\d+)(?: \(TID [^)]*\))? from PID (\d+)")
# torchrun's ChildFailedError field (the "signal" kind): the signal the rank died of, its sender unnamed
_RE_DIED_OF = re.compile(r"\bSignal \d+ \((SIG[A-Z]+)\) received by PID \d+")
_STOPS = {"SIGTERM", "SIGINT", "SIGHUP"}  # the signals a launcher or a scheduler stops its tasks with
# SIGKILL only when another (user) process names itself its sender: the kernel's OOM killer kills with it too
_KILLS = {"SIGKILL"}
_VICTIM, _OWN, _NEUTRAL = 1, 2, 0


def _line(message: str) -> int:
    """Whether one failure line says its rank was stopped from outside (_VICTIM), failed of its own (_OWN), or only
    dates a signal report whose other lines say which (_NEUTRAL: `*** Aborted at N (unix time)`)."""
    if _RE_PADDLE_TERM.match(message) is not None:
        return _VICTIM
    if (words := task_end_words(message)) is not None:  # a launcher's report of the task's end
        return _VICTIM if kills_only(message) or words[1] == "signal 15" else _OWN
    kind = fatal_reason(message.encode("utf-8", "replace"))
    if kind in STOP_KINDS:
        return _VICTIM
    if kind == "signal report":
        sent = _RE_SENT.search(message)
        if sent is None:
            return _NEUTRAL if "(unix time)" in message else _OWN
        signame, pid, sender = sent.groups()
        from_outside = pid != sender and sender != "0"
        return _VICTIM if from_outside and signame in _STOPS | _KILLS else _OWN
    if kind == "signal" and (died := _RE_DIED_OF.search(message)) is not None:
        return _VICTIM if died.group(1) in _STOPS else _OWN
    return _OWN


def received_only(messages: Iterable[str]) -> bool:
    """Whether a rank's failure lines only say it was stopped from outside (a termination it received, a launcher's
    word that it killed the task): such a rank is a victim, no root cause, while another rank failed of its own."""
    seen = {_line(m) for m in messages}
    return _VICTIM in seen and _OWN not in seen


def stopped_ranks(errors: pd.DataFrame) -> set[int]:
    """The ranks whose every fatal line (FATAL_KINDS, as `diagnose` groups them) only says it was stopped from
    outside (`received_only`): `watch` names another failed rank first, as `diagnose` does."""
    if errors.empty:
        return set()
    fatal = errors[errors["kind"].isin(FATAL_KINDS) & (errors["rank"] >= 0)]
    return {as_int(r) for r, rows in fatal.groupby("rank") if received_only(rows["message"].astype(str))}


class TimedGroup(Protocol):
    """What `first_failure` reads of a failure group (core.logs.judgement.diagnose.FailureGroup)."""

    @property
    def first_rank(self) -> int: ...
    @property
    def first_time(self) -> float | None: ...
    @property
    def stopped(self) -> bool: ...


G = TypeVar("G", bound=TimedGroup)


def first_failure(groups: Sequence[G]) -> G | None:
    """The likely root cause's group: the earliest of the groups with a failure of their own (every group when each
    was only stopped from outside), by time, else the first listed. One choice for `diagnose`, the Monitor and the
    alerts."""
    own = [g for g in groups if not g.stopped] or list(groups)
    timed = [g for g in own if g.first_time is not None]
    if timed:
        return min(timed, key=lambda g: (g.first_time, g.first_rank))
    return own[0] if own else None
