"""Walk a design's operators in order: resolve inputs, turn strategies into layouts, apply the rules.

Shapes, dtypes and layouts flow from the design's tensors and from earlier operators' outputs. The
family of each operator (`registry.family_of`) supplies the shape inference and the rule; this module
adds what every operator shares: input resolution, Layout vs tuple strategies, out_strategy, and the
redistribution of an input stored differently from how the operator needs it.

User mistakes never raise: they come back as `OperatorAnalysis.problems`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from core.sharding.catalog import OP_ARITY
from core.sharding.design import Design, OperatorSpec, Sharding
from core.sharding.layout import LayoutError, TensorLayout
from core.sharding.operators.base import (
    Communication,
    OpAttrs,
    OpContext,
    OperatorAnalysis,
    RuleResult,
    Shape,
    axes_text,
    entry_of,
    layout_text,
    local_bytes,
)
from core.sharding.operators.communication import rank_groups, redistribution, reduction
from core.sharding.operators.convert import convert, default_strategy, infer_output_shape
from core.sharding.operators.registry import family_of
from core.sharding.operators.repeat import with_repeat


@dataclass(frozen=True)
class _Source:
    shape: tuple[int, ...] | None
    dtype: str
    stored: TensorLayout | None
    origin: str


def attrs_of(op: OperatorSpec) -> OpAttrs:
    """The rule-relevant attributes of a design operator."""
    return OpAttrs(
        transpose_a=op.transpose_a,
        transpose_b=op.transpose_b,
        perm=op.perm,
        shape=op.shape,
        axis=op.axis,
        eps=op.eps,
    )


def _stored_layout(design: Design, sharding: Sharding | None, shape: tuple[int, ...], name: str) -> TensorLayout | None:
    """How a design tensor is stored, or None when it has no (usable) sharding of its own."""
    if sharding is None:
        return None
    try:
        if sharding.is_layout:
            tensor_layout = design.tensor_layout(sharding)
            tensor_layout.check_shape(shape, name)
            return tensor_layout
        converted = convert("ReLU", [sharding.split or ()], design.device_num, [shape], [name])
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


@dataclass(frozen=True)
class _Layouts:
    layouts: list[TensorLayout | None]
    problems: list[str]
    notes: list[str]


def _capitalised(text: str) -> str:
    return text[0].upper() + text[1:]


def _from_layout_strategies(
    design: Design, strategy: Sequence[Sharding], shapes: Sequence[Shape], names: Sequence[str]
) -> _Layouts:
    """Layout strategies as written: each must fit its input, all on one device matrix of device_num."""
    problems: list[str] = []
    layouts: list[TensorLayout | None] = [None] * len(names)
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
    return _Layouts(layouts, problems, [])


def _input_layouts(
    design: Design, op: OperatorSpec, shapes: Sequence[Shape], names: Sequence[str], sources: Sequence[_Source | None]
) -> _Layouts:
    """One TensorLayout per input: the strategy as written, converted from tuples, kept, or the default."""
    attrs = attrs_of(op)
    strategy = op.strategy
    family = family_of(op.type)
    stored = [s.stored if s is not None else None for s in sources]
    if strategy is None and family is not None and family.inherits_layout and all(stored):
        return _Layouts(
            list(stored),
            [],
            [f"no strategy given: like MindSpore, {op.type} keeps the layout its input already has"],
        )
    if strategy is not None and len(strategy) != len(names):
        return _Layouts(
            [None] * len(names),
            [f"give one strategy per input: {op.type} has {len(names)} input(s) but {len(strategy)} strategies"],
            [],
        )
    if strategy is not None and all(s.is_layout for s in strategy):
        return _from_layout_strategies(design, strategy, shapes, names)
    if strategy is not None and any(s.is_layout for s in strategy):
        return _Layouts(
            [None] * len(names),
            [
                "the strategy mixes Layout strategies and tuple strategies: MindSpore needs all inputs of one "
                "operator in the same form — use layouts for every input or split tuples for every input"
            ],
            [],
        )
    notes: list[str] = []
    if strategy is None:
        splits, note = default_strategy(op.type, shapes, design.device_num, attrs=attrs)
        notes.append(note)
    else:
        splits = [s.split or () for s in strategy]
    converted = convert(op.type, splits, design.device_num, shapes, names, attrs)
    if not converted.layouts:
        return _Layouts([None] * len(names), converted.problems, notes)
    return _Layouts(list(converted.layouts), converted.problems, [*notes, _capitalised(converted.explanation)])


def _apply_out_strategy(
    design: Design,
    op: OperatorSpec,
    out_shape: tuple[int, ...],
    natural: TensorLayout,
    reduce_axes: tuple[str, ...],
    dtype: str,
) -> tuple[TensorLayout | None, list[Communication], list[str]]:
    """MindSpore's out_strategy: reduce axes the output is split over become a ReduceScatter.

    Returns (output layout, communications, problems).
    """
    assert op.out_strategy is not None
    try:
        wanted = design.tensor_layout(op.out_strategy)
    except LayoutError as exc:
        return None, [], [f"out_strategy: {exc}"]
    problem = _shape_problem(wanted, out_shape, f"{op.name} output")
    if problem:
        return None, [], [f"out_strategy: {problem}"]
    if wanted.layout != natural.layout:
        return (
            None,
            [],
            [
                f"out_strategy uses {wanted.layout.to_code()} but the inputs use {natural.layout.to_code()}: "
                "build the output strategy from the same Layout"
            ],
        )
    comms: list[Communication] = []
    scattered = tuple(a for a in reduce_axes if a in wanted.used_axes)
    summed = tuple(a for a in reduce_axes if a not in scattered)
    if summed:
        comms.append(reduction("AllReduce", out_shape, natural, summed, dtype))
    if scattered:
        comms.append(reduction("ReduceScatter", out_shape, natural, scattered, dtype))
    # Beyond the scattered axes: a finer split is a local slice, a coarser one needs an AllGather.
    lost = tuple(a for a in natural.used_axes if a not in wanted.used_axes)
    if lost:
        comms.append(
            Communication(
                "AllGather",
                lost,
                rank_groups(natural.layout, lost),
                local_bytes(out_shape, wanted, dtype),
                f"the output strategy {layout_text(wanted)} no longer splits over {axes_text(lost)}, which the "
                f"natural output {layout_text(natural)} does, so the pieces are gathered",
            )
        )
    return wanted, comms, []


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

    family = family_of(op.type)
    if family is None:
        problems.append(f"unsupported operator type {op.type!r}: use one of {', '.join(OP_ARITY)}")
        return finish()
    if len(names) != OP_ARITY[op.type]:
        problems.append(f"{op.type} takes {OP_ARITY[op.type]} input(s) but {len(names)} are given")
        return finish()
    resolved = [_resolve(design, name, outputs) for name in names]
    sources = [source for source, _ in resolved]
    problems.extend(problem for _, problem in resolved if problem)
    dtype = sources[0].dtype if sources and sources[0] is not None else "float32"
    if problems:
        return finish(shapes=[s.shape or () if s else () for s in sources], dtype=dtype)
    attrs = attrs_of(op)
    ctx = OpContext(op.type, names, attrs=attrs)
    problems.extend(family.dtype_problems(ctx, [s.dtype if s else "float32" for s in sources]))
    shapes = [s.shape for s in sources if s is not None and s.shape is not None]
    out_shape, shape_problems = infer_output_shape(op.type, shapes, names, attrs=attrs)
    problems.extend(shape_problems)
    if out_shape is None:
        return finish(shapes=shapes, dtype=dtype)

    found = _input_layouts(design, op, shapes, names, sources)
    problems.extend(found.problems)
    notes.extend(found.notes)
    layouts = found.layouts
    if problems or any(tl is None for tl in layouts):
        return finish(shapes=shapes, layouts=layouts, out_shape=out_shape, dtype=dtype)
    ready = [tl for tl in layouts if tl is not None]

    ctx = replace(ctx, shapes=tuple(shapes), out_shape=out_shape)
    rule = family.rule(ctx, ready)
    notes.extend(family.notes(ctx))
    notes.extend(rule.notes)
    problems.extend(rule.problems)
    output, comms, out_problems = _output_communication(design, op, out_shape, rule, dtype)
    problems.extend(out_problems)
    if rule.output is not None:
        computed = rule.required or ready
        for source, given, required in zip(sources, ready, computed, strict=True):
            if source is None or source.shape is None or (source.stored is None and rule.required is None):
                continue
            held = source.stored if source.stored is not None else given
            comm = redistribution(source.shape, source.dtype, held, required, source.origin, op.name)
            if comm is not None:
                comms.append(comm)
    return finish(shapes, layouts, out_shape, output, comms, dtype)


def _output_communication(
    design: Design, op: OperatorSpec, out_shape: tuple[int, ...], rule: RuleResult, dtype: str
) -> tuple[TensorLayout | None, list[Communication], list[str]]:
    """The output layout and the collective summing partial results: out_strategy, MindSpore's default
    ReduceScatter (`rule.scatter_dim`), or an AllReduce. Returns (output, communications, problems)."""
    natural = rule.output
    if natural is None:
        return None, [], []
    if op.out_strategy is not None:
        return _apply_out_strategy(design, op, out_shape, natural, rule.reduce_axes, dtype)
    if not rule.reduce_axes:
        return natural, [], []
    why = rule.reduce_reason
    if rule.scatter_dim is not None:
        entries = list(natural.entries)
        before = [a for a in natural.dim_axes(rule.scatter_dim)]
        entries[rule.scatter_dim] = entry_of([*before, *rule.reduce_axes])
        scattered = natural.layout(*entries)
        comm = reduction("ReduceScatter", out_shape, natural, rule.reduce_axes, dtype, why, scatter_by_default=True)
        return scattered, [comm], []
    return natural, [reduction("AllReduce", out_shape, natural, rule.reduce_axes, dtype, why)], []


def _safe_analyze(design: Design, op: OperatorSpec, outputs: Mapping[str, OperatorAnalysis]) -> OperatorAnalysis:
    """The one crash guard of the operator rules: an unexpected error becomes this operator's problem, so
    every caller (the Designer, the CLI, the Planner, codegen) keeps working and the other operators are
    still analysed."""
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
    """Every operator in order; shapes, dtypes and layouts flow from tensors and earlier operators.

    A repeat block is analysed once (one layer): its operators carry `layers` = the repeat count and a
    note, their communication is per layer, and the reads of `carry` are checked against what layers
    2..N really get there, the output of the block's `last` operator.
    """
    outputs: dict[str, OperatorAnalysis] = {}
    results: list[OperatorAnalysis] = []
    for op in design.operators:
        analysis = _safe_analyze(design, op, outputs)
        results.append(analysis)
        outputs.setdefault(op.name, analysis)
    return with_repeat(design, results)


def analyze_operator(design: Design, op_name: str) -> OperatorAnalysis:
    """One operator (the whole design is analysed, for earlier outputs and the repeat block)."""
    for analysis in analyze_design(design):
        if analysis.name == op_name:
            return analysis
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
