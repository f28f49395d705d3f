"""MindSpore code for a design's layouts, tensors and operator strategies, ready to copy.

Every line comes from the renderer train.py is written with (`core.sharding.code` for layouts and
strategies, `core.codegen.primitives` for operators), so what the Designer shows is what the
generated script contains. Names are identifiers (checked by the design reader and the editor).
"""

from __future__ import annotations

from core.codegen.options import CodegenError
from core.codegen.primitives import layout_lines, operator_lines, used_layouts
from core.sharding.code import lit, strategy_expr
from core.sharding.design import Design, OperatorSpec, Sharding
from core.sharding.layout import LayoutError


def layout_code(design: Design, layout_name: str) -> str:
    """`layout = Layout((2, 2, 2), ("dp", "sp", "mp"))`, as train.py defines it."""
    return layout_lines(design, [layout_name])[0]


def sharding_code(sharding: Sharding | None, ndim: int) -> str:
    """`layout("mp", ("sp", "dp"))` for a Layout strategy, `(4, 1)` for a tuple, unsplit 1s for none."""
    return lit((1,) * ndim) if sharding is None else strategy_expr(sharding)


def tensor_code(design: Design, tensor_name: str) -> str:
    """Layout definition + the tensor's strategy + the operators that read it, as train.py has them."""
    tensor = design.tensors[tensor_name]
    lines = ["from mindspore import Layout", ""]
    own = used_layouts(design, [tensor.sharding])
    lines += layout_lines(design, own)
    strategy = sharding_code(tensor.sharding, len(tensor.shape))
    lines.append(f"{tensor_name}_strategy = {strategy}  # {tensor_name}: shape {tuple(tensor.shape)}, {tensor.dtype}")
    users = [op for op in design.operators if tensor_name in op.inputs]
    theirs = used_layouts(design, [s for op in users for s in (*(op.strategy or ()), op.out_strategy)])
    lines += layout_lines(design, [name for name in theirs if name not in own])
    if users:
        lines += ["", "# used by:"]
        lines += [operator_code(op) for op in users]
    return "\n".join(lines)


def call_note(op: OperatorSpec) -> str | None:
    """The attribute train.py passes in `construct` rather than to the primitive, as a comment line."""
    if op.type == "RMSNorm":
        eps = 1e-6 if op.eps is None else op.eps
        return f"# construct: {op.name} = x * rsqrt(mean(x ** 2, -1) + {float(eps)!r}) * gamma"
    if op.type == "Transpose":
        return f"# construct: self.{op.name}(x, {lit(tuple(op.perm or ()))})"
    if op.type == "Reshape":
        return f"# construct: self.{op.name}(x, {lit(tuple(op.shape or ()))}) (the batch dimension follows x)"
    return None


def operator_code(op: OperatorSpec) -> str:
    """The operator's `self.<name> = ops.X(...).shard(in_strategy=...)` line(s), exactly as in train.py,
    then (as a comment) what its call in `construct` adds: RMSNorm's eps, Transpose's perm, Reshape's shape."""
    try:
        lines = operator_lines(op)
    except CodegenError as exc:
        return f"# {exc}"
    note = call_note(op)
    return "\n".join([*lines, note] if note else lines)


def operators_code(design: Design) -> str:
    """Every operator of the design as a Cell's __init__ body (layouts first)."""
    lines = ["from mindspore import Layout, ops", ""]
    shardings = [s for op in design.operators for s in (*(op.strategy or ()), op.out_strategy)]
    layouts = layout_lines(design, used_layouts(design, shardings))
    lines += [*layouts, ""] if layouts else []
    for op in design.operators:
        if op.strategy is None and op.type != "Reshape":
            lines.append(f"# {op.name}: no strategy, MindSpore chooses one")
        lines.append(operator_code(op))
    return "\n".join(lines)


def tensor_map_dict(design: Design, sharding: Sharding | None) -> dict[str, object] | str:
    """What MindSpore's `TensorLayout.to_dict()` returns (tensor_map counted from the right), or why not."""
    if sharding is None or not sharding.is_layout:
        return "tuple strategies have no Layout: MindSpore derives the device matrix itself"
    try:
        return design.tensor_layout(sharding).to_dict()
    except LayoutError as exc:
        return str(exc)
