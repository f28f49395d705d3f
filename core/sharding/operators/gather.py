"""Gather(table, indices) on axis 0: the embedding lookup. Output shape = indices.shape + table.shape[1:].

MindSpore's GatherInfo (mindspore/ccsrc/frontend/parallel/ops_info/gather_info.cc, GetGatherMode and the
Normal / ShardAxis / ShardBatchAndAxis implementations):

* table rows (axis 0) unsplit ("normal mode"): the device matrix is indices' strategy followed by the
  table's; the output takes indices' splits on its leading dimensions and the table's column split on
  its last; nothing is communicated.
* table rows split (the vocabulary): indices must be unsplit ("param is split at dim (axis)0, index
  can't be split"). Each rank looks up only the rows it holds (others become zeros), so the outputs are
  partial sums: by default a ReduceScatter over the row axes that splits output dimension 0 when
  indices.shape[0] divides by the row split, otherwise an AllReduce ("use allreduce in forward"); an
  out_strategy picks either. With repeated calculation a 2-D table's columns must be unsplit.
* "shard batch and axis": table split only on rows, 2-D indices split only on dimension 0, the two
  splits together covering every device: the output keeps indices' batch split and an AllReduce over
  the row axes sums the partial results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from core.sharding.layout import NONE, DimEntry, TensorLayout
from core.sharding.operators.base import (
    DeviceDims,
    FamilyBase,
    OpAttrs,
    OpContext,
    RuleResult,
    Shape,
    axes_text,
    output_layout,
    physical,
)

INDEX_DTYPES = ("int32", "int64")


class GatherFamily(FamilyBase):
    name = "gather"

    def output_ndim(self, op_type: str, ndims: Sequence[int | None], attrs: OpAttrs) -> int | None:
        """The indices' dimensions plus the table's columns."""
        return None if len(ndims) < 2 or ndims[1] is None else ndims[1] + 1

    def input_names(self, arity: int) -> list[str]:
        return ["table", "indices"][:arity]

    def infer_shape(self, ctx: OpContext) -> tuple[Shape | None, list[str]]:
        """`ops.Gather()(table, indices, 0).shape == indices.shape + table.shape[1:]`."""
        shapes, names = ctx.shapes, ctx.names
        table, indices = shapes
        problems = []
        if len(table) != 2:
            problems.append(f"{names[0]} must be a 2-D table (rows, columns), e.g. (vocab, hidden), got {table}")
        if not indices:
            problems.append(f"{names[1]} must have at least one dimension, got a 0-d tensor (MindSpore: no scalar)")
        if problems:
            return None, problems
        return (*indices, *table[1:]), []

    def dtype_problems(self, ctx: OpContext, dtypes: Sequence[str]) -> list[str]:
        names = ctx.names
        if dtypes[1] not in INDEX_DTYPES:
            return [f"{names[1]} holds row numbers, so its dtype must be int32 or int64, not {dtypes[1]}"]
        return []

    def device_dims(self, ctx: OpContext, splits: Sequence[Shape]) -> DeviceDims:
        names = ctx.names
        st, si = splits
        if len(st) != 2 or not si:
            problem = f"give {names[0]} a 2-entry strategy and {names[1]} one entry per dimension"
            return DeviceDims([], [], [], [problem])
        row_split = st[0] > 1
        index_dims = [d for d, s in enumerate(si) if s > 1]
        if row_split and index_dims == [0] and len(si) == 2 and st[1] == 1:  # shard batch and axis
            return DeviceDims(
                [si[0], st[0]],
                [f"{names[1]} dimension 0 (the batch)", f"{names[0]} rows (the vocabulary)"],
                [[1, None], [0, None]],
            )
        if row_split:  # ShardAxisImpl: the device matrix is the table's strategy, indices unsplit
            roles = [f"{names[0]} rows (the vocabulary)", f"{names[0]} columns"]
            return DeviceDims(list(st), roles, [[0, 1], [None] * len(si)])
        # NormalImpl: indices' strategy, then the table's
        roles = [f"{names[1]} dimension {d}" for d in range(len(si))] + [f"{names[0]} rows", f"{names[0]} columns"]
        n = len(si)
        return DeviceDims([*si, *st], roles, [[n, n + 1], list(range(n))])

    def rule(self, ctx: OpContext, layouts: Sequence[TensorLayout]) -> RuleResult:
        shapes, out_shape, names = ctx.shapes, ctx.out_shape, ctx.names
        table, indices = layouts
        if table.split[0] == 1:
            entries: list[DimEntry] = [*indices.entries, table.entries[1]]
            sources = [f"{names[1]} dimension {d}" for d in range(indices.ndim)] + [f"{names[0]} columns"]
            return output_layout(table.layout, entries, sources)
        rows = physical(table.layout, table.dim_axes(0))
        reason = (
            f"The {names[0]}'s rows (the vocabulary, {shapes[0][0]}) are split over {axes_text(rows)}: each rank "
            "looks up only the rows it holds and writes zeros for the others, so every rank holds a partial "
            "result of its {bytes} output slice; "
        )
        split_index_dims = [d for d in range(indices.ndim) if indices.split[d] > 1]
        if split_index_dims:
            return self._batch_and_rows(table, indices, shapes, out_shape, names, rows, reason, split_index_dims)
        problem = self._repeated_calc_problem(table, names)
        if problem:
            return RuleResult(None, (), [problem])
        entries = [*[NONE] * indices.ndim, table.entries[1]]
        natural = output_layout(table.layout, entries, ["output dimension 0"] * indices.ndim + [f"{names[0]} columns"])
        scatter = 0 if shapes[1][0] % table.split[0] == 0 else None
        notes = (
            []
            if scatter is not None
            else [
                f"{names[1]}.shape[0] = {shapes[1][0]} does not divide by the row split {table.split[0]}, so MindSpore "
                "sums the partial results with an AllReduce instead of a ReduceScatter"
            ]
        )
        return RuleResult(
            natural.output, rows, natural.problems, scatter_dim=scatter, reduce_reason=reason, notes=notes
        )

    @staticmethod
    def _repeated_calc_problem(table: TensorLayout, names: Sequence[str]) -> str:
        """A row-split 2-D table under repeated calculation must keep its columns whole (CheckSplitAxisStrategy)."""
        used = math.prod(table.split)
        repeated = table.layout.device_num // max(used, 1) > 1
        if repeated and table.split[1] > 1:
            return (
                f"{names[0]} is split on rows and columns but does not use every device (repeated calculation): "
                "MindSpore rejects that ('axis(0) is split, and param_strategy[1] != 1, don't support repeated "
                "calc'): keep the columns unsplit or use every device"
            )
        return ""

    @staticmethod
    def _batch_and_rows(
        table: TensorLayout,
        indices: TensorLayout,
        shapes: Sequence[Shape],
        out_shape: Shape,
        names: Sequence[str],
        rows: tuple[str, ...],
        reason: str,
        split_index_dims: list[int],
    ) -> RuleResult:
        """MindSpore's "shard batch and axis" mode, the only one where row-split tables meet split indices."""
        layout = table.layout
        every = physical(layout, layout.alias_name)
        used = physical(layout, [*table.dim_axes(0), *indices.dim_axes(0)])
        if (
            split_index_dims != [0]
            or indices.ndim != 2
            or table.split[1] > 1
            or math.prod(layout.axis_size(a) for a in used) != math.prod(layout.axis_size(a) for a in every)
        ):
            return RuleResult(
                None,
                (),
                [
                    f"{names[0]}'s rows are split over {axes_text(rows)}, so {names[1]} cannot be split (MindSpore: "
                    f"'param is split at dim (axis)0, index can't be split'); the one exception is a 2-D "
                    f"{names[1]} split only on dimension 0 with {names[0]} split only on rows, the two together "
                    "using every device: unsplit the indices or use that pattern"
                ],
            )
        entries: list[DimEntry] = [indices.entries[0], NONE, NONE]
        result = output_layout(table.layout, entries, [f"{names[1]} dimension 0", "-", "-"])
        return RuleResult(result.output, rows, result.problems, reduce_reason=reason)

    def default_strategy(self, ctx: OpContext, device_num: int) -> list[list[int]]:
        """MindSpore's GenerateBatchStrategies: table whole, indices split on dimension 0."""
        shapes = ctx.shapes
        indices = [1] * len(shapes[1])
        indices[0] = device_num
        return [[1] * len(shapes[0]), indices]


FAMILY = GatherFamily()
