"""Layout Designer: edit the design (device matrices, tensors, operator strategies) and see live which
slice of every tensor lives on which rank. The design lives in st.session_state["design"]; every edit
goes through app.design_edits (view data from app.designer_view), figures come from app.figures, code
from app.code_view."""

from __future__ import annotations

import contextlib
from typing import Any

import pandas as pd
import streamlit as st

from app import axis_editor as ui
from app import code_view, figures
from app import design_edits as edits
from app import designer_view as view
from app.model_picker import created_notice, model_form
from core.sharding.catalog import OP_ARITY, OP_TYPES
from core.sharding.design import (
    LOSSES,
    MAX_DESIGN_BYTES,
    ROLES,
    Design,
    DesignError,
    Problem,
    dumps_design,
    loads_design,
)
from core.sharding.layout import LayoutError
from core.sharding.operators import analyze_design
from core.sharding.placement import DTYPE_BYTES, Placement, rank_table_rows
from core.workspace import EXAMPLES_DIR, WorkspaceError, default_workspace

TENSOR_SEL = "designer_tensor_sel"
OP_SEL = "designer_op_sel"
PLACEMENT_OPTIONS = {
    "layout": "Layout strategy (drag axes)",
    "tuple": "Tuple strategy (e.g. 4,1)",
    "none": "Replicated",
}


# ---------------------------------------------------------------------------------------------
# operator analysis
# ---------------------------------------------------------------------------------------------
def operator_analyses(design: Design) -> tuple[list[Any] | None, str | None]:
    """(analyses, None) or (None, why the analysis failed): a bug in the rules must not break the page."""
    if not design.operators:
        return [], None
    try:
        return list(analyze_design(design)), None
    except Exception as exc:  # another module's bug must not break the page
        return None, f"Operator analysis failed: {type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------------------------------
# header and problems
# ---------------------------------------------------------------------------------------------
def render_problems(messages: list[view.Message]) -> None:
    errors = [m for m in messages if m.severity == "error"]
    warnings = [m for m in messages if m.severity != "error"]
    if errors:
        with st.expander(
            f":material/warning: {len(errors)} problem(s) — the design is kept as is; fix these before launching",
            expanded=True,
        ):
            st.markdown("\n".join(f"- `{m.where}` — {m.text}" for m in errors))
    else:
        st.success(
            "The design is consistent: every layout matches the device count and every split divides.",
            icon=":material/check_circle:",
        )
    for m in warnings:
        st.caption(f":material/info: `{m.where}` — {m.text}")


# ---------------------------------------------------------------------------------------------
# previews
# ---------------------------------------------------------------------------------------------
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


def render_placement(design: Design, placement: Placement, dtype: str, key: str, label: str) -> None:
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
    slice_ids = view.view_slice_ids(placement, grid, fixed)
    one_d = len(placement.shape) == 1
    left, right = st.columns([1.15, 1], gap="medium")
    with left:
        st.markdown(f"**{label}: blocks and the ranks holding them**")
        fig = figures.tensor_grid_figure(
            grid, slice_ids, "" if one_d else f"dim {row_dim}", f"dim {col_dim}", highlight_rank=highlight
        )
        st.plotly_chart(fig, width="stretch", key=f"{key}:grid@{ui.version()}", config={"displayModeBar": False})
        row0 = view.row_ranks(grid, 0)
        st.caption(f"Row 0 of this view lies on ranks: {', '.join(str(r) for r in row0)}")
    with right:
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
            key=f"{key}:dm@{ui.version()}",
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
    rows = rank_table_rows(placement, dtype)
    table = pd.DataFrame(rows)
    table["size"] = table["bytes"].map(view.human_bytes)
    with st.expander(
        f"Per-rank table ({len(set(table['rank']))} ranks, "
        f"{view.human_bytes(int(table['bytes'].iloc[0]) * placement.pieces_per_rank)} each)",
        expanded=False,
    ):
        st.dataframe(table, hide_index=True, width="stretch", height=min(36 * len(table) + 38, 320))


