"""The Device matrix tab: device count, the layout picker, one row per axis, presets, the advanced
layout settings, and the picture of which rank sits at every device-matrix position."""

from __future__ import annotations

import math
from typing import Literal

import streamlit as st

from app import code_view, figures
from app import design_state as state
from app import designer_view as view
from app.design_state import Scope
from core.sharding import edits
from core.sharding.design import Design, LayoutSpec
from core.sharding.layout import INTERLEAVED, LayoutError

LAYOUT_SEL = "designer_layout_sel"
SCOPE = Scope.MATRIX


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


# ---------------------------------------------------------------------------------------------
# callbacks
# ---------------------------------------------------------------------------------------------
def _rename_layout_cb(key: str, old: str) -> None:
    new = st.session_state[key]
    if state.apply(SCOPE, edits.rename_layout, old, new) is not state.FAILED:
        st.session_state[LAYOUT_SEL] = new.strip()


def _add_layout_cb() -> None:
    name = state.apply(SCOPE, edits.add_layout)
    if name is not state.FAILED:
        st.session_state[LAYOUT_SEL] = name


def _preset_cb(layout_name: str, key: str) -> None:
    preset = st.session_state[key]
    if preset in edits.PRESETS and state.apply(SCOPE, edits.apply_preset, layout_name, preset) is not state.FAILED:
        st.session_state[state.NOTICE_KEY] = f"Applied preset {edits.PRESETS[preset].label} to {layout_name}."


def _interleave_cb(layout_name: str, on_key: str, size_key: str) -> None:
    on = st.session_state[on_key]
    size = st.session_state.get(size_key, 2) if on else None
    state.apply(SCOPE, edits.set_interleave, layout_name, size or 2 if on else None)


# ---------------------------------------------------------------------------------------------
# header: device count, layout picker, new layout
# ---------------------------------------------------------------------------------------------
def selected_layout(design: Design) -> str | None:
    names = list(design.layouts)
    if not names:
        return None
    if st.session_state.get(LAYOUT_SEL) not in names:
        st.session_state[LAYOUT_SEL] = names[0]
    return st.session_state[LAYOUT_SEL]


def matrix_header(design: Design) -> str | None:
    """Device count, layout picker and "new layout" on one row. Returns the selected layout name."""
    state.show_edit_error(SCOPE)
    top = st.columns([1, 2, 1], vertical_alignment="bottom")
    key = state.vkey("device_num")
    top[0].number_input(
        "Device count",
        min_value=1,
        max_value=65536,
        value=int(design.device_num),
        step=1,
        key=key,
        on_change=state.value_cb,
        args=(SCOPE, key, edits.set_device_num),
        help="Cards in the job (one pipeline stage). Every layout's axis sizes must multiply to this.",
    )
    layout_name = selected_layout(design)
    if layout_name is not None:
        top[1].selectbox(
            "Layout",
            list(design.layouts),
            key=LAYOUT_SEL,
            format_func=lambda n: f"{n}  {tuple(design.layouts[n].device_matrix)}",
            help="A design can define several named device matrices (seed 004's MLP: layout and layout2).",
        )
        layout_name = st.session_state[LAYOUT_SEL]
    top[2].button(
        "New layout", icon=":material/add:", key=state.vkey("add_layout"), on_click=_add_layout_cb, width="stretch"
    )
    return layout_name


# ---------------------------------------------------------------------------------------------
# the axes editor
# ---------------------------------------------------------------------------------------------
def _axis_row(layout_name: str, i: int, alias: str, size: int, last: int) -> None:
    """One axis: alias, size, move out / in, remove. Only the first row shows its labels."""
    row = st.columns([2.0, 1.3, 0.72, 0.72, 0.72], vertical_alignment="bottom", gap="small")
    labels: Literal["visible", "collapsed"] = "visible" if i == 0 else "collapsed"
    name_key = state.vkey("alias", layout_name, i)
    row[0].text_input(
        "alias (outer → inner)" if i == 0 else f"Axis {i} alias",
        value=alias,
        key=name_key,
        label_visibility=labels,
        on_change=state.value_cb,
        args=(SCOPE, name_key, edits.rename_axis, layout_name, alias),
    )
    size_key = state.vkey("size", layout_name, i)
    row[1].number_input(
        "size" if i == 0 else f"Axis {i} size",
        min_value=1,
        max_value=65536,
        value=int(size),
        step=1,
        key=size_key,
        label_visibility=labels,
        on_change=state.value_cb,
        args=(SCOPE, size_key, edits.set_axis_size, layout_name, alias),
    )
    for column, (part, icon, tip, args, disabled) in zip(
        row[2:],
        (
            ("up", "arrow_upward", f"Move {alias} outwards", (edits.move_axis, layout_name, alias, -1), i == 0),
            ("down", "arrow_downward", f"Move {alias} inwards", (edits.move_axis, layout_name, alias, 1), i == last),
            ("rm", "close", f"Remove {alias} (and from every map)", (edits.remove_axis, layout_name, alias), last == 0),
        ),
        strict=True,
    ):
        column.button(
            f":material/{icon}:",
            key=state.vkey(part, layout_name, i),
            help=tip,
            on_click=state.apply,
            args=(SCOPE, *args),
            disabled=disabled,
            width="stretch",
        )


