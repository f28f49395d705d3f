"""View helpers of the Layout Designer: axis chips / sortables, live problems, preview data.

Nothing here changes a design: these functions read one and return plain data for the page and for
`app/figures.py`. The edits (Design -> Design) and the parsers of typed text are in
`core.sharding.edits`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.sharding.design import Design, LayoutSpec, Sharding, design_problems
from core.sharding.edits import EditError, axes_entry, entry_axes
from core.sharding.layout import DimEntry, Layout, LayoutError, TensorLayout
from core.sharding.operators import strategy_layouts
from core.sharding.placement import OwnerGrid, Placement, place

# ---------------------------------------------------------------------------------------------
# map entries <-> lists of axes, chips
# ---------------------------------------------------------------------------------------------
CHIP_SEPARATOR = "·"


FREE_HEADER = "Device axes (drag onto a dimension)"


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
        if (
            sharding is not None
            and sharding.map is not None
            and sharding.layout is not None
            and sharding.layout in design.layouts
        ):
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
