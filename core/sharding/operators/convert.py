"""Tuple strategies -> layouts (MindSpore's device-matrix construction), output shapes, default strategies.

A tuple strategy such as `((2, 4), (4, 1))` names no device axes: MindSpore builds a device matrix
with one dimension per independent split (the family decides which input dimensions share one,
`OperatorFamily.device_dims`) plus, first, the repeated-calculation axis when the strategy uses
fewer devices than there are. This module does that once for every family.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from core.sharding.catalog import OP_ARITY
from core.sharding.layout import NONE, Layout, LayoutError, TensorLayout
from core.sharding.operators.base import REPEAT_AXIS, OpAttrs, OpContext, Shape
from core.sharding.operators.registry import family_of


@dataclass(frozen=True)
class Conversion:
    layouts: list[TensorLayout] | None
    problems: list[str]
    explanation: str = ""


def _unsupported(op_type: str) -> str:
    return f"unsupported operator {op_type!r}: use one of {', '.join(OP_ARITY)}"


def infer_output_shape(
    op_type: str,
    shapes: Sequence[Sequence[int]],
    names: Sequence[str] = ("x", "w"),
    transpose_a: bool = False,
    transpose_b: bool = False,
    attrs: OpAttrs | None = None,
) -> tuple[tuple[int, ...] | None, list[str]]:
    """The operator's output shape, or None and the reasons the input shapes do not fit."""
    family = family_of(op_type)
    if family is None:
        return None, [_unsupported(op_type)]
    whole_shapes = [tuple(s) for s in shapes]
    names = list(names) + [f"input {i}" for i in range(len(names), len(shapes))]
    attrs = attrs or OpAttrs(transpose_a=transpose_a, transpose_b=transpose_b)
    return family.infer_shape(OpContext(op_type, tuple(names), tuple(whole_shapes), attrs))


def _check_splits(
    strategies: Sequence[Sequence[int]], device_num: int, shapes: Sequence[Sequence[int]] | None, names: Sequence[str]
) -> tuple[list[Shape], list[str]]:
    """Each input's split counts: whole numbers, one per dimension, dividing sizes and device_num."""
    splits: list[Shape] = []
    for i, raw in enumerate(strategies):
        try:
            split = tuple(raw)
        except TypeError:
            return [], [f"the strategy of {names[i]} must be a tuple of split counts such as (2, 4)"]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in split):
            return [], [f"the strategy {split} of {names[i]} must hold whole numbers >= 1"]
        splits.append(split)
    if device_num < 1:
        return [], [f"device_num is {device_num}: it must be at least 1"]
    problems: list[str] = []
    for i, split in enumerate(splits):
        if shapes is not None and len(split) != len(shapes[i]):
            problems.append(
                f"{names[i]} has {len(shapes[i])} dimensions {tuple(shapes[i])} but its strategy {split} has "
                f"{len(split)} entries: give one split count per dimension"
            )
        elif shapes is not None:
            for d, (size, pieces) in enumerate(zip(shapes[i], split, strict=True)):
                if size == 1 and pieces > 1:
                    problems.append(
                        f"{names[i]} dimension {d} has size 1 (a broadcast dimension), so it must be unsplit: "
                        f"use 1 instead of {pieces}"
                    )
                elif size % pieces:
                    problems.append(
                        f"{names[i]} dimension {d} has size {size}, which is not divisible by its split {pieces}: "
                        f"use a split that divides {size}"
                    )
        used = math.prod(split)
        if device_num % used:
            problems.append(
                f"the strategy {split} of {names[i]} uses {used} devices, which does not divide device_num "
                f"{device_num}: make the product of the split counts a divisor of {device_num}"
            )
    return splits, problems


def _explain(
    splits: Sequence[Shape],
    device_num: int,
    matrix: Sequence[int],
    aliases: Sequence[str],
    dims: Sequence[int],
    roles: Sequence[str],
    names: Sequence[str],
    layouts: Sequence[TensorLayout],
) -> str:
    """One paragraph saying which device matrix the tuple strategy became and why."""
    rep = matrix[0] if aliases and aliases[0] == REPEAT_AXIS else 1
    used = math.prod(dims)
    parts = [f"{a}={s} ({r})" for a, s, r in zip(aliases[len(aliases) - len(dims) :], dims, roles, strict=True)]
    text = (
        f"tuple strategy {tuple(splits)} on {device_num} devices becomes the device matrix "
        f"{tuple(matrix)} with axes {', '.join(parts)}"
    )
    if not dims:
        text = (
            f"tuple strategy {tuple(splits)}: a 0-d tensor cannot be split, so every one of the {device_num} "
            f"devices computes it (device matrix ({rep},) with the repeated-calculation axis '{REPEAT_AXIS}')"
        )
    elif REPEAT_AXIS in aliases:
        text += (
            f"; '{REPEAT_AXIS}'={rep} is the repeated-calculation axis (first, as in MindSpore): the "
            f"{used}-device strategy is computed {rep} times, once per group of ranks along it"
        )
    else:
        text += "; the strategy uses every device, so there is no repeated-calculation axis"
    return (
        text
        + ". Tensor maps: "
        + "; ".join(f"{n} -> ({tl.entry_code()})" for n, tl in zip(names, layouts, strict=False))
    )


