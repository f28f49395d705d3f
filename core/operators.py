"""Operator strategy rules: is a shard strategy valid, what does the operator output, what must it communicate.

Covers the operators of `core.design.OP_ARITY`: MatMul / BatchMatMul (with transpose flags), the
numpy-broadcasting binary ops and the unary ops. Every strategy is first turned into one
`TensorLayout` per input on a common device matrix (Layout strategies as written, tuple strategies
the way MindSpore builds its device matrix), then one rule per operator family checks the layouts,
derives the output layout and the forward communication:

* MatMul / BatchMatMul: the reduce dimension must be split over the same device axes, in the same
  order, on both inputs; if it is split, every rank holds a partial sum and an AllReduce over those
  axes follows (bytes per rank = the local output slice).
* elementwise ops: matching dimensions must be split identically; a broadcast dimension (size 1)
  must be unsplit.
* an input whose required layout differs from how the tensor is stored (the tensor's own sharding
  in the design, or the output layout of the operator that produced it) needs a "Redistribution";
  its size is computed exactly from the two placements (what the busiest rank must receive).

Operators without a strategy: MindSpore's semi-auto default is assumed (data parallel: the first
output dimension is split over all devices when it divides, otherwise the operator runs
replicated); the assumption is written into `OperatorAnalysis.notes`.

User mistakes never raise: they come back as `OperatorAnalysis.problems`, each saying what is wrong
and how to fix it. Only `strategy_layouts` (a helper for code that builds strategies itself)
raises `LayoutError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from core.design import BINARY_OPS, MATMUL_OPS, OP_ARITY, UNARY_OPS, Design, OperatorSpec, Sharding
from core.layout import INTERLEAVED, NONE, DimEntry, Layout, LayoutError, TensorLayout
from core.placement import DTYPE_BYTES, device_coords, place

COMMUNICATION_KINDS = ("AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Redistribution")
REPEAT_AXIS = "rep"
# Device-matrix positions above which groups / redistribution sizes are not computed (memory bound).
MAX_POSITIONS = 1 << 20


@dataclass(frozen=True)
class Communication:
    kind: str  # "AllReduce" | "AllGather" | "ReduceScatter" | "AllToAll" | "Redistribution"
    axes: tuple[str, ...]  # device axes the collective runs over
    groups: list[list[int]]  # rank groups that communicate together
    bytes_per_rank: int
    reason: str  # one sentence a user understands


@dataclass(frozen=True)
class OperatorAnalysis:
    """Everything the Designer shows about one operator. `input_shapes[i]` is () when unknown."""

    name: str
    type: str
    input_names: tuple[str, ...]
    input_shapes: list[tuple[int, ...]]
    input_layouts: list[TensorLayout | None]  # tuple strategies converted to layouts; None if unknown
    output_shape: tuple[int, ...] | None
    output_layout: TensorLayout | None
    communications: list[Communication]
    problems: list[str]  # empty when valid; each says what is wrong and how to fix it
    output_dtype: str = "float32"  # dtype of the first input (Cast keeps it: its target is not in the design)
    notes: list[str] = field(default_factory=list)  # assumptions and how tuple strategies were converted

    @property
    def valid(self) -> bool:
        return not self.problems


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------
def format_bytes(n: int) -> str:
    """`16384` -> `16.0 KiB`: sizes as users read them."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _axes_text(axes: Sequence[str]) -> str:
    if not axes:
        return "no axis (unsplit)"
    return axes[0] if len(axes) == 1 else "(" + ", ".join(axes) + ")"


def _layout_text(tensor_layout: TensorLayout) -> str:
    return f"({tensor_layout.entry_code()}) on {tensor_layout.layout.to_code()}"


def _physical(layout: Layout, axes: Sequence[str]) -> tuple[str, ...]:
    """The axes (in the given order) that really cross cards: size > 1 and not the virtual interleaved axis."""
    return tuple(a for a in axes if a in layout.alias_name and a != INTERLEAVED and layout.axis_size(a) > 1)


def _dtype_bytes(dtype: str) -> int:
    return DTYPE_BYTES.get(dtype, 4)


