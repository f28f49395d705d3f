"""Map a design's operators onto the seed-004 MLP and render their `.shard(...)` strategies.

The generated operator/layout-parallel scripts train seed 004's MNIST MLP (three MatMuls, two
ReLUs). Design operators land on the MLP slot of the same name, else on the next free slot of the
same type; a strategy that does not fit the MLP's shapes is skipped with a note (never rendered as
code that would fail to compile).
"""

from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass, field

from core.codegen.common import lit
from core.codegen.options import CodegenError, RunOptions
from core.design import Design, OperatorSpec, Sharding
from core.layout import LayoutError
from core.operators import analyze_design

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# Names the generated shard_network() function uses itself: a design layout may not shadow them.
RESERVED = frozenset({"net", "Layout"})
HIDDEN = 512


@dataclass(frozen=True)
class Slot:
    name: str
    type: str
    shapes: tuple[tuple[int, ...], ...]


def mlp_slots(global_batch: int) -> tuple[Slot, ...]:
    """Seed 004's network: x(B,784) @ fc1(784,512) -> relu -> @ fc2(512,512) -> relu -> @ fc3(512,10)."""
    b = global_batch
    return (
        Slot("matmul1", "MatMul", ((b, 784), (784, HIDDEN))),
        Slot("relu1", "ReLU", ((b, HIDDEN),)),
        Slot("matmul2", "MatMul", ((b, HIDDEN), (HIDDEN, HIDDEN))),
        Slot("relu2", "ReLU", ((b, HIDDEN),)),
        Slot("matmul3", "MatMul", ((b, HIDDEN), (HIDDEN, 10))),
    )


@dataclass
class StrategyPlan:
    """What shard_network() will contain: layout definitions, one line per sharded op, and notes."""

    layouts: list[tuple[str, str]] = field(default_factory=list)  # (variable, Layout(...) code)
    lines: list[tuple[str, str, str]] = field(default_factory=list)  # (slot, strategy code, source note)
    notes: list[str] = field(default_factory=list)


def check_identifier(name: object, what: str) -> str:
    if not isinstance(name, str) or not _IDENT.fullmatch(name) or keyword.iskeyword(name):
        raise CodegenError(f"{what} {name!r} is not a Python identifier (letters, digits, '_')")
    return name


def _assign(design: Design, slots: tuple[Slot, ...], notes: list[str]) -> dict[str, tuple[Slot, object]]:
    """slot name -> (slot, design operator) by name first, then by type in design order."""
    free = {s.name: s for s in slots}
    assigned: dict[str, tuple[Slot, object]] = {}
    pending = []
    for op in design.operators:
        if op.name in free and free[op.name].type == op.type:
            assigned[op.name] = (free.pop(op.name), op)
        else:
            pending.append(op)
    for op in pending:
        match = next((s for s in free.values() if s.type == op.type), None)
        if match is None:
            notes.append(f"design operator {op.name} ({op.type}) has no counterpart in the MLP: not applied")
            continue
        assigned[match.name] = (free.pop(match.name), op)
        notes.append(f"design operator {op.name} ({op.type}) drives MLP operator {match.name}")
    return assigned


def _fits_split(split: tuple[int, ...], shape: tuple[int, ...], device_num: int) -> str | None:
    if len(split) != len(shape):
        return f"has {len(split)} entries but the MLP input has {len(shape)} dimensions {shape}"
    for dim, (size, pieces) in enumerate(zip(shape, split, strict=True)):
        if size % pieces:
            return f"splits dimension {dim} (size {size}) into {pieces}, which does not divide it"
    if device_num % math.prod(split):
        return f"uses {math.prod(split)} devices, which does not divide the {device_num} devices"
    return None


def _tuple_code(splits: list[tuple[int, ...]]) -> str:
    return "(" + ", ".join(repr(tuple(s)) for s in splits) + ("," if len(splits) == 1 else "") + ")"


