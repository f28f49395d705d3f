"""`python -m core diagnose LOG_DIR [--json]`: stragglers, hung ranks and failure groups of a run's logs.

Exit status 1 when a rank failed or hung (for scripts and CI), else 0.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from core.cli.common import fail, launcher_notes, terminal_safe
from core.cli.watch import no_rows_help, skipped_lines
from core.files import expand_home
from core.logs import LogFormatError, read_run
from core.logs.bytes.discover import LogRole, folder_notes
from core.logs.bytes.guard import LogDirError, validate_log_dir
from core.logs.judgement.diagnose import DiagnoseSettings, Diagnosis, diagnose, now_if_alive
from core.logs.judgement.status import tail_lines
from core.logs.rows.memory import memory_report
from core.logs.rows.shapes import line_shapes
from core.plan.planned import achieved_time, plan_for_config
from core.run.planned import plan_for_log_dir
from core.run.registry import launcher_outputs
from core.workspace import default_workspace


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `diagnose` subcommand."""
    p = sub.add_parser(
        "diagnose",
        help="find stragglers, hung ranks and the first failing rank of a run",
        description="Read every rank's log once and report stragglers (step time vs the job "
        "median), hung ranks (progress far behind the others) and failure groups "
        "(identical exceptions collapsed, first failing rank marked). "
        "Exit status 1 when a rank failed or hung.",
    )
    p.add_argument("log_dir", type=str, help="msrun --log_dir, mpirun output folder or rank-table run folder")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--loss-regex", default=None, help="custom regex with a named group `loss` (and step, epoch)")
    p.add_argument(
        "--alive",
        action="store_true",
        help="the job is still running: also report the whole job as hung when it went silent",
    )
    p.add_argument(
        "--straggler-ratio",
        type=float,
        default=DiagnoseSettings.straggler_ratio,
        help="step time / job median at or above this is a straggler (default %(default)s)",
    )
    p.add_argument(
        "--mindformers-config",
        type=str,
        default=None,
        metavar="YAML",
        help="plan this MindFormers YAML's recipe and set its memory per card beside the measured one "
        "(default: the plan the run was launched with, if ShardScope launched it)",
    )
    p.add_argument(
        "--follow-links",
        action="store_true",
        help="also read logs that are links to files outside LOG_DIR (refused by default)",
    )
    p.set_defaults(func=handle)


def _when(t: float | None) -> str:
    return "-" if t is None else datetime.fromtimestamp(t).isoformat(sep=" ", timespec="milliseconds")


def _ranks(ranks: list[int], limit: int = 16) -> str:
    shown = ", ".join(str(r) for r in ranks[:limit])
    return shown + (f", ... ({len(ranks)} ranks)" if len(ranks) > limit else "")


def report(d: Diagnosis) -> str:
    """Plain-text report: the few lines a person needs first (each made terminal-safe: it quotes log lines)."""
    lines = [
        f"ranks: {d.ranks}   median step time: "
        + (f"{d.median_step_time:.1f} ms ({d.step_time_source})" if d.median_step_time else "-")
    ]
    if d.failure_groups:
        lines.append(f"failure groups ({len(d.failure_groups)}), likely root cause: rank {d.root_cause}")
        for g in d.failure_groups:
            lines.append(f"  {len(g.ranks)} rank(s): {g.exception}")
            lines.append(
                f"    first: rank {g.first_rank} at {_when(g.first_time)} ({g.time_source}); ranks {_ranks(g.ranks)}"
            )
            lines.extend(f"    {e}" for e in g.evidence)
    for e in d.job_errors:
        lines.append(f"job: {e}")
    if d.hung:
        lines.append(f"hung ({len(d.hung)}):")
        lines.extend(
            f"  rank {h.rank}: last step {h.last_step:.0f} at {_when(h.last_time)}; {h.reason}" for h in d.hung[:32]
        )
    if d.stragglers:
        lines.append(f"stragglers ({len(d.stragglers)}):")
        lines.extend(
            f"  rank {s.rank}: {s.step_time:.1f} ms/step = {s.ratio:.2f}x the median ({s.source})"
            for s in d.stragglers[:32]
        )
    if d.overflow_steps:
        lines.append(
            f"loss-scale overflow on {d.overflow_ranks} rank(s) at steps "
            + ", ".join(f"{s:.0f}" for s in d.overflow_steps)
        )
    if d.norm_spikes:
        lines.append(
            "global_norm spikes: "
            + ", ".join(f"rank {s.rank} step {s.step:.0f} = {s.global_norm:.3g}" for s in d.norm_spikes[:8])
        )
    if not (d.failure_groups or d.hung or d.stragglers):
        lines.append("no failure, hang or straggler found")
    return "\n".join(terminal_safe(line) for line in lines)


def run_plan(log_dir: Path, config: str | None) -> dict[str, Any] | None:
    """What was planned for this run: the YAML given (planned now), else the plan kept in the record of the
    ShardScope run whose logs these are, else None."""
    if config:
        return plan_for_config(expand_home(config))
    return plan_for_log_dir(default_workspace(), log_dir)


