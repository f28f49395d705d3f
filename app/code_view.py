"""MindSpore code for a design's layouts, tensors and operator strategies, ready to copy.

The strings are built from validated pieces only: layout / tensor / operator names are identifiers
(checked by the design reader and the editor), aliases and numbers are rendered with `repr`.
"""

from __future__ import annotations

from core.sharding.design import Design, OperatorSpec, Sharding
from core.sharding.layout import LayoutError


def _safe_name(name: str, fallback: str) -> str:
    return name if name.isidentifier() else fallback


def layout_code(design: Design, layout_name: str) -> str:
    """`layout = Layout((2, 2, 2), ('dp', 'sp', 'mp'))`."""
    spec = design.layouts[layout_name]
    parts = [repr(tuple(spec.device_matrix)), repr(tuple(spec.alias_name))]
    if spec.rank_list is not None:
        parts.append(f"rank_list={list(spec.rank_list)!r}")
    return f"{_safe_name(layout_name, 'layout')} = Layout({', '.join(parts)})"


def sharding_code(design: Design, sharding: Sharding | None, ndim: int) -> str:
    """`layout('mp', ('sp', 'dp'))` for a Layout strategy, `(4, 1)` for a tuple strategy."""
    if sharding is None:
        return repr((1,) * ndim)
    if sharding.is_layout:
        entries = ", ".join(repr(e) for e in sharding.map or ())
        return f"{_safe_name(sharding.layout or 'layout', 'layout')}({entries})"
    return repr(tuple(sharding.split or ()))


def _used_layouts(design: Design, shardings: list[Sharding | None]) -> list[str]:
    names: list[str] = []
    for s in shardings:
        if s is not None and s.is_layout and s.layout in design.layouts and s.layout not in names:
            names.append(s.layout)
    return names


def tensor_code(design: Design, tensor_name: str) -> str:
    """Layout definition + the tensor's strategy + how it is used in `.shard(...)`."""
    tensor = design.tensors[tensor_name]
    var = _safe_name(tensor_name, "tensor")
    lines = ["from mindspore import Layout", ""]
    for name in _used_layouts(design, [tensor.sharding]):
        lines.append(layout_code(design, name))
    strategy = sharding_code(design, tensor.sharding, len(tensor.shape))
    lines.append(f"{var}_strategy = {strategy}  # {var}: shape {tuple(tensor.shape)}, {tensor.dtype}")
    users = [op for op in design.operators if tensor_name in op.inputs]
    own = _used_layouts(design, [tensor.sharding])
    for name in _used_layouts(design, [s for op in users for s in (*(op.strategy or ()), op.out_strategy)]):
        if name not in own:
            lines.append(layout_code(design, name))
    if users:
        lines.append("")
        lines.append("# used by:")
        for op in users:
            lines.append(operator_code(design, op))
    return "\n".join(lines)


def operator_code(design: Design, op: OperatorSpec) -> str:
    """`self.matmul1 = ops.MatMul().shard((layout(...), layout(...)))`."""
    var = _safe_name(op.name, "op")
    kwargs = []
    if op.transpose_a:
        kwargs.append("transpose_a=True")
    if op.transpose_b:
        kwargs.append("transpose_b=True")
    if op.type == "Softmax":
        kwargs.append(f"axis={-1 if op.axis is None else op.axis}")
    if op.type == "RMSNorm":  # ops.RmsNorm (Ascend); generated scripts compose it from shardable primitives
        kwargs.append(f"epsilon={1e-6 if op.eps is None else op.eps!r}")
    ctor = f"ops.{'RmsNorm' if op.type == 'RMSNorm' else op.type}({', '.join(kwargs)})"
    if op.strategy is None:
        return f"self.{var} = {ctor}  # no strategy: MindSpore chooses one"
    ndims = [len(design.tensors[i].shape) if i in design.tensors else 2 for i in op.inputs]
    parts = [sharding_code(design, s, ndims[k] if k < len(ndims) else 2) for k, s in enumerate(op.strategy)]
    inner = ", ".join(parts) + ("," if len(parts) == 1 else "")
    if op.out_strategy is not None:
        out = sharding_code(design, op.out_strategy, len(op.out_strategy.map or ()) or 2)
        return f"self.{var} = {ctor}.shard(({inner}), ({out},))"
    return f"self.{var} = {ctor}.shard(({inner}))"


def operators_code(design: Design) -> str:
    """Every operator of the design as a Cell's __init__ body (layouts first)."""
    lines = ["from mindspore import Layout, ops", ""]
    shardings = [s for op in design.operators for s in (*(op.strategy or ()), op.out_strategy)]
    for name in _used_layouts(design, list(shardings)):
        lines.append(layout_code(design, name))
    if len(lines) > 2:
        lines.append("")
    for op in design.operators:
        lines.append(operator_code(design, op))
    return "\n".join(lines)


def tensor_map_dict(design: Design, sharding: Sharding | None) -> dict[str, object] | str:
    """What MindSpore's `TensorLayout.to_dict()` returns (tensor_map counted from the right), or why not."""
    if sharding is None or not sharding.is_layout:
        return "tuple strategies have no Layout: MindSpore derives the device matrix itself"
    try:
        return design.tensor_layout(sharding).to_dict()
    except LayoutError as exc:
        return str(exc)
