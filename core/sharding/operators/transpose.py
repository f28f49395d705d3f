"""Transpose: the output is the input with its dimensions permuted; the strategy is permuted alike.

MindSpore's TransposeInfo (mindspore/ccsrc/frontend/parallel/ops_info/transpose_info.cc): any split of
the input is accepted (CheckStrategyValue only), the device matrix is the input strategy, and the
output tensor map is the input tensor map permuted by `perm`, so nothing is communicated.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.sharding.layout import TensorLayout
from core.sharding.operators.base import (
    FamilyBase,
    OpContext,
    RuleResult,
    Shape,
    output_layout,
)


class TransposeFamily(FamilyBase):
    name = "transpose"

    def infer_shape(self, ctx: OpContext) -> tuple[Shape | None, list[str]]:
        """`ops.Transpose()(x, perm).shape == tuple(x.shape[p] for p in perm)`."""
        shapes, names, attrs = ctx.shapes, ctx.names, ctx.attrs
        x = shapes[0]
        perm = attrs.perm
        if perm is None:
            return None, ["Transpose needs 'perm', a permutation of the input's dimensions such as (0, 2, 1, 3)"]
        if sorted(perm) != list(range(len(x))):
            return None, [
                f"perm {tuple(perm)} does not fit {names[0]} {x}: give each of its {len(x)} dimensions "
                f"0..{len(x) - 1} exactly once"
            ]
        return tuple(x[p] for p in perm), []

    def rule(self, ctx: OpContext, layouts: Sequence[TensorLayout]) -> RuleResult:
        """Output dimension i is split like input dimension perm[i]."""
        names, attrs = ctx.names, ctx.attrs
        x = layouts[0]
        perm = attrs.perm or tuple(range(x.ndim))
        entries = [x.entries[p] for p in perm]
        sources = [f"{names[0]} dimension {p}" for p in perm]
        return output_layout(x.layout, entries, sources)

    def default_strategy(self, ctx: OpContext, device_num: int) -> list[list[int]]:
        """Output dimension 0 is input dimension perm[0]: split that one."""
        shapes, attrs = ctx.shapes, ctx.attrs
        strategy = [1] * len(shapes[0])
        strategy[(attrs.perm or (0,))[0]] = device_num
        return [strategy]


FAMILY = TransposeFamily()
