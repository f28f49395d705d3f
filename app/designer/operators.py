"""The Operators tab: the operator chain with a valid / invalid mark each, adding an operator, the
loss and the repeated block, and the editor of the picked operator (`operator_editor`)."""

from __future__ import annotations

import streamlit as st

from app import code_view
from app import design_state as state
from app.design_state import Scope
from app.designer.operator_editor import operator_editor
from core.sharding import edits
from core.sharding import operators as rules
from core.sharding.catalog import OP_ARITY
from core.sharding.design import LOSSES, Design
from core.sharding.operators import OperatorAnalysis

OP_SEL = "designer_op_sel"
NEW_OP = "designer_newop"  # prefix of the "Add operator" form's keys
SCOPE = Scope.OPERATOR


def operator_analyses(design: Design) -> list[OperatorAnalysis]:
    """Every operator's analysis. A bug in the rules never breaks the page: `analyze_design` holds the one
    crash guard (the failing operator gets a problem naming the error, the others are analysed)."""
    return list(rules.analyze_design(design)) if design.operators else []


def _add_op_cb() -> None:
    op_type = st.session_state.get(f"{NEW_OP}_type", "MatMul")
    inputs = [st.session_state.get(f"{NEW_OP}_in{i}") for i in range(OP_ARITY.get(op_type, 0))]
    name = (st.session_state.get(f"{NEW_OP}_name") or "").strip() or None
    added = state.apply(SCOPE, edits.add_operator, op_type, inputs, name)
    if added is not state.FAILED:
        st.session_state[OP_SEL] = added
        st.session_state[f"{NEW_OP}_name"] = ""


def _operator_list(design: Design, by_name: dict[str, OperatorAnalysis]) -> None:
    """The chain in order, each with its layer count and a valid / invalid mark; picks OP_SEL."""
    names = [op.name for op in design.operators]
    if not names:
        st.info("No operators yet.")
        return
    if st.session_state.get(OP_SEL) not in names:
        st.session_state[OP_SEL] = names[0]

    def label(n: str) -> str:
        op = design.operator(n)
        a = by_name.get(n)
        mark = "" if a is None else (" :material/check_circle:" if a.valid else " :material/warning:")
        layers = f" × {a.layers}" if a is not None and a.layers > 1 else ""
        return f"{n} · {op.type}{layers}{mark}"

    st.radio("Operators (in order)", names, key=OP_SEL, format_func=label)


def _add_operator_form(design: Design) -> None:
    """Type, inputs (tensors or earlier operators) and an optional name."""
    op_type = st.selectbox("Type", list(OP_ARITY), key=f"{NEW_OP}_type")
    sources = edits.op_sources(design)
    for i in range(OP_ARITY[op_type]):
        if st.session_state.get(f"{NEW_OP}_in{i}") not in sources:
            st.session_state[f"{NEW_OP}_in{i}"] = sources[min(i, len(sources) - 1)] if sources else None
        st.selectbox(f"Input {i}", sources, key=f"{NEW_OP}_in{i}")
    st.text_input("Name (optional)", key=f"{NEW_OP}_name", placeholder=op_type.lower())
    st.button("Add operator", key=f"{NEW_OP}_add", on_click=_add_op_cb, disabled=not sources, type="primary")


def operators_tab(design: Design, analyses: list[OperatorAnalysis]) -> None:
    state.show_edit_error(SCOPE)
    by_name = {a.name: a for a in analyses}
    left, right = st.columns([1, 2.8], gap="large")
    with left:
        _operator_list(design, by_name)
        with st.expander(":material/add: Add operator", expanded=not design.operators):
            _add_operator_form(design)
        with st.expander(":material/repeat: Loss and repeated layers"):
            _model_editor(design)
    with right:
        if design.operators:
            picked = st.session_state[OP_SEL]
            operator_editor(design, picked, by_name.get(picked), analyses)
        with st.expander("All operators as MindSpore code"):
            st.code(code_view.operators_code(design), language="python")


def _repeat_cb(on_key: str, count_key: str, first_key: str, last_key: str, carry_key: str) -> None:
    if not st.session_state[on_key]:
        state.apply(SCOPE, edits.set_repeat, None)
        return
    design = state.current_design()
    if design.repeat is None and design.operators:  # switched on: the whole chain, fed by its first input
        first, last = design.operators[0], design.operators[-1]
        state.apply(SCOPE, edits.set_repeat, 2, first.name, last.name, first.inputs[0] if first.inputs else "")
        return
    state.apply(
        SCOPE,
        edits.set_repeat,
        st.session_state.get(count_key) or 2,
        *(st.session_state.get(k) or "" for k in (first_key, last_key, carry_key)),
    )


def _model_editor(design: Design) -> None:
    """The design-level training settings: the loss, and one layer (first..last) repeated N times."""
    lkey = state.vkey("loss")
    st.selectbox(
        "Loss on the last operator's output",
        list(LOSSES),
        index=list(LOSSES).index(design.loss),
        key=lkey,
        on_change=lambda: state.apply(SCOPE, edits.set_loss, st.session_state[lkey]),
        help="mse: a target of the output's shape; cross_entropy: logits with the classes on the last dimension.",
    )
    names = [op.name for op in design.operators]
    repeat = design.repeat
    keys = [state.vkey("repeat", part) for part in ("on", "count", "first", "last", "carry")]
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
