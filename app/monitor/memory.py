"""The Monitor's device-memory panel: what the planner expected of the run's recipe beside what MindSpore
measured on each rank (issue 21 item 5). The figures come from core (core.run.planned, core.logs.rows.memory);
this module only shows them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from app.monitor import state
from core.logs import RunSnapshot, tail_lines
from core.logs.bytes.discover import LogRole
from core.logs.rows.memory import memory_report, memory_rows

HOW_TO_GET_THEM = (
    "MindSpore prints its device-memory statistics (`Device MOC memory size`, `Used peak memory "
    "usage (without fragments)`, `Actual peak memory usage (with fragments)`) at INFO level "
    "(`GLOG_v=1`) or with `MS_MEMORY_STATISTIC=1`, once a graph has run, on Ascend and GPU (the CPU "
    "backend prints none); they are looked for in the last 256 KB of each rank's log."
)


@st.cache_data(ttl=15, max_entries=4, show_spinner=False)
def _measured(files: tuple[tuple[int, str], ...], folder: str, planned: int | None) -> dict[str, Any]:
    """memory_report of the ranks' log tails (cached a few seconds: a live page reruns every second)."""
    tails = {rank: tail_lines(path, 400, hide_noise=False, max_bytes=1 << 18, inside=folder) for rank, path in files}
    return memory_report(tails, None if planned is None else dict.fromkeys(tails, planned))


def memory_panel(snap: RunSnapshot, plan: dict[str, Any] | None) -> None:
    """An expander: the plan (or why there is none), and on request the per-rank table."""
    with st.expander("Device memory: planned vs measured", expanded=False):
        planned = plan.get("memory_bytes") if plan else None
        if plan is None:
            st.caption(
                "No plan for this run: it was not launched from a MindFormers YAML (an own script, a generated "
                "job or a folder ShardScope did not launch). `python -m core diagnose DIR "
                "--mindformers-config YAML` sets a YAML's plan beside any folder's measured memory."
            )
        elif planned is None:
            st.caption(f"No planned figure: {plan.get('why', 'the planner gave none')}")
        else:
            st.markdown(f"**Planned:** {planned / (1 << 30):.1f} GiB per card")
            source = str(plan.get("source", "")).replace("`", "'")
            st.caption(f"`{source}`")  # in code: a file name's underscores are not markdown
        if not st.toggle("Read the measured memory from the logs", key=state.MEMORY_READ):
            return
        files = tuple((f.rank, str(f.path)) for f in snap.files if f.role == LogRole.WORKER and f.rank is not None)
        rows = memory_rows(_measured(files, str(Path(snap.log_dir)), planned))
        if not rows:
            st.info(f"No rank's log has them yet. {HOW_TO_GET_THEM}")
            return
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=min(38 + 35 * len(rows), 320))
        st.caption(HOW_TO_GET_THEM)
