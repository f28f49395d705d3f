"""`python -m core generate ...`: render a design + run options into a job folder."""

from __future__ import annotations

import argparse
import os

from core.cli.common import fail as _fail
from core.codegen import (
    DATASETS,
    DEVICE_TARGETS,
    LAUNCHERS,
    SCENARIOS,
    CodegenError,
    JobExistsError,
    RunOptions,
    write_job,
)
from core.errors import UserError
from core.sharding.design import Design, load_design
from core.workspace import EXAMPLES_DIR, short

DEFAULT_DESIGN = EXAMPLES_DIR / "data_parallel_8.json"


MAX_OUT_CHARS = 4096  # PATH_MAX


def check_out(text: str) -> str:
    """--out as a path the OS can take: no NUL (Python would raise ValueError), at most PATH_MAX."""
    if "\0" in text or not text.strip() or len(text) > MAX_OUT_CHARS:
        why = "contains a NUL character" if "\0" in text else f"must be 1-{MAX_OUT_CHARS:,} characters"
        raise CodegenError(f"--out {short(text)} ({len(text):,} characters) {why}")
    return text


def _generate(args: argparse.Namespace) -> int:
    try:
        check_out(args.out)
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
            slurm_partition=args.partition or "",
            slurm_account=args.account or "",
            slurm_time=args.time or "",
            slurm_gres=args.gres or "",
            slurm_cpus_per_task=args.cpus_per_task,
        )
        names = ("train.py", "run.sh", "job.sbatch", "README.md")
        replaced = [name for name in names if os.path.lexists(os.path.join(args.out, name))]
        out = write_job(design, options, args.out, force=args.force)
        written = [name for name in names if (out / name).is_file()]
    except JobExistsError as exc:
        return _fail(f"{exc}: not overwritten; pass --force to replace them, or choose another --out")
    except UserError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write {args.out}: {exc.strerror or exc}")
    what = f"{options.scenario}, {options.device_num} x {options.device_target}"
    if replaced:
        what += f"; replaced the earlier {', '.join(replaced)}"
    print(f"wrote {out}/{', '.join(written)} ({what})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    gen = sub.add_parser("generate", help="write train.py + run.sh + README.md for a scenario")
    gen.add_argument("--scenario", choices=list(SCENARIOS), default="data_parallel")
    gen.add_argument("--device-target", choices=list(DEVICE_TARGETS), default="CPU")
    gen.add_argument("--devices", type=int, default=None, help="total devices / workers (default: the design's)")
    gen.add_argument("--launcher", choices=list(LAUNCHERS), default="msrun")
    gen.add_argument("--design", help="design file (default: examples/data_parallel_8.json)")
    gen.add_argument("--out", required=True, help="job folder to write")
    gen.add_argument(
        "--force", action="store_true", help="overwrite files in --out not written by ShardScope or edited since"
    )
    gen.add_argument("--local-workers", type=int, default=None, help="workers per node (multi-node)")
    gen.add_argument("--master-addr", default="127.0.0.1")
    gen.add_argument("--master-port", type=int, default=8118)
    gen.add_argument("--dataset", choices=list(DATASETS), default="synthetic")
    gen.add_argument("--data-path", default="./MNIST_Data/train", help="MNIST folder (DATA_PATH)")
    gen.add_argument("--samples", type=int, default=512, help="synthetic samples")
    gen.add_argument("--epochs", type=int, default=2)
    gen.add_argument("--batch-size", type=int, default=32)
    gen.add_argument("--lr", type=float, default=0.001, help="Adam learning rate")
    gen.add_argument("--loss-interval", type=int, default=1, help="print the loss every N steps")
    gen.add_argument("--interleave-num", type=int, default=2, help="multi_copy copies")
    gen.add_argument("--stages", type=int, default=2, help="sapp_pipeline stages")
    gen.add_argument("--micro-batches", type=int, default=4, help="sapp_pipeline micro-batches")
    slurm = gen.add_argument_group("Slurm (--launcher slurm; nodes = devices / --local-workers)")
    slurm.add_argument("--partition", help="Slurm partition (default: the cluster's default)")
    slurm.add_argument("--account", help="Slurm account")
    slurm.add_argument("--time", help="time limit: minutes, HH:MM:SS or D-HH:MM:SS")
    slurm.add_argument("--gres", help="generic resources per node, e.g. gpu:8")
    slurm.add_argument("--cpus-per-task", type=int, default=1, help="CPUs per worker")
    gen.set_defaults(func=_generate)