def memory_lines(memory: dict[str, Any], plan: dict[str, Any] | None) -> list[str]:
    """Device memory in the text report: the plan, then the measured peak (min / max over ranks)."""
    gib = 1 << 30
    lines = []
    if plan and plan.get("memory_bytes"):
        lines.append(f"device memory planned: {plan['memory_bytes'] / gib:.1f} GiB per card, {plan['source']}")
    elif plan:
        lines.append(f"device memory planned: none ({plan.get('why', 'the planner gave no figure')})")
    odd = [f"rank {r}: {m['implausible']}" for r, m in memory.items() if m.get("implausible")]
    lines += odd[:3] + (
        [f"... and {len(odd) - 3} more rank(s) with implausible memory figures"] if len(odd) > 3 else []
    )
    peaks = {
        r: m["measured"]["peak_bytes"]
        for r, m in memory.items()
        if m["measured"]["peak_bytes"] is not None and not m.get("implausible")
    }
    if peaks:
        low, high = min(peaks, key=peaks.__getitem__), max(peaks, key=peaks.__getitem__)
        lines.append(
            f"device memory measured peak: {peaks[low] / gib:.1f} GiB (rank {low}) to "
            f"{peaks[high] / gib:.1f} GiB (rank {high}) on {len(peaks)} rank(s)"
        )
    elif plan and not any(m.get("implausible") for m in memory.values()):
        lines.append(
            "device memory measured: no rank's log has MindSpore's memory statistics "
            "(printed at INFO level: GLOG_v=1, or with MS_MEMORY_STATISTIC=1)"
        )
    return [terminal_safe(line) for line in lines]


def time_lines(timed: dict[str, Any] | None) -> list[str]:
    """Step time in the text report: planned, measured median, achieved MFU."""
    if not timed:
        return []
    measured = timed["measured_step_s"]
    line = f"step time planned: {timed['planned_step_s']:.3g} s ({timed['source']}); measured median: " + (
        f"{measured:.3g} s" if measured else "none yet"
    )
    if timed["achieved_mfu"] is not None:
        line += f"; achieved MFU {timed['achieved_mfu']:.1%} of the {timed['hardware']} preset's peak"
        if timed["achieved_mfu"] > 1:
            line += " (above 100 %: these logs are not of the planned model and cards)"
    return [terminal_safe(line)]


def handle(args: argparse.Namespace) -> int:
    """Run the diagnosis; 2 on a bad folder or regex, 1 when a rank failed or hung."""
    try:
        log_dir = validate_log_dir(args.log_dir)
    except LogDirError as exc:
        return fail(str(exc))
    try:
        launchers = launcher_outputs(log_dir)
        snap = read_run(log_dir, loss_regex=args.loss_regex, extra_files=launchers, follow_links=args.follow_links)
    except LogFormatError as exc:
        return fail(str(exc))
    notes = folder_notes(log_dir, args.follow_links) + launcher_notes(launchers)
    d = diagnose(snap, now=now_if_alive(args.alive), settings=DiagnoseSettings(straggler_ratio=args.straggler_ratio))
    if not snap.n_ranks and snap.errors.empty:  # nothing to diagnose: say what was seen, not "no failure"
        if args.json:  # the verdict still (no rank, none failed), as `watch` prints it: exit 2 all the same
            unread: dict[str, object] = {"why": " ".join(notes), "line_shapes": []}
            print(json.dumps(d.to_dict() | {"skipped": snap.skipped, "notes": notes, "nothing_to_judge": unread}))
        return fail(" ".join(notes))
    if snap.metrics.empty and snap.errors.empty and snap.evals.empty:  # no loss, eval line or failure: nothing to judge
        seen = f"{snap.n_ranks} rank log(s) read, no loss row and no failure in them, so nothing to judge yet."
        if args.json:  # the verdict still, for scripts comparing it with `watch` (0 rows is no success: exit 2)
            workers = (f.path for f in snap.files if f.role == LogRole.WORKER)
            shapes = [{"shape": s.shape, "count": s.count} for s in line_shapes(workers)]
            nothing = {"why": " ".join([seen, *notes]), "line_shapes": shapes}
            print(json.dumps(d.to_dict() | {"skipped": snap.skipped, "notes": notes, "nothing_to_judge": nothing}))
        return fail("\n".join([" ".join([seen, *notes]), no_rows_help(snap)]))
    plan = run_plan(log_dir, args.mindformers_config)
    # memory: MindSpore's device-memory lines from the end (256 KiB) of each rank's log
    memory: dict[str, Any] = {}
    if args.json or plan:  # the text report shows memory only beside a plan (tails of every rank: a read)
        tails = {
            f.rank: tail_lines(f.path, 400, hide_noise=False, max_bytes=1 << 18)
            for f in snap.files
            if f.role == LogRole.WORKER and f.rank is not None
        }
        planned = plan.get("memory_bytes") if plan else None
        memory = memory_report(tails, None if planned is None else dict.fromkeys(tails, planned))
    timed = achieved_time(plan, d.median_step_time)  # planned vs measured step time (issue 33)
    if args.json:  # json.dumps escapes every control character
        extra = {"skipped": snap.skipped, "notes": notes, "memory": memory, "plan": plan, "nothing_to_judge": None}
        print(json.dumps(d.to_dict() | extra | ({"time": timed} if timed else {})))
    else:
        lines = [report(d), *memory_lines(memory, plan), *time_lines(timed)]
        print("\n".join([*lines, *skipped_lines(snap), *(terminal_safe(n) for n in notes)]))
    return 1 if d.failed else 0
