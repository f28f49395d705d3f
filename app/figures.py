"""Plotly figures of the Layout Designer, built from plain data (OwnerGrid, DeviceGrid, slice ids).

Colours mean "which slice": the tensor grid and the device matrix use the same palette indexed by
`Placement.slice_id`, so a block and the ranks holding it share a colour and replica groups stand out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from app.designer_view import DeviceGrid
from core.sharding.placement import OwnerGrid

# Light, distinguishable colours (dark text stays readable on all of them).
PALETTE: tuple[str, ...] = (
    "#a6cee3",
    "#b2df8a",
    "#fb9a99",
    "#fdbf6f",
    "#cab2d6",
    "#ffff99",
    "#8dd3c7",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#d9d9d9",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
    "#c7e9c0",
    "#fdd0a2",
    "#9ecae1",
    "#dadaeb",
    "#f4a582",
    "#92c5de",
    "#e6f598",
)
HIGHLIGHT = "#111827"
MAX_ANNOTATED_CELLS = 400


def _discrete_colourscale(n: int) -> list[list[object]]:
    """A step colourscale so z = k (0..n-1) gets exactly PALETTE[k % len]."""
    if n <= 1:
        return [[0.0, PALETTE[0]], [1.0, PALETTE[0]]]
    scale: list[list[object]] = []
    for k in range(n):
        lo, hi = k / n, (k + 1) / n
        colour = PALETTE[k % len(PALETTE)]
        scale.append([lo, colour])
        scale.append([hi, colour])
    return scale


def rank_label(ranks: Sequence[int], limit: int = 4) -> str:
    """'r0' / 'r0, r4' / 'r0, r8, r16, … (+5)' for a block's owners."""
    shown = [f"r{r}" for r in ranks[:limit]]
    more = len(ranks) - limit
    return ", ".join(shown) + (f", … (+{more})" if more > 0 else "")


def _palette_index(values: Sequence[Sequence[int]]) -> tuple[list[list[int]], int]:
    """Colour index per cell: slice_id modulo the palette (kept stable across views)."""
    flat = sorted({v for row in values for v in row})
    n = len(PALETTE) if len(flat) > 1 else 1
    return [[v % len(PALETTE) if n > 1 else 0 for v in row] for row in values], n


def _empty(message: str, height: int = 260) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(
        text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font={"size": 14, "color": "#6b7280"}
    )
    fig.update_layout(
        height=height,
        xaxis={"visible": False},
        yaxis={"visible": False},
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        plot_bgcolor="white",
    )
    return fig


