"""`python -m core preview --design FILE [--tensor NAME]`: the per-rank table in the terminal, then the
MindSpore code of the operators that read those tensors, rendered by the function train.py is written with
(`core.codegen.primitives`), so the lines shown are the lines the generated script contains."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from core.codegen.options import CodegenError
from core.codegen.primitives import layout_lines, operator_lines, used_layouts
from core.sharding.design import Design, DesignError, entry_label, load_design
from core.sharding.layout import LayoutError
from core.sharding.placement import place, rank_table_rows

COLUMNS = ("rank", "coordinate", "slice", "local_shape", "bytes")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("preview", help="print which slice of each tensor lives on which rank")
    parser.add_argument("--design", required=True, help="design file (JSON), e.g. examples/seed004_mlp.json")
    parser.add_argument("--tensor", help="only this tensor (default: every sharded tensor)")
    parser.set_defaults(func=run)


def format_table(rows: Sequence[dict[str, object]], columns: Sequence[str]) -> str:
    """Left-aligned text table with a header rule."""
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join([line.rstrip(), rule, *body])


def tensor_report(design: Design, name: str) -> str:
    tensor = design.tensors[name]
    if tensor.sharding is None or not tensor.sharding.is_layout:
        return f"{name} {tensor.shape} {tensor.dtype}: not sharded by a Layout (replicated on every rank)"
    tensor_layout = design.tensor_layout(tensor.sharding)
    placement = place(tensor.shape, tensor_layout)
    entries = ", ".join(entry_label(e) for e in tensor_layout.entries)
    header = (
        f"{name} {tensor.shape} {tensor.dtype} -> {tensor.sharding.layout}({entries})\n"
        f"  {tensor_layout.layout.to_code()}  tensor_map={tensor_layout.tensor_map}  "
        f"split={tensor_layout.split}  replica groups={placement.replica_groups()}"
    )
    return header + "\n" + format_table(rank_table_rows(placement, tensor.dtype), COLUMNS)


def operator_blocks(design: Design, tensors: Sequence[str] | None = None) -> dict[str, str]:
    """Operator name -> its `self.<name> = ops.X(...).shard(...)` line(s), as train.py's `__init__` holds them.

    Only the operators reading one of `tensors` when given; an operator codegen cannot render says why."""
    blocks: dict[str, str] = {}
    for op in design.operators:
        if tensors is not None and not set(op.inputs) & set(tensors):
            continue
        try:
            blocks[op.name] = "\n".join(operator_lines(op))
        except CodegenError as exc:
            blocks[op.name] = f"# {exc}"
    return blocks


def code_report(design: Design, tensors: Sequence[str] | None = None) -> str:
    """The layouts and operator lines of the design (or of the operators reading `tensors`)."""
    blocks = operator_blocks(design, tensors)
    if not blocks:
        which = "reads these tensors" if tensors is not None else "is in the design"
        return f"MindSpore code: no operator {which}, so there is no operator code to show"
    ops = [op for op in design.operators if op.name in blocks]
    shardings = [s for op in ops for s in (*(op.strategy or ()), op.out_strategy)]
    layouts = layout_lines(design, used_layouts(design, shardings))
    return "\n".join(["MindSpore code (the lines train.py contains):", *layouts, *blocks.values()])


def run(args: argparse.Namespace) -> int:
    try:
        design = load_design(args.design)
    except DesignError as exc:
        print(f"error: {args.design}: {exc}", file=sys.stderr)
        return 2
    names = [args.tensor] if args.tensor else list(design.tensors)
    if args.tensor and args.tensor not in design.tensors:
        known = ", ".join(design.tensors) or "none"
        print(f"error: no tensor {args.tensor!r} in {args.design} (tensors: {known})", file=sys.stderr)
        return 2
    reports = []
    for name in names:
        try:
            reports.append(tensor_report(design, name))
        except LayoutError as exc:
            reports.append(f"{name}: {exc}")
    print(f"design {design.name}: {design.device_num} devices\n")
    print("\n\n".join(reports))
    print()
    print(code_report(design, [args.tensor] if args.tensor else None))
    return 0