def _local_bytes(shape: Sequence[int], tensor_layout: TensorLayout, dtype: str) -> int:
    elements = math.prod(s // p for s, p in zip(shape, tensor_layout.split, strict=True))
    return elements * _dtype_bytes(dtype) * tensor_layout.layout.interleave_num


def rank_groups(layout: Layout, axes: Sequence[str]) -> list[list[int]]:
    """Ranks whose device coordinates differ only on `axes`: the communicators of a collective over them.

    Ranks follow `rank_list`; pieces of the virtual interleaved axis belong to their card. Groups
    are sorted, each group sorted. Empty if the device matrix is too large to enumerate.
    """
    if math.prod(layout.device_matrix) > MAX_POSITIONS:
        return []
    coords = device_coords(layout.device_matrix)
    keep = [i for i, a in enumerate(layout.alias_name) if a not in axes and a != INTERLEAVED]
    if keep:
        key = np.ravel_multi_index(tuple(coords[:, keep].T), tuple(layout.device_matrix[i] for i in keep))
    else:
        key = np.zeros(coords.shape[0], dtype=np.int64)
    positions = np.arange(coords.shape[0])
    ranks = positions // layout.interleave_num if layout.interleaved else np.asarray(layout.rank_list, dtype=np.int64)
    groups: dict[int, set[int]] = {}
    for k, rank in zip(key.tolist(), ranks.tolist(), strict=True):
        groups.setdefault(k, set()).add(rank)
    return sorted(sorted(g) for g in groups.values())


def _broadcast(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """numpy broadcasting of two shapes (aligned from the right); None if incompatible."""
    out: list[int] = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(reversed(out))


def _aligned(shape_len: int, out_len: int, k: int) -> int | None:
    """Index in an input of output dimension k (shapes aligned from the right), None if absent."""
    j = k - (out_len - shape_len)
    return j if j >= 0 else None


# ---------------------------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------------------------
def _matmul_roles(ndim: int, transposed: bool, first: bool) -> tuple[int, int]:
    """(outer, reduce) dimension index of a MatMul input: outer = M for x, N for w."""
    last, second = ndim - 1, ndim - 2
    if first:
        return (last, second) if transposed else (second, last)
    return (second, last) if transposed else (last, second)


def infer_output_shape(
    op_type: str,
    shapes: Sequence[Sequence[int]],
    names: Sequence[str] = ("x", "w"),
    transpose_a: bool = False,
    transpose_b: bool = False,
) -> tuple[tuple[int, ...] | None, list[str]]:
    """The operator's output shape, or None and the reasons the input shapes do not fit."""
    shapes = [tuple(s) for s in shapes]
    names = list(names) + [f"input {i}" for i in range(len(names), len(shapes))]
    if op_type in MATMUL_OPS:
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
        m_dim, kx_dim = _matmul_roles(len(x), transpose_a, True)
        n_dim, kw_dim = _matmul_roles(len(w), transpose_b, False)
        if x[kx_dim] != w[kw_dim]:
            return None, [
                f"the reduce dimensions do not match: {names[0]} {x} contributes K={x[kx_dim]} "
                f"(dimension {kx_dim}{', transpose_a' if transpose_a else ''}) but {names[1]} {w} contributes "
                f"K={w[kw_dim]} (dimension {kw_dim}{', transpose_b' if transpose_b else ''}): fix the shapes "
                "or the transpose flags"
            ]
        batch = _broadcast(x[:-2], w[:-2])
        if batch is None:
            return None, [
                f"the batch dimensions {x[:-2]} of {names[0]} and {w[:-2]} of {names[1]} do not broadcast: "
                "each pair (aligned from the right) must be equal or one of them 1"
            ]
        return (*batch, x[m_dim], w[n_dim]), []
    if op_type in BINARY_OPS:
        out = _broadcast(shapes[0], shapes[1])
        if out is None:
            return None, [
                f"shapes {shapes[0]} of {names[0]} and {shapes[1]} of {names[1]} do not broadcast: aligned from "
                "the right, each pair of dimensions must be equal or one of them 1"
            ]
        return out, []
    if op_type in UNARY_OPS:
        return shapes[0], []
    return None, [f"unsupported operator {op_type!r}: use one of {', '.join(OP_ARITY)}"]


# ---------------------------------------------------------------------------------------------
# tuple strategies -> layouts (MindSpore's device-matrix construction)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Conversion:
    layouts: list[TensorLayout] | None
    problems: list[str]
    explanation: str = ""


def _merge_split(
    values: Sequence[tuple[int, int | None, str]], dim_label: str
) -> tuple[int, list[str]]:
    """Device-axis size for one aligned dimension: (split, size or None, input name) per input holding it.

    Inputs whose dimension has size 1 while another's is larger are broadcast and must be unsplit;
    the others must agree. Without shapes a split of 1 facing a larger split is taken as broadcast.
    """
    sizes = [s for _, s, _ in values if s is not None]
    full = max(sizes) if sizes else None
    problems: list[str] = []
    real: list[tuple[int, str]] = []
    for split, size, name in values:
        broadcast = size == 1 and full is not None and full > 1
        if broadcast:
            if split != 1:
                problems.append(
                    f"{name}'s {dim_label} has size 1 and is broadcast, so it must be unsplit: use 1 there"
                )
            continue
        real.append((split, name))
    splits = {s for s, _ in real}
    if len(splits) > 1 and full is None and 1 in splits:
        splits.discard(1)  # no shapes: a 1 facing a split is a broadcast dimension
    if len(splits) > 1:
        text = " but ".join(f"{name} splits it {split} ways" for split, name in real)
        problems.append(f"the {dim_label} must be split the same number of ways on every input: {text}")
    return (max(splits) if splits else 1), problems


def _convert(
    op_type: str,
    strategies: Sequence[Sequence[int]],
    device_num: int,
    shapes: Sequence[Sequence[int]] | None,
    names: Sequence[str],
    transpose_a: bool = False,
    transpose_b: bool = False,
) -> _Conversion:
    problems: list[str] = []
    if op_type not in OP_ARITY:
        return _Conversion(None, [f"unsupported operator {op_type!r}: use one of {', '.join(OP_ARITY)}"])
    if len(strategies) != OP_ARITY[op_type]:
        return _Conversion(
            None, [f"{op_type} takes {OP_ARITY[op_type]} input(s) but {len(strategies)} strategies were given"]
        )
    splits: list[tuple[int, ...]] = []
    for i, raw in enumerate(strategies):
        try:
            split = tuple(raw)
        except TypeError:
            return _Conversion(None, [f"the strategy of {names[i]} must be a tuple of split counts such as (2, 4)"])
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in split):
            return _Conversion(None, [f"the strategy {split} of {names[i]} must hold whole numbers >= 1"])
        splits.append(split)
    if device_num < 1:
        return _Conversion(None, [f"device_num is {device_num}: it must be at least 1"])
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
    if problems:
        return _Conversion(None, problems)

    dims: list[int] = []
    roles: list[str] = []
    maps: list[list[int | None]] = []  # per input, per dim: index into dims, None = unsplit
    if op_type in MATMUL_OPS:
        sx, sw = splits
        for name, split in zip(names, splits, strict=False):
            if len(split) < 2 or (op_type == "MatMul" and len(split) != 2):
                problems.append(f"{op_type} needs a 2-D strategy for the matrix part of {name}, got {split}")
        if problems:
            return _Conversion(None, problems)
        m_dim, kx_dim = _matmul_roles(len(sx), transpose_a, True)
        n_dim, kw_dim = _matmul_roles(len(sw), transpose_b, False)
        if sx[kx_dim] != sw[kw_dim]:
            return _Conversion(
                None,
                [
                    f"the reduce dimension is split {sx[kx_dim]} ways in {names[0]} (dimension {kx_dim}) but "
                    f"{sw[kw_dim]} ways in {names[1]} (dimension {kw_dim}): split it the same number of ways "
                    f"on both, e.g. ({', '.join(map(str, sx))}) with a {names[1]} strategy whose dimension "
                    f"{kw_dim} is {sx[kx_dim]}"
                ],
            )
        nb = max(len(sx), len(sw)) - 2
        x_map: list[int | None] = [None] * len(sx)
        w_map: list[int | None] = [None] * len(sw)
        for k in range(nb):
            held = []
            jx, jw = _aligned(len(sx) - 2, nb, k), _aligned(len(sw) - 2, nb, k)
            if jx is not None:
                held.append((sx[jx], None if shapes is None else shapes[0][jx], names[0]))
            if jw is not None:
                held.append((sw[jw], None if shapes is None else shapes[1][jw], names[1]))
            size, bad = _merge_split(held, f"batch dimension {k}")
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
        maps = [x_map, w_map]
    else:
        nd = max(len(s) for s in splits)
        maps = [[None] * len(s) for s in splits]
        for k in range(nd):
            held = []
            for i, split in enumerate(splits):
                j = _aligned(len(split), nd, k)
                if j is not None:
                    held.append((split[j], None if shapes is None else shapes[i][j], names[i]))
            size, bad = _merge_split(held, f"output dimension {k}")
            problems.extend(bad)
            dims.append(size)
            roles.append(f"output dimension {k}")
            for i, split in enumerate(splits):
                j = _aligned(len(split), nd, k)
                if j is not None and not (split[j] == 1 and size > 1):
                    maps[i][j] = k
    if problems:
        return _Conversion(None, problems)
    used = math.prod(dims)
    if device_num % used:
        return _Conversion(
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
    layouts = [
        layout(*(NONE if m is None else aliases[m + (len(aliases) - len(dims))] for m in mapping))
        for mapping in maps
    ]
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
    text += ". Tensor maps: " + "; ".join(
        f"{n} -> ({tl.entry_code()})" for n, tl in zip(names, layouts, strict=False)
    )
    return _Conversion(layouts, [], text)


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
    names = ["x", "w"] if op_type in MATMUL_OPS else [f"input {i}" for i in range(len(strategies))]
    result = _convert(op_type, strategies, device_num, shapes, names, transpose_a, transpose_b)
    if result.layouts is None:
        raise LayoutError("; ".join(result.problems))
    return result.layouts


def default_strategy(
    op_type: str, shapes: Sequence[Sequence[int]], device_num: int, transpose_a: bool = False
) -> tuple[list[tuple[int, ...]], str]:
    """The strategy assumed for an operator without one, and a sentence saying so.

    MindSpore's semi-auto default is data parallel: the first output dimension is split over all
    devices when it divides (for MatMul that is x's row dimension; weights stay whole), otherwise the
    operator runs replicated on every device.
    """
    shapes = [tuple(s) for s in shapes]
    out, _ = infer_output_shape(op_type, shapes, transpose_a=transpose_a)
    strategies = [[1] * len(s) for s in shapes]
    if device_num == 1 or not out:
        return [tuple(s) for s in strategies], (
            "no strategy given: nothing to split "
            + ("on a single device" if device_num == 1 else "(the output has no dimensions)")
            + ", so the operator runs whole on every rank"
        )
    if out[0] % device_num:
        size = f"size {out[0]}"
        return [tuple(s) for s in strategies], (
            f"no strategy given: assumed replicated (every rank computes the whole operator), because its "
            f"first output dimension ({size}) cannot be split {device_num} ways; MindSpore's semi-auto "
            "default would be data parallel otherwise"
        )
    if op_type in MATMUL_OPS and len(out) == 2:
        strategies[0][_matmul_roles(len(shapes[0]), transpose_a, True)[0]] = device_num
    elif op_type in MATMUL_OPS:
        for i, shape in enumerate(shapes):
            j = _aligned(len(shape) - 2, len(out) - 2, 0)
            if j is not None and shape[j] == out[0]:
                strategies[i][j] = device_num
    else:
        for i, shape in enumerate(shapes):
            j = _aligned(len(shape), len(out), 0)
            if j is not None and shape[j] == out[0]:
                strategies[i][j] = device_num
    return [tuple(s) for s in strategies], (
        f"no strategy given: assumed MindSpore's semi-auto default, data parallel — the first output "
        f"dimension (size {out[0]}) is split {device_num} ways, everything else is whole"
    )


# ---------------------------------------------------------------------------------------------
# rules on layouts
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _RuleResult:
    output: TensorLayout | None
    reduce_axes: tuple[str, ...]
    problems: list[str]


def _output_layout(layout: Layout, entries: Sequence[DimEntry], sources: Sequence[str]) -> _RuleResult:
    """Build the output layout; an axis may split only one output dimension."""
    seen: dict[str, str] = {}
    for entry, source in zip(entries, sources, strict=True):
        for axis in entry if isinstance(entry, tuple) else (entry,):
            if axis == NONE:
                continue
            if axis in seen:
                return _RuleResult(
                    None,
                    (),
                    [
                        f"device axis {axis!r} splits both {seen[axis]} and {source}, so the output would be "
                        f"split twice over {axis!r}: use a different axis (or 'None') for one of them"
                    ],
                )
            seen[axis] = source
    try:
        return _RuleResult(layout(*entries), (), [])
    except LayoutError as exc:  # pragma: no cover - the check above covers what Layout rejects
        return _RuleResult(None, (), [str(exc)])


def _matmul_rule(
    layouts: Sequence[TensorLayout],
    shapes: Sequence[tuple[int, ...]],
    out_shape: tuple[int, ...],
    names: Sequence[str],
    transpose_a: bool,
    transpose_b: bool,
) -> _RuleResult:
    x, w = layouts
    sx, sw = shapes
    m_dim, kx_dim = _matmul_roles(len(sx), transpose_a, True)
    n_dim, kw_dim = _matmul_roles(len(sw), transpose_b, False)
    problems: list[str] = []
    kx, kw = x.dim_axes(kx_dim), w.dim_axes(kw_dim)
    if kx != kw:
        same_set = sorted(kx) == sorted(kw) and kx
        how = "the same axes in a different order" if same_set else f"{_axes_text(kx)} vs {_axes_text(kw)}"
        problems.append(
            f"the reduce dimension (K={sx[kx_dim]}) must be split the same way on both inputs, but "
            f"{names[0]} dimension {kx_dim} is split over {_axes_text(kx)} and {names[1]} dimension {kw_dim} over "
            f"{_axes_text(kw)} ({how}): give both the same device axes in the same order, e.g. "
            f"{x.entries[kx_dim]!r} for {names[1]} dimension {kw_dim}"
        )
    nb = len(out_shape) - 2
    entries: list[DimEntry] = []
    sources: list[str] = []
    for k in range(nb):
        jx, jw = _aligned(len(sx) - 2, nb, k), _aligned(len(sw) - 2, nb, k)
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
                f"{_axes_text(x.dim_axes(real[0][2]))} and {names[1]} uses {_axes_text(w.dim_axes(real[1][2]))}"
            )
        n, tl, j = real[0] if real else (held[0][0], held[0][1], held[0][3])
        entries.append(tl.entries[j] if tl.dim_axes(j) else NONE)
        sources.append(f"batch dimension {k} (from {n})")
    if problems:
        return _RuleResult(None, (), problems)
    entries += [x.entries[m_dim], w.entries[n_dim]]
    sources += [f"{names[0]} dimension {m_dim} (the output rows)", f"{names[1]} dimension {n_dim} (the output columns)"]
    result = _output_layout(x.layout, entries, sources)
    return _RuleResult(result.output, _physical(x.layout, kx), result.problems)


def _elementwise_rule(
    layouts: Sequence[TensorLayout], shapes: Sequence[tuple[int, ...]], out_shape: tuple[int, ...], names: Sequence[str]
) -> _RuleResult:
    problems: list[str] = []
    entries: list[DimEntry] = []
    sources: list[str] = []
    nd = len(out_shape)
    for k in range(nd):
        held = [
            (names[i], layouts[i], shapes[i], j)
            for i in range(len(layouts))
            if (j := _aligned(len(shapes[i]), nd, k)) is not None
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
                    f"matching dimensions must be split identically, but {first_n} dimension {first_j} is split "
                    f"over {_axes_text(first_tl.dim_axes(first_j))} and {n} dimension {j} over "
                    f"{_axes_text(tl.dim_axes(j))}: give {n} dimension {j} the entry {first_tl.entries[first_j]!r}"
                )
        entries.append(first_tl.entries[first_j])
        sources.append(f"output dimension {k} (from {first_n})")
    if problems:
        return _RuleResult(None, (), problems)
    return _output_layout(layouts[0].layout, entries, sources)


# ---------------------------------------------------------------------------------------------
# redistribution
# ---------------------------------------------------------------------------------------------
def _pieces_by_rank(placement_ranks: np.ndarray, starts: np.ndarray, stops: np.ndarray):
    order = np.argsort(placement_ranks, kind="stable")
    ranks = placement_ranks[order]
    unique, counts = np.unique(ranks, return_counts=True)
    per = int(counts.max()) if len(counts) else 1
    if len(counts) and (counts != per).any():  # pragma: no cover - every rank holds the same number of pieces
        raise LayoutError("uneven pieces per rank")
    nd = starts.shape[1]
    return unique, starts[order].reshape(len(unique), per, nd), stops[order].reshape(len(unique), per, nd)


def redistribution_bytes(
    shape: Sequence[int], stored: TensorLayout, required: TensorLayout, dtype: str = "float32"
) -> tuple[int, bool] | None:
    """(bytes the busiest rank must receive, whether the per-rank slices differ at all).

    Exact from the two placements: a rank receives what it needs minus what it already holds.
    None when the layouts do not fit the shape or are too large to enumerate.
    """
    if max(math.prod(stored.layout.device_matrix), math.prod(required.layout.device_matrix)) > MAX_POSITIONS:
        return None
    try:
        src, dst = place(shape, stored), place(shape, required)
    except LayoutError:
        return None
    nd = len(src.shape)
    if nd == 0:
        src_ranks = set(src.ranks.tolist())
        missing = [r for r in set(dst.ranks.tolist()) if r not in src_ranks]
        return (_dtype_bytes(dtype) if missing else 0), bool(missing)
    s_ranks, s_lo, s_hi = _pieces_by_rank(src.ranks, src.starts, src.stops)
    idx = np.searchsorted(s_ranks, dst.ranks)
    idx_clipped = np.minimum(idx, len(s_ranks) - 1)
    has = (idx < len(s_ranks)) & (s_ranks[idx_clipped] == dst.ranks)
    t_lo, t_hi = dst.starts[:, None, :], dst.stops[:, None, :]
    lengths = np.minimum(t_hi, s_hi[idx_clipped]) - np.maximum(t_lo, s_lo[idx_clipped])
    lengths = np.clip(lengths, 0, None).astype(object)
    overlap = np.prod(lengths, axis=2).sum(axis=1)  # (P_t,) exact Python ints
    need = math.prod(dst.local_shape)
    held = math.prod(src.local_shape) * src.pieces_per_rank
    received: dict[int, int] = {}
    covered: dict[int, int] = {}
    for rank, ov, ok in zip(dst.ranks.tolist(), overlap.tolist(), has.tolist(), strict=True):
        ov = int(ov) if ok else 0
        received[rank] = received.get(rank, 0) + need - ov
        covered[rank] = covered.get(rank, 0) + ov
    worst = max(received.values(), default=0)
    differs = worst > 0 or any(total != held for total in covered.values())
    return worst * _dtype_bytes(dtype), differs


def _redistribution(
    shape: tuple[int, ...],
    dtype: str,
    stored: TensorLayout,
    required: TensorLayout,
    origin: str,
    op_name: str,
) -> Communication | None:
    measured = redistribution_bytes(shape, stored, required, dtype)
    if measured is None:
        return None
    nbytes, differs = measured
    if not differs:
        return None
    same = stored.layout == required.layout
    changed_dims = [
        d
        for d in range(len(shape))
        if stored.dim_axes(d) != required.dim_axes(d) or stored.split[d] != required.split[d]
    ]
    if same:
        moved: set[str] = set()
        for d in changed_dims:
            before, after = stored.dim_axes(d), required.dim_axes(d)
            keep = 0
            while keep < min(len(before), len(after)) and before[keep] == after[keep]:
                keep += 1
            moved.update(before[keep:], after[keep:])
        axes = _physical(stored.layout, [a for a in stored.layout.alias_name if a in moved])
        groups = rank_groups(stored.layout, axes) if nbytes else []
    else:
        names: list[str] = []
        for tl in (stored, required):
            for d in changed_dims:
                names += [a for a in tl.dim_axes(d) if a not in names and a != INTERLEAVED]
        axes = tuple(
            a
            for a in names
            if (a in stored.layout.alias_name and a in _physical(stored.layout, [a]))
            or (a in required.layout.alias_name and a in _physical(required.layout, [a]))
        )
        everyone = sorted(set(stored.layout.rank_list) | set(required.layout.rank_list))
        groups = [everyone] if nbytes else []
    head = (
        f"{origin[0].upper() + origin[1:]} is stored as {_layout_text(stored)} but {op_name} needs it as "
        f"{_layout_text(required)}"
    )
    gather = same and all(
        stored.dim_axes(d)[: len(required.dim_axes(d))] == required.dim_axes(d) for d in range(len(shape))
    )
    if nbytes:
        how = f" (an AllGather over {_axes_text(axes)})" if gather and axes else ""
        reason = (
            f"{head}: before computing, the busiest rank receives {format_bytes(nbytes)} of it from other "
            f"ranks{how}"
            + ("" if same else " (different device matrices: the group shown is every rank involved)")
            + "."
        )
    else:
        reason = f"{head}: every rank already holds what it needs and keeps only a slice — no data moves."
    return Communication("Redistribution", axes, groups, nbytes, reason)


# ---------------------------------------------------------------------------------------------
# operators of a design
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Source:
    shape: tuple[int, ...] | None
    dtype: str
    stored: TensorLayout | None
    origin: str


def _stored_layout(design: Design, sharding: Sharding | None, shape: tuple[int, ...], name: str) -> TensorLayout | None:
    """How a design tensor is stored, or None when it has no (usable) sharding of its own."""
    if sharding is None:
        return None
    try:
        if sharding.is_layout:
            tensor_layout = design.tensor_layout(sharding)
            tensor_layout.check_shape(shape, name)
            return tensor_layout
        converted = _convert("ReLU", [sharding.split or ()], design.device_num, [shape], [name])
        return converted.layouts[0] if converted.layouts else None
    except (LayoutError, KeyError, TypeError, ValueError):
        return None


def _resolve(design: Design, name: str, outputs: Mapping[str, OperatorAnalysis]) -> tuple[_Source | None, str]:
    if name in design.tensors:
        tensor = design.tensors[name]
        shape = tuple(tensor.shape)
        return _Source(shape, tensor.dtype, _stored_layout(design, tensor.sharding, shape, name), f"tensor {name}"), ""
    if name in outputs:
        producer = outputs[name]
        if producer.output_shape is None:
            return None, (
                f"the shape of input {name!r} is unknown because operator {name} is invalid: fix {name} first"
            )
        return _Source(
            producer.output_shape, producer.output_dtype, producer.output_layout, f"the output of {name}"
        ), ""
    return None, f"input {name!r} is not a tensor or an earlier operator: define it or pick another input"


def _shape_problem(tensor_layout: TensorLayout, shape: tuple[int, ...], name: str) -> str:
    """Why a Layout strategy does not fit the input's shape ('' if it does); size-1 dims get a broadcast hint."""
    if len(shape) == tensor_layout.ndim:
        for dim, (size, pieces) in enumerate(zip(shape, tensor_layout.split, strict=True)):
            if size == 1 and pieces > 1:
                return (
                    f"strategy of {name}: dimension {dim} has size 1 (a broadcast dimension), so it must be "
                    f"unsplit: use 'None' instead of {tensor_layout.entries[dim]!r}"
                )
    try:
        tensor_layout.check_shape(shape, name)
    except LayoutError as exc:
        return f"strategy of {name}: {exc}"
    return ""


def _analyze(design: Design, op: OperatorSpec, outputs: Mapping[str, OperatorAnalysis]) -> OperatorAnalysis:
    names = tuple(op.inputs)
    problems: list[str] = []
    notes: list[str] = []

    def finish(
        shapes: Sequence[tuple[int, ...]] = (),
        layouts: Sequence[TensorLayout | None] = (),
        out_shape: tuple[int, ...] | None = None,
        out_layout: TensorLayout | None = None,
        comms: Sequence[Communication] = (),
        dtype: str = "float32",
    ) -> OperatorAnalysis:
        return OperatorAnalysis(
            name=op.name,
            type=op.type,
            input_names=names,
            input_shapes=list(shapes) or [() for _ in names],
            input_layouts=list(layouts) or [None for _ in names],
            output_shape=out_shape,
            output_layout=out_layout,
            communications=list(comms),
            problems=problems,
            output_dtype=dtype,
            notes=notes,
        )

    if op.type not in OP_ARITY:
        problems.append(f"unsupported operator type {op.type!r}: use one of {', '.join(OP_ARITY)}")
        return finish()
    if len(names) != OP_ARITY[op.type]:
        problems.append(f"{op.type} takes {OP_ARITY[op.type]} input(s) but {len(names)} are given")
        return finish()
    sources: list[_Source | None] = []
    for name in names:
        source, problem = _resolve(design, name, outputs)
        sources.append(source)
        if problem:
            problems.append(problem)
    dtype = sources[0].dtype if sources and sources[0] is not None else "float32"
    if problems:
        return finish(shapes=[s.shape or () if s else () for s in sources], dtype=dtype)
    shapes = [s.shape for s in sources if s is not None and s.shape is not None]
    out_shape, shape_problems = infer_output_shape(op.type, shapes, names, op.transpose_a, op.transpose_b)
    problems.extend(shape_problems)
    if out_shape is None:
        return finish(shapes=shapes, dtype=dtype)
    ta, tb = op.transpose_a, op.transpose_b
    strategy = op.strategy

    # -- strategies -> layouts --------------------------------------------------------------
    layouts: list[TensorLayout | None] = [None] * len(names)
    if strategy is None:
        splits, note = default_strategy(op.type, shapes, design.device_num, ta)
        notes.append(note)
        converted = _convert(op.type, splits, design.device_num, shapes, names, ta, tb)
        problems.extend(converted.problems)
        if converted.layouts:
            layouts = list(converted.layouts)
            notes.append(converted.explanation[0].upper() + converted.explanation[1:])
    elif len(strategy) != len(names):
        problems.append(
            f"give one strategy per input: {op.type} has {len(names)} input(s) but {len(strategy)} strategies"
        )
    elif all(s.is_layout for s in strategy):
        for i, sharding in enumerate(strategy):
            try:
                tensor_layout = design.tensor_layout(sharding)
            except LayoutError as exc:
                problems.append(f"strategy of {names[i]}: {exc}")
                continue
            problem = _shape_problem(tensor_layout, shapes[i], names[i])
            if problem:
                problems.append(problem)
            else:
                layouts[i] = tensor_layout
        present = [(n, tl) for n, tl in zip(names, layouts, strict=True) if tl is not None]
        if present and not problems:
            first_name, first = present[0]
            for n, tl in present[1:]:
                if tl.layout != first.layout:
                    problems.append(
                        f"all inputs of one operator must use the same device matrix, but {first_name} uses "
                        f"{first.layout.to_code()} and {n} uses {tl.layout.to_code()}: build both strategies "
                        "from the same Layout"
                    )
            if first.layout.device_num != design.device_num:
                problems.append(
                    f"the strategies' device matrix {first.layout.to_code()} spans {first.layout.device_num} "
                    f"devices but the design has {design.device_num}: change the axis sizes so their product is "
                    f"{design.device_num}"
                )
    elif not any(s.is_layout for s in strategy):
        converted = _convert(op.type, [s.split or () for s in strategy], design.device_num, shapes, names, ta, tb)
        problems.extend(converted.problems)
        if converted.layouts:
            layouts = list(converted.layouts)
            notes.append(converted.explanation[0].upper() + converted.explanation[1:])
    else:
        problems.append(
            "the strategy mixes Layout strategies and tuple strategies: MindSpore needs all inputs of one "
            "operator in the same form — use layouts for every input or split tuples for every input"
        )
    if problems or any(tl is None for tl in layouts):
        return finish(shapes=shapes, layouts=layouts, out_shape=out_shape, dtype=dtype)
    ready = [tl for tl in layouts if tl is not None]

    # -- the operator's rule ----------------------------------------------------------------
    if op.type in MATMUL_OPS:
        rule = _matmul_rule(ready, shapes, out_shape, names, ta, tb)
        if op.type == "BatchMatMul" and shapes[0][:-2] != shapes[1][:-2]:
            notes.append(
                "the batch dimensions broadcast; MindSpore supports that on Ascend, but its CPU/GPU BatchMatMul "
                "kernels need equal batch shapes"
            )
    else:
        rule = _elementwise_rule(ready, shapes, out_shape, names)
    problems.extend(rule.problems)
    comms: list[Communication] = []
    output = rule.output
    if output is not None and op.out_strategy is not None:
        output = _apply_out_strategy(design, op, out_shape, output, rule.reduce_axes, dtype, comms, problems)
    elif output is not None and rule.reduce_axes:
        comms.append(_reduction("AllReduce", out_shape, output, rule.reduce_axes, dtype))
    if rule.output is not None:
        for source, required in zip(sources, ready, strict=True):
            if source is None or source.stored is None or source.shape is None:
                continue
            comm = _redistribution(source.shape, source.dtype, source.stored, required, source.origin, op.name)
            if comm is not None:
                comms.append(comm)
    return finish(shapes, layouts, out_shape, output, comms, dtype)


def _reduction(
    kind: str, out_shape: tuple[int, ...], partial: TensorLayout, axes: tuple[str, ...], dtype: str
) -> Communication:
    """The collective that sums the partial outputs left by a split reduce dimension."""
    groups = rank_groups(partial.layout, axes)
    nbytes = _local_bytes(out_shape, partial, dtype)
    size = len(groups[0]) if groups else math.prod(partial.layout.axis_size(a) for a in axes)
    how = (
        "an AllReduce (sum) over {axes} in groups of {size} ranks adds them up"
        if kind == "AllReduce"
        else "the output strategy splits the result over {axes}, so a ReduceScatter in groups of {size} ranks "
        "sums them and leaves each rank only its part"
    )
    return Communication(
        kind,
        axes,
        groups,
        nbytes,
        f"The reduce dimension is split over {_axes_text(axes)}, so every rank holds a partial sum of its "
        f"{format_bytes(nbytes)} output slice; " + how.format(axes=_axes_text(axes), size=size),
    )


def _apply_out_strategy(
    design: Design,
    op: OperatorSpec,
    out_shape: tuple[int, ...],
    natural: TensorLayout,
    reduce_axes: tuple[str, ...],
    dtype: str,
    comms: list[Communication],
    problems: list[str],
) -> TensorLayout | None:
    """MindSpore's out_strategy: reduce axes the output is split over become a ReduceScatter."""
    assert op.out_strategy is not None
    try:
        wanted = design.tensor_layout(op.out_strategy)
    except LayoutError as exc:
        problems.append(f"out_strategy: {exc}")
        return None
    problem = _shape_problem(wanted, out_shape, f"{op.name} output")
    if problem:
        problems.append(f"out_strategy: {problem}")
        return None
    if wanted.layout != natural.layout:
        problems.append(
            f"out_strategy uses {wanted.layout.to_code()} but the inputs use {natural.layout.to_code()}: "
            "build the output strategy from the same Layout"
        )
        return None
    scattered = tuple(a for a in reduce_axes if a in wanted.used_axes)
    summed = tuple(a for a in reduce_axes if a not in scattered)
    if summed:
        comms.append(_reduction("AllReduce", out_shape, natural, summed, dtype))
    if scattered:
        comms.append(_reduction("ReduceScatter", out_shape, natural, scattered, dtype))
    # Beyond the scattered axes: a finer split is a local slice, a coarser one needs an AllGather.
    lost = tuple(a for a in natural.used_axes if a not in wanted.used_axes)
    if lost:
        comms.append(
            Communication(
                "AllGather",
                lost,
                rank_groups(natural.layout, lost),
                _local_bytes(out_shape, wanted, dtype),
                f"the output strategy {_layout_text(wanted)} no longer splits over {_axes_text(lost)}, which the "
                f"natural output {_layout_text(natural)} does, so the pieces are gathered",
            )
        )
    return wanted


def _safe_analyze(design: Design, op: OperatorSpec, outputs: Mapping[str, OperatorAnalysis]) -> OperatorAnalysis:
    """Last line of defence: an unexpected error becomes a problem instead of breaking the page."""
    try:
        return _analyze(design, op, outputs)
    except Exception as exc:  # the Designer must keep working on any design
        return OperatorAnalysis(
            name=getattr(op, "name", "?"),
            type=getattr(op, "type", "?"),
            input_names=tuple(getattr(op, "inputs", ())),
            input_shapes=[() for _ in getattr(op, "inputs", ())],
            input_layouts=[None for _ in getattr(op, "inputs", ())],
            output_shape=None,
            output_layout=None,
            communications=[],
            problems=[f"internal error while analysing this operator ({type(exc).__name__}: {exc}); please report it"],
        )


def analyze_design(design: Design) -> list[OperatorAnalysis]:
    """Every operator in order; shapes, dtypes and layouts flow from tensors and earlier operators."""
    outputs: dict[str, OperatorAnalysis] = {}
    results: list[OperatorAnalysis] = []
    for op in design.operators:
        analysis = _safe_analyze(design, op, outputs)
        results.append(analysis)
        outputs.setdefault(op.name, analysis)
    return results


def analyze_operator(design: Design, op_name: str) -> OperatorAnalysis:
    """One operator (the earlier ones are analysed too, for their output shapes and layouts)."""
    outputs: dict[str, OperatorAnalysis] = {}
    for op in design.operators:
        analysis = _safe_analyze(design, op, outputs)
        if op.name == op_name:
            return analysis
        outputs.setdefault(op.name, analysis)
    return OperatorAnalysis(
        name=op_name,
        type="?",
        input_names=(),
        input_shapes=[],
        input_layouts=[],
        output_shape=None,
        output_layout=None,
        communications=[],
        problems=[f"there is no operator called {op_name!r} in this design"],
    )
