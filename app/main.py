"""ShardScope dashboard script: navigation over pages/ and the shared sidebar.

Start it with `streamlit run app/shardscope_server.py` (scripts/dashboard.sh does), which serves this
script behind the loopback Host check; `streamlit run app/main.py` works too but without that check.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from app.design_state import DESIGN_KEY  # noqa: E402
from app.nav import PAGES  # noqa: E402
from core.workspace import default_workspace  # noqa: E402

st.set_page_config(page_title="ShardScope", page_icon=":material/grid_view:", layout="wide")

# Streamlit's default top padding wastes a fifth of a laptop screen.
st.html("<style>[data-testid='stMainBlockContainer'] { padding-top: 2.5rem; }</style>")

navigation = st.navigation(
    [
        st.Page(info.path, title=info.title, icon=info.icon, url_path=key, default=key == "home")
        for key, info in PAGES.items()
    ]
)
with st.sidebar:
    design = st.session_state.get(DESIGN_KEY)  # shown once a page has seeded it (design_state.current_design)
    if design is not None:
        st.caption(f"Design: **{design.name}** · {design.device_num} devices")
    st.caption(f"Workspace: `{default_workspace()}`")
    if "shardscope_server" not in sys.modules:  # started as `streamlit run app/main.py`
        st.warning(
            "Started without the loopback Host check: start the dashboard with scripts/dashboard.sh "
            "(`streamlit run app/shardscope_server.py`).",
            icon=":material/shield:",
        )
navigation.run()
