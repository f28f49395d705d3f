"""Monitor page: live per-rank loss curves, step time, rank states and log tails of a run.

It only wires `app.monitor`'s parts: what to watch (`source`), the sidebar, then the live panel (`live`) as a
fragment that refreshes itself while the run may still write.
"""

from __future__ import annotations

import streamlit as st

from app.monitor.live import LiveView, live_panel, other_runs, refresh_s
from app.monitor.sidebar import sidebar_options
from app.monitor.source import pick_source

st.title("Monitor")
source = pick_source()  # before the sidebar: a launched run sets the sidebar's ranks per node
options = sidebar_options()

if source.log_dir is not None:
    view = LiveView(source, options, other_runs(source.log_dir))
    if options.paused:
        st.caption("⏸ Live updates paused.")
    st.fragment(live_panel, run_every=refresh_s(view))(view)
