"""The Monitor's step-time line: the measured median step beside the planned one, and the achieved MFU, for a
run whose plan has a step time (a MindFormers YAML's, or a Planner design's; issue 33). Figures from core
(core.plan.planned.achieved_time); this only draws them."""

from __future__ import annotations

from typing import Any

import streamlit as st

from app.monitor import state
from core.plan.planned import achieved_time


def time_panel(measured_step_ms: float | None, plan: dict[str, Any] | None) -> None:
    """Planned vs measured step time as three metrics; nothing when the run has no planned step time."""
    timed = achieved_time(plan, measured_step_ms)
    if timed is None:
        return
    with st.container(border=True, key=state.TIME_BOX):
        st.markdown("**Step time: planned vs measured**")
        planned, measured, mfu = st.columns(3)
        planned.metric("planned step", f"{timed['planned_step_s']:.3g} s")
        value = timed["measured_step_s"]
        delta = f"{value / timed['planned_step_s']:.2f}× the plan" if value else None
        measured.metric(
            "measured median step", f"{value:.3g} s" if value else "—", delta, delta_color="off", border=False
        )
        mfu.metric("achieved MFU", f"{timed['achieved_mfu']:.1%}" if timed["achieved_mfu"] is not None else "—")
        source = str(timed["source"] or "planned").replace("`", "'")
        st.caption(f"{source[:1].upper()}{source[1:]}; MFU against that preset's peak.")