# ---------------------------------------------------------------------------------------------
# tabs
# ---------------------------------------------------------------------------------------------
def matrix_tab(design: Design) -> None:
    layout_name = ui.matrix_header(design)
    if layout_name is None:
        st.info("This design has no layout yet: add one.")
        return
    left, right = st.columns([1.3, 1], gap="large")
    with left:
        ui.axes_editor(design, layout_name)
    with right:
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
            key=f"matrix:dm@{ui.version()}",
            config={"displayModeBar": False},
        )
        st.caption("Rows = outer axes flattened (row-major), columns = the innermost axis.")
        st.code(code_view.layout_code(design, layout_name), language="python", wrap_lines=True)


def _tensor_cb(fn: Any, *args: Any) -> None:
    ui.apply("tensor", fn, *args)


def _add_tensor_cb() -> None:
    name = ui.apply("tensor", edits.add_tensor)
    if name is not ui.FAILED:
        st.session_state[TENSOR_SEL] = name


def _rename_tensor_cb(key: str, old: str) -> None:
    new = st.session_state[key].strip()
    if ui.apply("tensor", edits.rename_tensor, old, new) is not ui.FAILED:
        st.session_state[TENSOR_SEL] = new


def _shape_cb(key: str, name: str) -> None:
    ui.apply("tensor", lambda d, text: edits.set_tensor_shape(d, name, view.parse_shape(text)), st.session_state[key])


def _placement_cb(key: str, name: str) -> None:
    choice = st.session_state[key]
    design = ui.get_design()
    tensor = design.tensors[name]
    if choice == "none":
        ui.apply("tensor", edits.set_tensor_layout, name, None)
    elif choice == "tuple":
        split = (1,) * len(tensor.shape)
        if tensor.sharding is not None and tensor.sharding.is_layout:
            with contextlib.suppress(LayoutError):
                split = design.tensor_layout(tensor.sharding).split
        ui.apply("tensor", edits.set_tensor_split, name, split)
    else:
        if not design.layouts:
            ui.fail("tensor", "the design has no layout: add one in the Device matrix tab first")
            return
        ui.apply("tensor", edits.set_tensor_layout, name, choice)


def _split_cb(key: str, name: str) -> None:
    ui.apply("tensor", lambda d, text: edits.set_tensor_split(d, name, view.parse_split(text)), st.session_state[key])


