"""Tensor edits: add, remove, rename, shape, dtype, role and placement (Layout, tuple or replicated).

A tensor's new sharding reaches the operator inputs that read it as it was stored (`_reshard_tensor`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from core.sharding.design import FLOAT_DTYPES, ROLES, Design, Sharding, TensorSpec
from core.sharding.edits.entries import assign_axes, fit_map, strip_aliases
from core.sharding.edits.lookup import layout_spec, new_name, taken_names, tensor_spec
from core.sharding.edits.text import EditError, check_identifier
from core.sharding.layout import NONE, DimEntry
from core.sharding.placement import DTYPE_BYTES


def add_tensor(
    design: Design, name: str | None = None, shape: Sequence[int] = (8, 8), dtype: str = "float32"
) -> tuple[Design, str]:
    """A new tensor, laid out on the first layout (every dim unsplit) if there is one."""
    name = check_identifier(name, "tensor name") if name else new_name(taken_names(design), "t")
    if name in design.tensors or name in {o.name for o in design.operators}:
        raise EditError(f"{name!r} is already a tensor or operator name: pick another name")
    if dtype not in DTYPE_BYTES:
        raise EditError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPE_BYTES)}")
    first = next(iter(design.layouts), None)
    sharding = Sharding(first, (NONE,) * len(shape)) if first else None
    return design.with_tensor(name, TensorSpec(tuple(shape), dtype, sharding)), name


def remove_tensor(design: Design, name: str) -> Design:
    tensor_spec(design, name)
    return replace(design, tensors={n: t for n, t in design.tensors.items() if n != name})


def rename_tensor(design: Design, old: str, new: str) -> Design:
    """Rename a tensor and every operator input that reads it."""
    spec = tensor_spec(design, old)
    new = check_identifier(new, "tensor name")
    if new == old:
        return design
    if new in design.tensors or new in {o.name for o in design.operators}:
        raise EditError(f"{new!r} is already a tensor or operator name: pick another name")
    tensors = {(new if n == old else n): (spec if n == old else t) for n, t in design.tensors.items()}
    operators = tuple(replace(op, inputs=tuple(new if i == old else i for i in op.inputs)) for op in design.operators)
    repeat = design.repeat
    if repeat is not None and repeat.carry == old:
        repeat = replace(repeat, carry=new)
    return replace(design, tensors=tensors, operators=operators, repeat=repeat)


def set_tensor_role(design: Design, name: str, role: str | None) -> Design:
    """ "input" (the dataset feeds it), "weight" (trained) or None (the default: `Design.tensor_role`)."""
    spec = tensor_spec(design, name)
    if role is not None and role not in ROLES:
        raise EditError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
    if role == "weight" and spec.dtype not in FLOAT_DTYPES:
        raise EditError(
            f"{name} is {spec.dtype}: a weight is trained, so it needs a float dtype ({', '.join(FLOAT_DTYPES)})"
        )
    return design.with_tensor(name, replace(spec, role=role))


def set_tensor_shape(design: Design, name: str, shape: Sequence[int]) -> Design:
    """Change the shape; a Layout map is padded with 'None' / cut to the new number of dimensions."""
    spec = tensor_spec(design, name)
    shape = tuple(int(s) for s in shape)
    sharding = spec.sharding
    if sharding is not None and sharding.map is not None:
        sharding = replace(sharding, map=fit_map(sharding.map, len(shape)))
    elif sharding is not None and sharding.split is not None:
        sharding = replace(
            sharding, split=tuple(list(sharding.split)[: len(shape)] + [1] * max(0, len(shape) - len(sharding.split)))
        )
    return design.with_tensor(name, replace(spec, shape=shape, sharding=sharding))


def set_tensor_dtype(design: Design, name: str, dtype: str) -> Design:
    if dtype not in DTYPE_BYTES:
        raise EditError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPE_BYTES)}")
    return design.with_tensor(name, replace(tensor_spec(design, name), dtype=dtype))


def _reshard_tensor(design: Design, name: str, sharding: Sharding | None) -> Design:
    """Give a tensor a new sharding; operator inputs that read it with its old sharding follow along.

    An operator strategy equal to the tensor's sharding means "use the tensor as it is stored", so
    a drag in the Tensors tab reaches the operators (and the generated `.shard(...)` code); a strategy
    the user set differently on the operator stays as it is.
    """
    spec = tensor_spec(design, name)
    old = spec.sharding
    design = design.with_tensor(name, replace(spec, sharding=sharding))
    if old is None or sharding is None:
        return design
    operators = []
    for op in design.operators:
        if op.strategy is not None and name in op.inputs:
            strategy = tuple(
                sharding if source == name and current == old else current
                for source, current in zip(op.inputs, op.strategy, strict=False)
            )
            op = replace(op, strategy=strategy)
        operators.append(op)
    return replace(design, operators=tuple(operators))


def set_tensor_layout(design: Design, name: str, layout_name: str | None) -> Design:
    """Put a tensor on a layout (keeping the aliases that layout has), or make it replicated (None)."""
    spec = tensor_spec(design, name)
    if layout_name is None:
        return _reshard_tensor(design, name, None)
    target = layout_spec(design, layout_name)
    old = spec.sharding.map if spec.sharding is not None and spec.sharding.map is not None else ()
    entries = strip_aliases(fit_map(old, len(spec.shape)), target.alias_name)
    return _reshard_tensor(design, name, Sharding(layout_name, entries))


def set_tensor_split(design: Design, name: str, split: Sequence[int]) -> Design:
    """A tuple strategy for a tensor (MindSpore builds the device matrix itself)."""
    return _reshard_tensor(design, name, Sharding(split=tuple(int(s) for s in split)))


def set_tensor_map(design: Design, name: str, entries: Sequence[DimEntry]) -> Design:
    spec = tensor_spec(design, name)
    if spec.sharding is None or spec.sharding.layout is None:
        raise EditError(f"{name} is not on a layout: pick a layout for it first")
    return _reshard_tensor(design, name, replace(spec.sharding, map=fit_map(entries, len(spec.shape))))


def set_dim_axes(design: Design, name: str, dim: int, axes: Sequence[str]) -> Design:
    """The click path: dimension `dim` is split over `axes` (outer -> inner); they leave other dims."""
    spec = tensor_spec(design, name)
    if spec.sharding is None or spec.sharding.map is None:
        raise EditError(f"{name} is not on a layout: pick a layout for it first")
    return _reshard_tensor(design, name, replace(spec.sharding, map=assign_axes(spec.sharding.map, dim, axes)))
