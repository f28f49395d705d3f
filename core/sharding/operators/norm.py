"""RMSNorm(x, gamma): the normalised last dimension must be unsplit, gamma unsplit; output like x.

MindSpore's RmsNormInfo (mindspore/ccsrc/frontend/parallel/ops_info/rms_norm_info.cc, CheckStrategy /
CheckInputLayout): every dimension from `begin_norm_axis = rank(x) - rank(gamma)` on must be unsplit,
gamma cannot be split and must match x's trailing strategy; the device matrix is x's strategy and the
output tensor map is x's, so nothing is communicated. (Codegen composes RMSNorm from Square, ReduceMean,
Add, Rsqrt, Mul because `ops.RmsNorm` has no CPU kernel; the same rule holds for that chain.)
"""

from __future__ import annotations

from collections.abc import Sequence

from core.sharding.layout import TensorLayout
from core.sharding.operators.base import (
    DeviceDims,
    FamilyBase,
    OpContext,
    RuleResult,
    Shape,
    axes_text,
    first_dim_data_parallel,
)


class NormFamily(FamilyBase):
    name = "norm"

    def input_names(self, arity: int) -> list[str]:
        return ["x", "gamma"][:arity]

    def infer_shape(self, ctx: OpContext) -> tuple[Shape | None, list[str]]:
        op_type, shapes, names = ctx.op_type, ctx.shapes, ctx.names
        x, gamma = shapes
        if not x:
            return None, [f"{op_type} needs at least one dimension in {names[0]}, got a 0-d tensor"]
        if tuple(gamma) != tuple(x[-1:]):
            return None, [
                f"{names[1]} must have the shape of {names[0]}'s last dimension, ({x[-1]},), but it has {gamma}: "
                f"{op_type} normalises the last dimension and scales it by {names[1]}"
            ]
        return x, []

    def device_dims(self, ctx: OpContext, splits: Sequence[Shape]) -> DeviceDims:
        """x's strategy is the device matrix; gamma shares x's last dimension (they must agree)."""
        names = ctx.names
        sx, sg = splits
        problems: list[str] = []
        if len(sg) != 1 or not sx:
            return DeviceDims([], [], [], [f"give {names[1]} a 1-entry strategy (its one dimension), got {sg}"])
        if sg[0] != sx[-1]:
            problems.append(
                f"{names[1]}'s strategy {sg} must equal {names[0]}'s last entry ({sx[-1]},) (MindSpore RmsNormInfo: "
                "'Invalid gamma strategy')"
            )
        dims = list(sx)
        roles = [f"{names[0]} dimension {d}" for d in range(len(sx) - 1)] + ["the normalised dimension"]
        return DeviceDims(dims, roles, [list(range(len(sx))), [len(sx) - 1]], problems)

    def rule(self, ctx: OpContext, layouts: Sequence[TensorLayout]) -> RuleResult:
        names = ctx.names
        x, gamma = layouts
        last = x.ndim - 1
        problems = []
        if x.split[last] > 1:
            problems.append(
                f"RMSNorm normalises the last dimension ({last}) of {names[0]}, so it must be unsplit (MindSpore "
                f"RmsNormInfo: 'Invalid input strategy'), but it is split over {axes_text(x.dim_axes(last))}: "
                "use 'None' there"
            )
        if gamma.split[0] > 1:
            problems.append(
                f"{names[1]} cannot be split (MindSpore RmsNormInfo: 'Gamma can not be split'), but it is split "
                f"over {axes_text(gamma.dim_axes(0))}: use 'None'"
            )
        if problems:
            return RuleResult(None, (), problems)
        return RuleResult(x, (), [])

    def default_strategy(self, ctx: OpContext, device_num: int) -> list[list[int]]:
        shapes, out_shape = ctx.shapes, ctx.out_shape
        if len(shapes[0]) == 1:  # the only dimension is the normalised one
            return [[1], [1]]
        return [*first_dim_data_parallel(shapes[:1], out_shape, device_num), [1]]


FAMILY = NormFamily()