def tensor_tab(design: Design) -> None:
    ui.show_edit_error("tensor")
    names = list(design.tensors)
    top = st.columns([2.2, 1, 1], vertical_alignment="bottom")
    top[1].button(
        "New tensor", icon=":material/add:", key=ui.vkey("add_tensor"), on_click=_add_tensor_cb, width="stretch"
    )
    if not names:
        top[0].info("No tensors yet: add one.")
        return
    if st.session_state.get(TENSOR_SEL) not in names:
        st.session_state[TENSOR_SEL] = names[0]
    name = top[0].selectbox(
        "Tensor",
        names,
        key=TENSOR_SEL,
        format_func=lambda n: f"{n}  {tuple(design.tensors[n].shape)}",
    )
    top[2].button(
        "Remove tensor",
        key=ui.vkey("rm_tensor", name),
        on_click=_tensor_cb,
        args=(edits.remove_tensor, name),
        width="stretch",
    )
    tensor = design.tensors[name]
    sharding = tensor.sharding
    mode = "none" if sharding is None else "layout" if sharding.is_layout else "tuple"

    props = st.columns([1.2, 1.2, 1, 1, 2])
    name_key = ui.vkey("tensor_name", name)
    props[0].text_input("Name", value=name, key=name_key, on_change=_rename_tensor_cb, args=(name_key, name))
    shape_key = ui.vkey("tensor_shape", name)
    props[1].text_input(
        "Shape",
        value=view.format_ints(tensor.shape),
        key=shape_key,
        on_change=_shape_cb,
        args=(shape_key, name),
        help="Dimension sizes separated by commas, e.g. 2, 4",
    )
    dtype_key = ui.vkey("tensor_dtype", name)
    dtypes = list(DTYPE_BYTES)
    props[2].selectbox(
        "dtype",
        dtypes,
        index=dtypes.index(tensor.dtype),
        key=dtype_key,
        on_change=lambda: ui.apply("tensor", edits.set_tensor_dtype, name, st.session_state[dtype_key]),
    )
    role_key = ui.vkey("tensor_role", name)
    roles = ["default", *ROLES]
    props[3].selectbox(
        "Role",
        roles,
        index=roles.index(tensor.role or "default"),
        key=role_key,
        format_func=lambda r: f"{design.tensor_role(name)} (default)" if r == "default" else r,
        on_change=lambda: ui.apply(
            "tensor",
            edits.set_tensor_role,
            name,
            None if st.session_state[role_key] == "default" else st.session_state[role_key],
        ),
        help="input: the dataset feeds it; weight: a trained Parameter (float dtypes only).",
    )
    place_key = ui.vkey("tensor_place", name)
    options = [*design.layouts, "tuple", "none"]
    current = sharding.layout if mode == "layout" and sharding.layout in design.layouts else mode
    if current not in options:
        options.insert(0, current)
    props[4].selectbox(
        "Placement",
        options,
        index=options.index(current),
        key=place_key,
        format_func=lambda o: f"Layout strategy on {o}" if o in design.layouts else PLACEMENT_OPTIONS.get(o, o),
        on_change=_placement_cb,
        args=(place_key, name),
    )

    if mode == "layout" and sharding.layout in design.layouts:
        spec = design.layouts[sharding.layout]
        st.markdown(
            f"**Drag device-axis chips onto {name}'s dimensions** — order inside a dimension is outer → inner; "
            "an empty dimension is `None`."
        )
        dnd_key = ui.vkey("dnd", name, sharding.layout)
        dropped = ui.drag_and_pick(spec, sharding.map, tensor.shape, dnd_key)
        if dropped is not None:
            ui.apply("tensor", edits.set_tensor_map, name, dropped)
            st.rerun()
        with st.expander("Pick axes without dragging (keyboard)"):
            ui.click_pick(
                spec,
                sharding.map,
                tensor.shape,
                f"designer:pick:{name}",
                lambda dim, axes: ui.apply("tensor", edits.set_dim_axes, name, dim, axes),
            )
        st.caption(ui.entries_caption(sharding.map, spec, tensor.shape))
    elif mode == "layout":
        st.error(f"{name} uses layout {sharding.layout!r}, which does not exist: pick a layout above.")
    elif mode == "tuple":
        split_key = ui.vkey("tensor_split", name)
        st.text_input(
            "Tuple strategy (pieces per dimension)",
            value=view.format_ints(sharding.split or ()),
            key=split_key,
            on_change=_split_cb,
            args=(split_key, name),
            help="Like ops.ReLU().shard(((4, 1),)): MindSpore repeats the rest over the remaining devices.",
        )
    else:
        st.caption(f"{name} is replicated: every rank holds the whole tensor.")

    try:
        placement = view.tensor_placement(design, name)
    except LayoutError as exc:
        st.error(f"No preview for {name}: {exc}", icon=":material/warning:")
        return
    render_placement(design, placement, tensor.dtype, f"designer_view:{name}", name)
    with st.expander("MindSpore code and tensor_map", expanded=True):
        ccols = st.columns([1.5, 1])
        ccols[0].code(code_view.tensor_code(design, name), language="python", wrap_lines=True)
        info = code_view.tensor_map_dict(design, sharding)
        if isinstance(info, dict):
            ccols[1].markdown("`TensorLayout.to_dict()` — what MindSpore computes")
            ccols[1].code("\n".join(f"{k}: {v!r}" for k, v in info.items()), language="yaml", wrap_lines=True)
        else:
            ccols[1].caption(info)


def _add_op_cb() -> None:
    op_type = st.session_state.get("designer_newop_type", "MatMul")
    inputs = [st.session_state.get(f"designer_newop_in{i}") for i in range(OP_ARITY.get(op_type, 0))]
    name = (st.session_state.get("designer_newop_name") or "").strip() or None
    added = ui.apply("operator", edits.add_operator, op_type, inputs, name)
    if added is not ui.FAILED:
        st.session_state[OP_SEL] = added
        st.session_state["designer_newop_name"] = ""


