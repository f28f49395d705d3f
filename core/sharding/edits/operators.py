"""Operator edits and the queries they need: sources, input shapes and ranks, attributes, strategies.

Shapes and ranks come from the operator family (`core.sharding.operators.registry`), never from a
switch on operator types here: a new family brings its own `output_ndim` / `input_ndim`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from core.sharding.catalog import OP_ARITY
from core.sharding.design import MAX_DIMS, Design, OperatorSpec, Sharding
from core.sharding.edits.entries import assign_axes, fit_map, strip_aliases
from core.sharding.edits.lookup import (
    input_index,
    layout_spec,
    new_name,
    operator_index,
    operator_of,
    replace_operator,
    taken_names,
)
from core.sharding.edits.text import EditError, check_identifier, parse_int_list, parse_shape, parse_split
from core.sharding.layout import NONE, DimEntry, LayoutError
from core.sharding.operators import OperatorAnalysis, analyze_design
from core.sharding.operators.analyze import attrs_of
from core.sharding.operators.registry import family_of


def output_ndim(op: OperatorSpec, ndims: Sequence[int | None]) -> int | None:
    """The operator's output rank from its inputs' ranks, as its family computes it (None = unknown)."""
    family = family_of(op.type)
    if family is None:
        known = [n for n in ndims if n is not None]
        return max(known) if known else None
    return family.output_ndim(op.type, ndims, attrs_of(op))


def op_sources(design: Design, before: str | None = None) -> list[str]:
    """What an operator input may read: tensors, then operators earlier than `before`."""
    sources = list(design.tensors)
    for op in design.operators:
        if op.name == before:
            break
        sources.append(op.name)
    return sources


def input_shapes(
    design: Design, op_name: str, analyses: Sequence[OperatorAnalysis] | None = None
) -> list[tuple[int, ...] | None]:
    """Shapes of an operator's inputs: tensors from the design, operator outputs from `analyses`."""
    outputs: dict[str, tuple[int, ...] | None] = {}
    for analysis in analyses or ():
        outputs[analysis.name] = tuple(analysis.output_shape) if analysis.output_shape is not None else None
    op = operator_of(design, op_name)
    shapes: list[tuple[int, ...] | None] = []
    for source in op.inputs:
        if source in design.tensors:
            shapes.append(design.tensors[source].shape)
        else:
            shapes.append(outputs.get(source))
    return shapes


def source_ndim(design: Design, source: str, _depth: int = 0) -> int | None:
    """Number of dimensions of a tensor or of an operator's output, without the full analysis
    (the operator's family says how its output rank follows from its inputs')."""
    if source in design.tensors:
        return len(design.tensors[source].shape)
    if _depth > len(design.operators):
        return None
    for op in design.operators:
        if op.name == source:
            return output_ndim(op, [source_ndim(design, i, _depth + 1) for i in op.inputs])
    return None


def input_ndims(design: Design, op_name: str, analyses: Sequence[OperatorAnalysis] | None = None) -> list[int | None]:
    op = operator_of(design, op_name)
    result: list[int | None] = []
    for i, shape in enumerate(input_shapes(design, op_name, analyses)):
        if shape is not None:
            result.append(len(shape))
        elif source_ndim(design, op.inputs[i]) is not None:
            result.append(source_ndim(design, op.inputs[i]))
        elif op.strategy is not None and i < len(op.strategy):
            s = op.strategy[i]
            result.append(len(s.map) if s.map is not None else len(s.split or ()))
        else:
            family = family_of(op.type)
            result.append(None if family is None else family.input_ndim(op.type, i))
    return result


def add_operator(design: Design, op_type: str, inputs: Sequence[str], name: str | None = None) -> tuple[Design, str]:
    if op_type not in OP_ARITY:
        raise EditError(f"unsupported operator {op_type!r}: use one of {', '.join(OP_ARITY)}")
    taken = taken_names(design)
    name = check_identifier(name, "operator name") if name else new_name(taken, op_type.lower())
    if name in taken:
        raise EditError(f"{name!r} is already a tensor or operator name: pick another name")
    if len(inputs) != OP_ARITY[op_type]:
        raise EditError(f"{op_type} takes {OP_ARITY[op_type]} input(s), got {len(inputs)}")
    known = set(op_sources(design))
    for source in inputs:
        if source not in known:
            raise EditError(f"input {source!r} is not a tensor or an earlier operator")
    op = OperatorSpec(name=name, type=op_type, inputs=tuple(inputs), **_default_attributes(design, op_type, inputs))
    return replace(design, operators=(*design.operators, op)), name


