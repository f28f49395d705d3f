"""View helpers of the Layout Designer: text parsers, axis chips / sortables, live problems, preview data.

Nothing here changes a design: these functions read one (or the user's typing) and return plain
data for the page and for `app/figures.py`. The edits (Design -> Design) are in `app/design_edits.py`.
`EditError` lives here because parsing typed text is where most edits start.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.sharding.design import MAX_DIMS, Design, LayoutSpec, Sharding, design_problems
from core.sharding.layout import NONE, DimEntry, Layout, LayoutError, TensorLayout
from core.sharding.operators import strategy_layouts
from core.sharding.placement import OwnerGrid, Placement, place

# ---------------------------------------------------------------------------------------------
# names and small parsers
# ---------------------------------------------------------------------------------------------
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class EditError(ValueError):
    """An edit the design cannot store (bad name, unparsable number); the message says what to type."""


def is_identifier(name: object) -> bool:
    return isinstance(name, str) and bool(_IDENTIFIER.fullmatch(name)) and not keyword.iskeyword(name)


def check_identifier(name: str, what: str) -> str:
    name = name.strip() if isinstance(name, str) else name
    if not is_identifier(name):
        raise EditError(
            f"{what} {name!r} is not allowed: use letters, digits and '_' (not starting with a digit, "
            "at most 64 characters, not a Python keyword)"
        )
    return name


def parse_int_list(text: str, what: str, minimum: int = 1, times: bool = False) -> tuple[int, ...]:
    """`"2, 4"`, `"(2,4)"` or `"2 4"` (and `"2x4"` when `times`) -> (2, 4). Raises EditError naming the
    bad item."""
    cleaned = text.strip().strip("()[]")
    parts = [p for p in re.split(r"[\s,;x×]+" if times else r"[\s,;]+", cleaned) if p]
    values: list[int] = []
    for part in parts:
        try:
            value = int(part)
        except ValueError:
            raise EditError(f"{what}: {part!r} is not a whole number; type numbers separated by commas") from None
        if value < minimum:
            raise EditError(f"{what}: {value} is too small; every entry must be >= {minimum}")
        values.append(value)
    return tuple(values)


def parse_shape(text: str) -> tuple[int, ...]:
    shape = parse_int_list(text, "shape", times=True)
    if not shape:
        raise EditError("shape: give at least one dimension size, e.g. 2, 4")
    if len(shape) > MAX_DIMS:
        raise EditError(f"shape: {len(shape)} dimensions; at most {MAX_DIMS} are supported")
    return shape


def parse_split(text: str) -> tuple[int, ...]:
    """A tuple strategy as typed: `"4,1"` -> (4, 1)."""
    split = parse_int_list(text, "tuple strategy")
    if not split:
        raise EditError("tuple strategy: give one split count per dimension, e.g. 4,1")
    return split


def parse_rank_list(text: str) -> tuple[int, ...] | None:
    """Empty text = default order (None); otherwise whole numbers >= 0 separated by commas or spaces."""
    if not text.strip():
        return None
    return parse_int_list(text, "rank_list", minimum=0)


def format_ints(values: Iterable[int]) -> str:
    return ", ".join(str(v) for v in values)




# ---------------------------------------------------------------------------------------------
# map entries <-> lists of axes, chips
# ---------------------------------------------------------------------------------------------
CHIP_SEPARATOR = "·"


FREE_HEADER = "Device axes (drag onto a dimension)"


def entry_axes(entry: DimEntry) -> list[str]:
    """The axes splitting one dimension, outermost first ('None' = [])."""
    names = entry if isinstance(entry, tuple) else (entry,)
    return [n for n in names if n != NONE]


def axes_entry(axes: Sequence[str]) -> DimEntry:
    """[] -> 'None', ['mp'] -> 'mp', ['sp', 'dp'] -> ('sp', 'dp')."""
    if not axes:
        return NONE
    if len(axes) == 1:
        return axes[0]
    return tuple(axes)


def chip_label(alias: str, size: int) -> str:
    return f"{alias}{CHIP_SEPARATOR}{size}"


def chip_alias(label: str) -> str:
    """Map a chip label back to its alias ('mp·2' -> 'mp'); a bare alias is returned as is."""
    return label.rsplit(CHIP_SEPARATOR, 1)[0] if CHIP_SEPARATOR in label else label


def dim_header(dim: int, size: int | None) -> str:
    return f"dim {dim} (size {size})" if size is not None else f"dim {dim}"


def sortable_items(spec: LayoutSpec, entries: Sequence[DimEntry], shape: Sequence[int] | None) -> list[dict[str, Any]]:
    """The containers for streamlit_sortables: free axes first, then one drop zone per tensor dimension."""
    sizes = dict(zip(spec.alias_name, spec.device_matrix, strict=False))
    used = {a for e in entries for a in entry_axes(e)}
    free = [chip_label(a, s) for a, s in sizes.items() if a not in used]
    items: list[dict[str, Any]] = [{"header": FREE_HEADER, "items": free}]
    for dim, entry in enumerate(entries):
        size = shape[dim] if shape is not None and dim < len(shape) else None
        items.append(
            {
                "header": dim_header(dim, size),
                "items": [chip_label(a, sizes[a]) if a in sizes else a for a in entry_axes(entry)],
            }
        )
    return items


def map_from_sortables(result: Sequence[Mapping[str, Any]], ndim: int) -> tuple[DimEntry, ...]:
    """The sortables result (containers in the order given) -> one map entry per dimension.

    Containers are matched by position, not header; chips dropped back into the free container
    leave the map. Missing containers mean 'None'.
    """
    entries: list[DimEntry] = []
    zones = list(result)[1:]
    for dim in range(ndim):
        labels = zones[dim].get("items", []) if dim < len(zones) else []
        entries.append(axes_entry([chip_alias(str(label)) for label in labels]))
    return tuple(entries)


def fit_map(entries: Sequence[DimEntry], ndim: int) -> tuple[DimEntry, ...]:
    """Pad with 'None' or cut so the map has one entry per dimension."""
    return tuple(list(entries)[:ndim] + [NONE] * max(0, ndim - len(entries)))


def strip_aliases(entries: Sequence[DimEntry], keep: Iterable[str]) -> tuple[DimEntry, ...]:
    """Drop aliases that are not in `keep` (after an axis was removed or a preset applied)."""
    allowed = set(keep)
    return tuple(axes_entry([a for a in entry_axes(e) if a in allowed]) for e in entries)


def rename_in_entries(entries: Sequence[DimEntry], old: str, new: str) -> tuple[DimEntry, ...]:
    return tuple(axes_entry([new if a == old else a for a in entry_axes(e)]) for e in entries)


def assign_axes(entries: Sequence[DimEntry], dim: int, axes: Sequence[str]) -> tuple[DimEntry, ...]:
    """Set one dimension's axes and remove those axes from the other dimensions (an axis splits once)."""
    chosen = list(dict.fromkeys(axes))
    result: list[DimEntry] = []
    for d, entry in enumerate(entries):
        if d == dim:
            result.append(axes_entry(chosen))
        else:
            result.append(axes_entry([a for a in entry_axes(entry) if a not in chosen]))
    return tuple(result)




# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Message:
    """One live validation message: where (JSON path / operator), what is wrong and how to fix it."""

    where: str
    text: str
    severity: str = "error"  # "error" | "warning"


def collect_problems(design: Design, analyses: Sequence[Any] | None = None) -> list[Message]:
    """design_problems + checks the editor adds (tuple splits vs device count) + operator problems."""
    messages = [Message(p.path, p.message) for p in design_problems(design)]
    if not design.layouts:
        messages.append(Message("$.layouts", "the design has no layout: add one in the Device matrix tab"))
    for name, tensor in design.tensors.items():
        sharding = tensor.sharding
        if sharding is not None and sharding.split is not None:
            pieces = math.prod(sharding.split)
            if design.device_num % pieces:
                messages.append(
                    Message(
                        f"$.tensors.{name}.split",
                        f"{name}'s split {tuple(sharding.split)} needs {pieces} devices, which does not divide the "
                        f"{design.device_num} devices: use split counts whose product divides {design.device_num}",
                    )
                )
        if sharding is not None and sharding.map is not None and sharding.layout in design.layouts:
            spec = design.layouts[sharding.layout]
            if all(entry_axes(e) == [] for e in sharding.map) and math.prod(spec.device_matrix) > 1:
                messages.append(
                    Message(
                        f"$.tensors.{name}",
                        f"{name} is not split at all: every rank holds the whole tensor (drag an axis onto a "
                        "dimension to shard it)",
                        "warning",
                    )
                )
    for analysis in analyses or ():
        for problem in analysis.problems:
            messages.append(Message(f"operator {analysis.name}", problem))
    return messages




