"""Axis chips: the drag-and-pick editor (streamlit_sortables) and its click-only twin, one multiselect
per dimension. Both return / report a new tensor map; the caller commits it through an edit.

Keys must include the design version (`design_state.vkey`): the sortables iframe ignores new items
under a fixed key.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import streamlit as st
import streamlit_sortables

from app import designer_view as view
from app.design_state import version
from core.sharding.design import LayoutSpec
from core.sharding.edits import entry_axes
from core.sharding.layout import DimEntry

CHIP_STYLE = """
body { margin: 0; }
.sortable-component { font-family: 'Source Sans Pro', sans-serif; gap: 8px; padding: 2px 2px 6px 2px; }
.sortable-component.vertical .sortable-container { min-width: 118px; padding: 0; margin: 0;
  border: 1.5px dashed #94a3b8; border-radius: 8px; background: #f8fafc; overflow: hidden; }
.sortable-component.vertical .sortable-container:first-child { border: 1.5px solid #93c5fd; background: #eff6ff; }
.sortable-container-header { font-size: 13px; font-weight: 600; color: #334155; padding: 6px 10px 2px 10px;
  background: transparent; }
.sortable-container-body { min-height: 44px; padding: 2px 6px 6px 6px; background: transparent; }
.sortable-item, .sortable-item:hover { background: #2563eb; color: #ffffff; border-radius: 14px;
  padding: 3px 12px; font-weight: 600; font-size: 14px; margin: 4px 0; text-align: center; }
"""


def drag_and_pick(
    spec: LayoutSpec,
    entries: Sequence[DimEntry],
    shape: Sequence[int] | None,
    key: str,
) -> tuple[DimEntry, ...] | None:
    """The sortables editor: returns the new map when the user dropped something, else None.

    `key` must include the version counter (see module docstring)."""
    items = view.sortable_items(spec, entries, shape)
    try:
        result = streamlit_sortables.sort_items(
            items, multi_containers=True, direction="vertical", custom_style=CHIP_STYLE, key=key
        )
    except Exception as exc:  # a broken component must not take the page down
        st.warning(f"The drag-and-drop editor is unavailable ({exc}); use the pickers below.")
        return None
    if not isinstance(result, list):
        return None
    new = view.map_from_sortables(result, len(entries))
    return new if tuple(new) != tuple(entries) else None


def click_pick(
    spec: LayoutSpec,
    entries: Sequence[DimEntry],
    shape: Sequence[int] | None,
    key_prefix: str,
    on_pick: Callable[[int, list[str]], None],
) -> None:
    """One multiselect per dimension (selection order = outer -> inner): the keyboard path."""
    sizes = dict(zip(spec.alias_name, spec.device_matrix, strict=False))
    cols = st.columns(min(max(len(entries), 1), 4))
    for dim, entry in enumerate(entries):
        key = f"{key_prefix}:dim{dim}@{version()}"
        size = shape[dim] if shape is not None and dim < len(shape) else None
        current = [a for a in entry_axes(entry) if a in sizes]
        cols[dim % len(cols)].multiselect(
            view.dim_header(dim, size),
            list(spec.alias_name),
            default=current,
            key=key,
            format_func=lambda a: view.chip_label(a, sizes[a]),
            placeholder="None (not split)",
            on_change=lambda d=dim, k=key: on_pick(d, list(st.session_state[k])),
        )


def axes_editor(
    spec: LayoutSpec,
    entries: Sequence[DimEntry],
    shape: Sequence[int] | None,
    keys: tuple[str, str],
    on_map: Callable[[tuple[DimEntry, ...]], object],
    on_pick: Callable[[int, list[str]], None],
    pick_label: str = "Pick axes without dragging (keyboard)",
) -> None:
    """The drag-and-pick editor, then its keyboard twin in an expander: one map editor for a tensor and
    for an operator's output. `keys` = (drag key with the design version, pick key prefix); a drop is
    committed through `on_map` and the page reruns, a pick through `on_pick`."""
    dropped = drag_and_pick(spec, entries, shape, keys[0])
    if dropped is not None:
        on_map(dropped)
        st.rerun()
    with st.expander(pick_label):
        click_pick(spec, entries, shape, keys[1], on_pick)


def entries_caption(entries: Sequence[DimEntry], spec: LayoutSpec, shape: Sequence[int] | None) -> str:
    """`dim 0 ← mp (2 pieces) · dim 1 ← (sp, dp) (4 pieces)` for the status line under the editor."""
    sizes = dict(zip(spec.alias_name, spec.device_matrix, strict=False))
    parts = []
    for dim, entry in enumerate(entries):
        axes = entry_axes(entry)
        pieces = math.prod(sizes.get(a, 1) for a in axes)
        label = "None" if not axes else (axes[0] if len(axes) == 1 else "(" + ", ".join(axes) + ")")
        bad = shape is not None and dim < len(shape) and shape[dim] % pieces
        parts.append(
            f"dim {dim} ← `{label}`"
            + (f" ({pieces} pieces)" if pieces > 1 else "")
            + (" — :red[not divisible]" if bad else "")
        )
    return " · ".join(parts) if parts else "scalar"
