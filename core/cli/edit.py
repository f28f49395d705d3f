"""`python -m core edit --design IN --out OUT [--tensor-shape x=8,4] ...`: the Designer's edits, scripted.

Each option runs one `core.sharding.edits` function (the ones the Designer's widgets call), in this
order: --name, --device-num, renames, shapes, dtypes, layouts, splits, rank lists (so a renamed tensor
is addressed by its new name); then the design is written to OUT and its remaining problems are
listed, so a script can change a design file the way a user would in the editor:

    python -m core edit --design examples/seed004_dense_matmul.json --out my.json \\
        --device-num 16 --tensor-shape x=16,4 --tensor-split w=1,4
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from core.cli.common import fail
from core.errors import UserError
from core.sharding import edits
from core.sharding.design import Design, DesignError, design_problems, load_design, save_design

Edit = Callable[[Design, str, str], Design]

# option -> (help, edit taking NAME and VALUE of a NAME=VALUE pair), applied in this order
PAIR_EDITS: dict[str, tuple[str, Edit]] = {
    "rename_tensor": ("OLD=NEW: rename a tensor and every input that reads it", edits.rename_tensor),
    "tensor_shape": (
        "NAME=SHAPE, e.g. x=8,4: a tensor's global shape",
        lambda d, n, v: edits.set_tensor_shape(d, n, edits.parse_shape(v)),
    ),
    "tensor_dtype": ("NAME=DTYPE, e.g. x=float16", edits.set_tensor_dtype),
    "tensor_layout": ("NAME=LAYOUT: put a tensor on a layout (aliases it has are kept)", edits.set_tensor_layout),
    "tensor_split": (
        "NAME=SPLIT, e.g. w=1,4: a tuple strategy for a tensor",
        lambda d, n, v: edits.set_tensor_split(d, n, edits.parse_split(v)),
    ),
    "rank_list": ("LAYOUT=RANKS, e.g. layout=7,6,5,4,3,2,1,0 (empty: default order)", edits.set_rank_list),
}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("edit", help="change a design file with the Designer's edits")
    parser.add_argument("--design", required=True, help="design file (JSON) to start from")
    parser.add_argument("--out", required=True, help="where to write the edited design (may be --design itself)")
    parser.add_argument("--name", help="the design's name (letters, digits, '.', '_', '-')")
    parser.add_argument("--device-num", type=int, help="the device count")
    for option, (text, _) in PAIR_EDITS.items():
        parser.add_argument(f"--{option.replace('_', '-')}", action="append", default=[], metavar="A=B", help=text)
    parser.set_defaults(func=run)


def split_pair(text: str, option: str) -> tuple[str, str]:
    """`"x=8,4"` -> ("x", "8,4"); EditError naming the option when there is no '='."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise edits.EditError(f"--{option.replace('_', '-')} {text!r}: write NAME=VALUE, e.g. x=8,4")
    return name.strip(), value.strip()


def apply_edits(design: Design, args: argparse.Namespace) -> tuple[Design, int]:
    """The design after every edit the options ask for, and how many there were. Raises EditError."""
    count = 0
    if args.name is not None:
        design, count = edits.set_name(design, args.name), count + 1
    if args.device_num is not None:
        design, count = edits.set_device_num(design, args.device_num), count + 1
    for option, (_, edit) in PAIR_EDITS.items():
        for text in getattr(args, option):
            design, count = edit(design, *split_pair(text, option)), count + 1
    return design, count


def run(args: argparse.Namespace) -> int:
    try:
        design = load_design(args.design, strict=False)
    except DesignError as exc:
        return fail(f"{args.design}: {exc}")
    try:
        design, count = apply_edits(design, args)
    except UserError as exc:
        return fail(f"edit not applied, {args.out} not written: {exc}")
    if count == 0:
        return fail("no edit given: use --tensor-shape, --device-num, ... (see --help); nothing written")
    path = save_design(design, Path(args.out))
    problems = design_problems(design)
    print(f"wrote {path}: {count} edit(s) applied to {design.name}")
    for problem in problems:
        print(f"problem: {problem.path}: {problem.message}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) left: fix them before generating a job", file=sys.stderr)
    return 0