def operators_tab(design: Design, analyses: list[Any] | None, note: str | None) -> None:
    ui.show_edit_error("operator")
    if note:
        st.warning(note, icon=":material/info:")
    by_name = {a.name: a for a in analyses or ()}
    left, right = st.columns([1, 2.8], gap="large")
    names = [op.name for op in design.operators]
    with left:
        if names:
            if st.session_state.get(OP_SEL) not in names:
                st.session_state[OP_SEL] = names[0]

            def label(n: str) -> str:
                op = design.operator(n)
                a = by_name.get(n)
                mark = "" if a is None else (" :material/check_circle:" if a.valid else " :material/warning:")
                layers = f" × {a.layers}" if a is not None and a.layers > 1 else ""
                return f"{n} · {op.type}{layers}{mark}"

            st.radio("Operators (in order)", names, key=OP_SEL, format_func=label)
        else:
            st.info("No operators yet.")
        with st.expander(":material/add: Add operator", expanded=not names):
            op_type = st.selectbox("Type", list(OP_ARITY), key="designer_newop_type")
            sources = edits.op_sources(design)
            for i in range(OP_ARITY[op_type]):
                if st.session_state.get(f"designer_newop_in{i}") not in sources:
                    st.session_state[f"designer_newop_in{i}"] = sources[min(i, len(sources) - 1)] if sources else None
                st.selectbox(f"Input {i}", sources, key=f"designer_newop_in{i}")
            st.text_input("Name (optional)", key="designer_newop_name", placeholder=op_type.lower())
            st.button(
                "Add operator", key="designer_newop_add", on_click=_add_op_cb, disabled=not sources, type="primary"
            )
        with st.expander(":material/repeat: Loss and repeated layers"):
            _model_editor(design)
    with right:
        if names:
            operator_editor(design, st.session_state[OP_SEL], by_name.get(st.session_state[OP_SEL]), analyses)
        with st.expander("All operators as MindSpore code"):
            st.code(code_view.operators_code(design), language="python")


def _input_editor(design: Design, op_name: str, index: int, shape: tuple[int, ...] | None) -> None:
    op = design.operator(op_name)
    sharding = op.strategy[index] if op.strategy is not None and index < len(op.strategy) else None
    source = op.inputs[index]
    hc = st.columns([1.3, 1.6, 1.1], vertical_alignment="center")
    hc[0].markdown(f"**Input {index}: `{source}`**  \n" + (f"shape {tuple(shape)}" if shape else "shape unknown"))
    mode = "layout" if sharding is not None and sharding.is_layout else "tuple"
    mode_key = ui.vkey("op_mode", op_name, index)
    hc[1].radio(
        "Strategy kind",
        ["layout", "tuple"],
        index=0 if mode == "layout" else 1,
        key=mode_key,
        horizontal=True,
        format_func=lambda m: "Layout (drag axes)" if m == "layout" else "Tuple, e.g. 4,1",
        label_visibility="collapsed",
        on_change=lambda: ui.apply(
            "operator", edits.set_operator_input_mode, op_name, index, st.session_state[mode_key]
        ),
    )
    if mode == "layout" and sharding is not None:
        layouts = list(design.layouts)
        if sharding.layout not in layouts:
            st.error(f"layout {sharding.layout!r} does not exist: pick one")
            layouts = [sharding.layout, *layouts]
        lkey = ui.vkey("op_layout", op_name, index)
        hc[2].selectbox(
            "Layout",
            layouts,
            label_visibility="collapsed",
            index=layouts.index(sharding.layout),
            key=lkey,
            on_change=lambda: ui.apply(
                "operator", edits.set_operator_input_mode, op_name, index, "layout", st.session_state[lkey]
            ),
        )
        if sharding.layout in design.layouts:
            spec = design.layouts[sharding.layout]
            dropped = ui.drag_and_pick(spec, sharding.map or (), shape, ui.vkey("op_dnd", op_name, index))
            if dropped is not None:
                ui.apply("operator", edits.set_operator_map, op_name, index, dropped)
                st.rerun()
            with st.expander("Pick axes without dragging"):
                ui.click_pick(
                    spec,
                    sharding.map or (),
                    shape,
                    f"designer:oppick:{op_name}:{index}",
                    lambda dim, axes: ui.apply("operator", edits.set_operator_dim_axes, op_name, index, dim, axes),
                )
    elif sharding is not None:
        skey = ui.vkey("op_split", op_name, index)
        st.text_input(
            "Pieces per dimension",
            value=view.format_ints(sharding.split or ()),
            key=skey,
            on_change=lambda: ui.apply(
                "operator", edits.set_operator_split_text, op_name, index, st.session_state[skey]
            ),
        )


