"""Edits of the Layout Designer: every edit takes a `Design` and returns a new one.

The page only wires widgets to these functions, so the whole editor is testable without Streamlit.
Edits never raise on a "bad" design (a size that does not divide, a product that does not match the
device count): the design may be invalid while the user works, and `designer_view.collect_problems`
says what is wrong and how to fix it. Edits raise `EditError` only for input that cannot be stored at
all (a name that is not an identifier, a shape that is not numbers), with a message the page shows as is.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.designer_view import (
    EditError,
    assign_axes,
    check_identifier,
    fit_map,
    parse_int_list,
    parse_rank_list,
    parse_shape,
    parse_split,
    rename_in_entries,
    strip_aliases,
)
from core.sharding.catalog import OP_ARITY
from core.sharding.design import (
    FLOAT_DTYPES,
    LOSSES,
    MAX_DEVICES,
    MAX_DIMS,
    MAX_REPEAT,
    ROLES,
    Design,
    DesignError,
    LayoutSpec,
    OperatorSpec,
    RepeatSpec,
    Sharding,
    TensorSpec,
    load_design,
    save_design,
)
from core.sharding.layout import INTERLEAVED, NONE, DimEntry, LayoutError
from core.sharding.operators import analyze_design
from core.sharding.placement import DTYPE_BYTES
from core.workspace import EXAMPLES_DIR, WorkspaceError, child

__all__ = ["EditError"]  # re-exported: callers catch edits.EditError


# ---------------------------------------------------------------------------------------------
# presets and loading
# ---------------------------------------------------------------------------------------------
DEFAULT_EXAMPLE = "seed004_dense_matmul.json"


@dataclass(frozen=True)
class Preset:
    label: str
    device_matrix: tuple[int, ...]
    alias_name: tuple[str, ...]

    @property
    def device_num(self) -> int:
        return math.prod(self.device_matrix)


PRESETS: dict[str, Preset] = {
    "dp_sp_mp": Preset("dp / sp / mp  (2, 2, 2) — 8 cards", (2, 2, 2), ("dp", "sp", "mp")),
    "tp8": Preset("tp  (8,) — 8 cards", (8,), ("tp",)),
    "dp_mp": Preset("dp × mp  (2, 4) — 8 cards", (2, 4), ("dp", "mp")),
    "dp8": Preset("dp  (8,) — plain data parallel", (8,), ("dp",)),
    "cluster128": Preset("dp / sp / mp  (8, 4, 4) — 128 cards", (8, 4, 4), ("dp", "sp", "mp")),
}


def default_design() -> Design:
    """Seed 004's DenseMatMulNet: what a first visit shows."""
    try:
        return load_design(EXAMPLES_DIR / DEFAULT_EXAMPLE, strict=False)
    except DesignError:
        return Design(
            name="seed004_dense_matmul",
            layouts={"layout": LayoutSpec((2, 2, 2), ("dp", "sp", "mp"))},
            tensors={"x": TensorSpec((2, 4), "float32", Sharding("layout", ("mp", ("sp", "dp"))))},
        )


