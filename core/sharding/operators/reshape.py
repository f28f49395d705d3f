"""Reshape: the output layout when the input's splits carry over to the new shape, else a redistribution.

MindSpore's ReshapeInfo (mindspore/ccsrc/frontend/parallel/ops_info/reshape_info.cc) has no strategy
rule of its own: in semi-auto parallel it takes the layout its input already has (the previous
operator's output layout) and the tensor redistribution derives the output layout for the new shape.
A split carries over when each rank's piece stays one contiguous block of the flattened dimensions:
merging (b, s) -> (b*s) keeps a split of b (and of s only when b is fully split); splitting
(b*s) -> (b, s) keeps a split that divides b. Any other split cannot be expressed on the new shape:
MindSpore's redistribution first gathers those axes (an AllGather) and reshapes the gathered tensor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from core.sharding.layout import NONE, DimEntry, TensorLayout
from core.sharding.operators.base import (
    FamilyBase,
    OpAttrs,
    OpContext,
    RuleResult,
    Shape,
    axes_text,
    entry_of,
)


def reshape_groups(a: Sequence[int], b: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Pair runs of input dims with runs of output dims of equal product, e.g. (4, 6) -> (4, 2, 3)
    gives [([0], [0]), ([1], [1, 2])]; trailing size-1 dims join the last group. Products must match."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        gi, gj, pa, pb = [i], [j], a[i], b[j]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                gi.append(i)
                pa *= a[i]
                i += 1
            else:
                gj.append(j)
                pb *= b[j]
                j += 1
        groups.append((gi, gj))
    if groups:
        groups[-1][0].extend(range(i, len(a)))
        groups[-1][1].extend(range(j, len(b)))
    else:
        groups.append((list(range(len(a))), list(range(len(b)))))
    return groups


def _contiguous_axes(x: TensorLayout, shape: Shape, dims: Sequence[int]) -> list[str]:
    """The axes splitting `dims` (outer -> inner) that keep each rank's piece contiguous once flattened:
    once a dimension is not fully split, nothing after it may be split."""
    kept: list[str] = []
    for d in dims:
        kept += list(x.dim_axes(d))
        if x.split[d] < shape[d]:
            break
    return kept


def _spread(axes: Sequence[str], sizes: dict[str, int], out: Sequence[int]) -> tuple[list[list[str]], list[str]]:
    """Place contiguous-split axes (outer -> inner) on output dims (outer -> inner): (per dim, axes left over)."""
    placed: list[list[str]] = [[] for _ in out]
    k = 0
    remaining = list(axes)
    while remaining and k < len(out):
        pieces = math.prod(sizes[a] for a in placed[k])
        nxt = sizes[remaining[0]]
        if out[k] % (pieces * nxt) == 0:
            placed[k].append(remaining.pop(0))
        elif pieces == out[k]:
            k += 1  # this output dim is fully split (or size 1): continue on the next one
        else:
            break
    return placed, remaining


class ReshapeFamily(FamilyBase):
    name = "reshape"

    def output_ndim(self, op_type: str, ndims: Sequence[int | None], attrs: OpAttrs) -> int | None:
        """The target shape's."""
        return len(attrs.shape) if attrs.shape else None

    @property
    def inherits_layout(self) -> bool:
        return True

    def infer_shape(self, ctx: OpContext) -> tuple[Shape | None, list[str]]:
        shapes, names, attrs = ctx.shapes, ctx.names, ctx.attrs
        x = shapes[0]
        if attrs.shape is None:
            return None, ["Reshape needs 'shape', the global target shape, e.g. (8, 128, 32, 128)"]
        target = tuple(attrs.shape)
        if math.prod(target) != math.prod(x):
            return None, [
                f"cannot reshape {names[0]} {x} ({math.prod(x)} elements) to {target} ({math.prod(target)} "
                "elements): the target shape must hold the same number of elements"
            ]
        return target, []

    def rule(self, ctx: OpContext, layouts: Sequence[TensorLayout]) -> RuleResult:
        shapes, out_shape, names = ctx.shapes, ctx.out_shape, ctx.names
        x, shape = layouts[0], shapes[0]
        sizes = {a: x.layout.axis_size(a) for a in x.layout.alias_name}
        out_entries: list[DimEntry] = [NONE] * len(out_shape)
        dropped: set[str] = set()
        for gi, gj in reshape_groups(shape, out_shape):
            carried = _contiguous_axes(x, shape, gi)
            dropped |= {a for d in gi for a in x.dim_axes(d)} - set(carried)
            placed, left = _spread(carried, sizes, [out_shape[d] for d in gj])
            dropped |= set(left)
            for d, axes in zip(gj, placed, strict=True):
                out_entries[d] = entry_of(axes)
        output = x.layout(*out_entries)
        if not dropped:
            return RuleResult(output, (), [])
        kept = [entry_of([a for a in x.dim_axes(d) if a not in dropped]) for d in range(x.ndim)]
        required = x.layout(*kept)
        note = (
            f"the split over {axes_text(sorted(dropped, key=x.layout.alias_name.index))} of {names[0]} cannot be "
            f"kept when {shape} becomes {out_shape} (a rank's piece would not be one contiguous block), so "
            "MindSpore's redistribution gathers those axes before reshaping"
        )
        return RuleResult(output, (), [], required=[required], notes=[note])

    def default_strategy(self, ctx: OpContext, device_num: int) -> list[list[int]]:
        """Without an input layout to keep: data parallel on the input's dimension 0 when it divides."""
        shapes = ctx.shapes
        strategy = [1] * len(shapes[0])
        if shapes[0] and shapes[0][0] % device_num == 0:
            strategy[0] = device_num
        return [strategy]


FAMILY = ReshapeFamily()
