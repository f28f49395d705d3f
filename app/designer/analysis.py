"""What the analysis says about one operator: valid or the problems, output shape and layout, and the
implied communication with one picture of its rank groups per collective."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import design_state as state
from app import designer_view as view
from app import figures
from core.sharding.design import Design
from core.sharding.layout import Layout, LayoutError
from core.sharding.operators import OperatorAnalysis
from core.units import format_bytes


def _analysis_layout(design: Design, analysis: OperatorAnalysis) -> Layout | None:
    """The device matrix to draw communication groups on: an input's layout, else the output's."""
    for tl in [*(analysis.input_layouts or []), analysis.output_layout]:
        if tl is not None:
            return tl.layout
    try:
        return view.derived_tensor_layout((1,), design.device_num).layout
    except LayoutError:
        return None


def render_analysis(design: Design, analysis: OperatorAnalysis | None) -> None:
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
                "bytes per rank": format_bytes(c.bytes_per_rank),
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
                key=f"comm:{analysis.name}:{n}@{state.version()}",
                config={"displayModeBar": False},
            )
