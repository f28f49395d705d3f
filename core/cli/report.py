"""`python -m core report RUN_OR_DIR --out run.html`: one self-contained HTML file to share a run
(charts, per-rank table, diagnosis with its evidence, options and plan); it opens offline."""

from __future__ import annotations

import argparse

from core.cli.common import fail, terminal_safe
from core.errors import UserError
from core.files import expand_home
from core.logs import LogFormatError, read_run
from core.report.make import check_out_file, report_html, write_text_file
from core.report.source import resolve_source
from core.run.registry import launcher_outputs
from core.workspace import default_workspace


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `report` subcommand."""
    p = sub.add_parser(
        "report",
        help="write one HTML file to share a run (opens offline)",
        description="Read a run's logs (a run id of the workspace, or a log folder) and write one "
        "self-contained HTML file: loss and step-time charts, the per-rank table, the diagnosis with "
        "its evidence lines, the run's options and plan. Bounded in size (aggregates above 32 ranks).",
    )
    p.add_argument("target", metavar="RUN_OR_DIR", help="a run id (python -m core runs) or a log folder")
    p.add_argument("--out", required=True, help="the HTML file to write (replaced if it exists)")
    p.add_argument("--loss-regex", default=None, help="custom regex with a named group `loss` (and step, epoch)")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    """Write the report; 2 (one line) on a run or folder that cannot be read or an OUT that cannot be written."""
    try:
        source = resolve_source(args.target, default_workspace())
        out = check_out_file(expand_home(args.out))
        snap = read_run(source.log_dir, loss_regex=args.loss_regex, extra_files=launcher_outputs(source.log_dir))
        if not snap.n_ranks:
            return fail(f"no rank log found in {terminal_safe(source.log_dir)}: nothing to report")
        size = write_text_file(out, report_html(snap, source))
    except (UserError, LogFormatError) as exc:
        return fail(terminal_safe(exc))
    print(terminal_safe(f"wrote {out} ({size / 1e6:.2f} MB, {snap.n_ranks} ranks)"))
    return 0