# ---------------------------------------------------------------------------------------------
# previews: tensor layouts and view data (plain data for app/figures.py)
# ---------------------------------------------------------------------------------------------
def derived_tensor_layout(split: Sequence[int], device_num: int) -> TensorLayout:
    """The layout MindSpore builds for a tuple strategy (the repeated-calculation axis 'rep' outermost).

    The same conversion core.sharding.operators uses for an elementwise operator's input, so the tensor
    preview and the operator analysis agree.
    """
    pieces = math.prod(split)
    if pieces < 1 or device_num % pieces:
        raise LayoutError(
            f"the split {tuple(split)} needs {pieces} devices, which does not divide {device_num}: "
            f"use split counts whose product divides {device_num}"
        )
    return strategy_layouts("ReLU", [tuple(split)], device_num)[0]


def sharding_tensor_layout(design: Design, sharding: Sharding | None, ndim: int) -> TensorLayout:
    """The TensorLayout to preview: the Layout strategy itself, a tuple strategy's implied layout, or
    all-replicated over the device count. Raises LayoutError with a user-facing message."""
    if sharding is None:
        return derived_tensor_layout((1,) * ndim, design.device_num)
    if sharding.is_layout:
        return design.tensor_layout(sharding)
    return derived_tensor_layout(sharding.split or (), design.device_num)


def tensor_placement(design: Design, name: str) -> Placement:
    """Placement of a design tensor; LayoutError says why it cannot be placed."""
    if name not in design.tensors:
        raise EditError(f"there is no tensor called {name!r}")
    tensor = design.tensors[name]
    return place(tensor.shape, sharding_tensor_layout(design, tensor.sharding, len(tensor.shape)))


@dataclass(frozen=True)
class DeviceGrid:
    """The device matrix as a 2-D picture: outer axes flattened into rows, the innermost into columns.

    cells[r][c] is the device-matrix position; ranks[r][c] its rank.
    """

    row_labels: list[str]
    col_labels: list[str]
    row_title: str
    col_title: str
    positions: list[list[int]]
    ranks: list[list[int]]


def device_grid(layout: Layout) -> DeviceGrid:
    """Rows = every combination of the outer axes (row-major), columns = the last axis."""
    matrix = layout.device_matrix
    names = layout.alias_name
    n_cols = matrix[-1]
    n_rows = math.prod(matrix[:-1]) if len(matrix) > 1 else 1
    outer = names[:-1]
    row_labels: list[str] = []
    for r in range(n_rows):
        if not outer:
            row_labels.append("")
            continue
        coords = np.unravel_index(r, matrix[:-1])
        row_labels.append(" ".join(f"{a}={int(c)}" for a, c in zip(outer, coords, strict=True)))
    col_labels = [f"{names[-1]}={c}" for c in range(n_cols)]
    positions = [[r * n_cols + c for c in range(n_cols)] for r in range(n_rows)]
    ranks_flat = list(range(math.prod(matrix))) if layout.interleaved else list(layout.rank_list)
    if layout.interleaved:
        ranks_flat = [p // layout.interleave_num for p in ranks_flat]
    ranks = [[ranks_flat[p] for p in row] for row in positions]
    return DeviceGrid(
        row_labels=row_labels,
        col_labels=col_labels,
        row_title=" × ".join(outer) if outer else "",
        col_title=names[-1],
        positions=positions,
        ranks=ranks,
    )


def view_slice_ids(placement: Placement, grid: OwnerGrid, fixed: Sequence[int]) -> list[list[int]]:
    """Global slice id (Placement.slice_id numbering) of each block of a 2-D view, so colours match
    the device-matrix picture."""
    ndim = len(placement.shape)
    if ndim == 0:
        return [[0]]
    split = placement.split
    base = [fixed[d] // placement.local_shape[d] for d in range(ndim)]
    ids: list[list[int]] = []
    for i in range(len(grid.owners)):
        row: list[int] = []
        for j in range(len(grid.owners[0])):
            index = list(base)
            if ndim == 1:
                index[0] = j
            else:
                index[grid.row_dim] = i
                index[grid.col_dim] = j
            row.append(int(np.ravel_multi_index(tuple(index), split)))
        ids.append(row)
    return ids


def row_ranks(grid: OwnerGrid, row: int = 0) -> list[int]:
    """Ranks holding row `row` of the view, left to right (each block's ranks in order)."""
    result: list[int] = []
    for cell in grid.owners[row]:
        for rank in cell:
            if rank not in result:
                result.append(rank)
    return result


def position_slice_ids(placement: Placement) -> list[int]:
    """Slice id held by each device-matrix position (for colouring the device matrix)."""
    return placement.slice_id.tolist()


def group_index_by_rank(groups: Sequence[Sequence[int]]) -> dict[int, int]:
    """rank -> index of the communication group it belongs to (for colouring groups)."""
    result: dict[int, int] = {}
    for g, group in enumerate(groups):
        for rank in group:
            result.setdefault(int(rank), g)
    return result


def human_bytes(n: int | float) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
