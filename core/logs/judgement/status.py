"""Per-rank state for the status table (running / stalled / crashed / nan / finished / stopped /
waiting) and the tail of a log with the framework chatter hidden."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np
import pandas as pd

from core.files import open_checked
from core.logs.rows.failures import STOP_KINDS, fatal_reason, named_failure
from core.logs.rows.filestate import FATAL_KINDS, JOB_RANK, ErrorKind
from core.logs.rows.formats import MARKERS, NOISE_PREFIXES
from core.logs.rows.snapshot import RunSnapshot
from core.logs.rows.taskends import kills_only

__all__ = [
    "STATES",
    "HiddenNan",
    "RankState",
    "failed_ranks",
    "hidden_nans",
    "loss_text",
    "nonfinite_by_rank",
    "rank_status",
    "tail_lines",
]


class RankState(StrEnum):
    """A rank's state in the status table (the `state` column holds these strings)."""

    RUNNING = "running"
    STALLED = "stalled"
    CRASHED = "crashed"
    NAN = "nan"
    FINISHED = "finished"
    STOPPED = "stopped"
    WAITING = "waiting"
    UNREADABLE = "unreadable"
    ENDED = "ended"  # quiet at the job's last step like every rank: finished, or the whole job stopped


STATES = tuple(s.value for s in RankState)


