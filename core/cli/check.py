"""`python -m core check JOB [--layers N] [--batch B]`: 2 real training steps of the job on this CPU."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.cli.common import fail
from core.run.check import check_job


def _check(args: argparse.Namespace) -> int:
    if not Path(args.job).is_dir():
        return fail(f"{args.job} is not a folder: give a job folder written by `python -m core generate`")
    result = check_job(args.job, layers=args.layers, batch=args.batch, timeout=args.timeout)
    for step, loss in enumerate(result.losses, start=1):
        print(f"step {step}: loss {loss}")
    if result.passed:
        print(f"check passed in {result.seconds:.1f} s: {result.message}")
        return 0
    for line in result.output_tail:
        print(f"  | {line}")
    print(f"check failed after {result.seconds:.1f} s: {result.message}")
    return 1


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("check", help="run a job's train.py --check: 2 real training steps on this CPU")
    parser.add_argument("job", help="job folder (from `python -m core generate`)")
    parser.add_argument("--layers", type=_positive, help="layers of the repeat block to build (default: all)")
    parser.add_argument("--batch", type=_positive, help="samples per step (default: the design's batch)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before the check is killed")
    parser.set_defaults(func=_check)
