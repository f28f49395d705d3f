"""`python -m core launch|stop|runs|delete|watch-folder`: start a job folder or your own script as a
run, stop it, list the registry, delete a finished run, register an existing log folder (watch only:
`stop` forgets it, `delete` removes its record and never the folder).

    python -m core launch JOB_DIR [--wait]
    python -m core launch --script train.py --devices 8 [--local-workers 4] [--launcher msrun|mpirun|slurm]
                          [--env K=V ...] [--wait] -- ARGS...
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from core.cli.common import fail as _fail
from core.cli.common import terminal_safe
from core.errors import UserError
from core.run.launch import delete_run, launch, stop, wait
from core.run.own import OWN_LAUNCHERS, OwnJob, check_own, launch_own, parse_env, watch_folder
from core.run.preflight import check_mindspore
from core.run.registry import LaunchError, RunListing, RunRecord, RunStatus, get_run, scan_runs
from core.workspace import default_workspace


def _workspace(args: argparse.Namespace) -> Path:
    return Path(args.workspace) if args.workspace else default_workspace()


def parse_node_exec(items: list[str]) -> dict[int, list[str]]:
    """`--node-exec K=COMMAND` -> {K: argv}; the command is split into words, never run by a shell."""
    found: dict[int, list[str]] = {}
    for item in items:
        node, sep, command = item.partition("=")
        if not sep or not (node.isascii() and node.isdigit()):
            raise LaunchError(f"--node-exec {item!r} is not NODE=COMMAND (e.g. 1='ip netns exec ns2')")
        try:
            found[int(node)] = shlex.split(command)
        except ValueError as exc:
            raise LaunchError(f"--node-exec {item!r}: {exc}") from None
    return found


def _own_job(args: argparse.Namespace) -> OwnJob:
    # argparse hands the first word after `--` to the optional job_dir positional: it is the script's
    script_args = ([args.job_dir] if args.job_dir is not None else []) + list(args.script_args)
    return OwnJob(
        script=args.script,
        args=tuple(script_args),
        env=parse_env(args.env),
        device_num=args.devices,
        local_worker_num=args.local_workers,
        launcher=args.launcher,
        master_addr=args.master_addr,
        master_port=args.master_port,
        join=args.join == "True",
        cluster_time_out=args.cluster_time_out,
        workdir=args.workdir or "",
        mindformers_config=args.mindformers_config or "",
        run_mode=args.run_mode,
        device_target=args.device_target,
        python=args.python or "",
        slurm_partition=args.partition or "",
        slurm_account=args.account or "",
        slurm_time=args.time or "",
        slurm_gres=args.gres or "",
    )


def _start(args: argparse.Namespace, workspace: Path) -> RunRecord:
    if args.script:
        if args.devices is None:
            raise LaunchError("--script needs --devices N (the number of workers)")
        job = check_own(_own_job(args))
        if job.python:
            _interpreter_preflight(job.python)
        return launch_own(job, workspace, name=args.name)
    if not args.job_dir:
        raise LaunchError("give a generated job folder, or --script PATH --devices N for your own script")
    if args.script_args:
        raise LaunchError("arguments after -- are for --script; a generated job takes none")
    return launch(args.job_dir, workspace, name=args.name, node_exec=parse_node_exec(args.node_exec))


def _interpreter_preflight(python: str) -> None:
    """The user's interpreter must import MindSpore: say its version, or refuse before anything starts."""
    check = check_mindspore(python)
    if not check.ok:
        raise LaunchError(f"preflight: {check.message}")
    print(f"preflight: {check.message}", flush=True)