def duration_text(seconds: float) -> str:
    """A duration a person reads at a glance: "40 s", "12 min", "3.4 h", "62.8 days"."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _fatal_by_rank(errs: pd.DataFrame) -> dict[int, tuple[str, str]]:
    """Per rank, the error that decides its state: its last exception / NaN error, else its last fatal
    one (one pass over the errors, not one filter per rank: 1,024 ranks took 1.6 s)."""
    out: dict[int, tuple[str, str]] = {}
    if errs.empty:
        return out
    fatal = errs[errs["kind"].isin(FATAL_KINDS) & errs["rank"].notna()]
    tiers: dict[int, int] = {}
    for rank, kind, message in zip(fatal["rank"], fatal["kind"], fatal["message"], strict=True):
        # a named failure (a traceback's exception, a NaN, a known signature) over a bare `[ERROR]` line
        # that ended the log, over a launcher's or the scheduler's word on how a task ended, over a launcher's word
        # that it killed its workers (DeepSpeed's `Killing subprocess`: the end, not how); the last of the best tier
        if kind == ErrorKind.NAN or (kind == ErrorKind.EXCEPTION and named_failure(str(message))):
            tier = 3
        elif kind == ErrorKind.EXCEPTION:
            tier = 2
        else:
            tier = 0 if kind == ErrorKind.TASK_EXIT and kills_only(str(message)) else 1
        if tier >= tiers.get(int(rank), -1):
            tiers[int(rank)] = tier
            out[int(rank)] = (str(kind), str(message))
    return out


def nonfinite_by_rank(metrics: pd.DataFrame) -> tuple[dict[int, tuple[float, float]], set[int]]:
    """Per rank, its first non-finite loss and the step it came at (the parsed value decides, whatever
    the line's format: one vectorised pass; the common case, no NaN, costs one isfinite); and the ranks
    that trained past it (their last loss is finite and at a later step: Megatron skips the step and lowers
    the loss scale; the same step printed again finite does not hide the NaN)."""
    if metrics.empty:
        return {}, set()
    loss = metrics["loss"].to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(loss))
    if not len(bad):
        return {}, set()
    rank, step = metrics["rank"].to_numpy(), metrics["step"].to_numpy(dtype=np.float64)
    first = first_of_each_rank(rank, bad)
    out = {int(rank[i]): (float(loss[i]), float(step[i])) for i in first}
    # each such rank's last row (`last()` skips NaN) ends one of the runs of a rank's rows: looked for among
    # the runs' ends, not over every row (a live table's runs: a rank's rows of each tick)
    ends = np.flatnonzero(np.append(rank[1:] != rank[:-1], True))
    last = first_of_each_rank(rank, ends[np.isin(rank[ends], list(out))][::-1])
    recovered = {
        int(rank[i])
        for i in last
        if math.isfinite(loss[i]) and not step[i] <= out[int(rank[i])][1]  # a finite loss at a later step
    }
    return out, recovered


def first_of_each_rank(rank: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Of the row numbers `rows` (in the order given), the first of each rank, in row order: a live table's
    rows of one rank are not together, and a pandas group-by over its every column cost each tick ~10 ms."""
    if not len(rows):
        return rows
    _, at = np.unique(rank[rows], return_index=True)
    return np.sort(rows[at])


def failed_ranks(snap: RunSnapshot) -> dict[int, str]:
    """Rank -> why it failed: the one judgement `watch --once`, `diagnose` and the Monitor's status table
    all make. A rank failed when its log (or a launcher's) holds a line that ended it (FATAL_KINDS: the
    reader already settled that an error followed by training rows in the same file did not), or when its
    loss became nan/inf and stayed so; a NaN the run trained past is reported, not a failure."""
    out: dict[int, str] = {}
    for rank, (_, message) in _fatal_by_rank(snap.errors).items():
        if rank >= 0:
            out[rank] = message
    nonfinite, recovered = nonfinite_by_rank(snap.metrics)
    for rank, (value, step) in nonfinite.items():
        if rank not in recovered:
            out.setdefault(rank, f"loss was {value} at step {step:.0f}" if step == step else f"loss was {value}")
    return out


@dataclass(frozen=True)
class HiddenNan:
    """A rank whose loss became non-finite and stayed so while another failure (a traceback) decides its state:
    the NaN is reported beside that failure, never lost behind it (a NaN is what a user scans the output for)."""

    rank: int
    value: float
    step: float

    def message(self) -> str:
        """What `watch` lists among the errors (`[nan] rank R: ...`)."""
        at = f" at step {self.step:.0f}" if self.step == self.step else ""
        return f"loss was {self.value}{at} and stayed so (the rank's failure is named above)"


def hidden_nans(snap: RunSnapshot) -> list[HiddenNan]:
    """The ranks whose loss went non-finite and never came back, but whose state another failure decides (a
    traceback after the NaN, chatglm_finetuning's Lightning bar `loss=nan` then DeepSpeed's crash): one per rank,
    in rank order. A rank whose failure is the NaN itself (state `nan`) or that trained past it is not here."""
    nonfinite, recovered = nonfinite_by_rank(snap.metrics)
    if not nonfinite:
        return []
    fatal = _fatal_by_rank(snap.errors)
    out = []
    for rank in sorted(nonfinite):
        if rank in recovered or rank not in fatal or fatal[rank][0] == ErrorKind.NAN:
            continue
        value, step = nonfinite[rank]
        out.append(HiddenNan(rank, value, step))
    return out


def loss_text(value: float, n_loss: int, spec: str = ".4g", missing: str = "-") -> str:
    """A rank's last loss as a status table shows it: `nan` / `inf` when its last row's loss is non-finite (the
    divergence a user looks for), `missing` only when the rank has no loss row (its last loss is then NaN too)."""
    if not n_loss or value is None:
        return missing
    return format(value, spec) if math.isfinite(value) else str(value)


def rank_status(
    snap: RunSnapshot, now: float | None = None, stall_after_s: float = 60.0, run_status: str | None = None
) -> pd.DataFrame:
    """Per-rank state for the status table: running / stalled / crashed / nan / finished / stopped / ended.

    crashed: the rank has a traceback, msrun reported its worker pid, or the scheduler timed it out.
    nan: its loss became non-finite (any format) and stayed so, or LossMonitor raised "loss is NAN or INF"
    (a NaN the run trained past is said in the detail of its state).
    stalled: no new line for `stall_after_s` while the run is (or may be) running.
    ended: stalled, but at the job's last step like every rank (a finished run read as a plain folder).
    `run_status` (from the run registry: running/succeeded/failed/stopped) settles ranks whose log
    simply stops: finished when the run succeeded, stopped when it failed or was stopped.
    """
    now = time.time() if now is None else now
    ranks = snap.ranks.copy()
    errs = snap.errors
    if (
        run_status is None
        and not errs.empty
        and (
            (
                (errs["rank"] == JOB_RANK) & (errs["kind"] == ErrorKind.EXCEPTION) & errs["file"].eq("scheduler.log")
            ).any()
            or (errs["kind"] == ErrorKind.TASK_EXIT).any()
        )
    ):
        run_status = "failed"  # the msrun scheduler raised, or srun / mpirun reported a dead task: the job is over
    fatal_by_rank = _fatal_by_rank(errs)
    nonfinite, recovered = nonfinite_by_rank(snap.metrics)
    states, details = [], []
    unreadable = ranks["unreadable"] if "unreadable" in ranks else pd.Series("", index=ranks.index)
    for rank, last_activity, last_loss, n_loss, finished, why_unreadable in zip(
        ranks["rank"].astype(int),
        ranks["last_activity"],
        ranks["last_loss"],
        ranks["n_loss"],
        ranks["finished"],
        unreadable,
        strict=True,
    ):
        age = now - last_activity if last_activity == last_activity else float("nan")
        fatal = fatal_by_rank.get(rank)
        if fatal is not None:
            states.append(_fatal_state(*fatal))
            details.append(fatal[1])
        elif n_loss and not math.isfinite(last_loss):
            states.append(RankState.NAN)
            details.append(f"last loss is {last_loss}")
        elif rank in nonfinite and rank not in recovered:
            value, step = nonfinite[rank]
            states.append(RankState.NAN)
            details.append(f"loss was {value} at step {step:.0f}" if step == step else f"loss was {value}")
        elif finished or run_status == "succeeded":
            states.append(RankState.FINISHED)
            details.append("")
        elif run_status in ("failed", "stopped"):
            states.append(RankState.STOPPED)
            details.append("log ended without an error of its own (another rank failed or the run was stopped)")
        elif age == age and age > stall_after_s:
            states.append(RankState.STALLED)
            details.append(f"no new line for {duration_text(age)}")
        elif not n_loss and why_unreadable:
            states.append(RankState.UNREADABLE)
            details.append(str(why_unreadable))
        elif not n_loss:
            states.append(RankState.WAITING)
            details.append("no loss line yet")
        else:
            states.append(RankState.RUNNING)
            details.append("")
    _settle_ended(ranks, states, details, now)
    for i, rank in enumerate(ranks["rank"].astype(int)):
        if rank in recovered and not details[i] and states[i] != RankState.NAN:
            value, step = nonfinite[rank]
            at = f" at step {step:.0f}" if step == step else ""
            details[i] = f"loss was {value}{at}; training went on (finite losses after it)"
    ranks["age_s"] = now - ranks["last_activity"]
    ranks["state"] = [str(s) for s in states]
    ranks["detail"] = details
    return ranks


def _fatal_state(kind: str, message: str) -> RankState:
    """The state a rank's deciding failure gives it: `nan` for a NaN, `stopped` for a stop from outside (a Ctrl-C, a
    scheduler's SIGINT or time limit: failed, but not crashed; core.logs.rows.failures.STOP_KINDS), else `crashed`."""
    if kind == ErrorKind.NAN:
        return RankState.NAN
    return RankState.STOPPED if fatal_reason(message.encode("utf-8", "replace")) in STOP_KINDS else RankState.CRASHED


def _settle_ended(ranks: pd.DataFrame, states: list[RankState], details: list[str], now: float) -> None:
    """A folder of logs that all went quiet at the same last step (yesterday's finished run, opened as a
    plain folder) is not N stalled ranks: each is "ended", said neutrally, since a log alone cannot tell
    a finished job from one stopped as a whole. Only when every rank printed a loss and none runs, is
    waiting or failed; a rank short of the job's last step stays stalled (it is the one to look at)."""
    if not len(states) or any(s not in (RankState.STALLED, RankState.FINISHED) for s in states):
        return
    if not (ranks["n_loss"] > 0).all():
        return
    epoch = ranks["last_epoch"].fillna(-1.0).to_numpy()
    step = ranks["last_step"].fillna(-1.0).to_numpy()
    last = max(zip(epoch, step, strict=True))
    for i, state in enumerate(states):
        if state == RankState.STALLED and (epoch[i], step[i]) == last:
            states[i] = RankState.ENDED
            age = duration_text(now - float(ranks["last_activity"].iloc[i]))
            details[i] = (
                f"log ended {age} ago at the job's last step, like every rank: finished, or the whole job stopped"
            )


def tail_lines(
    path: Path | str, n: int = 200, hide_noise: bool = True, max_bytes: int = 4 << 20, inside: Path | str | None = None
) -> list[str]:
    """Last `n` lines of a log (reading at most `max_bytes` from the end), noise optionally hidden
    (chatter-prefixed lines that carry metrics, MindFormers 2023, are kept); of a line a progress bar redrew
    over CR (`\r`), its last draw, as a terminal shows it, not every draw glued together.

    `inside`: the chosen log folder; a file whose real path left it since discovery (a link swapped to
    `/etc/shadow`) gives one line saying so instead of its content."""
    path = Path(path)
    if inside is not None:
        root = os.path.realpath(inside)
        real = os.path.realpath(path)
        if not (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
            return [f"(not shown: {path.name} leads to {real}, outside the chosen folder)"]
    try:
        with open_checked(path, None, "log file") as f:  # a FIFO or device is refused, never opened blocking
            size = os.fstat(f.fileno()).st_size
            start = max(0, size - max_bytes)
            f.seek(start)
            data = f.read(size - start)
    except OSError:
        return []
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]
    if lines and lines[-1] == b"":
        lines.pop()
    out: list[str] = []
    for line in reversed(lines):
        raw = line.rstrip(b"\r")
        raw = raw[raw.rfind(b"\r") + 1 :]  # a bar redrawn over CR: its last draw, what a terminal shows
        if hide_noise and raw.startswith(NOISE_PREFIXES) and not any(k in raw for k in MARKERS):
            continue
        out.append(raw.decode("utf-8", "replace"))
        if len(out) >= n:
            break
    out.reverse()
    return out