def _output_editor(design: Design, op_name: str, analysis: Any | None) -> None:
    """MindSpore's out_strategy: an optional Layout for the output (e.g. ReduceScatter instead of AllReduce)."""
    op = design.operator(op_name)
    out = op.out_strategy
    out_shape = tuple(analysis.output_shape) if analysis is not None and analysis.output_shape else None
    ndim = len(out_shape) if out_shape else len(out.map or ()) if out is not None else 2
    hc = st.columns([1.3, 1.6, 1.1], vertical_alignment="center")
    hc[0].markdown("**Output**  \n" + (f"shape {out_shape}" if out_shape else "shape unknown"))
    okey = ui.vkey("op_out_on", op_name)
    layouts = list(design.layouts)
    hc[1].toggle(
        "out_strategy (Layout)",
        value=out is not None,
        key=okey,
        disabled=not layouts,
        help="shard(in_strategy, out_strategy): split the output over reduce axes to get a ReduceScatter.",
        on_change=lambda: ui.apply(
            "operator",
            edits.set_operator_out_strategy,
            op_name,
            (layouts[0] if layouts else None) if st.session_state[okey] else None,
            ndim,
        ),
    )
    if out is None:
        return
    if out.layout not in layouts:
        st.error(f"layout {out.layout!r} does not exist: pick one")
        layouts = [out.layout, *layouts]
    lkey = ui.vkey("op_out_layout", op_name)
    hc[2].selectbox(
        "Output layout",
        layouts,
        index=layouts.index(out.layout),
        key=lkey,
        label_visibility="collapsed",
        on_change=lambda: ui.apply("operator", edits.set_operator_out_strategy, op_name, st.session_state[lkey], ndim),
    )
    if out.layout in design.layouts:
        spec = design.layouts[out.layout]
        entries = view.fit_map(out.map or (), ndim)
        dropped = ui.drag_and_pick(spec, entries, out_shape, ui.vkey("op_out_dnd", op_name))
        if dropped is not None:
            ui.apply("operator", edits.set_operator_out_map, op_name, dropped)
            st.rerun()
        with st.expander("Pick axes without dragging"):
            ui.click_pick(
                spec,
                entries,
                out_shape,
                f"designer:outpick:{op_name}",
                lambda dim, axes: ui.apply("operator", edits.set_operator_out_dim_axes, op_name, dim, axes),
            )


def _repeat_cb(on_key: str, count_key: str, first_key: str, last_key: str, carry_key: str) -> None:
    if not st.session_state[on_key]:
        ui.apply("operator", edits.set_repeat, None)
        return
    design = ui.get_design()
    if design.repeat is None and design.operators:  # switched on: the whole chain, fed by its first input
        first, last = design.operators[0], design.operators[-1]
        ui.apply("operator", edits.set_repeat, 2, first.name, last.name, first.inputs[0] if first.inputs else "")
        return
    ui.apply(
        "operator",
        edits.set_repeat,
        st.session_state.get(count_key) or 2,
        *(st.session_state.get(k) or "" for k in (first_key, last_key, carry_key)),
    )


def _model_editor(design: Design) -> None:
    """The design-level training settings: the loss, and one layer (first..last) repeated N times."""
    lkey = ui.vkey("loss")
    st.selectbox(
        "Loss on the last operator's output",
        list(LOSSES),
        index=list(LOSSES).index(design.loss),
        key=lkey,
        on_change=lambda: ui.apply("operator", edits.set_loss, st.session_state[lkey]),
        help="mse: a target of the output's shape; cross_entropy: logits with the classes on the last dimension.",
    )
    names = [op.name for op in design.operators]
    repeat = design.repeat
    keys = [ui.vkey("repeat", part) for part in ("on", "count", "first", "last", "carry")]
    st.toggle("Repeat a block of operators", value=repeat is not None, key=keys[0], on_change=_repeat_cb, args=keys)
    if repeat is None or not names:
        return
    st.number_input("Layers", min_value=1, value=repeat.count, step=1, key=keys[1], on_change=_repeat_cb, args=keys)
    for key, label, value, options in (
        (keys[2], "First operator of the block", repeat.first, names),
        (keys[3], "Last operator of the block", repeat.last, names),
        (keys[4], "Carry (what layer 1 reads)", repeat.carry, [*design.tensors, *names]),
    ):
        choices = options if value in options else [value, *options]
        st.selectbox(label, choices, index=choices.index(value), key=key, on_change=_repeat_cb, args=keys)


