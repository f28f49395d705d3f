"""Shared pieces of the operator rules: result types, small helpers and the `OperatorFamily` protocol.

Every operator family (one module each: matmul, elementwise, ...) implements `OperatorFamily`;
`registry.family_of(op_type)` finds it and `convert` / `analyze` only talk to the protocol, so a new
operator is one new module plus a line in the registry and the catalogue.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from core.sharding.layout import INTERLEAVED, NONE, DimEntry, Layout, LayoutError, TensorLayout
from core.sharding.placement import DTYPE_BYTES

COMMUNICATION_KINDS = ("AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Redistribution")
REPEAT_AXIS = "rep"
# Device-matrix positions above which groups / redistribution sizes are not computed (memory bound).
MAX_POSITIONS = 1 << 20

Shape = tuple[int, ...]


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
    layers: int = 1  # times the operator runs in the full model (the repeat count inside the repeat block)

    @property
    def valid(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class OpAttrs:
    """The operator attributes a rule may need (design-file fields besides name/type/inputs/strategies)."""

    transpose_a: bool = False
    transpose_b: bool = False
    perm: tuple[int, ...] | None = None
    shape: tuple[int, ...] | None = None
    axis: int | None = None
    eps: float | None = None


@dataclass(frozen=True)
class OpContext:
    """What every family rule gets about one operator: its type, its inputs' names and whole shapes, its
    attributes and (once inferred) the output shape. One value instead of five parallel arguments.

    `shapes_known` is False while a tuple strategy is converted without shapes (`convert` given None):
    `known_shapes` is then None, and only `device_dims` is asked."""

    op_type: str
    names: tuple[str, ...]
    shapes: tuple[Shape, ...] = ()
    attrs: OpAttrs = OpAttrs()
    out_shape: Shape = ()
    shapes_known: bool = True

    @property
    def known_shapes(self) -> tuple[Shape, ...] | None:
        """The inputs' shapes, or None when they are not known."""
        return self.shapes if self.shapes_known else None


@dataclass(frozen=True)
class RuleResult:
    """What a family's rule derives from the input layouts: the output layout and the partial-sum axes.

    `required` (optional) are the layouts the operator really computes on when MindSpore redistributes
    the given ones first (Reshape); `scatter_dim` says that, without an out_strategy, MindSpore sums the
    partial results with a ReduceScatter that splits that output dimension over `reduce_axes` (Gather);
    `reduce_reason` replaces the MatMul wording of why partial sums arise.
    """

    output: TensorLayout | None
    reduce_axes: tuple[str, ...]
    problems: list[str]
    required: list[TensorLayout] | None = None
    scatter_dim: int | None = None
    reduce_reason: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DeviceDims:
    """A tuple strategy read by a family: one device-matrix dimension per independent split.

    `maps[i][j]` is the index in `dims` that input i's dimension j is split over (None = unsplit);
    `roles[k]` names dimension k for the explanation ("the reduce dimension (K)").
    """

    dims: list[int]
    roles: list[str]
    maps: list[list[int | None]]
    problems: list[str] = field(default_factory=list)


class OperatorFamily(Protocol):
    """The rules of one operator family; see `matmul.py` for a full example."""

    name: str

    def input_names(self, arity: int) -> list[str]:
        """Default names of the inputs in messages ("x", "w" for MatMul)."""
        ...

    def infer_shape(self, ctx: OpContext) -> tuple[Shape | None, list[str]]:
        """The output shape, or None and why the input shapes do not fit."""
        ...

    def device_dims(self, ctx: OpContext, splits: Sequence[Shape]) -> DeviceDims:
        """How MindSpore builds the device matrix of a tuple strategy for this family (`ctx.known_shapes`
        may be None)."""
        ...

    def rule(self, ctx: OpContext, layouts: Sequence[TensorLayout]) -> RuleResult:
        """Check the input layouts, derive the output layout (of `ctx.out_shape`) and the axes of a partial sum."""
        ...

    def default_strategy(self, ctx: OpContext, device_num: int) -> list[list[int]]:
        """Data parallel: split the first output dimension `device_num` ways (it divides)."""
        ...

    def notes(self, ctx: OpContext) -> list[str]:
        """Extra remarks on a valid operator (e.g. platform limits)."""
        ...

    def dtype_problems(self, ctx: OpContext, dtypes: Sequence[str]) -> list[str]:
        """Inputs whose dtype the operator cannot take (Gather's indices must be integers)."""
        ...

    @property
    def inherits_layout(self) -> bool:
        """True when, without a strategy, the operator keeps its input's layout (MindSpore's Reshape)."""
        ...

    def output_ndim(self, op_type: str, ndims: Sequence[int | None], attrs: OpAttrs) -> int | None:
        """The output's number of dimensions from the inputs' (None = unknown), without the full analysis:
        what the Designer needs to start a strategy while shapes are still being edited."""
        ...

    def input_ndim(self, op_type: str, index: int) -> int | None:
        """The number of dimensions to assume for input `index` when its source cannot tell (MatMul: 2)."""
        ...


