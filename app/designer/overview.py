"""The top of the Designer: what the design holds, and its live problems (errors and warnings)."""

from __future__ import annotations

import streamlit as st

from app import designer_view as view
from core.sharding.design import Design


def summary(design: Design) -> str:
    """One line under the title: the design's name and size."""
    return (
        f"Design **{design.name}** · {design.device_num} devices · {len(design.layouts)} layout(s) · "
        f"{len(design.tensors)} tensor(s) · {len(design.operators)} operator(s) — drag device-axis chips onto "
        "tensor dimensions and see which slice lives on which rank."
    )


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