def plan_strategies(design: Design, options: RunOptions) -> StrategyPlan:
    """Strategies for operator_parallel (tuple) or layout_parallel (Layout) from the design file."""
    use_layouts = options.scenario == "layout_parallel"
    plan = StrategyPlan()
    global_batch = options.batch_size * options.device_num
    slots = mlp_slots(global_batch)
    if use_layouts:
        for name, spec in design.layouts.items():
            check_identifier(name, "layout name")
            if name in RESERVED:
                raise CodegenError(f"layout name {name!r} clashes with a name the generated script uses: rename it")
            try:
                layout = spec.build()
                layout.check_device_num(options.device_num)
            except LayoutError as exc:
                raise CodegenError(f"layout {name}: {exc}") from None
            rank_part = "" if spec.rank_list is None else f", rank_list={lit(list(spec.rank_list))}"
            plan.layouts.append((name, f"Layout({lit(layout.device_matrix)}, {lit(layout.alias_name)}{rank_part})"))
    assigned = _assign(design, slots, plan.notes)
    analyses = {a.name: a for a in analyze_design(design)}
    for slot in slots:
        if slot.name not in assigned:
            continue
        _, op = assigned[slot.name]
        strategy: tuple[Sharding, ...] | None = op.strategy  # type: ignore[attr-defined]
        if not strategy:
            plan.notes.append(f"{slot.name}: no strategy in the design, MindSpore picks the default")
            continue
        analysis = analyses.get(op.name)  # type: ignore[attr-defined]
        if analysis is not None and not analysis.valid:
            # MindSpore would refuse it at graph compile time: leave the operator unsharded instead.
            plan.notes.append(f"{slot.name}: strategy skipped, it is invalid: {analysis.problems[0]}")
            continue
        if len(strategy) != len(slot.shapes):
            plan.notes.append(f"{slot.name}: the design gives {len(strategy)} strategies for {len(slot.shapes)} inputs")
            continue
        parts: list[str] = []
        splits: list[tuple[int, ...]] = []
        problem = None
        for index, (sharding, shape) in enumerate(zip(strategy, slot.shapes, strict=True)):
            try:
                if sharding.is_layout:
                    tensor_layout = design.tensor_layout(sharding)
                    split = tensor_layout.split
                    parts.append(f"{sharding.layout}(" + ", ".join(lit(e) for e in tensor_layout.entries) + ")")
                else:
                    split = tuple(sharding.split or ())
                    parts.append(repr(split))
            except LayoutError as exc:
                problem = f"input {index}: {exc}"
                break
            splits.append(split)
            why = _fits_split(split, shape, options.device_num)
            if why:
                problem = f"input {index} strategy {split} {why}"
                break
        if problem:
            plan.notes.append(f"{slot.name}: strategy skipped, {problem}")
            continue
        if use_layouts and any(s.is_layout for s in strategy):
            code = "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
            out_code, out_note = _out_strategy_code(design, op, slot, options.device_num)  # type: ignore[arg-type]
            if out_note:
                plan.notes.append(f"{slot.name}: {out_note}")
            plan.lines.append((slot.name, code + out_code, f"design operator {op.name}"))  # type: ignore[attr-defined]
        else:
            derived = any(s.is_layout for s in strategy)
            note = f"design operator {op.name}" + (" (split counts of its Layout strategy)" if derived else "")  # type: ignore[attr-defined]
            plan.lines.append((slot.name, _tuple_code(splits), note))
    if not plan.lines and not use_layouts:
        plan.lines.extend(_derived_default(options.device_num, global_batch))
        plan.notes.append("no design operator fits the MLP: using a derived dp x mp strategy")
    return plan


def _out_strategy_code(design: Design, op: OperatorSpec, slot: Slot, device_num: int) -> tuple[str, str | None]:
    """`, (layout(...),)` for a MatMul's out_strategy (seed 004's DenseMatMulNet), or a note why not."""
    if op.out_strategy is None:
        return "", None
    if slot.type != "MatMul":
        return "", "out_strategy is only rendered for MatMul: skipped"
    out_shape = (slot.shapes[0][0], slot.shapes[1][1])
    try:
        tensor_layout = design.tensor_layout(op.out_strategy)
    except LayoutError as exc:
        return "", f"out_strategy skipped, {exc}"
    why = _fits_split(tensor_layout.split, out_shape, device_num)
    if why:
        return "", f"out_strategy skipped, it {why}"
    entries = ", ".join(lit(e) for e in tensor_layout.entries)
    return f", ({op.out_strategy.layout}({entries}),)", None


def _derived_default(device_num: int, global_batch: int) -> list[tuple[str, str, str]]:
    """Megatron-style column/row split over mp=2 (when the device count is even), dp = the rest."""
    mp = 2 if device_num % 2 == 0 and device_num > 1 else 1
    dp = device_num // mp
    if global_batch % dp:
        dp, mp = 1, device_num if HIDDEN % device_num == 0 else 1
    note = f"derived: dp={dp}, mp={mp}"
    return [
        ("matmul1", _tuple_code([(dp, 1), (1, mp)]), note + " (column split)"),
        ("relu1", _tuple_code([(dp, mp)]), note),
        ("matmul2", _tuple_code([(dp, mp), (mp, 1)]), note + " (row split, AllReduce)"),
        ("relu2", _tuple_code([(dp * mp, 1)]) if global_batch % (dp * mp) == 0 else _tuple_code([(dp, 1)]), note),
        ("matmul3", _tuple_code([(dp, 1), (1, 1)]), note),
    ]
