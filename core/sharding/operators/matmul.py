"""MatMul / BatchMatMul (with transpose flags): the reduce dimension and its partial sums.

MindSpore's MatMulInfo (mindspore/ccsrc/frontend/parallel/ops_info/matmul_info.cc): the reduce
dimension K must be split the same way on both inputs; when it is split every rank holds a partial
sum and an AllReduce over those axes follows (a ReduceScatter when out_strategy splits the result).
Batch dimensions broadcast numpy-style and come first in the device matrix of a tuple strategy.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.sharding.layout import NONE, DimEntry, TensorLayout
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
    merge_split,
    output_layout,
    physical,
)


def matmul_roles(ndim: int, transposed: bool, first: bool) -> tuple[int, int]:
    """(outer, reduce) dimension index of a MatMul input: outer = M for x, N for w."""
    last, second = ndim - 1, ndim - 2
    if first:
        return (last, second) if transposed else (second, last)
    return (second, last) if transposed else (last, second)


class MatMulFamily(FamilyBase):
    name = "matmul"

    def output_ndim(self, op_type: str, ndims: Sequence[int | None], attrs: OpAttrs) -> int | None:
        """MatMul: 2; BatchMatMul: the larger input rank (batch dimensions broadcast)."""
        if op_type == "MatMul":
            return 2
        known = [n for n in ndims if n is not None]
        return max(known) if known else None

    def input_ndim(self, op_type: str, index: int) -> int | None:
        """A matrix (BatchMatMul's batch dimensions are not known without the source)."""
        return 2

    def input_names(self, arity: int) -> list[str]:
        return ["x", "w"][:arity]

    def infer_shape(self, ctx: OpContext) -> tuple[Shape | None, list[str]]:
        op_type, shapes, names, attrs = ctx.op_type, ctx.shapes, ctx.names, ctx.attrs
        x, w = shapes
        need = "exactly 2" if op_type == "MatMul" else "at least 2"
        problems = [
            f"{op_type} needs {need} dimensions per input but {n} has shape {s}"
            + (": use BatchMatMul for batched inputs" if op_type == "MatMul" and len(s) > 2 else "")
            for n, s in ((names[0], x), (names[1], w))
            if (len(s) != 2 if op_type == "MatMul" else len(s) < 2)
        ]
        if problems:
            return None, problems
        ta, tb = attrs.transpose_a, attrs.transpose_b
        m_dim, kx_dim = matmul_roles(len(x), ta, True)
        n_dim, kw_dim = matmul_roles(len(w), tb, False)
        if x[kx_dim] != w[kw_dim]:
            return None, [
                f"the reduce dimensions do not match: {names[0]} {x} contributes K={x[kx_dim]} "
                f"(dimension {kx_dim}{', transpose_a' if ta else ''}) but {names[1]} {w} contributes "
                f"K={w[kw_dim]} (dimension {kw_dim}{', transpose_b' if tb else ''}): fix the shapes "
                "or the transpose flags"
            ]
        batch = broadcast(x[:-2], w[:-2])
        if batch is None:
            return None, [
                f"the batch dimensions {x[:-2]} of {names[0]} and {w[:-2]} of {names[1]} do not broadcast: "
                "each pair (aligned from the right) must be equal or one of them 1"
            ]
        return (*batch, x[m_dim], w[n_dim]), []

    def device_dims(self, ctx: OpContext, splits: Sequence[Shape]) -> DeviceDims:
        """`((a, b), (b, c))` -> dims (a, b, c): rows, reduce, columns; batch dimensions first."""
        op_type, shapes, names, attrs = ctx.op_type, ctx.known_shapes, ctx.names, ctx.attrs
        sx, sw = splits
        problems = [
            f"{op_type} needs a 2-D strategy for the matrix part of {name}, got {split}"
            for name, split in zip(names, splits, strict=False)
            if len(split) < 2 or (op_type == "MatMul" and len(split) != 2)
        ]
        if problems:
            return DeviceDims([], [], [], problems)
        m_dim, kx_dim = matmul_roles(len(sx), attrs.transpose_a, True)
        n_dim, kw_dim = matmul_roles(len(sw), attrs.transpose_b, False)
        if sx[kx_dim] != sw[kw_dim]:
            return DeviceDims(
                [],
                [],
                [],
                [
                    f"the reduce dimension is split {sx[kx_dim]} ways in {names[0]} (dimension {kx_dim}) but "
                    f"{sw[kw_dim]} ways in {names[1]} (dimension {kw_dim}): split it the same number of ways "
                    f"on both, e.g. ({', '.join(map(str, sx))}) with a {names[1]} strategy whose dimension "
                    f"{kw_dim} is {sx[kx_dim]}"
                ],
            )
        nb = max(len(sx), len(sw)) - 2
        dims: list[int] = []
        roles: list[str] = []
        x_map: list[int | None] = [None] * len(sx)
        w_map: list[int | None] = [None] * len(sw)
        for k in range(nb):
            held = []
            jx, jw = aligned(len(sx) - 2, nb, k), aligned(len(sw) - 2, nb, k)
            if jx is not None:
                held.append((sx[jx], None if shapes is None else shapes[0][jx], names[0]))
            if jw is not None:
                held.append((sw[jw], None if shapes is None else shapes[1][jw], names[1]))
            size, bad = merge_split(held, f"batch dimension {k}")
            problems.extend(bad)
            dims.append(size)
            roles.append(f"batch dimension {k}")
            for j, split, m in ((jx, sx, x_map), (jw, sw, w_map)):
                if j is not None:
                    m[j] = k if not (split[j] == 1 and size > 1) else None
        base = len(dims)
        dims += [sx[m_dim], sx[kx_dim], sw[n_dim]]
        roles += ["the output rows (M)", "the reduce dimension (K)", "the output columns (N)"]
        x_map[m_dim], x_map[kx_dim] = base, base + 1
        w_map[kw_dim], w_map[n_dim] = base + 1, base + 2
        return DeviceDims(dims, roles, [x_map, w_map], problems)

    def rule(self, ctx: OpContext, layouts: Sequence[TensorLayout]) -> RuleResult:
        shapes, out_shape, names, attrs = ctx.shapes, ctx.out_shape, ctx.names, ctx.attrs
        x, w = layouts
        sx, sw = shapes
        m_dim, kx_dim = matmul_roles(len(sx), attrs.transpose_a, True)
        n_dim, kw_dim = matmul_roles(len(sw), attrs.transpose_b, False)
        problems: list[str] = []
        kx, kw = x.dim_axes(kx_dim), w.dim_axes(kw_dim)
        if kx != kw:
            same_set = sorted(kx) == sorted(kw) and kx
            how = "the same axes in a different order" if same_set else f"{axes_text(kx)} vs {axes_text(kw)}"
            problems.append(
                f"the reduce dimension (K={sx[kx_dim]}) must be split the same way on both inputs, but "
                f"{names[0]} dimension {kx_dim} is split over {axes_text(kx)} and {names[1]} dimension {kw_dim} "
                f"over {axes_text(kw)} ({how}): give both the same device axes in the same order, e.g. "
                f"{x.entries[kx_dim]!r} for {names[1]} dimension {kw_dim}"
            )
        entries, sources = self._batch_entries(x, w, sx, sw, out_shape, names, problems)
        if problems:
            return RuleResult(None, (), problems)
        entries += [x.entries[m_dim], w.entries[n_dim]]
        sources += [
            f"{names[0]} dimension {m_dim} (the output rows)",
            f"{names[1]} dimension {n_dim} (the output columns)",
        ]
        result = output_layout(x.layout, entries, sources)
        return RuleResult(result.output, physical(x.layout, kx), result.problems)

    @staticmethod
    def _batch_entries(
        x: TensorLayout,
        w: TensorLayout,
        sx: Shape,
        sw: Shape,
        out_shape: Shape,
        names: Sequence[str],
        problems: list[str],
    ) -> tuple[list[DimEntry], list[str]]:
        """Output entries of the batch dimensions; broadcast ones must be unsplit, matching ones alike."""
        nb = len(out_shape) - 2
        entries: list[DimEntry] = []
        sources: list[str] = []
        for k in range(nb):
            jx, jw = aligned(len(sx) - 2, nb, k), aligned(len(sw) - 2, nb, k)
            held = [(n, tl, s, j) for n, tl, s, j in ((names[0], x, sx, jx), (names[1], w, sw, jw)) if j is not None]
            real = [(n, tl, j) for n, tl, s, j in held if s[j] == out_shape[k]]
            for n, tl, s, j in held:
                if s[j] != out_shape[k] and tl.dim_axes(j):
                    problems.append(
                        f"{n} batch dimension {j} has size 1 and is broadcast, so it must be unsplit: use 'None' "
                        f"instead of {tl.entries[j]!r}"
                    )
            if len(real) == 2 and real[0][1].dim_axes(real[0][2]) != real[1][1].dim_axes(real[1][2]):
                problems.append(
                    f"batch dimension {k} must be split the same way on both inputs, but {names[0]} uses "
                    f"{axes_text(x.dim_axes(real[0][2]))} and {names[1]} uses {axes_text(w.dim_axes(real[1][2]))}"
                )
            n, tl, j = real[0] if real else (held[0][0], held[0][1], held[0][3])
            entries.append(tl.entries[j] if tl.dim_axes(j) else NONE)
            sources.append(f"batch dimension {k} (from {n})")
        return entries, sources

    def default_strategy(self, ctx: OpContext, device_num: int) -> list[list[int]]:
        """x's rows (2-D) or the leading batch dimension split `device_num` ways; weights stay whole."""
        shapes, out_shape, attrs = ctx.shapes, ctx.out_shape, ctx.attrs
        strategies = [[1] * len(s) for s in shapes]
        if len(out_shape) == 2:
            strategies[0][matmul_roles(len(shapes[0]), attrs.transpose_a, True)[0]] = device_num
            return strategies
        for i, shape in enumerate(shapes):
            j = aligned(len(shape) - 2, len(out_shape) - 2, 0)
            if j is not None and shape[j] == out_shape[0]:
                strategies[i][j] = device_num
        return strategies

    def notes(self, ctx: OpContext) -> list[str]:
        op_type, shapes = ctx.op_type, ctx.shapes
        if op_type == "BatchMatMul" and shapes[0][:-2] != shapes[1][:-2]:
            return [
                "the batch dimensions broadcast; MindSpore supports that on Ascend, but its CPU/GPU BatchMatMul "
                "kernels need equal batch shapes"
            ]
        return []


FAMILY = MatMulFamily()