def _launch(args: argparse.Namespace) -> int:
    workspace = _workspace(args)
    try:
        record = _start(args, workspace)
    except UserError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write to the workspace {workspace}: {exc.strerror or exc}")
    if record.slurm_job_id:
        print(f"run {record.run_id} started (Slurm job {record.slurm_job_id}); logs in {record.log_dir}")
    elif record.pid:
        print(f"run {record.run_id} started (pid {record.pid}); logs in {record.log_dir}")
    elif record.status == RunStatus.STARTING:
        print(f"run {record.run_id} starting (supervisor still starting the job); logs in {record.log_dir}")
    if not record.is_running:
        print(f"run {record.run_id} {record.status}: {record.message}", file=sys.stderr)
        return 1
    if not args.wait:
        return 0
    try:
        try:
            record = wait(record.run_id, workspace)
        except KeyboardInterrupt:
            print(f"\nstopping {record.run_id} ...", file=sys.stderr)
            record = stop(record.run_id, workspace)
    except UserError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot follow run {record.run_id}: {exc.strerror or exc}")
    duration = (record.ended_at or time.time()) - (record.started_at or time.time())
    detail = f": {record.message}" if record.message else ""
    print(f"run {record.run_id} {record.status} (exit code {record.exit_code}) after {duration:.1f} s{detail}")
    if record.status == RunStatus.SUCCEEDED:
        return 0
    return record.exit_code if record.exit_code and record.exit_code > 0 else 1


def _stop(args: argparse.Namespace) -> int:
    try:
        before = get_run(args.run, _workspace(args))
        if not before.is_running:
            why = f" ({before.message})" if before.message else ""
            print(f"run {before.run_id} already {before.status}: nothing to stop, no signal sent{why}")
            return 0
        record = stop(args.run, _workspace(args), grace=args.grace)
    except LaunchError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot stop {args.run}: {exc.strerror or exc}")
    if record.watch_only:
        print(f"run {record.run_id} {record.status}: {record.message}; {record.log_dir} is left as it is")
    else:
        print(f"run {record.run_id} {record.status}; no process of it is left")
    return 0


def _delete(args: argparse.Namespace) -> int:
    try:
        record = delete_run(args.run, _workspace(args))
    except LaunchError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot delete {args.run}: {exc.strerror or exc}")
    if record.watch_only:
        print(f"deleted run {record.run_id} (its record only: the watched folder {record.log_dir} is left as it is)")
    else:
        print(f"deleted run {record.run_id} and its folder {record.run_dir}")
    return 0


def _runs(args: argparse.Namespace) -> int:
    workspace = _workspace(args)
    try:
        listing = RunListing([get_run(args.run, workspace)], []) if args.run else scan_runs(workspace)
    except LaunchError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot read the workspace {workspace}: {exc.strerror or exc}")
    if not listing.records and not listing.unread:
        print(f"no runs in {workspace}")
        return 0
    print(f"{'RUN':40} {'STATUS':10} {'EXIT':>4} {'TIME':>8}  {'SCENARIO':16} MESSAGE")
    for r in listing.records:
        duration = f"{r.duration:.0f}s" if r.duration is not None else "-"
        code = "" if r.exit_code is None else str(r.exit_code)
        print(terminal_safe(f"{r.run_id:40} {r.status:10} {code:>4} {duration:>8}  {r.scenario:16} {r.message}"))
    grey, plain = ("\x1b[2m", "\x1b[0m") if sys.stdout.isatty() else ("", "")
    for error in listing.unread:  # a greyed row: the run is there, its record is not trusted
        row = f"{error.name:40} {'-':10} {'':>4} {'-':>8}  {'-':16} {error.line}"
        print(f"{grey}{terminal_safe(row)}{plain}")
    return 0


def _watch_folder(args: argparse.Namespace) -> int:
    try:
        from core.logs.bytes.guard import (
            validate_log_dir,  # here: core.logs brings pandas, which no other command needs
        )

        record = watch_folder(args.folder, _workspace(args), validate_log_dir, name=args.name)
    except UserError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write to the workspace: {exc.strerror or exc}")
    print(f"run {record.run_id} watches {record.log_dir} (watch only: `stop` forgets it, nothing is signalled)")
    return 0