def list_designs(folder: Path) -> list[str]:
    """JSON design files in a folder, by name (a missing folder has none)."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.glob("*.json") if p.is_file())


def design_file_name(name: str) -> str:
    """The file name a design is saved under: its name + .json, checked so it cannot escape."""
    name = name.strip()
    if not name.endswith(".json"):
        name += ".json"
    return name


def load_from_folder(folder: Path, file_name: str) -> tuple[Design | None, list[str]]:
    """(design, []) or (None, ["$.path: message", ...]); never raises."""
    try:
        path = child(folder, file_name, "design file")
    except WorkspaceError as exc:
        return None, [str(exc)]
    try:
        return load_design(path, strict=False), []
    except DesignError as exc:
        return None, [f"{p.path}: {p.message}" for p in exc.problems]


def save_to_folder(design: Design, folder: Path, file_name: str) -> Path:
    """Save under folder/<name>.json; raises WorkspaceError for names that would escape."""
    folder.mkdir(parents=True, exist_ok=True)
    return save_design(design, child(folder, design_file_name(file_name), "design file"))




# ---------------------------------------------------------------------------------------------
# design-level edits
# ---------------------------------------------------------------------------------------------
def set_device_num(design: Design, device_num: int) -> Design:
    if not 1 <= int(device_num) <= MAX_DEVICES:
        raise EditError(f"device count {device_num} is out of range: use 1..{MAX_DEVICES}")
    return replace(design, device_num=int(device_num))


def set_name(design: Design, name: str) -> Design:
    name = name.strip()
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", name):
        raise EditError(
            f"design name {name!r} is not allowed: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (it names the file)"
        )
    return replace(design, name=name)


def set_description(design: Design, text: str) -> Design:
    if len(text) > 2000:
        raise EditError("description: at most 2000 characters")
    return replace(design, description=text)


def _map_every_sharding(design: Design, fix: Callable[[Sharding | None], Sharding | None]) -> Design:
    """Apply `fix` to every sharding in the design: tensors, operator input strategies, out_strategies."""
    tensors = {n: replace(t, sharding=fix(t.sharding)) for n, t in design.tensors.items()}
    operators = tuple(
        replace(
            op,
            strategy=None if op.strategy is None else tuple(fix(s) for s in op.strategy),  # type: ignore[misc]
            out_strategy=fix(op.out_strategy),
        )
        for op in design.operators
    )
    return replace(design, tensors=tensors, operators=operators)


def _map_shardings(design: Design, layout_name: str, fn: Any) -> Design:
    """Apply fn(entries) to every Layout strategy (tensors and operator inputs) that uses `layout_name`."""

    def fix(sharding: Sharding | None) -> Sharding | None:
        if sharding is None or sharding.layout != layout_name or sharding.map is None:
            return sharding
        return replace(sharding, map=fn(sharding.map))

    return _map_every_sharding(design, fix)




# ---------------------------------------------------------------------------------------------
# layouts
# ---------------------------------------------------------------------------------------------
def _spec(design: Design, layout_name: str) -> LayoutSpec:
    if layout_name not in design.layouts:
        raise EditError(f"there is no layout called {layout_name!r}")
    return design.layouts[layout_name]


def _new_name(existing: Iterable[str], stem: str) -> str:
    taken = set(existing)
    if stem not in taken:
        return stem
    i = 2
    while f"{stem}{i}" in taken:
        i += 1
    return f"{stem}{i}"


def add_layout(design: Design, name: str | None = None) -> tuple[Design, str]:
    """A new layout covering all devices on one axis (always valid); returns (design, its name)."""
    name = check_identifier(name, "layout name") if name else _new_name(design.layouts, "layout")
    if name in design.layouts:
        raise EditError(f"a layout called {name!r} already exists: pick another name")
    return design.with_layout(name, LayoutSpec((design.device_num,), ("dp",))), name


def remove_layout(design: Design, name: str) -> Design:
    """Remove a layout; tensors that used it become replicated, operator inputs lose their strategy."""
    _spec(design, name)
    layouts = {n: s for n, s in design.layouts.items() if n != name}
    tensors = {
        n: replace(t, sharding=None) if t.sharding is not None and t.sharding.layout == name else t
        for n, t in design.tensors.items()
    }
    operators = []
    for op in design.operators:
        if op.strategy and any(s.layout == name for s in op.strategy):
            op = replace(op, strategy=None)
        if op.out_strategy is not None and op.out_strategy.layout == name:
            op = replace(op, out_strategy=None)
        operators.append(op)
    return replace(design, layouts=layouts, tensors=tensors, operators=tuple(operators))


def rename_layout(design: Design, old: str, new: str) -> Design:
    spec = _spec(design, old)
    new = check_identifier(new, "layout name")
    if new == old:
        return design
    if new in design.layouts:
        raise EditError(f"a layout called {new!r} already exists: pick another name")
    layouts = {(new if n == old else n): s for n, s in design.layouts.items()}
    layouts[new] = spec

    def fix(sharding: Sharding | None) -> Sharding | None:
        return replace(sharding, layout=new) if sharding is not None and sharding.layout == old else sharding

    return _map_every_sharding(replace(design, layouts=layouts), fix)


def _physical(spec: LayoutSpec) -> list[tuple[str, int]]:
    return [(a, s) for a, s in zip(spec.alias_name, spec.device_matrix, strict=True) if a != INTERLEAVED]


def _with_axes(design: Design, layout_name: str, axes: Sequence[tuple[str, int]], interleave: int | None) -> Design:
    spec = _spec(design, layout_name)
    names = tuple(a for a, _ in axes) + ((INTERLEAVED,) if interleave else ())
    sizes = tuple(int(s) for _, s in axes) + ((int(interleave),) if interleave else ())
    return design.with_layout(layout_name, replace(spec, device_matrix=sizes, alias_name=names))


def interleave_of(spec: LayoutSpec) -> int | None:
    """Size of the virtual interleaved_parallel axis, or None without one."""
    return spec.device_matrix[-1] if spec.alias_name and spec.alias_name[-1] == INTERLEAVED else None


def add_axis(design: Design, layout_name: str, alias: str | None = None, size: int = 1) -> Design:
    """Append an axis (before interleaved_parallel). A size-1 axis keeps the device count unchanged."""
    spec = _spec(design, layout_name)
    axes = _physical(spec)
    alias = check_identifier(alias, "axis name") if alias else _new_name([a for a, _ in axes], "ax")
    if alias in spec.alias_name:
        raise EditError(f"axis name {alias!r} is already used in {layout_name}: each axis needs its own name")
    if size < 1:
        raise EditError(f"axis size {size} is too small: sizes must be >= 1")
    return _with_axes(design, layout_name, [*axes, (alias, size)], interleave_of(spec))


def remove_axis(design: Design, layout_name: str, alias: str) -> Design:
    """Remove an axis and drop it from every map that uses this layout."""
    spec = _spec(design, layout_name)
    axes = _physical(spec)
    if alias not in [a for a, _ in axes]:
        raise EditError(f"{layout_name} has no axis {alias!r}")
    if len(axes) == 1:
        raise EditError("a layout needs at least one axis: add another one before removing this")
    kept = [(a, s) for a, s in axes if a != alias]
    design = _with_axes(design, layout_name, kept, interleave_of(spec))
    return _map_shardings(design, layout_name, lambda m: strip_aliases(m, design.layouts[layout_name].alias_name))


def rename_axis(design: Design, layout_name: str, old: str, new: str) -> Design:
    """Rename an axis everywhere it is used (tensor maps and operator strategies of this layout)."""
    spec = _spec(design, layout_name)
    new = new.strip()
    if new == old:
        return design
    if new == INTERLEAVED:
        raise EditError("'interleaved_parallel' is reserved: use the interleaved switch below instead")
    check_identifier(new, "axis name")
    if new in spec.alias_name:
        raise EditError(f"axis name {new!r} is already used in {layout_name}: each axis needs its own name")
    axes = [(new if a == old else a, s) for a, s in _physical(spec)]
    design = _with_axes(design, layout_name, axes, interleave_of(spec))
    return _map_shardings(design, layout_name, lambda m: rename_in_entries(m, old, new))


def set_axis_size(design: Design, layout_name: str, alias: str, size: int) -> Design:
    """Resize an axis; a rank_list that no longer fits is kept and reported live (not silently lost)."""
    spec = _spec(design, layout_name)
    if int(size) < 1:
        raise EditError(f"axis size {size} is too small: sizes must be >= 1")
    axes = [(a, int(size) if a == alias else s) for a, s in _physical(spec)]
    return _with_axes(design, layout_name, axes, interleave_of(spec))


def move_axis(design: Design, layout_name: str, alias: str, delta: int) -> Design:
    """Move an axis up (delta -1, outer) or down (+1, inner); the ends stay put."""
    spec = _spec(design, layout_name)
    axes = _physical(spec)
    names = [a for a, _ in axes]
    if alias not in names:
        raise EditError(f"{layout_name} has no axis {alias!r}")
    i = names.index(alias)
    j = min(max(i + delta, 0), len(axes) - 1)
    axes.insert(j, axes.pop(i))
    return _with_axes(design, layout_name, axes, interleave_of(spec))


def set_interleave(design: Design, layout_name: str, size: int | None) -> Design:
    """Add / resize / remove (None or < 2) the virtual 'interleaved_parallel' last axis."""
    spec = _spec(design, layout_name)
    size = int(size) if size and int(size) >= 2 else None
    design = _with_axes(design, layout_name, _physical(spec), size)
    if size is None:
        design = _map_shardings(design, layout_name, lambda m: strip_aliases(m, design.layouts[layout_name].alias_name))
    return design


def set_rank_list(design: Design, layout_name: str, text: str) -> Design:
    """Store a rank_list typed by the user (empty = default order). Length/duplicates are reported live."""
    spec = _spec(design, layout_name)
    return design.with_layout(layout_name, replace(spec, rank_list=parse_rank_list(text)))


def apply_preset(design: Design, layout_name: str, preset_key: str) -> Design:
    """Replace a layout's axes by a preset and set the device count to the preset's; maps keep the aliases
    the preset still has (so dp/sp/mp maps survive a 128-card preset)."""
    preset = PRESETS[preset_key]
    spec = _spec(design, layout_name)
    design = design.with_layout(
        layout_name, replace(spec, device_matrix=preset.device_matrix, alias_name=preset.alias_name, rank_list=None)
    )
    design = replace(design, device_num=preset.device_num)
    return _map_shardings(design, layout_name, lambda m: strip_aliases(m, preset.alias_name))




# ---------------------------------------------------------------------------------------------
# tensors
# ---------------------------------------------------------------------------------------------
def _tensor(design: Design, name: str) -> TensorSpec:
    if name not in design.tensors:
        raise EditError(f"there is no tensor called {name!r}")
    return design.tensors[name]


def add_tensor(
    design: Design, name: str | None = None, shape: Sequence[int] = (8, 8), dtype: str = "float32"
) -> tuple[Design, str]:
    """A new tensor, laid out on the first layout (every dim unsplit) if there is one."""
    name = (
        check_identifier(name, "tensor name")
        if name
        else _new_name([*design.tensors, *(o.name for o in design.operators)], "t")
    )
    if name in design.tensors or name in {o.name for o in design.operators}:
        raise EditError(f"{name!r} is already a tensor or operator name: pick another name")
    if dtype not in DTYPE_BYTES:
        raise EditError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPE_BYTES)}")
    first = next(iter(design.layouts), None)
    sharding = Sharding(first, (NONE,) * len(shape)) if first else None
    return design.with_tensor(name, TensorSpec(tuple(shape), dtype, sharding)), name


def remove_tensor(design: Design, name: str) -> Design:
    _tensor(design, name)
    return replace(design, tensors={n: t for n, t in design.tensors.items() if n != name})


def rename_tensor(design: Design, old: str, new: str) -> Design:
    """Rename a tensor and every operator input that reads it."""
    spec = _tensor(design, old)
    new = check_identifier(new, "tensor name")
    if new == old:
        return design
    if new in design.tensors or new in {o.name for o in design.operators}:
        raise EditError(f"{new!r} is already a tensor or operator name: pick another name")
    tensors = {(new if n == old else n): (spec if n == old else t) for n, t in design.tensors.items()}
    operators = tuple(replace(op, inputs=tuple(new if i == old else i for i in op.inputs)) for op in design.operators)
    repeat = design.repeat
    if repeat is not None and repeat.carry == old:
        repeat = replace(repeat, carry=new)
    return replace(design, tensors=tensors, operators=operators, repeat=repeat)


def set_tensor_role(design: Design, name: str, role: str | None) -> Design:
    """"input" (the dataset feeds it), "weight" (trained) or None (the default: `Design.tensor_role`)."""
    spec = _tensor(design, name)
    if role is not None and role not in ROLES:
        raise EditError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
    if role == "weight" and spec.dtype not in FLOAT_DTYPES:
        raise EditError(
            f"{name} is {spec.dtype}: a weight is trained, so it needs a float dtype ({', '.join(FLOAT_DTYPES)})"
        )
    return design.with_tensor(name, replace(spec, role=role))


def set_tensor_shape(design: Design, name: str, shape: Sequence[int]) -> Design:
    """Change the shape; a Layout map is padded with 'None' / cut to the new number of dimensions."""
    spec = _tensor(design, name)
    shape = tuple(int(s) for s in shape)
    sharding = spec.sharding
    if sharding is not None and sharding.map is not None:
        sharding = replace(sharding, map=fit_map(sharding.map, len(shape)))
    elif sharding is not None and sharding.split is not None:
        sharding = replace(
            sharding, split=tuple(list(sharding.split)[: len(shape)] + [1] * max(0, len(shape) - len(sharding.split)))
        )
    return design.with_tensor(name, replace(spec, shape=shape, sharding=sharding))


def set_tensor_dtype(design: Design, name: str, dtype: str) -> Design:
    if dtype not in DTYPE_BYTES:
        raise EditError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPE_BYTES)}")
    return design.with_tensor(name, replace(_tensor(design, name), dtype=dtype))


def _reshard_tensor(design: Design, name: str, sharding: Sharding | None) -> Design:
    """Give a tensor a new sharding; operator inputs that read it with its old sharding follow along.

    An operator strategy equal to the tensor's sharding means "use the tensor as it is stored", so
    a drag in the Tensors tab reaches the operators (and the generated `.shard(...)` code); a strategy
    the user set differently on the operator stays as it is.
    """
    spec = _tensor(design, name)
    old = spec.sharding
    design = design.with_tensor(name, replace(spec, sharding=sharding))
    if old is None or sharding is None:
        return design
    operators = []
    for op in design.operators:
        if op.strategy is not None and name in op.inputs:
            strategy = tuple(
                sharding if source == name and current == old else current
                for source, current in zip(op.inputs, op.strategy, strict=False)
            )
            op = replace(op, strategy=strategy)
        operators.append(op)
    return replace(design, operators=tuple(operators))


def set_tensor_layout(design: Design, name: str, layout_name: str | None) -> Design:
    """Put a tensor on a layout (keeping the aliases that layout has), or make it replicated (None)."""
    spec = _tensor(design, name)
    if layout_name is None:
        return _reshard_tensor(design, name, None)
    target = _spec(design, layout_name)
    old = spec.sharding.map if spec.sharding is not None and spec.sharding.map is not None else ()
    entries = strip_aliases(fit_map(old, len(spec.shape)), target.alias_name)
    return _reshard_tensor(design, name, Sharding(layout_name, entries))


def set_tensor_split(design: Design, name: str, split: Sequence[int]) -> Design:
    """A tuple strategy for a tensor (MindSpore builds the device matrix itself)."""
    return _reshard_tensor(design, name, Sharding(split=tuple(int(s) for s in split)))


def set_tensor_map(design: Design, name: str, entries: Sequence[DimEntry]) -> Design:
    spec = _tensor(design, name)
    if spec.sharding is None or spec.sharding.layout is None:
        raise EditError(f"{name} is not on a layout: pick a layout for it first")
    return _reshard_tensor(design, name, replace(spec.sharding, map=fit_map(entries, len(spec.shape))))


def set_dim_axes(design: Design, name: str, dim: int, axes: Sequence[str]) -> Design:
    """The click path: dimension `dim` is split over `axes` (outer -> inner); they leave other dims."""
    spec = _tensor(design, name)
    if spec.sharding is None or spec.sharding.map is None:
        raise EditError(f"{name} is not on a layout: pick a layout for it first")
    return _reshard_tensor(design, name, replace(spec.sharding, map=assign_axes(spec.sharding.map, dim, axes)))




# ---------------------------------------------------------------------------------------------
# operators: queries
# ---------------------------------------------------------------------------------------------
def op_index(design: Design, name: str) -> int:
    for i, op in enumerate(design.operators):
        if op.name == name:
            return i
    raise EditError(f"there is no operator called {name!r}")


def op_sources(design: Design, before: str | None = None) -> list[str]:
    """What an operator input may read: tensors, then operators earlier than `before`."""
    sources = list(design.tensors)
    for op in design.operators:
        if op.name == before:
            break
        sources.append(op.name)
    return sources


def input_shapes(design: Design, op_name: str, analyses: Sequence[Any] | None = None) -> list[tuple[int, ...] | None]:
    """Shapes of an operator's inputs: tensors from the design, operator outputs from `analyses`."""
    outputs: dict[str, tuple[int, ...] | None] = {}
    for analysis in analyses or ():
        outputs[analysis.name] = tuple(analysis.output_shape) if analysis.output_shape is not None else None
    op = design.operators[op_index(design, op_name)]
    shapes: list[tuple[int, ...] | None] = []
    for source in op.inputs:
        if source in design.tensors:
            shapes.append(design.tensors[source].shape)
        else:
            shapes.append(outputs.get(source))
    return shapes


