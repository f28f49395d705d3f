"""Layout edits: device matrices, their axes, presets, rank_list and the interleaved axis.

An axis rename or removal reaches every map that uses the layout (tensors, operator in and out
strategies), so the design never holds an alias its layout lost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from core.sharding.design import Design, LayoutSpec, Sharding
from core.sharding.edits.entries import rename_in_entries, strip_aliases
from core.sharding.edits.lookup import layout_spec, map_every_sharding, map_layout_entries, new_name
from core.sharding.edits.text import EditError, check_identifier, parse_rank_list
from core.sharding.layout import INTERLEAVED


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


def add_layout(design: Design, name: str | None = None) -> tuple[Design, str]:
    """A new layout covering all devices on one axis (always valid); returns (design, its name)."""
    name = check_identifier(name, "layout name") if name else new_name(design.layouts, "layout")
    if name in design.layouts:
        raise EditError(f"a layout called {name!r} already exists: pick another name")
    return design.with_layout(name, LayoutSpec((design.device_num,), ("dp",))), name


def remove_layout(design: Design, name: str) -> Design:
    """Remove a layout; tensors that used it become replicated, operator inputs lose their strategy."""
    layout_spec(design, name)
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
    spec = layout_spec(design, old)
    new = check_identifier(new, "layout name")
    if new == old:
        return design
    if new in design.layouts:
        raise EditError(f"a layout called {new!r} already exists: pick another name")
    layouts = {(new if n == old else n): s for n, s in design.layouts.items()}
    layouts[new] = spec

    def fix(sharding: Sharding) -> Sharding:
        return replace(sharding, layout=new) if sharding.layout == old else sharding

    return map_every_sharding(replace(design, layouts=layouts), fix)


def _physical(spec: LayoutSpec) -> list[tuple[str, int]]:
    return [(a, s) for a, s in zip(spec.alias_name, spec.device_matrix, strict=True) if a != INTERLEAVED]


def _with_axes(design: Design, layout_name: str, axes: Sequence[tuple[str, int]], interleave: int | None) -> Design:
    spec = layout_spec(design, layout_name)
    names = tuple(a for a, _ in axes) + ((INTERLEAVED,) if interleave else ())
    sizes = tuple(int(s) for _, s in axes) + ((int(interleave),) if interleave else ())
    return design.with_layout(layout_name, replace(spec, device_matrix=sizes, alias_name=names))


def interleave_of(spec: LayoutSpec) -> int | None:
    """Size of the virtual interleaved_parallel axis, or None without one."""
    return spec.device_matrix[-1] if spec.alias_name and spec.alias_name[-1] == INTERLEAVED else None


def add_axis(design: Design, layout_name: str, alias: str | None = None, size: int = 1) -> Design:
    """Append an axis (before interleaved_parallel). A size-1 axis keeps the device count unchanged."""
    spec = layout_spec(design, layout_name)
    axes = _physical(spec)
    alias = check_identifier(alias, "axis name") if alias else new_name([a for a, _ in axes], "ax")
    if alias in spec.alias_name:
        raise EditError(f"axis name {alias!r} is already used in {layout_name}: each axis needs its own name")
    if size < 1:
        raise EditError(f"axis size {size} is too small: sizes must be >= 1")
    return _with_axes(design, layout_name, [*axes, (alias, size)], interleave_of(spec))


def remove_axis(design: Design, layout_name: str, alias: str) -> Design:
    """Remove an axis and drop it from every map that uses this layout."""
    spec = layout_spec(design, layout_name)
    axes = _physical(spec)
    if alias not in [a for a, _ in axes]:
        raise EditError(f"{layout_name} has no axis {alias!r}")
    if len(axes) == 1:
        raise EditError("a layout needs at least one axis: add another one before removing this")
    kept = [(a, s) for a, s in axes if a != alias]
    design = _with_axes(design, layout_name, kept, interleave_of(spec))
    return map_layout_entries(design, layout_name, lambda m: strip_aliases(m, design.layouts[layout_name].alias_name))


def rename_axis(design: Design, layout_name: str, old: str, new: str) -> Design:
    """Rename an axis everywhere it is used (tensor maps and operator strategies of this layout)."""
    spec = layout_spec(design, layout_name)
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
    return map_layout_entries(design, layout_name, lambda m: rename_in_entries(m, old, new))


def set_axis_size(design: Design, layout_name: str, alias: str, size: int) -> Design:
    """Resize an axis; a rank_list that no longer fits is kept and reported live (not silently lost)."""
    spec = layout_spec(design, layout_name)
    if int(size) < 1:
        raise EditError(f"axis size {size} is too small: sizes must be >= 1")
    axes = [(a, int(size) if a == alias else s) for a, s in _physical(spec)]
    return _with_axes(design, layout_name, axes, interleave_of(spec))


def move_axis(design: Design, layout_name: str, alias: str, delta: int) -> Design:
    """Move an axis up (delta -1, outer) or down (+1, inner); the ends stay put."""
    spec = layout_spec(design, layout_name)
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
    spec = layout_spec(design, layout_name)
    size = int(size) if size and int(size) >= 2 else None
    design = _with_axes(design, layout_name, _physical(spec), size)
    if size is None:
        kept = design.layouts[layout_name].alias_name
        design = map_layout_entries(design, layout_name, lambda m: strip_aliases(m, kept))
    return design


def set_rank_list(design: Design, layout_name: str, text: str) -> Design:
    """Store a rank_list typed by the user (empty = default order). Length/duplicates are reported live."""
    spec = layout_spec(design, layout_name)
    return design.with_layout(layout_name, replace(spec, rank_list=parse_rank_list(text)))


def apply_preset(design: Design, layout_name: str, preset_key: str) -> Design:
    """Replace a layout's axes by a preset and set the device count to the preset's; maps keep the aliases
    the preset still has (so dp/sp/mp maps survive a 128-card preset)."""
    if preset_key not in PRESETS:
        raise EditError(f"there is no preset called {preset_key!r}: use one of {', '.join(PRESETS)}")
    preset = PRESETS[preset_key]
    spec = layout_spec(design, layout_name)
    design = design.with_layout(
        layout_name, replace(spec, device_matrix=preset.device_matrix, alias_name=preset.alias_name, rank_list=None)
    )
    design = replace(design, device_num=preset.device_num)
    return map_layout_entries(design, layout_name, lambda m: strip_aliases(m, preset.alias_name))
