"""Per-rank state for the status table (running / stalled / crashed / nan / finished / stopped /
waiting) and the tail of a log with the framework chatter hidden."""

from __future__ import annotations

import math
import time
from enum import StrEnum
from pathlib import Path

import pandas as pd

from core.logs.formats import MARKERS, NOISE_PREFIXES
from core.logs.parser import FATAL_KINDS
from core.logs.reader import RunSnapshot

__all__ = ["STATES", "RankState", "rank_status", "tail_lines"]


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


def rank_status(snap: RunSnapshot, now: float | None = None, stall_after_s: float = 60.0,
                run_status: str | None = None) -> pd.DataFrame:
    """Per-rank state for the status table: running / stalled / crashed / nan / finished / stopped.

    crashed: the rank has a traceback, msrun reported its worker pid, or the scheduler timed it out.
    nan: its last loss is not finite or LossMonitor raised "loss is NAN or INF".
    stalled: no new line for `stall_after_s` while the run is (or may be) running.
    `run_status` (from the run registry: running/succeeded/failed/stopped) settles ranks whose log
    simply stops: finished when the run succeeded, stopped when it failed or was stopped.
    """
    now = time.time() if now is None else now
    ranks = snap.ranks.copy()
    errs = snap.errors
    if run_status is None and not errs.empty and (
        (errs["rank"] == -1) & (errs["kind"] == "exception") & errs["file"].eq("scheduler.log")
    ).any():
        run_status = "failed"  # the msrun scheduler itself raised: the job is over
    states, details = [], []
    for _, r in ranks.iterrows():
        rank = int(r["rank"])
        mine = errs[errs["rank"] == rank] if not errs.empty else errs
        fatal = mine[mine["kind"].isin([str(k) for k in FATAL_KINDS])] if not mine.empty else mine
        age = now - r["last_activity"] if r["last_activity"] == r["last_activity"] else float("nan")
        last_loss = r["last_loss"]
        if not fatal.empty:
            exc = fatal[fatal["kind"].isin(["exception", "nan"])]
            pick = exc.iloc[-1] if not exc.empty else fatal.iloc[-1]
            nan_kind = pick["kind"] == "nan"
            states.append(RankState.NAN if nan_kind else RankState.CRASHED)
            details.append(str(pick["message"]))
        elif r["n_loss"] and not math.isfinite(last_loss):
            states.append(RankState.NAN)
            details.append(f"last loss is {last_loss}")
        elif r["finished"] or run_status == "succeeded":
            states.append(RankState.FINISHED)
            details.append("")
        elif run_status in ("failed", "stopped"):
            states.append(RankState.STOPPED)
            details.append("log ended without an error of its own (another rank failed or the run was stopped)")
        elif age == age and age > stall_after_s:
            states.append(RankState.STALLED)
            details.append(f"no new line for {duration_text(age)}")
        elif not r["n_loss"] and r.get("unreadable"):
            states.append(RankState.UNREADABLE)
            details.append(str(r["unreadable"]))
        elif not r["n_loss"]:
            states.append(RankState.WAITING)
            details.append("no loss line yet")
        else:
            states.append(RankState.RUNNING)
            details.append("")
    ranks["age_s"] = now - ranks["last_activity"]
    ranks["state"] = [str(s) for s in states]
    ranks["detail"] = details
    return ranks


def tail_lines(path: Path | str, n: int = 200, hide_noise: bool = True, max_bytes: int = 4 << 20) -> list[str]:
    """Last `n` lines of a log (reading at most `max_bytes` from the end), noise optionally hidden
    (chatter-prefixed lines that carry metrics, MindFormers 2023, are kept)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
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
    for raw in reversed(lines):
        if hide_noise and raw.startswith(NOISE_PREFIXES) and not any(k in raw for k in MARKERS):
            continue
        out.append(raw.rstrip(b"\r").decode("utf-8", "replace"))
        if len(out) >= n:
            break
    out.reverse()
    return out