def source_ndim(design: Design, source: str, _depth: int = 0) -> int | None:
    """Number of dimensions of a tensor or of an operator's output, without the full analysis:
    MatMul -> 2, BatchMatMul / binary ops -> the larger input rank, unary ops -> their input's."""
    if source in design.tensors:
        return len(design.tensors[source].shape)
    if _depth > len(design.operators):
        return None
    for op in design.operators:
        if op.name == source:
            return _output_ndim(op, [source_ndim(design, i, _depth + 1) for i in op.inputs])
    return None


def _output_ndim(op: OperatorSpec, ranks: Sequence[int | None]) -> int | None:
    """An operator's output rank from its inputs' ranks, by type."""
    if op.type == "MatMul":
        return 2
    if op.type == "Reshape":
        return len(op.shape) if op.shape else None
    if op.type == "Gather":  # indices' dims + the table's columns
        return None if ranks[1] is None else ranks[1] + 1
    if op.type in ("Transpose", "Softmax", "RMSNorm"):
        return ranks[0]
    known = [r for r in ranks if r is not None]
    return max(known) if known else None


def input_ndims(design: Design, op_name: str, analyses: Sequence[Any] | None = None) -> list[int | None]:
    op = design.operators[op_index(design, op_name)]
    result: list[int | None] = []
    for i, shape in enumerate(input_shapes(design, op_name, analyses)):
        if shape is not None:
            result.append(len(shape))
        elif source_ndim(design, op.inputs[i]) is not None:
            result.append(source_ndim(design, op.inputs[i]))
        elif op.strategy is not None and i < len(op.strategy):
            s = op.strategy[i]
            result.append(len(s.map) if s.map is not None else len(s.split or ()))
        else:
            result.append(2 if op.type in ("MatMul", "BatchMatMul") else None)
    return result