def _default_attributes(design: Design, op_type: str, inputs: Sequence[str]) -> dict[str, Any]:
    """What a new Transpose / Reshape starts with, so the design stays loadable: swap the last two
    dimensions; keep the input's shape (edit it afterwards)."""
    if op_type == "Transpose":
        ndim = source_ndim(design, inputs[0]) or 2
        return {"perm": (*range(ndim - 2), ndim - 1, ndim - 2) if ndim >= 2 else (0,)}
    if op_type == "Reshape":
        shape = source_shape(design, inputs[0])
        return {"shape": shape if shape else (1,)}
    return {}


def source_shape(design: Design, source: str) -> tuple[int, ...] | None:
    """The global shape of a tensor or of an operator's output (None when the analysis cannot tell)."""
    if source in design.tensors:
        return tuple(design.tensors[source].shape)
    for analysis in analyze_design(design):
        if analysis.name == source:
            return None if analysis.output_shape is None else tuple(analysis.output_shape)
    return None


def set_operator_perm(design: Design, name: str, text: str) -> Design:
    """Transpose's perm as typed, e.g. `0, 2, 1, 3`: every dimension exactly once."""
    op = operator_of(design, name)
    perm = parse_int_list(text, "perm", minimum=0)
    if sorted(perm) != list(range(len(perm))):
        raise EditError(f"perm: {perm} is not a permutation: give every dimension 0..{len(perm) - 1} exactly once")
    return replace_operator(design, replace(op, perm=perm))


def set_operator_shape(design: Design, name: str, text: str) -> Design:
    """Reshape's global target shape as typed, e.g. `8, 128, 32, 128`."""
    op = operator_of(design, name)
    return replace_operator(design, replace(op, shape=parse_shape(text)))


def set_operator_axis(design: Design, name: str, axis: int) -> Design:
    """Softmax's normalised dimension (negative counts from the end)."""
    op = operator_of(design, name)
    if not -MAX_DIMS <= int(axis) < MAX_DIMS:
        raise EditError(f"axis {axis} is out of range: use {-MAX_DIMS}..{MAX_DIMS - 1}")
    return replace_operator(design, replace(op, axis=int(axis)))


def set_operator_eps(design: Design, name: str, eps: float) -> Design:
    """RMSNorm's epsilon: a small positive number."""
    op = operator_of(design, name)
    if not 0 < float(eps) < 1:
        raise EditError(f"eps {eps} must be a small positive number such as 1e-6")
    return replace_operator(design, replace(op, eps=float(eps)))


def remove_operator(design: Design, name: str) -> Design:
    i = operator_index(design, name)
    return replace(design, operators=design.operators[:i] + design.operators[i + 1 :])


def set_operator_input(design: Design, name: str, index: int, source: str) -> Design:
    op = operator_of(design, name)
    if source not in op_sources(design, before=name):
        raise EditError(f"input {source!r} is not a tensor or an operator before {name}")
    inputs = list(op.inputs)
    inputs[input_index(op, index)] = source
    return replace_operator(design, replace(op, inputs=tuple(inputs)))


def set_operator_strategy(design: Design, name: str, index: int, sharding: Sharding | None) -> Design:
    """Set input `index`'s strategy. All None -> the operator has no strategy (MindSpore picks one).
    Inputs without a strategy get a tuple of 1s of `default_ndim` when another input is set."""
    op = operator_of(design, name)
    current: list[Sharding | None] = list(op.strategy) if op.strategy is not None else [None] * len(op.inputs)
    current += [None] * (len(op.inputs) - len(current))
    current[input_index(op, index)] = sharding
    if all(s is None for s in current):
        return replace_operator(design, replace(op, strategy=None))
    ndims = input_ndims(design, name)
    filled = tuple(s if s is not None else Sharding(split=(1,) * max(ndims[i] or 1, 1)) for i, s in enumerate(current))
    return replace_operator(design, replace(op, strategy=filled))


def set_operator_transpose(design: Design, name: str, which: str, value: bool) -> Design:
    op = operator_of(design, name)
    if which not in ("transpose_a", "transpose_b"):
        raise EditError(f"unknown flag {which!r}")
    if which == "transpose_a":
        return replace_operator(design, replace(op, transpose_a=bool(value)))
    return replace_operator(design, replace(op, transpose_b=bool(value)))


