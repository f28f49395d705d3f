"""CLI: `python -m core generate|launch|stop|runs` (job generation and the run registry)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from core.codegen import DATASETS, DEVICE_TARGETS, LAUNCHERS, SCENARIOS, CodegenError, RunOptions, write_job
from core.design import Design, DesignError, load_design
from core.launch import LaunchError, get_run, launch, list_runs, stop, wait
from core.workspace import EXAMPLES_DIR, WorkspaceError, default_workspace

DEFAULT_DESIGN = EXAMPLES_DIR / "data_parallel_8.json"


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _generate(args: argparse.Namespace) -> int:
    try:
        design: Design = load_design(args.design or DEFAULT_DESIGN)
        options = RunOptions(
            scenario=args.scenario,
            device_target=args.device_target,
            launcher=args.launcher,
            device_num=args.devices if args.devices is not None else design.device_num,
            local_worker_num=args.local_workers,
            master_addr=args.master_addr,
            master_port=args.master_port,
            dataset=args.dataset,
            data_path=args.data_path,
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            loss_interval=args.loss_interval,
            synthetic_samples=args.samples,
            interleave_num=args.interleave_num,
            pipeline_stages=args.stages,
            micro_batches=args.micro_batches,
        )
        out = write_job(design, options, args.out)
    except (CodegenError, DesignError, WorkspaceError) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write {args.out}: {exc.strerror or exc}")
    what = f"{options.scenario}, {options.device_num} x {options.device_target}"
    print(f"wrote {out}/train.py, run.sh, README.md ({what})")
    return 0


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
    gen = sub.add_parser("generate", help="write train.py + run.sh + README.md for a scenario")
    gen.add_argument("--scenario", choices=list(SCENARIOS), default="data_parallel")
    gen.add_argument("--device-target", choices=list(DEVICE_TARGETS), default="CPU")
    gen.add_argument("--devices", type=int, default=None, help="total devices / workers (default: the design's)")
    gen.add_argument("--launcher", choices=list(LAUNCHERS), default="msrun")
    gen.add_argument("--design", help="design file (default: examples/data_parallel_8.json)")
    gen.add_argument("--out", required=True, help="job folder to write")
    gen.add_argument("--local-workers", type=int, default=None, help="workers per node (multi-node)")
    gen.add_argument("--master-addr", default="127.0.0.1")
    gen.add_argument("--master-port", type=int, default=8118)
    gen.add_argument("--dataset", choices=list(DATASETS), default="synthetic")
    gen.add_argument("--data-path", default="./MNIST_Data/train", help="MNIST folder (DATA_PATH)")
    gen.add_argument("--samples", type=int, default=512, help="synthetic samples")
    gen.add_argument("--epochs", type=int, default=2)
    gen.add_argument("--batch-size", type=int, default=32)
    gen.add_argument("--lr", type=float, default=0.01)
    gen.add_argument("--loss-interval", type=int, default=1, help="print the loss every N steps")
    gen.add_argument("--interleave-num", type=int, default=2, help="multi_copy copies")
    gen.add_argument("--stages", type=int, default=2, help="sapp_pipeline stages")
    gen.add_argument("--micro-batches", type=int, default=4, help="sapp_pipeline micro-batches")
    gen.set_defaults(func=_generate)

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


def main(argv: list[str] | None = None) -> int:
    """Entry point without the rest of the CLI: `python -m core.cli_run generate ...`."""
    parser = argparse.ArgumentParser(prog="python -m core")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