# ---------------------------------------------------------------------------------------------
# operators: edits
# ---------------------------------------------------------------------------------------------
def add_operator(design: Design, op_type: str, inputs: Sequence[str], name: str | None = None) -> tuple[Design, str]:
    if op_type not in OP_ARITY:
        raise EditError(f"unsupported operator {op_type!r}: use one of {', '.join(OP_ARITY)}")
    taken = [*design.tensors, *(o.name for o in design.operators)]
    name = check_identifier(name, "operator name") if name else _new_name(taken, op_type.lower())
    if name in taken:
        raise EditError(f"{name!r} is already a tensor or operator name: pick another name")
    if len(inputs) != OP_ARITY[op_type]:
        raise EditError(f"{op_type} takes {OP_ARITY[op_type]} input(s), got {len(inputs)}")
    known = set(op_sources(design))
    for source in inputs:
        if source not in known:
            raise EditError(f"input {source!r} is not a tensor or an earlier operator")
    op = OperatorSpec(name=name, type=op_type, inputs=tuple(inputs), **_default_attributes(design, op_type, inputs))
    return replace(design, operators=(*design.operators, op)), name


def _default_attributes(design: Design, op_type: str, inputs: Sequence[str]) -> dict[str, Any]:
    """What a new Transpose / Reshape starts with, so the design stays loadable: swap the last two
    dimensions; keep the input's shape (edit it afterwards)."""
    if op_type == "Transpose":
        ndim = source_ndim(design, inputs[0]) or 2
        return {"perm": (*range(ndim - 2), ndim - 1, ndim - 2) if ndim >= 2 else (0,)}
    if op_type == "Reshape":
        shape = source_shape(design, inputs[0])
        return {"shape": shape if shape else (1,)}
    return {}


