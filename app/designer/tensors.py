"""The Tensors tab: pick a tensor, edit its name / shape / dtype / role / placement, drag device-axis
chips onto its dimensions, and see which slice lives on which rank with the MindSpore code."""

from __future__ import annotations

import contextlib
from typing import Any

import streamlit as st

from app import code_view
from app import design_state as state
from app import designer_view as view
from app.design_state import Scope
from app.designer import chips
from app.designer.placement import render_placement
from core.sharding import edits
from core.sharding.design import ROLES, Design, Sharding, TensorSpec
from core.sharding.layout import LayoutError
from core.sharding.placement import DTYPE_BYTES

TENSOR_SEL = "designer_tensor_sel"
SCOPE = Scope.TENSOR
PLACEMENT_OPTIONS = {
    "layout": "Layout strategy (drag axes)",
    "tuple": "Tuple strategy (e.g. 4,1)",
    "none": "Replicated",
}


# ---------------------------------------------------------------------------------------------
# callbacks
# ---------------------------------------------------------------------------------------------
def _edit_cb(fn: Any, *args: Any) -> None:
    state.apply(SCOPE, fn, *args)


def _add_tensor_cb() -> None:
    name = state.apply(SCOPE, edits.add_tensor)
    if name is not state.FAILED:
        st.session_state[TENSOR_SEL] = name


def _rename_tensor_cb(key: str, old: str) -> None:
    new = st.session_state[key].strip()
    if state.apply(SCOPE, edits.rename_tensor, old, new) is not state.FAILED:
        st.session_state[TENSOR_SEL] = new


def _shape_cb(key: str, name: str) -> None:
    state.apply(SCOPE, lambda d, text: edits.set_tensor_shape(d, name, edits.parse_shape(text)), st.session_state[key])


def _split_cb(key: str, name: str) -> None:
    state.apply(SCOPE, lambda d, text: edits.set_tensor_split(d, name, edits.parse_split(text)), st.session_state[key])


def _role_cb(key: str, name: str) -> None:
    role = st.session_state[key]
    state.apply(SCOPE, edits.set_tensor_role, name, None if role == "default" else role)


def _placement_cb(key: str, name: str) -> None:
    choice = st.session_state[key]
    design = state.current_design()
    tensor = design.tensors[name]
    if choice == "none":
        state.apply(SCOPE, edits.set_tensor_layout, name, None)
    elif choice == "tuple":
        split = (1,) * len(tensor.shape)
        if tensor.sharding is not None and tensor.sharding.is_layout:
            with contextlib.suppress(LayoutError):
                split = design.tensor_layout(tensor.sharding).split
        state.apply(SCOPE, edits.set_tensor_split, name, split)
    elif not design.layouts:
        state.fail(SCOPE, "the design has no layout: add one in the Device matrix tab first")
    else:
        state.apply(SCOPE, edits.set_tensor_layout, name, choice)


# ---------------------------------------------------------------------------------------------
# parts of the tab
# ---------------------------------------------------------------------------------------------
def _tensor_picker(design: Design) -> str | None:
    """Tensor picker, "New tensor" and "Remove tensor" on one row; returns the picked tensor."""
    names = list(design.tensors)
    top = st.columns([2.2, 1, 1], vertical_alignment="bottom")
    top[1].button(
        "New tensor", icon=":material/add:", key=state.vkey("add_tensor"), on_click=_add_tensor_cb, width="stretch"
    )
    if not names:
        top[0].info("No tensors yet: add one.")
        return None
    if st.session_state.get(TENSOR_SEL) not in names:
        st.session_state[TENSOR_SEL] = names[0]
    name = top[0].selectbox(
        "Tensor", names, key=TENSOR_SEL, format_func=lambda n: f"{n}  {tuple(design.tensors[n].shape)}"
    )
    top[2].button(
        "Remove tensor",
        key=state.vkey("rm_tensor", name),
        on_click=_edit_cb,
        args=(edits.remove_tensor, name),
        width="stretch",
    )
    return name


def placement_mode(sharding: Sharding | None) -> str:
    """ "none" (replicated), "layout" or "tuple"."""
    return "none" if sharding is None else "layout" if sharding.is_layout else "tuple"