TEXT_ATTRIBUTES: dict[str, tuple[tuple[str, Any, str], ...]] = {
    "Transpose": (
        ("perm", edits.set_operator_perm, "Output dimension i is input dimension perm[i], e.g. 0, 2, 1, 3."),
    ),
    "Reshape": (
        ("shape", edits.set_operator_shape, "The global target shape (same number of elements), e.g. 8, 128, 32, 128."),
    ),
}


def _attribute_editor(op: Any) -> None:
    """The type's own fields: transpose flags, Transpose perm, Reshape shape, Softmax axis, RMSNorm eps."""
    op_name = op.name
    for flag in ("transpose_a", "transpose_b"):
        if flag not in OP_TYPES[op.type].attributes:
            continue
        fkey = ui.vkey("op_flag", op_name, flag)
        st.checkbox(
            flag,
            value=getattr(op, flag),
            key=fkey,
            on_change=lambda flag=flag, fkey=fkey: ui.apply(
                "operator", edits.set_operator_transpose, op_name, flag, st.session_state[fkey]
            ),
        )
    for attr, edit, help_text in TEXT_ATTRIBUTES.get(op.type, ()):
        tkey = ui.vkey(f"op_{attr}", op_name)
        st.text_input(
            attr,
            value=view.format_ints(getattr(op, attr) or ()),
            key=tkey,
            on_change=lambda edit=edit, tkey=tkey: ui.apply("operator", edit, op_name, st.session_state[tkey]),
            help=help_text,
        )
    if op.type == "Softmax":
        akey = ui.vkey("op_axis", op_name)
        st.number_input(
            "axis",
            value=-1 if op.axis is None else op.axis,
            step=1,
            key=akey,
            on_change=lambda: ui.apply("operator", edits.set_operator_axis, op_name, st.session_state[akey]),
            help="The normalised dimension; it must stay unsplit. -1 = the last one.",
        )
    if op.type == "RMSNorm":
        ekey = ui.vkey("op_eps", op_name)
        st.number_input(
            "eps",
            value=1e-6 if op.eps is None else op.eps,
            min_value=1e-12,
            max_value=0.5,
            format="%.1e",
            key=ekey,
            on_change=lambda: ui.apply("operator", edits.set_operator_eps, op_name, st.session_state[ekey]),
            help="Added to the mean square before the square root.",
        )