def source_shape(design: Design, source: str) -> tuple[int, ...] | None:
    """The global shape of a tensor or of an operator's output (None when the analysis cannot tell)."""
    if source in design.tensors:
        return tuple(design.tensors[source].shape)
    for analysis in analyze_design(design):
        if analysis.name == source:
            return None if analysis.output_shape is None else tuple(analysis.output_shape)
    return None


def set_loss(design: Design, loss: str) -> Design:
    """How the network's output (the last operator) is trained: "mse" or "cross_entropy"."""
    if loss not in LOSSES:
        raise EditError(f"unknown loss {loss!r}: use one of {', '.join(LOSSES)}")
    return replace(design, loss=loss)


def set_repeat(design: Design, count: int | None, first: str = "", last: str = "", carry: str = "") -> Design:
    """Operators first..last as one layer repeated `count` times (None: no repeat block).

    References are stored as given and checked live by `design_problems` (paths `$.repeat.*`)."""
    if count is None:
        return replace(design, repeat=None)
    if not 1 <= int(count) <= MAX_REPEAT:
        raise EditError(f"repeat count {count} is out of range: use 1..{MAX_REPEAT}")
    return replace(design, repeat=RepeatSpec(int(count), first, last, carry))


def set_operator_perm(design: Design, name: str, text: str) -> Design:
    """Transpose's perm as typed, e.g. `0, 2, 1, 3`: every dimension exactly once."""
    op = design.operators[op_index(design, name)]
    perm = parse_int_list(text, "perm", minimum=0)
    if sorted(perm) != list(range(len(perm))):
        raise EditError(f"perm: {perm} is not a permutation: give every dimension 0..{len(perm) - 1} exactly once")
    return _replace_op(design, replace(op, perm=perm))