def tensor_grid_figure(
    grid: OwnerGrid,
    slice_ids: Sequence[Sequence[int]],
    row_title: str,
    col_title: str,
    highlight_rank: int | None = None,
    title: str = "",
) -> go.Figure:
    """The tensor as blocks (rows = pieces of one dim, columns = pieces of another), each labelled with
    the rank(s) holding it and coloured per slice; `highlight_rank` outlines that rank's blocks."""
    n_rows, n_cols = len(grid.owners), len(grid.owners[0]) if grid.owners else 0
    if not n_rows or not n_cols:
        return _empty("nothing to show")
    colour_index, n_colours = _palette_index(slice_ids)
    hover = [
        [
            f"block ({i}, {j})<br>{row_title} {grid.row_edges[i]}:{grid.row_edges[i + 1]}, "
            f"{col_title} {grid.col_edges[j]}:{grid.col_edges[j + 1]}<br>slice #{slice_ids[i][j]}<br>"
            f"ranks: {', '.join(str(r) for r in grid.owners[i][j])}"
            for j in range(n_cols)
        ]
        for i in range(n_rows)
    ]
    fig = go.Figure(_cell_heatmap(colour_index, n_colours, hover, "blocks"))
    annotate = n_rows * n_cols <= MAX_ANNOTATED_CELLS
    font_size = 15 if n_cols <= 8 else 12 if n_cols <= 16 else 9
    if annotate:
        for i in range(n_rows):
            for j in range(n_cols):
                owners = grid.owners[i][j]
                fig.add_annotation(
                    x=j,
                    y=i,
                    text=rank_label(owners),
                    showarrow=False,
                    font={"size": font_size, "color": "#111827"},
                )
    if highlight_rank is not None:
        _outline_cells(
            fig, [(i, j) for i in range(n_rows) for j in range(n_cols) if highlight_rank in grid.owners[i][j]]
        )
    cell = max(34, min(90, 520 // max(n_rows, 1)))
    _grid_axes(
        fig,
        title,
        height=min(620, 90 + cell * n_rows),
        col_title=col_title,
        col_ticks=[f"{grid.col_edges[j]}:{grid.col_edges[j + 1]}" for j in range(n_cols)],
        row_title=row_title,
        row_ticks=[f"{grid.row_edges[i]}:{grid.row_edges[i + 1]}" for i in range(n_rows)],
        show_col_ticks=n_cols <= 32,
        show_row_ticks=n_rows <= 40,
    )
    return fig


def _cell_heatmap(
    colour_index: list[list[int]], n_colours: int, hover: list[list[str]], name: str, **extra: Any
) -> go.Heatmap:
    """One coloured cell per block/rank with gaps between them (shared by the grid figures)."""
    n_rows, n_cols = len(colour_index), len(colour_index[0])
    return go.Heatmap(
        z=colour_index,
        x=list(range(n_cols)),
        y=list(range(n_rows)),
        zmin=-0.5,
        zmax=n_colours - 0.5,
        colorscale=_discrete_colourscale(n_colours),
        showscale=False,
        xgap=3,
        ygap=3,
        hovertext=hover,
        hoverinfo="text",
        name=name,
        **extra,
    )


def _outline_cells(fig: go.Figure, cells: Sequence[tuple[int, int]]) -> None:
    """Draw the highlight frame around each (row, column) cell."""
    for i, j in cells:
        fig.add_shape(
            type="rect",
            x0=j - 0.5,
            x1=j + 0.5,
            y0=i - 0.5,
            y1=i + 0.5,
            line={"color": HIGHLIGHT, "width": 4},
            fillcolor="rgba(0,0,0,0)",
        )


def _grid_axes(
    fig: go.Figure,
    title: str,
    *,
    height: int,
    col_title: str,
    col_ticks: Sequence[str],
    row_title: str,
    row_ticks: Sequence[str],
    show_col_ticks: bool = True,
    show_row_ticks: bool = True,
) -> None:
    """Column labels on top, rows top-down, no grid lines: the layout every grid figure shares."""
    fig.update_layout(
        title={"text": title, "font": {"size": 14}} if title else None,
        height=height,
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        plot_bgcolor="white",
        xaxis={
            "title": {"text": col_title},
            "side": "top",
            "tickmode": "array",
            "tickvals": list(range(len(col_ticks))),
            "ticktext": list(col_ticks),
            "showgrid": False,
            "zeroline": False,
            "showticklabels": show_col_ticks,
        },
        yaxis={
            "title": {"text": row_title},
            "autorange": "reversed",
            "tickmode": "array",
            "tickvals": list(range(len(row_ticks))),
            "ticktext": list(row_ticks),
            "showgrid": False,
            "zeroline": False,
            "showticklabels": show_row_ticks,
        },
    )


def device_matrix_figure(
    grid: DeviceGrid,
    values: Sequence[int],
    hover: Sequence[str],
    highlight_rank: int | None = None,
    title: str = "",
    value_label: str = "slice",
) -> go.Figure:
    """The device matrix as a grid of ranks, each cell coloured by `values[position]` (slice id, or
    communication group); equal colours = replicas (or one group)."""
    n_rows, n_cols = len(grid.positions), len(grid.positions[0])
    z_raw = [[int(values[p]) for p in row] for row in grid.positions]
    colour_index, n_colours = _palette_index(z_raw)
    text = [[f"r{r}" for r in row] for row in grid.ranks]
    hovertext = [[hover[p] for p in row] for row in grid.positions]
    fig = go.Figure(
        _cell_heatmap(
            colour_index,
            n_colours,
            hovertext,
            value_label,
            text=text,
            texttemplate="%{text}" if n_rows * n_cols <= 512 else None,
            textfont={"size": 13 if n_cols <= 8 else 10, "color": "#111827"},
        )
    )
    if highlight_rank is not None:
        cells = [(i, j) for i, row in enumerate(grid.ranks) for j, rank in enumerate(row) if rank == highlight_rank]
        _outline_cells(fig, cells)
    cell = max(22, min(56, 480 // max(n_rows, 1)))
    _grid_axes(
        fig,
        title,
        height=min(760, 90 + cell * n_rows),
        col_title=grid.col_title,
        col_ticks=grid.col_labels,
        row_title=grid.row_title,
        row_ticks=grid.row_labels,
        show_row_ticks=bool(grid.row_title),
    )
    return fig


def comm_figure(grid: DeviceGrid, groups: Sequence[Sequence[int]], title: str = "") -> go.Figure:
    """A collective's rank groups drawn on the device matrix: one colour per group."""
    by_rank: dict[int, int] = {}
    for g, group in enumerate(groups):
        for rank in group:
            by_rank.setdefault(int(rank), g)
    flat_ranks = [r for row in grid.ranks for r in row]
    positions = [p for row in grid.positions for p in row]
    values = [0] * (max(positions) + 1)
    hover = [""] * (max(positions) + 1)
    for p, r in zip(positions, flat_ranks, strict=True):
        index = by_rank.get(r)
        values[p] = index if index is not None else len(groups)
        hover[p] = f"rank {r}<br>" + (
            f"group {index}: {', '.join(str(x) for x in groups[index])}" if index is not None else "not in any group"
        )
    return device_matrix_figure(grid, values, hover, title=title, value_label="group")
