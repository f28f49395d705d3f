"""`python -m core export DIR --tensorboard OUT`: every metric of every rank as TensorBoard event files
(OUT/rank_0003, ...), for `tensorboard --logdir OUT` beside a team's other runs."""

from __future__ import annotations

import argparse

from core.cli.common import fail, terminal_safe
from core.cli.watch import no_rows_help
from core.errors import UserError
from core.files import expand_home
from core.logs import LogFormatError, read_run
from core.report.source import resolve_source
from core.report.tensorboard import check_out_dir, export_tensorboard
from core.workspace import default_workspace


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `export` subcommand."""
    p = sub.add_parser(
        "export",
        help="write a run's metrics as TensorBoard event files",
        description="Read a run's logs (a log folder, or a run id of the workspace) and write one "
        "TensorBoard run folder per rank under OUT (OUT/rank_0003): tags are the metric names (loss, "
        "step_time_ms, lr, every other metric of the loss lines, eval/<name>, time_monitor/...), steps the "
        "global step, wall times the log lines' own. Then: tensorboard --logdir OUT",
    )
    p.add_argument("target", metavar="DIR", help="a log folder (or a run id: python -m core runs)")
    p.add_argument("--tensorboard", required=True, metavar="OUT", help="a new or empty folder to write")
    p.add_argument("--loss-regex", default=None, help="custom regex with a named group `loss` (and step, epoch)")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    """Export; 2 (one line) on a folder that cannot be read or an OUT that exists and is not empty, and 2
    when the rank logs hold no point to write (what was read and the line shapes with numbers, as `watch`)."""
    try:
        source = resolve_source(args.target, default_workspace())
        out = check_out_dir(expand_home(args.tensorboard))
        snap = read_run(source.log_dir, loss_regex=args.loss_regex)
        if not snap.n_ranks:
            return fail(f"no rank log found in {terminal_safe(source.log_dir)}: nothing to export")
        if snap.metrics.empty and snap.evals.empty and snap.timings.empty:  # rank logs, but not one point
            seen = f"nothing to export: {snap.n_ranks} rank log(s) in {terminal_safe(source.log_dir)} and"
            return fail(f"{seen} {no_rows_help(snap)}")
        done = export_tensorboard(snap, out)
    except (UserError, LogFormatError) as exc:
        return fail(terminal_safe(exc))
    print(
        terminal_safe(
            f"wrote {done.scalars:,} points of {len(done.tags)} tag(s) for {done.ranks} rank(s) under {done.out}; "
            f"view them with: tensorboard --logdir {done.out}"
        )
    )
    return 0