def set_operator_shape(design: Design, name: str, text: str) -> Design:
    """Reshape's global target shape as typed, e.g. `8, 128, 32, 128`."""
    op = design.operators[op_index(design, name)]
    return _replace_op(design, replace(op, shape=parse_shape(text)))


def set_operator_axis(design: Design, name: str, axis: int) -> Design:
    """Softmax's normalised dimension (negative counts from the end)."""
    op = design.operators[op_index(design, name)]
    if not -MAX_DIMS <= int(axis) < MAX_DIMS:
        raise EditError(f"axis {axis} is out of range: use {-MAX_DIMS}..{MAX_DIMS - 1}")
    return _replace_op(design, replace(op, axis=int(axis)))


def set_operator_eps(design: Design, name: str, eps: float) -> Design:
    """RMSNorm's epsilon: a small positive number."""
    op = design.operators[op_index(design, name)]
    if not 0 < float(eps) < 1:
        raise EditError(f"eps {eps} must be a small positive number such as 1e-6")
    return _replace_op(design, replace(op, eps=float(eps)))


def remove_operator(design: Design, name: str) -> Design:
    i = op_index(design, name)
    return replace(design, operators=design.operators[:i] + design.operators[i + 1 :])


def _replace_op(design: Design, op: OperatorSpec) -> Design:
    i = op_index(design, op.name)
    return replace(design, operators=(*design.operators[:i], op, *design.operators[i + 1 :]))