class FamilyBase:
    """Defaults for the parts of `OperatorFamily` most families share: one input called x whose
    strategy is the device matrix, no notes, any dtype, no inherited layout."""

    def input_names(self, arity: int) -> list[str]:
        return ["x"] if arity == 1 else [f"input {i}" for i in range(arity)]

    def device_dims(self, ctx: OpContext, splits: Sequence[Shape]) -> DeviceDims:
        return identity_dims(splits, ctx.names)

    def notes(self, ctx: OpContext) -> list[str]:
        return []

    def dtype_problems(self, ctx: OpContext, dtypes: Sequence[str]) -> list[str]:
        return []

    @property
    def inherits_layout(self) -> bool:
        return False

    def output_ndim(self, op_type: str, ndims: Sequence[int | None], attrs: OpAttrs) -> int | None:
        """Shape-keeping families (Transpose, Softmax, RMSNorm): the first input's."""
        return ndims[0] if ndims else None

    def input_ndim(self, op_type: str, index: int) -> int | None:
        return None


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------
def entry_of(axes: Sequence[str]) -> DimEntry:
    """[] -> 'None', ['mp'] -> 'mp', ['sp', 'dp'] -> ('sp', 'dp'): a map entry from axes outer -> inner."""
    if not axes:
        return NONE
    return axes[0] if len(axes) == 1 else tuple(axes)


def axes_text(axes: Sequence[str]) -> str:
    """`("sp", "dp")` -> `(sp, dp)`; one axis bare; none says so."""
    if not axes:
        return "no axis (unsplit)"
    return axes[0] if len(axes) == 1 else "(" + ", ".join(axes) + ")"


def layout_text(tensor_layout: TensorLayout) -> str:
    return f"({tensor_layout.entry_code()}) on {tensor_layout.layout.to_code()}"


def physical(layout: Layout, axes: Sequence[str]) -> tuple[str, ...]:
    """The axes (in the given order) that really cross cards: size > 1 and not the virtual interleaved axis."""
    return tuple(a for a in axes if a in layout.alias_name and a != INTERLEAVED and layout.axis_size(a) > 1)


def dtype_bytes(dtype: str) -> int:
    return DTYPE_BYTES.get(dtype, 4)


def local_bytes(shape: Sequence[int], tensor_layout: TensorLayout, dtype: str) -> int:
    """Bytes one rank holds of a tensor (interleaved pieces of one card counted together)."""
    elements = math.prod(s // p for s, p in zip(shape, tensor_layout.split, strict=True))
    return elements * dtype_bytes(dtype) * tensor_layout.layout.interleave_num


def broadcast(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """numpy broadcasting of two shapes (aligned from the right); None if incompatible."""
    out: list[int] = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(reversed(out))


def aligned(shape_len: int, out_len: int, k: int) -> int | None:
    """Index in an input of output dimension k (shapes aligned from the right), None if absent."""
    j = k - (out_len - shape_len)
    return j if j >= 0 else None


def merge_split(values: Sequence[tuple[int, int | None, str]], dim_label: str) -> tuple[int, list[str]]:
    """Device-axis size for one aligned dimension: (split, size or None, input name) per input holding it.

    Inputs whose dimension has size 1 while another's is larger are broadcast and must be unsplit;
    the others must agree. Without shapes a split of 1 facing a larger split is taken as broadcast.
    """
    sizes = [s for _, s, _ in values if s is not None]
    full = max(sizes) if sizes else None
    problems: list[str] = []
    real: list[tuple[int, str]] = []
    for split, size, name in values:
        if size == 1 and full is not None and full > 1:
            if split != 1:
                problems.append(f"{name}'s {dim_label} has size 1 and is broadcast, so it must be unsplit: use 1 there")
            continue
        real.append((split, name))
    splits = {s for s, _ in real}
    if len(splits) > 1 and full is None and 1 in splits:
        splits.discard(1)  # no shapes: a 1 facing a split is a broadcast dimension
    if len(splits) > 1:
        text = " but ".join(f"{name} splits it {split} ways" for split, name in real)
        problems.append(f"the {dim_label} must be split the same number of ways on every input: {text}")
    return (max(splits) if splits else 1), problems


def output_layout(layout: Layout, entries: Sequence[DimEntry], sources: Sequence[str]) -> RuleResult:
    """Build the output layout; an axis may split only one output dimension."""
    seen: dict[str, str] = {}
    for entry, source in zip(entries, sources, strict=True):
        for axis in entry if isinstance(entry, tuple) else (entry,):
            if axis == NONE:
                continue
            if axis in seen:
                return RuleResult(
                    None,
                    (),
                    [
                        f"device axis {axis!r} splits both {seen[axis]} and {source}, so the output would be "
                        f"split twice over {axis!r}: use a different axis (or 'None') for one of them"
                    ],
                )
            seen[axis] = source
    try:
        return RuleResult(layout(*entries), (), [])
    except LayoutError as exc:  # pragma: no cover - the check above covers what Layout rejects
        return RuleResult(None, (), [str(exc)])


def identity_dims(splits: Sequence[Shape], names: Sequence[str]) -> DeviceDims:
    """One device-matrix dimension per dimension of the single input (Transpose, Softmax, Reshape)."""
    split = splits[0]
    return DeviceDims(list(split), [f"{names[0]} dimension {d}" for d in range(len(split))], [list(range(len(split)))])


def normalised_axis(axis: int | None, ndim: int) -> int | None:
    """`axis` (None = -1) as an index into `ndim` dimensions, None when out of range."""
    value = -1 if axis is None else axis
    if not -ndim <= value < ndim:
        return None
    return value % ndim


def first_dim_data_parallel(shapes: Sequence[Shape], out_shape: Shape, device_num: int) -> list[list[int]]:
    """Split, on every input holding it (aligned from the right, same size), output dimension 0."""
    strategies = [[1] * len(s) for s in shapes]
    for i, shape in enumerate(shapes):
        j = aligned(len(shape), len(out_shape), 0)
        if j is not None and shape[j] == out_shape[0]:
            strategies[i][j] = device_num
    return strategies
