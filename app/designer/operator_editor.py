"""The editor of one operator: inputs, type attributes, shard strategy per input (Layout chips or a
tuple), the optional out_strategy, its MindSpore code and what the analysis says about it."""

from __future__ import annotations

from typing import Any

import streamlit as st

from app import code_view
from app import design_state as state
from app.design_state import Scope
from app.designer import chips
from app.designer.analysis import render_analysis
from core.sharding import edits
from core.sharding.catalog import OP_TYPES
from core.sharding.design import Design, LayoutSpec, OperatorSpec, Sharding
from core.sharding.operators import OperatorAnalysis

SCOPE = Scope.OPERATOR


TEXT_ATTRIBUTES: dict[str, tuple[tuple[str, Any, str], ...]] = {
    "Transpose": (
        ("perm", edits.set_operator_perm, "Output dimension i is input dimension perm[i], e.g. 0, 2, 1, 3."),
    ),
    "Reshape": (
        ("shape", edits.set_operator_shape, "The global target shape (same number of elements), e.g. 8, 128, 32, 128."),
    ),
}


def _attribute_editor(op: OperatorSpec) -> None:
    """The type's own fields: transpose flags, Transpose perm, Reshape shape, Softmax axis, RMSNorm eps."""
    op_name = op.name
    for flag in ("transpose_a", "transpose_b"):
        if flag not in OP_TYPES[op.type].attributes:
            continue
        fkey = state.vkey("op_flag", op_name, flag)
        st.checkbox(
            flag,
            value=getattr(op, flag),
            key=fkey,
            on_change=lambda flag=flag, fkey=fkey: state.apply(
                SCOPE, edits.set_operator_transpose, op_name, flag, st.session_state[fkey]
            ),
        )
    for attr, edit, help_text in TEXT_ATTRIBUTES.get(op.type, ()):
        tkey = state.vkey(f"op_{attr}", op_name)
        st.text_input(
            attr,
            value=edits.format_ints(getattr(op, attr) or ()),
            key=tkey,
            on_change=lambda edit=edit, tkey=tkey: state.apply(SCOPE, edit, op_name, st.session_state[tkey]),
            help=help_text,
        )
    if op.type == "Softmax":
        akey = state.vkey("op_axis", op_name)
        st.number_input(
            "axis",
            value=-1 if op.axis is None else op.axis,
            step=1,
            key=akey,
            on_change=lambda: state.apply(SCOPE, edits.set_operator_axis, op_name, st.session_state[akey]),
            help="The normalised dimension; it must stay unsplit. -1 = the last one.",
        )
    if op.type == "RMSNorm":
        ekey = state.vkey("op_eps", op_name)
        st.number_input(
            "eps",
            value=1e-6 if op.eps is None else op.eps,
            min_value=1e-12,
            max_value=0.5,
            format="%.1e",
            key=ekey,
            on_change=lambda: state.apply(SCOPE, edits.set_operator_eps, op_name, st.session_state[ekey]),
            help="Added to the mean square before the square root.",
        )


def operator_editor(
    design: Design, op_name: str, analysis: OperatorAnalysis | None, analyses: list[OperatorAnalysis] | None
) -> None:
    op = design.operator(op_name)
    head = st.columns([3, 1], vertical_alignment="bottom")
    head[0].subheader(f"{op.name} · {op.type}")
    head[1].button(
        "Remove operator",
        key=state.vkey("rm_op", op_name),
        width="stretch",
        on_click=state.apply,
        args=(SCOPE, edits.remove_operator, op_name),
    )
    sources = edits.op_sources(design, before=op_name)
    attributes = OP_TYPES[op.type].attributes if op.type in OP_TYPES else ()
    icols = st.columns(len(op.inputs) + (1 if attributes else 0))
    for i, source in enumerate(op.inputs):
        options = sources if source in sources else [source, *sources]
        key = state.vkey("op_in", op_name, i)
        icols[i].selectbox(
            f"Input {i}",
            options,
            index=options.index(source),
            key=key,
            on_change=lambda i=i, key=key: state.apply(
                SCOPE, edits.set_operator_input, op_name, i, st.session_state[key]
            ),
        )
    if attributes:
        with icols[-1]:
            _attribute_editor(op)

    skey = state.vkey("op_strategy_on", op_name)
    st.toggle(
        "Give this operator a shard strategy",
        value=op.strategy is not None,
        key=skey,
        on_change=lambda: state.apply(SCOPE, edits.enable_operator_strategy, op_name, st.session_state[skey]),
        help="Off: MindSpore picks the strategy (shown as `ops.X()` without `.shard`).",
    )
    shapes = edits.input_shapes(design, op_name, analyses)
    if op.strategy is not None:
        for i in range(len(op.inputs)):
            with st.container(border=True):
                _input_editor(design, op_name, i, shapes[i])
        with st.container(border=True):
            _output_editor(design, op_name, analysis)
    st.code(code_view.operator_code(op), language="python", wrap_lines=True)
    render_analysis(design, analysis)