def set_operator_input(design: Design, name: str, index: int, source: str) -> Design:
    op = design.operators[op_index(design, name)]
    if source not in op_sources(design, before=name):
        raise EditError(f"input {source!r} is not a tensor or an operator before {name}")
    inputs = list(op.inputs)
    inputs[index] = source
    return _replace_op(design, replace(op, inputs=tuple(inputs)))


def set_operator_strategy(design: Design, name: str, index: int, sharding: Sharding | None) -> Design:
    """Set input `index`'s strategy. All None -> the operator has no strategy (MindSpore picks one).
    Inputs without a strategy get a tuple of 1s of `default_ndim` when another input is set."""
    op = design.operators[op_index(design, name)]
    current: list[Sharding | None] = list(op.strategy) if op.strategy is not None else [None] * len(op.inputs)
    current += [None] * (len(op.inputs) - len(current))
    current[index] = sharding
    if all(s is None for s in current):
        return _replace_op(design, replace(op, strategy=None))
    ndims = input_ndims(design, name)
    filled = tuple(s if s is not None else Sharding(split=(1,) * max(ndims[i] or 1, 1)) for i, s in enumerate(current))
    return _replace_op(design, replace(op, strategy=filled))


def set_operator_transpose(design: Design, name: str, which: str, value: bool) -> Design:
    op = design.operators[op_index(design, name)]
    if which not in ("transpose_a", "transpose_b"):
        raise EditError(f"unknown flag {which!r}")
    return _replace_op(design, replace(op, **{which: bool(value)}))


def _op_input_sharding(design: Design, op: OperatorSpec, index: int) -> Sharding | None:
    if op.strategy is None or index >= len(op.strategy):
        return None
    return op.strategy[index]