def convert(
    op_type: str,
    strategies: Sequence[Sequence[int]],
    device_num: int,
    shapes: Sequence[Sequence[int]] | None,
    names: Sequence[str],
    attrs: OpAttrs | None = None,
) -> Conversion:
    """Tuple strategies -> one TensorLayout per input on the device matrix MindSpore would build."""
    attrs = attrs or OpAttrs()
    family = family_of(op_type)
    if family is None:
        return Conversion(None, [_unsupported(op_type)])
    if len(strategies) != OP_ARITY[op_type]:
        return Conversion(
            None, [f"{op_type} takes {OP_ARITY[op_type]} input(s) but {len(strategies)} strategies were given"]
        )
    splits, problems = _check_splits(strategies, device_num, shapes, names)
    if problems or not splits:
        return Conversion(None, problems)
    whole = () if shapes is None else tuple(tuple(s) for s in shapes)
    ctx = OpContext(op_type, tuple(names), whole, attrs, shapes_known=shapes is not None)
    found = family.device_dims(ctx, splits)
    if found.problems:
        return Conversion(None, found.problems)
    dims = found.dims
    used = math.prod(dims)
    if device_num % used:
        return Conversion(
            None,
            [
                f"together the strategies need a device matrix {tuple(dims)} of {used} devices, which does not "
                f"divide device_num {device_num}: reduce the split counts"
            ],
        )
    rep = device_num // used
    aliases = [f"d{i}" for i in range(len(dims))]
    matrix = list(dims)
    if rep > 1 or not dims:
        aliases.insert(0, REPEAT_AXIS)
        matrix.insert(0, rep)
    layout = Layout(tuple(matrix), tuple(aliases))
    offset = len(aliases) - len(dims)
    layouts = [layout(*(NONE if m is None else aliases[m + offset] for m in mapping)) for mapping in found.maps]
    return Conversion(layouts, [], _explain(splits, device_num, matrix, aliases, dims, found.roles, names, layouts))


def strategy_layouts(
    op_type: str,
    strategies: Sequence[Sequence[int]],
    device_num: int,
    transpose_a: bool = False,
    transpose_b: bool = False,
    shapes: Sequence[Sequence[int]] | None = None,
) -> list[TensorLayout]:
    """Turn a tuple strategy such as `((2, 4), (4, 1))` into one TensorLayout per input, like MindSpore.

    MatMul `((a, b), (b, c))` -> device matrix `(rep, a, b, c)` with aliases `("rep", "d0", "d1",
    "d2")`, x -> `("d0", "d1")`, w -> `("d1", "d2")`; `rep = device_num / (a*b*c)` is the
    repeated-calculation axis and is left out when it is 1. Batch dimensions come first; transpose
    flags swap the last two entries of that input. Elementwise / unary ops: the device matrix is the
    merged strategy of the inputs (aligned from the right), a broadcast dimension maps to 'None'.
    `shapes` (optional) lets size-1 broadcast dimensions be recognised and divisibility be checked.
    Raises LayoutError (with every problem) when the strategy is invalid.
    """
    family = family_of(op_type)
    names = family.input_names(len(strategies)) if family else [f"input {i}" for i in range(len(strategies))]
    attrs = OpAttrs(transpose_a=transpose_a, transpose_b=transpose_b)
    result = convert(op_type, strategies, device_num, shapes, names, attrs)
    if result.layouts is None:
        raise LayoutError("; ".join(result.problems))
    return result.layouts


def default_strategy(
    op_type: str,
    shapes: Sequence[Sequence[int]],
    device_num: int,
    transpose_a: bool = False,
    transpose_b: bool = False,
    attrs: OpAttrs | None = None,
) -> tuple[list[tuple[int, ...]], str]:
    """The strategy assumed for an operator without one, and a sentence saying so.

    MindSpore's semi-auto default is data parallel: the first output dimension is split over all
    devices when it divides (for MatMul that is x's row dimension; weights stay whole), otherwise the
    operator runs replicated on every device.
    """
    attrs = attrs or OpAttrs(transpose_a=transpose_a, transpose_b=transpose_b)
    whole_shapes = [tuple(s) for s in shapes]
    out, _ = infer_output_shape(op_type, shapes, attrs=attrs)
    whole = [tuple(1 for _ in s) for s in shapes]
    if device_num == 1 or not out:
        return whole, (
            "no strategy given: nothing to split "
            + ("on a single device" if device_num == 1 else "(the output has no dimensions)")
            + ", so the operator runs whole on every rank"
        )
    if out[0] % device_num:
        return whole, (
            f"no strategy given: assumed replicated (every rank computes the whole operator), because its "
            f"first output dimension (size {out[0]}) cannot be split {device_num} ways; MindSpore's semi-auto "
            "default would be data parallel otherwise"
        )
    family = family_of(op_type)
    assert family is not None  # infer_output_shape found a shape
    ctx = OpContext(op_type, tuple(family.input_names(len(shapes))), tuple(whole_shapes), attrs, out)
    strategies = family.default_strategy(ctx, device_num)
    if all(v == 1 for s in strategies for v in s):
        return [tuple(s) for s in strategies], (
            f"no strategy given: assumed replicated (every rank computes the whole operator): {op_type} cannot "
            "split the dimension data parallelism would split"
        )
    return [tuple(s) for s in strategies], (
        f"no strategy given: assumed MindSpore's semi-auto default, data parallel — the first output "
        f"dimension (size {out[0]}) is split {device_num} ways, everything else is whole"
    )