def _tensor_properties(design: Design, name: str, tensor: TensorSpec) -> None:
    """Name, shape, dtype, role and placement on one row."""
    props = st.columns([1.2, 1.2, 1, 1, 2])
    name_key = state.vkey("tensor_name", name)
    props[0].text_input("Name", value=name, key=name_key, on_change=_rename_tensor_cb, args=(name_key, name))
    shape_key = state.vkey("tensor_shape", name)
    props[1].text_input(
        "Shape",
        value=edits.format_ints(tensor.shape),
        key=shape_key,
        on_change=_shape_cb,
        args=(shape_key, name),
        help="Dimension sizes separated by commas, e.g. 2, 4",
    )
    dtype_key = state.vkey("tensor_dtype", name)
    dtypes = list(DTYPE_BYTES)
    props[2].selectbox(
        "dtype",
        dtypes,
        index=dtypes.index(tensor.dtype),
        key=dtype_key,
        on_change=state.value_cb,
        args=(SCOPE, dtype_key, edits.set_tensor_dtype, name),
    )
    role_key = state.vkey("tensor_role", name)
    roles = ["default", *ROLES]
    props[3].selectbox(
        "Role",
        roles,
        index=roles.index(tensor.role or "default"),
        key=role_key,
        format_func=lambda r: f"{design.tensor_role(name)} (default)" if r == "default" else r,
        on_change=_role_cb,
        args=(role_key, name),
        help="input: the dataset feeds it; weight: a trained Parameter (float dtypes only).",
    )
    sharding = tensor.sharding
    mode = placement_mode(sharding)
    place_key = state.vkey("tensor_place", name)
    options = [*design.layouts, "tuple", "none"]
    layout = sharding.layout if sharding is not None and mode == "layout" else None
    current = layout if layout is not None and layout in design.layouts else mode
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


def _sharding_editor(design: Design, name: str, tensor: TensorSpec) -> None:
    """The chips of a Layout strategy, the text of a tuple strategy, or a note that it is replicated."""
    sharding = tensor.sharding
    if sharding is None:
        st.caption(f"{name} is replicated: every rank holds the whole tensor.")
    elif sharding.layout is not None and sharding.layout in design.layouts:
        spec = design.layouts[sharding.layout]
        st.markdown(
            f"**Drag device-axis chips onto {name}'s dimensions** — order inside a dimension is outer → inner; "
            "an empty dimension is `None`."
        )
        chips.axes_editor(
            spec,
            sharding.map or (),  # a Layout strategy always has its map
            tensor.shape,
            (state.vkey("dnd", name, sharding.layout), f"designer:pick:{name}"),
            lambda new: state.apply(SCOPE, edits.set_tensor_map, name, new),
            lambda dim, axes: state.apply(SCOPE, edits.set_dim_axes, name, dim, axes),
        )
        st.caption(chips.entries_caption(sharding.map or (), spec, tensor.shape))
    elif sharding.is_layout:
        st.error(f"{name} uses layout {sharding.layout!r}, which does not exist: pick a layout above.")
    else:
        split_key = state.vkey("tensor_split", name)
        st.text_input(
            "Tuple strategy (pieces per dimension)",
            value=edits.format_ints(sharding.split or ()),
            key=split_key,
            on_change=_split_cb,
            args=(split_key, name),
            help="Like ops.ReLU().shard(((4, 1),)): MindSpore repeats the rest over the remaining devices.",
        )


def _tensor_preview(design: Design, name: str, tensor: TensorSpec) -> None:
    """Which slice lives on which rank, then the MindSpore code and what TensorLayout.to_dict() gives."""
    try:
        placement = view.tensor_placement(design, name)
    except LayoutError as exc:
        st.error(f"No preview for {name}: {exc}", icon=":material/warning:")
        return
    render_placement(placement, tensor.dtype, f"designer_view:{name}", name)
    with st.expander("MindSpore code and tensor_map", expanded=True):
        ccols = st.columns([1.5, 1])
        ccols[0].code(code_view.tensor_code(design, name), language="python", wrap_lines=True)
        info = code_view.tensor_map_dict(design, tensor.sharding)
        if isinstance(info, dict):
            ccols[1].markdown("`TensorLayout.to_dict()` — what MindSpore computes")
            ccols[1].code("\n".join(f"{k}: {v!r}" for k, v in info.items()), language="yaml", wrap_lines=True)
        else:
            ccols[1].caption(info)


def tensor_tab(design: Design) -> None:
    state.show_edit_error(SCOPE)
    name = _tensor_picker(design)
    if name is None:
        return
    tensor = design.tensors[name]
    _tensor_properties(design, name, tensor)
    _sharding_editor(design, name, tensor)
    _tensor_preview(design, name, tensor)