def _launch_parser(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser(
        "launch",
        help="start a generated job folder, or your own script, as a run",
        description="Start a generated job folder (JOB_DIR) or your own script (--script ... -- ARGS) as a run.",
    )
    run.add_argument("job_dir", nargs="?", help="a folder written by `python -m core generate`")
    run.add_argument("--wait", action="store_true", help="wait for the end and return its exit status")
    run.add_argument("--name", help="run id (default: time + scenario)")
    run.add_argument("--workspace", help="workspace (default: $SHARDSCOPE_WORKSPACE or ./workspace)")
    run.add_argument(
        "--node-exec",
        action="append",
        default=[],
        metavar="K=COMMAND",
        help="also start node K of a multi-node msrun job here, behind COMMAND (e.g. 'ip netns exec ns2')",
    )
    own = run.add_argument_group("your own script")
    own.add_argument("--script", help="the entry script (e.g. train.py or MindFormers' run_mindformer.py)")
    own.add_argument("--devices", type=int, help="total workers")
    own.add_argument("--local-workers", type=int, help="workers per node (default: all on one node)")
    own.add_argument("--launcher", choices=list(OWN_LAUNCHERS), default="msrun")
    own.add_argument("--env", action="append", default=[], metavar="K=V", help="environment for every rank")
    own.add_argument("--workdir", help="working folder (default: the script's folder)")
    own.add_argument("--master-addr", default="127.0.0.1")
    own.add_argument("--master-port", type=int, default=8118)
    own.add_argument("--join", choices=["True", "False"], default="True", help="msrun --join")
    own.add_argument("--cluster-time-out", type=int, default=600, help="msrun --cluster_time_out (s)")
    own.add_argument("--mindformers-config", help="MindFormers YAML: passes --config and checks parallel_config")
    own.add_argument("--run-mode", default="train", help="MindFormers --run_mode")
    own.add_argument(
        "--python",
        help="the interpreter of your training environment for msrun, the scheduler and "
        "every worker (default: the dashboard's); preflight checks that it imports mindspore",
    )
    own.add_argument(
        "--device-target",
        choices=["CPU", "GPU", "Ascend"],
        default="CPU",
        help="what the script runs on (CPU: mpirun also starts MindSpore's scheduler)",
    )
    own.add_argument("--partition", help="Slurm partition")
    own.add_argument("--account", help="Slurm account")
    own.add_argument("--time", help="Slurm time limit (e.g. 01:00:00)")
    own.add_argument("--gres", help="Slurm gres per node (e.g. gpu:8)")
    run.add_argument("script_args", nargs="*", help="-- then the script's own arguments")
    run.set_defaults(func=_launch)


def register(sub: argparse._SubParsersAction) -> None:
    _launch_parser(sub)
    halt = sub.add_parser(
        "stop",
        help="stop a run (SIGINT or scancel, then SIGKILL) and verify nothing is left; "
        "a watched folder's run is only forgotten",
    )
    halt.add_argument("run")
    halt.add_argument("--grace", type=float, default=15.0, help="seconds between SIGINT and SIGKILL")
    halt.add_argument("--workspace")
    halt.set_defaults(func=_stop)

    runs = sub.add_parser("runs", help="list runs, newest first")
    runs.add_argument("run", nargs="?", help="show one run")
    runs.add_argument("--workspace")
    runs.set_defaults(func=_runs)

    drop = sub.add_parser("delete", help="delete a finished run's folder (a watched folder's run: its record only)")
    drop.add_argument("run")
    drop.add_argument("--workspace")
    drop.set_defaults(func=_delete)

    watch = sub.add_parser("watch-folder", help="register an existing log folder as a watch-only run")
    watch.add_argument("folder")
    watch.add_argument("--name", help="run id (default: watch-<folder name>)")
    watch.add_argument("--workspace")
    watch.set_defaults(func=_watch_folder)