def operator_editor(design: Design, op_name: str, analysis: Any | None, analyses: list[Any] | None) -> None:
    op = design.operator(op_name)
    head = st.columns([3, 1], vertical_alignment="bottom")
    head[0].subheader(f"{op.name} · {op.type}")
    head[1].button(
        "Remove operator",
        key=ui.vkey("rm_op", op_name),
        width="stretch",
        on_click=ui.apply,
        args=("operator", edits.remove_operator, op_name),
    )
    sources = edits.op_sources(design, before=op_name)
    attributes = OP_TYPES[op.type].attributes if op.type in OP_TYPES else ()
    icols = st.columns(len(op.inputs) + (1 if attributes else 0))
    for i, source in enumerate(op.inputs):
        options = sources if source in sources else [source, *sources]
        key = ui.vkey("op_in", op_name, i)
        icols[i].selectbox(
            f"Input {i}",
            options,
            index=options.index(source),
            key=key,
            on_change=lambda i=i, key=key: ui.apply(
                "operator", edits.set_operator_input, op_name, i, st.session_state[key]
            ),
        )
    if attributes:
        with icols[-1]:
            _attribute_editor(op)

    skey = ui.vkey("op_strategy_on", op_name)
    st.toggle(
        "Give this operator a shard strategy",
        value=op.strategy is not None,
        key=skey,
        on_change=lambda: ui.apply("operator", edits.enable_operator_strategy, op_name, st.session_state[skey]),
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


def _analysis_layout(design: Design, analysis: Any) -> Any:
    """The device matrix to draw communication groups on: an input's layout, else the output's."""
    for tl in [*(analysis.input_layouts or []), analysis.output_layout]:
        if tl is not None:
            return tl.layout
    try:
        return view.derived_tensor_layout((1,), design.device_num).layout
    except LayoutError:
        return None


def render_analysis(design: Design, analysis: Any | None) -> None:
    if analysis is None:
        st.caption("No analysis for this operator (operator analysis unavailable).")
        return
    if analysis.valid:
        st.success("Valid strategy.", icon=":material/check_circle:")
    else:
        st.error("\n".join(f"- {p}" for p in analysis.problems) or "invalid", icon=":material/warning:")
    for note in getattr(analysis, "notes", None) or []:
        st.caption(f":material/info: {note}")
    out = analysis.output_layout
    mcols = st.columns(3)
    mcols[0].markdown(f"**Output shape**  \n`{tuple(analysis.output_shape) if analysis.output_shape else '—'}`")
    mcols[1].markdown(f"**Output layout**  \n`{out.to_code() if out is not None else '—'}`")
    mcols[2].markdown(f"**tensor_map**  \n`{out.tensor_map if out is not None else '—'}`")
    comms = list(analysis.communications or [])
    if not comms:
        st.info(
            "No communication needed: every rank computes its output piece from what it holds.", icon=":material/check:"
        )
        return
    table = pd.DataFrame(
        [
            {
                "collective": c.kind,
                "axes": ", ".join(c.axes) or "—",
                "groups": len(c.groups),
                "ranks per group": len(c.groups[0]) if c.groups else 0,
                "bytes per rank": view.human_bytes(c.bytes_per_rank),
            }
            for c in comms
        ]
    )
    st.markdown("**Implied communication**")
    st.dataframe(table, hide_index=True, width="stretch")
    layout = _analysis_layout(design, analysis)
    if layout is None:
        return
    dgrid = view.device_grid(layout)
    ccols = st.columns(min(len(comms), 2))
    for n, c in enumerate(comms):
        with ccols[n % len(ccols)]:
            st.markdown(f"**{c.kind}** over `{', '.join(c.axes) or 'all'}` — one colour per group")
            st.caption(c.reason)
            st.plotly_chart(
                figures.comm_figure(dgrid, c.groups),
                width="stretch",
                key=f"comm:{analysis.name}:{n}@{ui.version()}",
                config={"displayModeBar": False},
            )


# -- file tab ---------------------------------------------------------------------------------
def designs_folder() -> Any:
    return default_workspace() / "designs"


def _load_cb(folder: Any, key: str, where: str) -> None:
    file_name = st.session_state.get(key)
    if not file_name:
        ui.fail("file", "pick a file to load")
        return
    design, problems = edits.load_from_folder(folder, file_name)
    if design is None:
        st.session_state["designer_load_problems"] = (file_name, problems)
        return
    st.session_state.pop("designer_load_problems", None)
    ui.commit(design, f"Loaded {file_name} from {where}.")


def _save_cb(key: str) -> None:
    name = (st.session_state.get(key) or "").strip()
    try:
        path = edits.save_to_folder(ui.get_design(), designs_folder(), name)
    except (WorkspaceError, OSError) as exc:
        ui.fail("file", str(exc))
        return
    st.session_state[ui.NOTICE_KEY] = f"Saved to {path}."


def _handle_upload(upload: Any) -> None:
    """Load an uploaded file once (the uploader keeps it across reruns); a bad file changes nothing."""
    if upload is None or st.session_state.get("designer_upload_id") == upload.file_id:
        return
    st.session_state["designer_upload_id"] = upload.file_id
    try:
        if upload.size > MAX_DESIGN_BYTES:  # refused before its bytes are read, let alone parsed
            raise DesignError(
                [Problem("$", f"the file is {upload.size:,} bytes: a design file may be at most {MAX_DESIGN_BYTES:,}")]
            )
        design = loads_design(upload.getvalue(), strict=False)
    except DesignError as exc:
        st.session_state["designer_load_problems"] = (upload.name, [f"{p.path}: {p.message}" for p in exc.problems])
        st.rerun()
    st.session_state.pop("designer_load_problems", None)
    ui.commit(design, f"Loaded {upload.name}.")
    st.rerun()


def file_tab(design: Design) -> None:
    ui.show_edit_error("file")
    failed = st.session_state.get("designer_load_problems")
    if failed:
        st.error(
            f"Could not load {failed[0]} — your current design is unchanged:\n"
            + "\n".join(f"- `{p}`" for p in failed[1]),
            icon=":material/block:",
        )
    c1, c2, c3 = st.columns(3, gap="large")
    with c1:
        st.markdown("**This design**")
        nkey = ui.vkey("design_name")
        st.text_input(
            "Design name",
            value=design.name,
            key=nkey,
            on_change=lambda: ui.apply("file", edits.set_name, st.session_state[nkey]),
        )
        dkey = ui.vkey("design_desc")
        st.text_area(
            "Description",
            value=design.description,
            key=dkey,
            height=90,
            on_change=lambda: ui.apply("file", edits.set_description, st.session_state[dkey]),
        )
        st.download_button(
            "Download design JSON",
            dumps_design(design),
            icon=":material/download:",
            file_name=f"{design.name}.json",
            mime="application/json",
            width="stretch",
            key="designer_download",
        )
        upload = st.file_uploader("Upload a design (.json)", type=["json"], key="designer_upload")
        _handle_upload(upload)
    with c2:
        folder = designs_folder()
        st.markdown("**Workspace designs**")
        st.caption(f"`{folder}`")
        skey = ui.vkey("save_name")
        st.text_input("Save as", value=design.name, key=skey, help="letters, digits, '.', '_' or '-'")
        st.button(
            "Save to workspace",
            icon=":material/save:",
            key="designer_save",
            on_click=_save_cb,
            args=(skey,),
            width="stretch",
        )
        saved = edits.list_designs(folder)
        if saved:
            st.selectbox("Saved designs", saved, key="designer_ws_pick")
            st.button(
                "Load from workspace",
                key="designer_ws_load",
                on_click=_load_cb,
                args=(folder, "designer_ws_pick", "the workspace"),
                width="stretch",
            )
        else:
            st.caption("No saved designs yet.")
    with c3:
        st.markdown("**Examples (from the seed documents)**")
        examples = edits.list_designs(EXAMPLES_DIR)
        st.selectbox("Example", examples, key="designer_example_pick")
        st.button(
            "Load example",
            key="designer_example_load",
            on_click=_load_cb,
            args=(EXAMPLES_DIR, "designer_example_pick", "the examples"),
            width="stretch",
            type="primary",
        )


# ---------------------------------------------------------------------------------------------
# page
# ---------------------------------------------------------------------------------------------
ui.init_state()
design = ui.get_design()
analyses, analysis_note = operator_analyses(design)

st.title("Layout Designer")
st.caption(
    f"Design **{design.name}** · {design.device_num} devices · {len(design.layouts)} layout(s) · "
    f"{len(design.tensors)} tensor(s) · {len(design.operators)} operator(s) — drag device-axis chips onto "
    "tensor dimensions and see which slice lives on which rank."
)
# Fixed containers keep the tabs at the same place in the element tree whatever the notice / problems
# show, so the tab the user is on survives every rerun.
with st.container():
    ui.show_notice()
with st.container():
    render_problems(view.collect_problems(design, analyses))
with st.expander("New design from a model", icon=":material/add_circle:"):
    created = model_form()
if created is not None:
    ui.commit(created, created_notice(created))
    st.rerun()

tab_tensors, tab_matrix, tab_ops, tab_file = st.tabs(
    [
        ":material/view_module: Tensors",
        ":material/grid_on: Device matrix",
        ":material/functions: Operators",
        ":material/save: Save / load",
    ],
    key="designer_tabs",
)
with tab_tensors:
    tensor_tab(design)
with tab_matrix:
    matrix_tab(design)
with tab_ops:
    operators_tab(design, analyses, analysis_note)
with tab_file:
    file_tab(design)