def _presets(layout_name: str) -> None:
    preset_key = state.vkey("preset", layout_name)
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
        key=state.vkey("apply_preset", layout_name),
        on_click=_preset_cb,
        args=(layout_name, preset_key),
        width="stretch",
    )


def _advanced(spec: LayoutSpec, layout_name: str) -> None:
    """Rename the layout, its rank_list, the interleaved_parallel axis, remove it."""
    rename_key = state.vkey("layout_name", layout_name)
    st.text_input(
        "Layout name (Python identifier)",
        value=layout_name,
        key=rename_key,
        on_change=_rename_layout_cb,
        args=(rename_key, layout_name),
    )
    rank_key = state.vkey("rank_list", layout_name)
    st.text_input(
        "rank_list (optional)",
        value="" if spec.rank_list is None else edits.format_ints(spec.rank_list),
        key=rank_key,
        placeholder="default: 0, 1, 2, … (row-major)",
        help="rank_list[position] renames device-matrix positions to ranks. One rank per position, no repeats.",
        on_change=state.value_cb,
        args=(SCOPE, rank_key, edits.set_rank_list, layout_name),
    )
    interleave = edits.interleave_of(spec)
    on_key = state.vkey("interleave_on", layout_name)
    size_key = state.vkey("interleave_size", layout_name)
    icols = st.columns([2, 1], vertical_alignment="bottom")
    icols[0].checkbox(
        "interleaved_parallel (virtual last axis: several pieces per card)",
        value=interleave is not None,
        key=on_key,
        on_change=_interleave_cb,
        args=(layout_name, on_key, size_key),
    )
    icols[1].number_input(
        "pieces per card",
        min_value=2,
        max_value=64,
        value=interleave or 2,
        key=size_key,
        disabled=interleave is None,
        on_change=_interleave_cb,
        args=(layout_name, on_key, size_key),
    )
    st.button(
        f"Remove layout {layout_name}",
        key=state.vkey("rm_layout", layout_name),
        on_click=state.apply,
        args=(SCOPE, edits.remove_layout, layout_name),
        icon=":material/delete:",
    )


def axes_editor(design: Design, layout_name: str) -> None:
    """Axis rows (rename / resize / reorder / remove), product check, presets, advanced settings."""
    spec = design.layouts[layout_name]
    st.markdown("**Axes** — outermost first; the last axis varies fastest between ranks.")
    physical = [(a, s) for a, s in zip(spec.alias_name, spec.device_matrix, strict=True) if a != INTERLEAVED]
    for i, (alias, size) in enumerate(physical):
        _axis_row(layout_name, i, alias, size, len(physical) - 1)
    st.button(
        "Add axis",
        icon=":material/add:",
        key=state.vkey("add_axis", layout_name),
        on_click=state.apply,
        args=(SCOPE, edits.add_axis, layout_name),
    )
    ok, sentence = product_status(spec, design.device_num)
    (st.success if ok else st.error)(sentence, icon=":material/check_circle:" if ok else ":material/warning:")
    _presets(layout_name)
    with st.expander("Advanced: rename layout, rank_list, interleaved_parallel, remove"):
        _advanced(spec, layout_name)


# ---------------------------------------------------------------------------------------------
# the tab
# ---------------------------------------------------------------------------------------------
def _rank_picture(design: Design, layout_name: str) -> None:
    """The rank at every device-matrix position, and the layout's code."""
    try:
        layout = design.layout(layout_name)
    except LayoutError as exc:
        st.error(f"{layout_name} cannot be built: {exc}", icon=":material/warning:")
        return
    st.markdown(f"**{layout_name}: the rank at every device-matrix position**")
    dgrid = view.device_grid(layout)
    ranks = [r for row in dgrid.ranks for r in row]
    positions = [p for row in dgrid.positions for p in row]
    hover = [f"position {p}<br>rank {r}" for p, r in zip(positions, ranks, strict=True)]
    st.plotly_chart(
        figures.device_matrix_figure(dgrid, [0] * len(positions), hover),
        width="stretch",
        key=f"matrix:dm@{state.version()}",
        config={"displayModeBar": False},
    )
    st.caption("Rows = outer axes flattened (row-major), columns = the innermost axis.")
    st.code(code_view.layout_code(design, layout_name), language="python", wrap_lines=True)


def matrix_tab(design: Design) -> None:
    layout_name = matrix_header(design)
    if layout_name is None:
        st.info("This design has no layout yet: add one.")
        return
    left, right = st.columns([1.3, 1], gap="large")
    with left:
        axes_editor(design, layout_name)
    with right:
        _rank_picture(design, layout_name)
