"""`python -m core launch|stop|runs`: start a job folder as a run, stop it, list the registry."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from core.cli.common import fail as _fail
from core.run.launch import launch, stop, wait
from core.run.registry import LaunchError, get_run, list_runs
from core.workspace import WorkspaceError, default_workspace


def _launch(args: argparse.Namespace) -> int:
    workspace = Path(args.workspace) if args.workspace else default_workspace()
    try:
        record = launch(args.job_dir, workspace, name=args.name)
    except (LaunchError, WorkspaceError) as exc:
        return _fail(str(exc))
    print(f"run {record.run_id} started (pid {record.pid}); logs in {record.log_dir}")
    if record.status != "running":
        print(f"run {record.run_id} {record.status}: {record.message}", file=sys.stderr)
        return 1
    if not args.wait:
        return 0
    try:
        record = wait(record.run_id, workspace)
    except KeyboardInterrupt:
        print(f"\nstopping {record.run_id} ...", file=sys.stderr)
        record = stop(record.run_id, workspace)
    duration = (record.ended_at or time.time()) - (record.started_at or time.time())
    print(f"run {record.run_id} {record.status} (exit code {record.exit_code}) after {duration:.1f} s")
    if record.status == "succeeded":
        return 0
    return record.exit_code if record.exit_code and record.exit_code > 0 else 1


def _stop(args: argparse.Namespace) -> int:
    workspace = Path(args.workspace) if args.workspace else default_workspace()
    try:
        record = stop(args.run, workspace, grace=args.grace)
    except LaunchError as exc:
        return _fail(str(exc))
    print(f"run {record.run_id} {record.status}; no process of it is left")
    return 0


def _runs(args: argparse.Namespace) -> int:
    workspace = Path(args.workspace) if args.workspace else default_workspace()
    try:
        records = [get_run(args.run, workspace)] if args.run else list_runs(workspace)
    except LaunchError as exc:
        return _fail(str(exc))
    if not records:
        print(f"no runs in {workspace}")
        return 0
    print(f"{'RUN':40} {'STATUS':10} {'EXIT':>4} {'TIME':>8}  SCENARIO")
    for r in records:
        duration = f"{r.duration:.0f}s" if r.duration is not None else "-"
        code = "" if r.exit_code is None else str(r.exit_code)
        print(f"{r.run_id:40} {r.status:10} {code:>4} {duration:>8}  {r.scenario}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("launch", help="start a generated job folder as a run")
    run.add_argument("job_dir")
    run.add_argument("--wait", action="store_true", help="wait for the end and return its exit status")
    run.add_argument("--name", help="run id (default: time + scenario)")
    run.add_argument("--workspace", help="workspace (default: $SHARDSCOPE_WORKSPACE or ./workspace)")
    run.set_defaults(func=_launch)

    halt = sub.add_parser("stop", help="stop a run (SIGINT, then SIGKILL) and verify nothing is left")
    halt.add_argument("run")
    halt.add_argument("--grace", type=float, default=15.0, help="seconds between SIGINT and SIGKILL")
    halt.add_argument("--workspace")
    halt.set_defaults(func=_stop)

    runs = sub.add_parser("runs", help="list runs, newest first")
    runs.add_argument("run", nargs="?", help="show one run")
    runs.add_argument("--workspace")
    runs.set_defaults(func=_runs)
