"""Layout Designer: edit the design (device matrices, tensors, operator strategies) and see live which
slice of every tensor lives on which rank. This page only wires the parts in `app/designer/`; the
shared design lives in `app.design_state`, every edit is a `core.sharding.edits` function."""

from __future__ import annotations

import streamlit as st

from app import design_state as state
from app import designer_view as view
from app.designer import files, matrix, operators, overview, tensors
from app.model_picker import created_notice, model_form

design = state.current_design()
analyses = operators.operator_analyses(design)

st.title("Layout Designer")
st.caption(overview.summary(design))
# Fixed containers keep the tabs at the same place in the element tree whatever the notice / problems
# show, so the tab the user is on survives every rerun.
with st.container():
    state.show_notice()
with st.container():
    overview.render_problems(view.collect_problems(design, analyses))
with st.expander("New design from a model", icon=":material/add_circle:"):
    created = model_form()
if created is not None:
    state.commit(created, created_notice(created))
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
    tensors.tensor_tab(design)
with tab_matrix:
    matrix.matrix_tab(design)
with tab_ops:
    operators.operators_tab(design, analyses)
with tab_file:
    files.file_tab(design)