def _op_input_sharding(op: OperatorSpec, index: int) -> Sharding | None:
    if op.strategy is None or index >= len(op.strategy):
        return None
    return op.strategy[index]


def enable_operator_strategy(design: Design, name: str, on: bool) -> Design:
    """On: every input gets an unsplit tuple strategy to start from; off: MindSpore chooses (None)."""
    op = operator_of(design, name)
    if not on:
        return replace_operator(design, replace(op, strategy=None))
    if op.strategy is not None:
        return design
    ndims = input_ndims(design, name)
    return replace_operator(design, replace(op, strategy=tuple(Sharding(split=(1,) * (n or 1)) for n in ndims)))


def set_operator_input_mode(design: Design, name: str, index: int, mode: str, layout_name: str | None = None) -> Design:
    """Switch one input between a Layout strategy ('layout') and a tuple strategy ('tuple').

    Layout -> tuple keeps the split counts; tuple -> Layout starts unsplit on `layout_name` (default: the
    first layout)."""
    op = operator_of(design, name)
    ndim = input_ndims(design, name)[input_index(op, index)] or 1
    current = _op_input_sharding(op, index)
    if mode == "tuple":
        split: tuple[int, ...] = (1,) * ndim
        if current is not None and current.is_layout:
            with contextlib.suppress(LayoutError):
                split = design.tensor_layout(current).split
        elif current is not None and current.split is not None:
            return design
        return set_operator_strategy(design, name, index, Sharding(split=split))
    if mode == "layout":
        layout_name = layout_name or next(iter(design.layouts), None)
        if layout_name is None:
            raise EditError("the design has no layout: add one in the Device matrix tab first")
        layout_spec(design, layout_name)
        if current is not None and current.layout == layout_name:
            return design
        old = current.map if current is not None and current.map is not None else (NONE,) * ndim
        entries = strip_aliases(fit_map(old, ndim), design.layouts[layout_name].alias_name)
        return set_operator_strategy(design, name, index, Sharding(layout_name, entries))
    raise EditError(f"unknown strategy mode {mode!r}: use 'layout' or 'tuple'")


def set_operator_map(design: Design, name: str, index: int, entries: Sequence[DimEntry]) -> Design:
    op = operator_of(design, name)
    current = _op_input_sharding(op, index)
    if current is None or not current.is_layout:
        raise EditError(f"input {index} of {name} has no Layout strategy: switch it to Layout first")
    return set_operator_strategy(design, name, index, replace(current, map=tuple(entries)))


def set_operator_dim_axes(design: Design, name: str, index: int, dim: int, axes: Sequence[str]) -> Design:
    op = operator_of(design, name)
    current = _op_input_sharding(op, index)
    if current is None or current.map is None:
        raise EditError(f"input {index} of {name} has no Layout strategy: switch it to Layout first")
    return set_operator_map(design, name, index, assign_axes(current.map, dim, axes))


def set_operator_split_text(design: Design, name: str, index: int, text: str) -> Design:
    return set_operator_strategy(design, name, index, Sharding(split=parse_split(text)))


def set_operator_out_strategy(design: Design, name: str, layout_name: str | None, ndim: int = 2) -> Design:
    """MindSpore's out_strategy (a Layout strategy for the output) on `layout_name`, or none (None).

    A layout change keeps the aliases the new layout has; a new out_strategy starts unsplit."""
    op = operator_of(design, name)
    if layout_name is None:
        return replace_operator(design, replace(op, out_strategy=None))
    spec = layout_spec(design, layout_name)
    old = op.out_strategy.map if op.out_strategy is not None and op.out_strategy.map is not None else ()
    entries = strip_aliases(fit_map(old, ndim), spec.alias_name)
    return replace_operator(design, replace(op, out_strategy=Sharding(layout_name, entries)))


def set_operator_out_map(design: Design, name: str, entries: Sequence[DimEntry]) -> Design:
    op = operator_of(design, name)
    if op.out_strategy is None or op.out_strategy.layout is None:
        raise EditError(f"{name} has no out_strategy: switch it on first")
    return replace_operator(design, replace(op, out_strategy=replace(op.out_strategy, map=tuple(entries))))


def set_operator_out_dim_axes(design: Design, name: str, dim: int, axes: Sequence[str]) -> Design:
    op = operator_of(design, name)
    if op.out_strategy is None or op.out_strategy.map is None:
        raise EditError(f"{name} has no out_strategy: switch it on first")
    return set_operator_out_map(design, name, assign_axes(op.out_strategy.map, dim, axes))
