"""Streamlit pieces of the Layout Designer: session state, the device-matrix editor, the drag-and-pick
axis-chip editor (streamlit_sortables) and its click-only twin (one multiselect per dimension).

Every widget writes through an `app.design_edits` function in an on_change callback, then bumps a
version counter that is part of every widget key: widgets (and the sortables iframe, which ignores new
items under a fixed key) remount from the new design, so nothing shows a stale value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st
import streamlit_sortables

from app import design_edits as edits
from app import designer_view as view
from core.sharding.design import Design, LayoutSpec
from core.sharding.layout import INTERLEAVED, NONE, DimEntry, LayoutError
from core.workspace import WorkspaceError

DESIGN_KEY = "design"
VERSION_KEY = "designer_version"
ERROR_KEY = "designer_edit_error"
NOTICE_KEY = "designer_notice"
FAILED = object()  # what `apply` returns when the edit was refused

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


# ---------------------------------------------------------------------------------------------
# state
# ---------------------------------------------------------------------------------------------
def init_state() -> None:
    """First visit: seed 004's DenseMatMulNet. A non-Design value (stale session) is replaced too."""
    if not isinstance(st.session_state.get(DESIGN_KEY), Design):
        st.session_state[DESIGN_KEY] = edits.default_design()
    st.session_state.setdefault(VERSION_KEY, 0)


def get_design() -> Design:
    return st.session_state[DESIGN_KEY]


def version() -> int:
    return int(st.session_state.get(VERSION_KEY, 0))


def vkey(*parts: object) -> str:
    """A widget key that changes whenever the design changes from outside that widget."""
    return "designer:" + ":".join(str(p) for p in parts) + f"@{version()}"


def commit(design: Design, notice: str | None = None) -> None:
    st.session_state[DESIGN_KEY] = design
    st.session_state[VERSION_KEY] = version() + 1
    if notice:
        st.session_state[NOTICE_KEY] = notice


def fail(scope: str, message: str) -> None:
    st.session_state[ERROR_KEY] = (scope, message)