def enable_operator_strategy(design: Design, name: str, on: bool) -> Design:
    """On: every input gets an unsplit tuple strategy to start from; off: MindSpore chooses (None)."""
    op = design.operators[op_index(design, name)]
    if not on:
        return _replace_op(design, replace(op, strategy=None))
    if op.strategy is not None:
        return design
    ndims = input_ndims(design, name)
    return _replace_op(design, replace(op, strategy=tuple(Sharding(split=(1,) * (n or 1)) for n in ndims)))


def set_operator_input_mode(design: Design, name: str, index: int, mode: str, layout_name: str | None = None) -> Design:
    """Switch one input between a Layout strategy ('layout') and a tuple strategy ('tuple').

    Layout -> tuple keeps the split counts; tuple -> Layout starts unsplit on `layout_name` (default: the
    first layout)."""
    op = design.operators[op_index(design, name)]
    ndim = input_ndims(design, name)[index] or 1
    current = _op_input_sharding(design, op, index)
    if mode == "tuple":
        split: tuple[int, ...] = (1,) * ndim
        if current is not None and current.is_layout:
            with contextlib.suppress(LayoutError):
                split = design.tensor_layout(current).split
        elif current is not None and current.split is not None:
            return design
        return set_operator_strategy(design, name, index, Sharding(split=split))
    if mode == "layout":
        layout_name = layout_name or next(iter(design.layouts), None)
        if layout_name is None:
            raise EditError("the design has no layout: add one in the Device matrix tab first")
        _spec(design, layout_name)
        if current is not None and current.layout == layout_name:
            return design
        old = current.map if current is not None and current.map is not None else (NONE,) * ndim
        entries = strip_aliases(fit_map(old, ndim), design.layouts[layout_name].alias_name)
        return set_operator_strategy(design, name, index, Sharding(layout_name, entries))
    raise EditError(f"unknown strategy mode {mode!r}: use 'layout' or 'tuple'")


def set_operator_map(design: Design, name: str, index: int, entries: Sequence[DimEntry]) -> Design:
    op = design.operators[op_index(design, name)]
    current = _op_input_sharding(design, op, index)
    if current is None or not current.is_layout:
        raise EditError(f"input {index} of {name} has no Layout strategy: switch it to Layout first")
    return set_operator_strategy(design, name, index, replace(current, map=tuple(entries)))


def set_operator_dim_axes(design: Design, name: str, index: int, dim: int, axes: Sequence[str]) -> Design:
    op = design.operators[op_index(design, name)]
    current = _op_input_sharding(design, op, index)
    if current is None or current.map is None:
        raise EditError(f"input {index} of {name} has no Layout strategy: switch it to Layout first")
    return set_operator_map(design, name, index, assign_axes(current.map, dim, axes))


def set_operator_split_text(design: Design, name: str, index: int, text: str) -> Design:
    return set_operator_strategy(design, name, index, Sharding(split=parse_split(text)))


def set_operator_out_strategy(design: Design, name: str, layout_name: str | None, ndim: int = 2) -> Design:
    """MindSpore's out_strategy (a Layout strategy for the output) on `layout_name`, or none (None).

    A layout change keeps the aliases the new layout has; a new out_strategy starts unsplit."""
    op = design.operators[op_index(design, name)]
    if layout_name is None:
        return _replace_op(design, replace(op, out_strategy=None))
    spec = _spec(design, layout_name)
    old = op.out_strategy.map if op.out_strategy is not None and op.out_strategy.map is not None else ()
    entries = strip_aliases(fit_map(old, ndim), spec.alias_name)
    return _replace_op(design, replace(op, out_strategy=Sharding(layout_name, entries)))


def set_operator_out_map(design: Design, name: str, entries: Sequence[DimEntry]) -> Design:
    op = design.operators[op_index(design, name)]
    if op.out_strategy is None or op.out_strategy.layout is None:
        raise EditError(f"{name} has no out_strategy: switch it on first")
    return _replace_op(design, replace(op, out_strategy=replace(op.out_strategy, map=tuple(entries))))


def set_operator_out_dim_axes(design: Design, name: str, dim: int, axes: Sequence[str]) -> Design:
    op = design.operators[op_index(design, name)]
    if op.out_strategy is None or op.out_strategy.map is None:
        raise EditError(f"{name} has no out_strategy: switch it on first")
    return set_operator_out_map(design, name, assign_axes(op.out_strategy.map, dim, axes))
