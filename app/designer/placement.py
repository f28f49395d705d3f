"""The tensor preview: a 2-D view of a tensor's blocks and the ranks holding them, the device matrix
coloured by the slice each position holds, replica groups and the per-rank table."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import design_state as state
from app import designer_view as view
from app import figures
from core.sharding.layout import LayoutError
from core.sharding.placement import OwnerGrid, Placement, rank_table_rows
from core.units import format_bytes


def _view_controls(placement: Placement, key: str) -> tuple[int, int, list[int], int | None]:
    """Row/column dims, the element index kept for the other dims (sliders), the rank to outline."""
    shape = placement.shape
    ndim = len(shape)
    dims = list(range(ndim))
    ranks = sorted(set(placement.ranks.tolist()))
    cols = st.columns([1, 1, 1.2])
    if ndim >= 2:
        if st.session_state.get(f"{key}:row") not in dims:
            st.session_state[f"{key}:row"] = 0
        row_dim = cols[0].selectbox("Rows", dims, key=f"{key}:row", format_func=lambda d: f"dim {d} ({shape[d]})")
        col_options = [d for d in dims if d != row_dim]
        if st.session_state.get(f"{key}:col") not in col_options:
            st.session_state[f"{key}:col"] = col_options[0]
        col_dim = cols[1].selectbox(
            "Columns", col_options, key=f"{key}:col", format_func=lambda d: f"dim {d} ({shape[d]})"
        )
    else:
        row_dim = col_dim = 0
        cols[0].caption("1-D tensor: one row of blocks.")
    if st.session_state.get(f"{key}:hl") not in [None, *ranks]:
        st.session_state[f"{key}:hl"] = None
    highlight = cols[2].selectbox(
        "Highlight rank",
        [None, *ranks],
        key=f"{key}:hl",
        format_func=lambda r: "— none —" if r is None else f"rank {r}",
        help="Outlines the blocks this rank holds (hover a block to see all its ranks).",
    )
    fixed = [0] * ndim
    others = [d for d in dims if d not in (row_dim, col_dim)]
    if others:
        scols = st.columns(min(len(others), 3))
        for n, d in enumerate(others):
            pieces = placement.split[d]
            local = placement.local_shape[d]
            if pieces <= 1:
                scols[n % len(scols)].caption(f"dim {d} ({shape[d]}): not split — every block covers it all")
                continue
            block = scols[n % len(scols)].slider(
                f"dim {d} block (size {shape[d]}, {pieces} pieces)",
                0,
                pieces - 1,
                key=f"{key}:fix{d}",
            )
            fixed[d] = int(block) * local
    return row_dim, col_dim, fixed, highlight


def _blocks_panel(
    placement: Placement, grid: OwnerGrid, view_dims: tuple[int, int, list[int]], highlight: int | None, key: str
) -> None:
    """The 2-D view of the tensor's blocks, each labelled with the ranks holding it."""
    row_dim, col_dim, fixed = view_dims
    slice_ids = view.view_slice_ids(placement, grid, fixed)
    one_d = len(placement.shape) == 1
    fig = figures.tensor_grid_figure(
        grid, slice_ids, "" if one_d else f"dim {row_dim}", f"dim {col_dim}", highlight_rank=highlight
    )
    st.plotly_chart(fig, width="stretch", key=f"{key}:grid@{state.version()}", config={"displayModeBar": False})
    row0 = view.row_ranks(grid, 0)
    st.caption(f"Row 0 of this view lies on ranks: {', '.join(str(r) for r in row0)}")


def _device_panel(placement: Placement, highlight: int | None, key: str) -> None:
    """The device matrix coloured by the slice each position holds, and the replica groups."""
    layout = placement.tensor_layout.layout
    dgrid = view.device_grid(layout)
    pos_slices = view.position_slice_ids(placement)
    pieces = placement.rank_pieces()
    hover = []
    for pos, rank in enumerate(placement.ranks.tolist()):
        coord = ", ".join(f"{a}={int(c)}" for a, c in zip(layout.alias_name, placement.coords[pos], strict=True))
        where = "; ".join("[" + ", ".join(f"{s.start}:{s.stop}" for s in p) + "]" for p in pieces[rank])
        hover.append(f"rank {rank}<br>{coord}<br>slice #{pos_slices[pos]} {where}")
    st.markdown("**Device matrix — colour = slice held**")
    st.plotly_chart(
        figures.device_matrix_figure(dgrid, pos_slices, hover, highlight_rank=highlight),
        width="stretch",
        key=f"{key}:dm@{state.version()}",
        config={"displayModeBar": False},
    )
    groups = placement.replica_groups()
    replicas = len(groups[0]) if groups else 1
    if replicas > 1:
        axes = ", ".join(placement.tensor_layout.replica_axes) or "—"
        shown = "; ".join("{" + ", ".join(str(r) for r in g) + "}" for g in groups[:6])
        st.caption(
            f"Every slice is held by {replicas} ranks (replicated over {axes}): {shown}"
            + (" …" if len(groups) > 6 else "")
        )
    else:
        st.caption("Every rank holds a different slice (no replicas).")


def _rank_table(placement: Placement, dtype: str) -> None:
    """Per rank: coordinate, slice, local shape and bytes (folded away by default)."""
    table = pd.DataFrame(rank_table_rows(placement, dtype))
    table["size"] = table["bytes"].map(format_bytes)
    with st.expander(
        f"Per-rank table ({len(set(table['rank']))} ranks, "
        f"{format_bytes(int(table['bytes'].iloc[0]) * placement.pieces_per_rank)} each)",
        expanded=False,
    ):
        st.dataframe(table, hide_index=True, width="stretch", height=min(36 * len(table) + 38, 320))


def render_placement(placement: Placement, dtype: str, key: str, label: str) -> None:
    """Tensor grid + device matrix side by side, then per-rank table (code is rendered by the caller)."""
    if not placement.shape:
        st.info("A scalar lives whole on every rank.")
        return
    row_dim, col_dim, fixed, highlight = _view_controls(placement, key)
    try:
        grid = placement.owner_grid(row_dim, col_dim, fixed)
    except LayoutError as exc:
        st.error(str(exc))
        return
    left, right = st.columns([1.15, 1], gap="medium")
    with left:
        st.markdown(f"**{label}: blocks and the ranks holding them**")
        _blocks_panel(placement, grid, (row_dim, col_dim, fixed), highlight, key)
    with right:
        _device_panel(placement, highlight, key)
    _rank_table(placement, dtype)
