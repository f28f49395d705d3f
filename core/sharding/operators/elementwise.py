"""Elementwise operators: numpy-broadcasting binary ops (Add, Mul, ...) and unary ops (ReLU, ...).

MindSpore's ArithmeticBase / ActivationBase (ops_info/arithmetic_info.cc, activation_info.cc):
matching dimensions must be split identically, a broadcast dimension (size 1) must be unsplit, the
output takes the split of the non-broadcast inputs and nothing is communicated.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.sharding.catalog import OP_ARITY
from core.sharding.layout import DimEntry, TensorLayout
from core.sharding.operators.base import (
    DeviceDims,
    FamilyBase,
    OpAttrs,
    OpContext,
    RuleResult,
    Shape,
    aligned,
    axes_text,
    broadcast,
    first_dim_data_parallel,
    merge_split,
    output_layout,
)


class ElementwiseFamily(FamilyBase):
    name = "elementwise"

    def output_ndim(self, op_type: str, ndims: Sequence[int | None], attrs: OpAttrs) -> int | None:
        """numpy broadcasting: the larger input rank."""
        known = [n for n in ndims if n is not None]
        return max(known) if known else None

    def input_names(self, arity: int) -> list[str]:
        return [f"input {i}" for i in range(arity)]

    def infer_shape(self, ctx: OpContext) -> tuple[Shape | None, list[str]]:
        op_type, shapes, names = ctx.op_type, ctx.shapes, ctx.names
        if OP_ARITY.get(op_type) == 1:
            return shapes[0], []
        out = broadcast(shapes[0], shapes[1])
        if out is None:
            return None, [
                f"shapes {shapes[0]} of {names[0]} and {shapes[1]} of {names[1]} do not broadcast: aligned from "
                "the right, each pair of dimensions must be equal or one of them 1"
            ]
        return out, []

    def device_dims(self, ctx: OpContext, splits: Sequence[Shape]) -> DeviceDims:
        """The merged strategy of the inputs (aligned from the right); a broadcast dimension stays unsplit."""
        shapes, names = ctx.known_shapes, ctx.names
        nd = max(len(s) for s in splits)
        maps: list[list[int | None]] = [[None] * len(s) for s in splits]
        dims: list[int] = []
        roles: list[str] = []
        problems: list[str] = []
        for k in range(nd):
            held = []
            for i, split in enumerate(splits):
                j = aligned(len(split), nd, k)
                if j is not None:
                    held.append((split[j], None if shapes is None else shapes[i][j], names[i]))
            size, bad = merge_split(held, f"output dimension {k}")
            problems.extend(bad)
            dims.append(size)
            roles.append(f"output dimension {k}")
            for i, split in enumerate(splits):
                j = aligned(len(split), nd, k)
                if j is not None and not (split[j] == 1 and size > 1):
                    maps[i][j] = k
        return DeviceDims(dims, roles, maps, problems)

    def rule(self, ctx: OpContext, layouts: Sequence[TensorLayout]) -> RuleResult:
        shapes, out_shape, names = ctx.shapes, ctx.out_shape, ctx.names
        problems: list[str] = []
        entries: list[DimEntry] = []
        sources: list[str] = []
        nd = len(out_shape)
        for k in range(nd):
            held = [
                (names[i], layouts[i], shapes[i], j)
                for i in range(len(layouts))
                if (j := aligned(len(shapes[i]), nd, k)) is not None
            ]
            real = [(n, tl, j) for n, tl, s, j in held if s[j] == out_shape[k]]
            for n, tl, s, j in held:
                if s[j] != out_shape[k] and tl.dim_axes(j):
                    problems.append(
                        f"{n} dimension {j} has size 1 and is broadcast against size {out_shape[k]}, so it must be "
                        f"unsplit: use 'None' instead of {tl.entries[j]!r}"
                    )
            first_n, first_tl, first_j = real[0]
            for n, tl, j in real[1:]:
                if tl.dim_axes(j) != first_tl.dim_axes(first_j):
                    problems.append(
                        f"matching dimensions must be split identically, but {first_n} dimension {first_j} is "
                        f"split over {axes_text(first_tl.dim_axes(first_j))} and {n} dimension {j} over "
                        f"{axes_text(tl.dim_axes(j))}: give {n} dimension {j} the entry "
                        f"{first_tl.entries[first_j]!r}"
                    )
            entries.append(first_tl.entries[first_j])
            sources.append(f"output dimension {k} (from {first_n})")
        if problems:
            return RuleResult(None, (), problems)
        return output_layout(layouts[0].layout, entries, sources)

    def default_strategy(self, ctx: OpContext, device_num: int) -> list[list[int]]:
        shapes, out_shape = ctx.shapes, ctx.out_shape
        return first_dim_data_parallel(shapes, out_shape, device_num)


FAMILY = ElementwiseFamily()
