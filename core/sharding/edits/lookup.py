"""Finding what an edit changes, and putting the changed piece back: one helper per kind of piece.

Every lookup raises `EditError` naming what is missing, so an edit on a stale name (a widget of a
removed operator) is refused with a sentence instead of a KeyError.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from core.sharding.design import Design, LayoutSpec, OperatorSpec, Sharding, TensorSpec
from core.sharding.edits.text import EditError
from core.sharding.layout import DimEntry


def layout_spec(design: Design, layout_name: str) -> LayoutSpec:
    if layout_name not in design.layouts:
        raise EditError(f"there is no layout called {layout_name!r}")
    return design.layouts[layout_name]


def tensor_spec(design: Design, name: str) -> TensorSpec:
    if name not in design.tensors:
        raise EditError(f"there is no tensor called {name!r}")
    return design.tensors[name]


def operator_index(design: Design, name: str) -> int:
    """Position of the operator called `name` in the design's operator chain."""
    for i, op in enumerate(design.operators):
        if op.name == name:
            return i
    raise EditError(f"there is no operator called {name!r}")


def operator_of(design: Design, name: str) -> OperatorSpec:
    """The operator called `name` (the one lookup every operator edit starts with)."""
    return design.operators[operator_index(design, name)]


def input_index(op: OperatorSpec, index: int) -> int:
    """`index` if the operator has such an input, else EditError (a widget of a changed operator)."""
    if not 0 <= int(index) < len(op.inputs):
        raise EditError(f"{op.name} has no input {index}: it has {len(op.inputs)}")
    return int(index)


def replace_operator(design: Design, op: OperatorSpec) -> Design:
    """The design with the operator of the same name replaced by `op`."""
    i = operator_index(design, op.name)
    return replace(design, operators=(*design.operators[:i], op, *design.operators[i + 1 :]))


def taken_names(design: Design) -> list[str]:
    """Tensor and operator names: they share one namespace (an operator input reads either)."""
    return [*design.tensors, *(o.name for o in design.operators)]


def new_name(existing: Iterable[str], stem: str) -> str:
    """`stem`, or `stem2`, `stem3`, ... : the first not in `existing`."""
    taken = set(existing)
    if stem not in taken:
        return stem
    i = 2
    while f"{stem}{i}" in taken:
        i += 1
    return f"{stem}{i}"


def map_every_sharding(design: Design, fix: Callable[[Sharding], Sharding]) -> Design:
    """Apply `fix` to every sharding in the design: tensors, operator input strategies, out_strategies
    (none stays none: a replicated tensor, an operator without an out_strategy)."""

    def keep_none(sharding: Sharding | None) -> Sharding | None:
        return None if sharding is None else fix(sharding)

    tensors = {n: replace(t, sharding=keep_none(t.sharding)) for n, t in design.tensors.items()}
    operators = tuple(
        replace(
            op,
            strategy=None if op.strategy is None else tuple(fix(s) for s in op.strategy),
            out_strategy=keep_none(op.out_strategy),
        )
        for op in design.operators
    )
    return replace(design, tensors=tensors, operators=operators)


def map_layout_entries(
    design: Design, layout_name: str, fn: Callable[[Sequence[DimEntry]], tuple[DimEntry, ...]]
) -> Design:
    """Apply fn(entries) to every Layout strategy (tensors and operator inputs) that uses `layout_name`."""

    def fix(sharding: Sharding) -> Sharding:
        if sharding.layout != layout_name or sharding.map is None:
            return sharding
        return replace(sharding, map=fn(sharding.map))

    return map_every_sharding(design, fix)