def _input_chips(spec: LayoutSpec, op_name: str, index: int, sharding: Sharding, shape: tuple[int, ...] | None) -> None:
    """Drag (or pick) device-axis chips onto the dimensions of an input's Layout strategy."""
    dropped = chips.drag_and_pick(spec, sharding.map or (), shape, state.vkey("op_dnd", op_name, index))
    if dropped is not None:
        state.apply(SCOPE, edits.set_operator_map, op_name, index, dropped)
        st.rerun()
    with st.expander("Pick axes without dragging"):
        chips.click_pick(
            spec,
            sharding.map or (),
            shape,
            f"designer:oppick:{op_name}:{index}",
            lambda dim, axes: state.apply(SCOPE, edits.set_operator_dim_axes, op_name, index, dim, axes),
        )


def _input_editor(design: Design, op_name: str, index: int, shape: tuple[int, ...] | None) -> None:
    """One input's strategy: Layout or tuple, the layout it uses, and its chips or split counts."""
    op = design.operator(op_name)
    sharding = op.strategy[index] if op.strategy is not None and index < len(op.strategy) else None
    source = op.inputs[index]
    hc = st.columns([1.3, 1.6, 1.1], vertical_alignment="center")
    hc[0].markdown(f"**Input {index}: `{source}`**  \n" + (f"shape {tuple(shape)}" if shape else "shape unknown"))
    mode = "layout" if sharding is not None and sharding.is_layout else "tuple"
    mode_key = state.vkey("op_mode", op_name, index)
    hc[1].radio(
        "Strategy kind",
        ["layout", "tuple"],
        index=0 if mode == "layout" else 1,
        key=mode_key,
        horizontal=True,
        format_func=lambda m: "Layout (drag axes)" if m == "layout" else "Tuple, e.g. 4,1",
        label_visibility="collapsed",
        on_change=lambda: state.apply(SCOPE, edits.set_operator_input_mode, op_name, index, st.session_state[mode_key]),
    )
    if mode == "layout" and sharding is not None and sharding.layout is not None:  # "layout": it has one
        layouts = list(design.layouts)
        if sharding.layout not in layouts:
            st.error(f"layout {sharding.layout!r} does not exist: pick one")
            layouts = [sharding.layout, *layouts]
        lkey = state.vkey("op_layout", op_name, index)
        hc[2].selectbox(
            "Layout",
            layouts,
            label_visibility="collapsed",
            index=layouts.index(sharding.layout),
            key=lkey,
            on_change=lambda: state.apply(
                SCOPE, edits.set_operator_input_mode, op_name, index, "layout", st.session_state[lkey]
            ),
        )
        if sharding.layout in design.layouts:
            _input_chips(design.layouts[sharding.layout], op_name, index, sharding, shape)
    elif sharding is not None:
        skey = state.vkey("op_split", op_name, index)
        st.text_input(
            "Pieces per dimension",
            value=edits.format_ints(sharding.split or ()),
            key=skey,
            on_change=lambda: state.apply(SCOPE, edits.set_operator_split_text, op_name, index, st.session_state[skey]),
        )


def _output_editor(design: Design, op_name: str, analysis: OperatorAnalysis | None) -> None:
    """MindSpore's out_strategy: an optional Layout for the output (e.g. ReduceScatter instead of AllReduce)."""
    op = design.operator(op_name)
    out = op.out_strategy
    out_shape = tuple(analysis.output_shape) if analysis is not None and analysis.output_shape else None
    ndim = len(out_shape) if out_shape else len(out.map or ()) if out is not None else 2
    hc = st.columns([1.3, 1.6, 1.1], vertical_alignment="center")
    hc[0].markdown("**Output**  \n" + (f"shape {out_shape}" if out_shape else "shape unknown"))
    okey = state.vkey("op_out_on", op_name)
    layouts = list(design.layouts)
    hc[1].toggle(
        "out_strategy (Layout)",
        value=out is not None,
        key=okey,
        disabled=not layouts,
        help="shard(in_strategy, out_strategy): split the output over reduce axes to get a ReduceScatter.",
        on_change=lambda: state.apply(
            SCOPE,
            edits.set_operator_out_strategy,
            op_name,
            (layouts[0] if layouts else None) if st.session_state[okey] else None,
            ndim,
        ),
    )
    if out is None or out.layout is None:  # an output strategy is always a Layout strategy
        return
    if out.layout not in layouts:
        st.error(f"layout {out.layout!r} does not exist: pick one")
        layouts = [out.layout, *layouts]
    lkey = state.vkey("op_out_layout", op_name)
    hc[2].selectbox(
        "Output layout",
        layouts,
        index=layouts.index(out.layout),
        key=lkey,
        label_visibility="collapsed",
        on_change=lambda: state.apply(SCOPE, edits.set_operator_out_strategy, op_name, st.session_state[lkey], ndim),
    )
    if out.layout in design.layouts:
        spec = design.layouts[out.layout]
        entries = edits.fit_map(out.map or (), ndim)
        chips.axes_editor(
            spec,
            entries,
            out_shape,
            (state.vkey("op_out_dnd", op_name), f"designer:outpick:{op_name}"),
            lambda new: state.apply(SCOPE, edits.set_operator_out_map, op_name, new),
            lambda dim, axes: state.apply(SCOPE, edits.set_operator_out_dim_axes, op_name, dim, axes),
            pick_label="Pick axes without dragging",
        )