def apply(scope: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Run an edit on the current design; store the result, or the reason it was refused."""
    try:
        result = fn(get_design(), *args)
    except (edits.EditError, LayoutError, WorkspaceError, KeyError, IndexError) as exc:
        fail(scope, str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc))
        return FAILED
    design, extra = result if isinstance(result, tuple) else (result, None)
    commit(design)
    return extra


def show_edit_error(scope: str) -> None:
    """Show (once) why the last edit in this part of the page was refused."""
    pending = st.session_state.get(ERROR_KEY)
    if pending and pending[0] == scope:
        st.session_state.pop(ERROR_KEY, None)
        st.error(f"Edit not applied: {pending[1]}", icon=":material/block:")


def show_notice() -> None:
    notice = st.session_state.pop(NOTICE_KEY, None)
    if notice:
        st.success(notice, icon=":material/check_circle:")


def _value_cb(scope: str, key: str, fn: Callable[..., Any], *args: Any) -> None:
    """on_change: pass the widget's value as the last argument of the edit."""
    apply(scope, fn, *args, st.session_state[key])


# ---------------------------------------------------------------------------------------------
# device matrix editor
# ---------------------------------------------------------------------------------------------
def product_status(spec: LayoutSpec, device_num: int) -> tuple[bool, str]:
    """(ok, sentence) about the product of the axis sizes vs the device count."""
    physical = [(a, s) for a, s in zip(spec.alias_name, spec.device_matrix, strict=True) if a != INTERLEAVED]
    product = math.prod(s for _, s in physical)
    formula = " × ".join(f"{a}={s}" for a, s in physical)
    if product == device_num:
        return True, f"{formula} = **{product}** devices — matches the device count {device_num}."
    hint = (
        f"add an axis or grow one by ×{device_num // product}"
        if product < device_num and device_num % product == 0
        else f"shrink an axis (÷{product // device_num})"
        if product > device_num and product % device_num == 0
        else "change the sizes so they multiply to the device count"
    )
    return False, f"{formula} = **{product}** ≠ {device_num} devices: {hint}."


def _rename_layout_cb(scope: str, key: str, old: str) -> None:
    new = st.session_state[key]
    if apply(scope, edits.rename_layout, old, new) is not FAILED:
        st.session_state["designer_layout_sel"] = new.strip()


def _add_layout_cb(scope: str) -> None:
    name = apply(scope, edits.add_layout)
    if name is not FAILED:
        st.session_state["designer_layout_sel"] = name


def _preset_cb(scope: str, layout_name: str, key: str) -> None:
    preset = st.session_state[key]
    if preset in edits.PRESETS and apply(scope, edits.apply_preset, layout_name, preset) is not FAILED:
        st.session_state[NOTICE_KEY] = f"Applied preset {edits.PRESETS[preset].label} to {layout_name}."


def _interleave_cb(scope: str, layout_name: str, on_key: str, size_key: str) -> None:
    on = st.session_state[on_key]
    size = st.session_state.get(size_key, 2) if on else None
    apply(scope, edits.set_interleave, layout_name, size or 2 if on else None)


def selected_layout(design: Design) -> str | None:
    names = list(design.layouts)
    if not names:
        return None
    current = st.session_state.get("designer_layout_sel")
    if current not in names:
        st.session_state["designer_layout_sel"] = names[0]
    return st.session_state["designer_layout_sel"]


def matrix_header(design: Design, scope: str = "matrix") -> str | None:
    """Device count, layout picker and "new layout" on one row. Returns the selected layout name."""
    show_edit_error(scope)
    top = st.columns([1, 2, 1], vertical_alignment="bottom")
    key = vkey("device_num")
    top[0].number_input(
        "Device count",
        min_value=1,
        max_value=65536,
        value=int(design.device_num),
        step=1,
        key=key,
        on_change=_value_cb,
        args=(scope, key, edits.set_device_num),
        help="Cards in the job (one pipeline stage). Every layout's axis sizes must multiply to this.",
    )
    layout_name = selected_layout(design)
    if layout_name is not None:
        top[1].selectbox(
            "Layout",
            list(design.layouts),
            key="designer_layout_sel",
            format_func=lambda n: f"{n}  {tuple(design.layouts[n].device_matrix)}",
            help="A design can define several named device matrices (seed 004's MLP: layout and layout2).",
        )
        layout_name = st.session_state["designer_layout_sel"]
    top[2].button(
        "New layout",
        icon=":material/add:",
        key=vkey("add_layout"),
        on_click=_add_layout_cb,
        args=(scope,),
        width="stretch",
    )
    return layout_name


def axes_editor(design: Design, layout_name: str, scope: str = "matrix") -> None:
    """Axis rows (rename / resize / reorder / remove), product check, presets, rank_list, interleaved."""
    spec = design.layouts[layout_name]
    st.markdown("**Axes** — outermost first; the last axis varies fastest between ranks.")
    physical = [(a, s) for a, s in zip(spec.alias_name, spec.device_matrix, strict=True) if a != INTERLEAVED]
    widths = [2.0, 1.3, 0.72, 0.72, 0.72]
    for i, (alias, size) in enumerate(physical):
        row = st.columns(widths, vertical_alignment="bottom", gap="small")
        name_key = vkey("alias", layout_name, i)
        row[0].text_input(
            "alias (outer → inner)" if i == 0 else f"Axis {i} alias",
            value=alias,
            key=name_key,
            label_visibility="visible" if i == 0 else "collapsed",
            on_change=_value_cb,
            args=(scope, name_key, edits.rename_axis, layout_name, alias),
        )
        size_key = vkey("size", layout_name, i)
        row[1].number_input(
            "size" if i == 0 else f"Axis {i} size",
            min_value=1,
            max_value=65536,
            value=int(size),
            step=1,
            key=size_key,
            label_visibility="visible" if i == 0 else "collapsed",
            on_change=_value_cb,
            args=(scope, size_key, edits.set_axis_size, layout_name, alias),
        )
        row[2].button(
            ":material/arrow_upward:",
            key=vkey("up", layout_name, i),
            help=f"Move {alias} outwards",
            on_click=apply,
            args=(scope, edits.move_axis, layout_name, alias, -1),
            disabled=i == 0,
            width="stretch",
        )
        row[3].button(
            ":material/arrow_downward:",
            key=vkey("down", layout_name, i),
            help=f"Move {alias} inwards",
            on_click=apply,
            args=(scope, edits.move_axis, layout_name, alias, 1),
            disabled=i == len(physical) - 1,
            width="stretch",
        )
        row[4].button(
            ":material/close:",
            key=vkey("rm", layout_name, i),
            help=f"Remove {alias} (and from every map)",
            on_click=apply,
            args=(scope, edits.remove_axis, layout_name, alias),
            disabled=len(physical) == 1,
            width="stretch",
        )
    st.button(
        "Add axis",
        icon=":material/add:",
        key=vkey("add_axis", layout_name),
        on_click=apply,
        args=(scope, edits.add_axis, layout_name),
    )

    ok, sentence = product_status(spec, design.device_num)
    (st.success if ok else st.error)(sentence, icon=":material/check_circle:" if ok else ":material/warning:")

    preset_key = vkey("preset", layout_name)
    pcols = st.columns([3, 1.2], vertical_alignment="bottom")
    pcols[0].selectbox(
        "Preset",
        list(edits.PRESETS),
        format_func=lambda k: edits.PRESETS[k].label,
        key=preset_key,
        help="Device matrices from the seed documents. Applying one also sets the device count.",
    )
    pcols[1].button(
        "Apply preset",
        key=vkey("apply_preset", layout_name),
        on_click=_preset_cb,
        args=(scope, layout_name, preset_key),
        width="stretch",
    )

    with st.expander("Advanced: rename layout, rank_list, interleaved_parallel, remove"):
        rename_key = vkey("layout_name", layout_name)
        st.text_input(
            "Layout name (Python identifier)",
            value=layout_name,
            key=rename_key,
            on_change=_rename_layout_cb,
            args=(scope, rename_key, layout_name),
        )
        rank_key = vkey("rank_list", layout_name)
        st.text_input(
            "rank_list (optional)",
            value="" if spec.rank_list is None else view.format_ints(spec.rank_list),
            key=rank_key,
            placeholder="default: 0, 1, 2, … (row-major)",
            help="rank_list[position] renames device-matrix positions to ranks. One rank per position, no repeats.",
            on_change=_value_cb,
            args=(scope, rank_key, edits.set_rank_list, layout_name),
        )
        interleave = edits.interleave_of(spec)
        on_key = vkey("interleave_on", layout_name)
        size_key = vkey("interleave_size", layout_name)
        icols = st.columns([2, 1], vertical_alignment="bottom")
        icols[0].checkbox(
            "interleaved_parallel (virtual last axis: several pieces per card)",
            value=interleave is not None,
            key=on_key,
            on_change=_interleave_cb,
            args=(scope, layout_name, on_key, size_key),
        )
        icols[1].number_input(
            "pieces per card",
            min_value=2,
            max_value=64,
            value=interleave or 2,
            key=size_key,
            disabled=interleave is None,
            on_change=_interleave_cb,
            args=(scope, layout_name, on_key, size_key),
        )
        st.button(
            f"Remove layout {layout_name}",
            key=vkey("rm_layout", layout_name),
            on_click=apply,
            args=(scope, edits.remove_layout, layout_name),
            icon=":material/delete:",
        )


# ---------------------------------------------------------------------------------------------
# drag-and-pick
# ---------------------------------------------------------------------------------------------
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
        current = [a for a in view.entry_axes(entry) if a in sizes]
        cols[dim % len(cols)].multiselect(
            view.dim_header(dim, size),
            list(spec.alias_name),
            default=current,
            key=key,
            format_func=lambda a: view.chip_label(a, sizes[a]),
            placeholder="None (not split)",
            on_change=lambda d=dim, k=key: on_pick(d, list(st.session_state[k])),
        )


def entries_caption(entries: Sequence[DimEntry], spec: LayoutSpec, shape: Sequence[int] | None) -> str:
    """`dim 0 ← mp (2 pieces) · dim 1 ← (sp, dp) (4 pieces)` for the status line under the editor."""
    sizes = dict(zip(spec.alias_name, spec.device_matrix, strict=False))
    parts = []
    for dim, entry in enumerate(entries):
        axes = view.entry_axes(entry)
        pieces = math.prod(sizes.get(a, 1) for a in axes)
        label = "None" if not axes else (axes[0] if len(axes) == 1 else "(" + ", ".join(axes) + ")")
        bad = shape is not None and dim < len(shape) and shape[dim] % pieces
        parts.append(
            f"dim {dim} ← `{label}`"
            + (f" ({pieces} pieces)" if pieces > 1 else "")
            + (" — :red[not divisible]" if bad else "")
        )
    return " · ".join(parts) if parts else "scalar"


__all__ = [
    "DESIGN_KEY",
    "NONE",
    "VERSION_KEY",
    "apply",
    "axes_editor",
    "click_pick",
    "commit",
    "drag_and_pick",
    "get_design",
    "init_state",
    "matrix_header",
    "vkey",
]
