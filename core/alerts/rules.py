"""Alert rules judged from what the log reader already gives (a `RunSnapshot` and its `diagnose`).

Each rule yields `Alert`s carrying their evidence (ranks with the first failing rank first, step, the log
line). `Alerter` remembers what it already raised (its dedupe key), so a rank that flaps or a failure
spreading to 1,024 ranks raises one alert, not one per tick or per rank.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import pandas as pd

from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.victims import first_failure
from core.logs.rows.cells import as_float, as_int
from core.logs.rows.filestate import FATAL_KINDS
from core.logs.rows.snapshot import RunSnapshot

__all__ = ["Alert", "AlertRule", "Alerter", "RuleSettings", "judge", "loss_spikes", "slow_ranks"]

MAX_EVIDENCE = 10  # evidence lines per alert: a 1,024-rank failure lists 10 and says how many more
MAX_LINE = 300  # characters of a quoted log line


class AlertRule(StrEnum):
    RANK_FAILED = "rank_failed"
    HANG = "hang"
    NAN_LOSS = "nan_loss"
    LOSS_SPIKE = "loss_spike"
    STRAGGLER = "straggler"
    RUN_ENDED = "run_ended"


@dataclass(frozen=True)
class RuleSettings:
    """Thresholds of the rules and which rules are on (per run, or the workspace's defaults)."""

    enabled: frozenset[AlertRule] = frozenset(AlertRule)
    hang_s: float = 600.0  # no new line for this long while the run is running = hang
    spike_factor: float = 5.0  # a loss above this x the median of the recent window = spike
    spike_window: int = 20  # losses the median is taken over (at least 5 needed)
    straggler_factor: float = 1.5  # a step time above this x the job's median...
    straggler_steps: int = 5  # ...for this many consecutive steps = straggler

    def __post_init__(self) -> None:
        if not (self.hang_s > 0 and self.spike_factor > 1 and self.straggler_factor > 1):
            raise ValueError("hang_s must be > 0, spike_factor and straggler_factor > 1")
        if self.spike_window < 5 or self.straggler_steps < 1:
            raise ValueError("spike_window must be >= 5 and straggler_steps >= 1")


@dataclass(frozen=True)
class Alert:
    """One alert: what the `json` format sends (`to_dict`) and what the text formats render (`text`)."""

    rule: AlertRule
    run: str
    ranks: tuple[int, ...]  # the first failing rank first (at most MAX_EVIDENCE listed beyond it)
    count: int  # ranks concerned (1,024 for a 1,024-rank failure, whatever `ranks` lists)
    step: float | None
    message: str
    evidence: tuple[str, ...] = ()
    key: str = ""  # dedupe key: the same key is raised once per Alerter
    time: float = field(default_factory=time.time)

    def to_dict(self) -> dict:
        step = None if self.step is None or not math.isfinite(self.step) else self.step
        return {
            "rule": str(self.rule),
            "run": self.run,
            "ranks": list(self.ranks),
            "count": self.count,
            "step": step,
            "message": self.message,
            "evidence": list(self.evidence),
            "time": self.time,
        }

    def text(self) -> str:
        """The one message text the chat formats carry (rule, run, message, then the evidence)."""
        head = f"[ShardScope] {self.rule}: {self.run}: {self.message}"
        return "\n".join([head, *self.evidence[:MAX_EVIDENCE]])


def _short(line: object) -> str:
    s = " ".join(str(line).split())
    return s if len(s) <= MAX_LINE else s[: MAX_LINE - 1] + "…"


def _step(value: object) -> float | None:
    try:
        f = as_float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


# ----------------------------------------------------------------------------- pure series rules


def loss_spikes(losses: np.ndarray, factor: float, window: int) -> list[int]:
    """Indices whose loss is above `factor` x the median of the `window` losses before it (at least 5 of
    them finite; a positive median only: a spike is relative to a scale). A constant series never spikes.
    One vectorised pass (sliding windows): 1,024 ranks x 256 rows took 4 s one median at a time."""
    values = np.asarray(losses, dtype=np.float64)
    if len(values) <= window:
        return []
    prev = np.lib.stride_tricks.sliding_window_view(values[:-1], window)  # prev[j] = values[j : j + window]
    finite = np.isfinite(prev)
    enough = finite.sum(axis=1) >= 5
    if not enough.any():
        return []
    median = np.full(len(prev), np.nan)
    masked = np.where(finite[enough], prev[enough], np.nan)
    median[enough] = np.nanmedian(masked, axis=1)
    now = values[window:]
    with np.errstate(invalid="ignore"):
        hit = enough & np.isfinite(now) & (median > 0) & (now > factor * median)
    return [int(j) + window for j in np.flatnonzero(hit)]


def slow_ranks(recent: dict[int, list[float]], factor: float, steps: int) -> dict[int, tuple[float, float]]:
    """Ranks whose last `steps` step times are all above `factor` x the job's median step time (over every
    rank's recent times) -> (its median, the job's median). One slow step is noise, m in a row is not."""
    pooled = [t for ts in recent.values() for t in ts[-steps:] if math.isfinite(t) and t > 0]
    if len(recent) < 2 or not pooled:
        return {}
    median = float(np.median(pooled))
    out = {}
    for rank, ts in recent.items():
        tail = [t for t in ts[-steps:] if math.isfinite(t)]
        if len(tail) >= steps and min(tail) > factor * median:
            out[rank] = (float(np.median(tail)), median)
    return out


# ----------------------------------------------------------------------------- rules over a snapshot


def _error_line(snap: RunSnapshot, rank: int) -> str:
    errs = snap.errors
    if errs.empty:
        return ""
    rows = errs[(errs["rank"] == rank) & errs["kind"].isin([str(k) for k in FATAL_KINDS])]
    if rows.empty:
        return ""
    r = rows.iloc[0]
    return _short(f"rank {rank} {r['file']}:{r['line']}: {r['message']}")


def _last_step(snap: RunSnapshot, rank: int) -> float | None:
    ranks = snap.ranks
    row = ranks[ranks["rank"] == rank]
    return None if row.empty else _step(row["last_step"].iat[0])


def _failures(snap: RunSnapshot, run: str) -> list[Alert]:
    d = diagnose(snap)
    crash = [g for g in d.failure_groups if not g.exception.startswith("loss is ")]
    nan = [g for g in d.failure_groups if g.exception.startswith("loss is ")]
    out = []
    if crash:
        first_group = first_failure(crash) or crash[0]  # diagnose's choice: a launcher's SIGTERM'd rank is no cause
        first = first_group.first_rank
        ranks = sorted({r for g in crash for r in g.ranks})
        listed = (first, *[r for r in ranks if r != first][: MAX_EVIDENCE - 1])
        line = _error_line(snap, first)
        evidence = [line] if line else []
        evidence += [f"{len(g.ranks)} rank(s): {_short(g.exception)}" for g in crash[:MAX_EVIDENCE]]
        out.append(
            Alert(
                AlertRule.RANK_FAILED,
                run,
                listed,
                len(ranks),
                _last_step(snap, first),
                f"rank {first} failed first ({_short(first_group.exception)}); {len(ranks)} rank(s) failed",
                tuple(evidence),
                key="rank_failed",
            )
        )
    if nan:
        g = nan[0]
        ranks = sorted({r for x in nan for r in x.ranks})
        step = None
        for ev in g.evidence:  # "rank R: loss nan at step S"
            if ev.startswith(f"rank {g.first_rank}:") and " at step " in ev:
                step = _step(ev.rsplit(" at step ", 1)[1])
        out.append(
            Alert(
                AlertRule.NAN_LOSS,
                run,
                (g.first_rank, *[r for r in ranks if r != g.first_rank][: MAX_EVIDENCE - 1]),
                len(ranks),
                step,
                f"rank {g.first_rank}: {g.exception}; {len(ranks)} rank(s)",
                tuple(_short(e) for e in g.evidence[:MAX_EVIDENCE]),
                key="nan_loss",
            )
        )
    return out


def _alive(snap: RunSnapshot) -> pd.DataFrame:
    """Ranks neither finished nor failed (the ones a hang or a straggler is about)."""
    ranks = snap.ranks[snap.ranks["rank"] >= 0]
    failed = set(snap.crashed_ranks())
    return ranks[~ranks["finished"].astype(bool) & ~ranks["rank"].astype(int).isin(failed)]


def _hang(snap: RunSnapshot, run: str, now: float, s: RuleSettings) -> list[Alert]:
    alive = _alive(snap)
    if alive.empty:
        return []
    age = now - alive["last_activity"].astype(float)
    quiet = alive[age > s.hang_s].sort_values("last_activity")
    if quiet.empty:
        return []
    first = as_int(quiet["rank"].iat[0])
    silent = now - as_float(quiet["last_activity"].iat[0])
    listed = tuple(as_int(r) for r in quiet["rank"].head(MAX_EVIDENCE))
    return [
        Alert(
            AlertRule.HANG,
            run,
            listed,
            len(quiet),
            _step(quiet["last_step"].iat[0]),
            f"{len(quiet)} of {len(alive)} running rank(s) wrote no new line for {s.hang_s:.0f} s "
            f"(rank {first}: {silent:.0f} s)",
            (f"rank {first}: last step {quiet['last_step'].iat[0]}, last loss {quiet['last_loss'].iat[0]}",),
            key="hang",
        )
    ]


def _spikes(snap: RunSnapshot, run: str, s: RuleSettings, tail: int = 256) -> list[Alert]:
    """Spikes among each rank's last `tail` rows (the Alerter passes the rows new since its last look)."""
    m = snap.metrics
    if m.empty:
        return []
    out = []
    for key, rows in m.groupby("rank", sort=True).tail(tail).groupby("rank", sort=True):
        rank = as_int(key)
        for i in loss_spikes(rows["loss"].to_numpy(), s.spike_factor, s.spike_window):
            r = rows.iloc[i]
            prev = rows["loss"].iloc[i - s.spike_window : i]
            med = float(np.nanmedian(prev.to_numpy(dtype=np.float64)))
            step = _step(r["step"])
            out.append(
                Alert(
                    AlertRule.LOSS_SPIKE,
                    run,
                    (rank,),
                    1,
                    step,
                    f"rank {rank}: loss {r['loss']:.6g} is {r['loss'] / med:.1f}x the recent median {med:.6g}",
                    (_short(f"rank {rank} {r['file']} offset {r['offset']}: loss {r['loss']} at step {step}"),),
                    key=f"loss_spike:{rank}:{step}",
                )
            )
    return out


def _stragglers(snap: RunSnapshot, run: str, s: RuleSettings) -> list[Alert]:
    m = snap.metrics  # the log's own per-step time, else TimeMonitor lines (as `diagnose` trusts them)
    if m.empty or m["step_time_ms"].isna().all():
        m = snap.timings
    if m.empty or m["step_time_ms"].isna().all():
        return []
    alive = set(_alive(snap)["rank"].astype(int))
    have = m[m["step_time_ms"].notna() & m["rank"].isin(list(alive))]
    recent = {as_int(r): g["step_time_ms"].tail(s.straggler_steps).tolist() for r, g in have.groupby("rank")}
    out = []
    for rank, (mine, median) in slow_ranks(recent, s.straggler_factor, s.straggler_steps).items():
        out.append(
            Alert(
                AlertRule.STRAGGLER,
                run,
                (rank,),
                1,
                _last_step(snap, rank),
                f"rank {rank}: step time {mine:.0f} ms is {mine / median:.1f}x the job's median {median:.0f} ms "
                f"for {s.straggler_steps} steps",
                (f"rank {rank}: last {s.straggler_steps} step times (ms): {recent[rank]}",),
                key=f"straggler:{rank}",
            )
        )
    return out


def run_outcome(snap: RunSnapshot) -> str | None:
    """What a plain folder says of the run's end: succeeded (every rank finished), failed (every rank
    finished or failed, one at least failed), else None (running, or cannot tell yet)."""
    ranks = snap.ranks[snap.ranks["rank"] >= 0]
    if ranks.empty:
        return None
    failed = set(snap.crashed_ranks())
    done = ranks["finished"].astype(bool) | ranks["rank"].astype(int).isin(failed)
    if not done.all():
        return None
    return "failed" if failed else "succeeded"


def _ended(snap: RunSnapshot, run: str, status: str) -> Alert:
    n = int((snap.ranks["rank"] >= 0).sum())
    return Alert(AlertRule.RUN_ENDED, run, (), n, None, f"run {status} ({n} ranks)", (), key="run_ended")


def judge(
    snap: RunSnapshot,
    run: str,
    settings: RuleSettings | None = None,
    now: float | None = None,
    running: bool = True,
    run_status: str | None = None,
    failures: list[Alert] | None = None,
    spike_tail: int = 256,
) -> list[Alert]:
    """Every alert the snapshot supports now (not deduplicated: `Alerter` does that). `running`: the run
    is known to be running (a hang is judged only then); `run_status` (succeeded / failed / stopped)
    raises `run_ended`; `failures`: the failure alerts already judged for this snapshot's errors."""
    s = settings or RuleSettings()
    now = time.time() if now is None else now
    out: list[Alert] = []
    if snap.ranks.empty:
        return out
    if {AlertRule.RANK_FAILED, AlertRule.NAN_LOSS} & s.enabled:
        found = _failures(snap, run) if failures is None else failures
        out += [a for a in found if a.rule in s.enabled]
    status = run_status or run_outcome(snap)
    if AlertRule.HANG in s.enabled and running and status is None:
        out += _hang(snap, run, now, s)
    if AlertRule.LOSS_SPIKE in s.enabled and spike_tail > 0:
        out += _spikes(snap, run, s, spike_tail)
    if AlertRule.STRAGGLER in s.enabled and status is None:
        out += _stragglers(snap, run, s)
    if AlertRule.RUN_ENDED in s.enabled and status in ("succeeded", "failed", "stopped"):
        out.append(_ended(snap, run, status))
    return out


class Alerter:
    """Judges snapshots and keeps only alerts it has not raised before (by key): one tick's 1,024-rank
    failure is one alert, and a rank that fails, recovers and fails again raises nothing new. The hang
    rule is judged only once the run was seen live (a line newer than `hang_s`): yesterday's finished
    folder is not a hang. The costly rules run only on what changed: the failure groups when the error
    table or the non-finite losses grew, the spikes over the rows new since the last check."""

    def __init__(self, run: str, settings: RuleSettings | None = None) -> None:
        self.run = run
        self.settings = settings or RuleSettings()
        self.raised: set[str] = set()
        self.seen_live = False
        self._failures_of: tuple[int, int] | None = None
        self._failures: list[Alert] = []
        self._rows = 0

    def check(self, snap: RunSnapshot, now: float | None = None, run_status: str | None = None) -> list[Alert]:
        now = time.time() if now is None else now
        if not snap.ranks.empty:
            newest = snap.ranks["last_activity"].max()
            if newest == newest and now - float(newest) <= self.settings.hang_s:
                self.seen_live = True
        running = self.seen_live and run_status in (None, "running")
        loss = snap.metrics["loss"].to_numpy(dtype=np.float64) if not snap.metrics.empty else np.empty(0)
        seen = (len(snap.errors), int((~np.isfinite(loss)).sum()))
        if seen != self._failures_of:
            self._failures_of, self._failures = seen, _failures(snap, self.run)
        rows = len(snap.metrics)
        new = rows - self._rows if rows >= self._rows else rows  # fewer rows: a rank restarted, look again
        self._rows = rows
        tail = min(new + self.settings.spike_window, 256) if new else 0
        fresh = []
        alerts = judge(snap, self.run, self.settings, now, running, run_status, self._failures, tail)
        for alert in alerts:
            if alert.key not in self.raised:
                self.raised.add(alert.key)
                fresh.append(alert)
        return fresh
