"""Softmax: the normalised dimension must be unsplit; the output keeps the input's layout.

MindSpore's Softmax (mindspore/ccsrc/frontend/parallel/ops_info/activation_info.cc, Softmax::CheckStrategy):
"The strategy corresponding to axis dimension is not 1" rejects a split `axis`; the other dimensions
split freely, the output tensor map equals the input's and nothing is communicated.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.sharding.layout import TensorLayout
from core.sharding.operators.base import (
    FamilyBase,
    OpContext,
    RuleResult,
    Shape,
    axes_text,
    normalised_axis,
)


class SoftmaxFamily(FamilyBase):
    name = "softmax"

    def infer_shape(self, ctx: OpContext) -> tuple[Shape | None, list[str]]:
        shapes, names, attrs = ctx.shapes, ctx.names, ctx.attrs
        x = shapes[0]
        if normalised_axis(attrs.axis, len(x)) is None:
            return None, [
                f"axis {attrs.axis} is out of range for {names[0]} {x}: use -{len(x)}..{len(x) - 1} (default -1)"
            ]
        return x, []

    def rule(self, ctx: OpContext, layouts: Sequence[TensorLayout]) -> RuleResult:
        names, attrs = ctx.names, ctx.attrs
        x = layouts[0]
        axis = normalised_axis(attrs.axis, x.ndim)
        assert axis is not None  # infer_shape checked it
        if x.split[axis] > 1:
            return RuleResult(
                None,
                (),
                [
                    f"Softmax normalises dimension {axis} of {names[0]}, so that dimension must be unsplit "
                    f"(MindSpore: 'The strategy corresponding to axis dimension is not 1'), but it is split over "
                    f"{axes_text(x.dim_axes(axis))}: use 'None' (or 1) there and split another dimension"
                ],
            )
        return RuleResult(x, (), [])

    def default_strategy(self, ctx: OpContext, device_num: int) -> list[list[int]]:
        """Data parallel on dimension 0, unless that is the normalised one (then nothing is split)."""
        shapes, attrs = ctx.shapes, ctx.attrs
        strategy = [1] * len(shapes[0])
        if normalised_axis(attrs.axis, len(strategy)) != 0:
            strategy[0] = device_num
        return [strategy]


FAMILY = SoftmaxFamily()
