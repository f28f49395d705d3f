"""ShardScope dashboard entry: `streamlit run app/main.py`. Navigation over pages/ and the shared sidebar."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from core.workspace import default_workspace  # noqa: E402

PAGES_DIR = REPO_ROOT / "pages"

st.set_page_config(page_title="ShardScope", page_icon="🧩", layout="wide")

pages = [
    st.Page(PAGES_DIR / "home.py", title="Home", icon="🏠", default=True, url_path="home"),
    st.Page(PAGES_DIR / "designer.py", title="Layout Designer", icon="🧩", url_path="designer"),
    st.Page(PAGES_DIR / "launch.py", title="Launch", icon="🚀", url_path="launch"),
    st.Page(PAGES_DIR / "monitor.py", title="Monitor", icon="📈", url_path="monitor"),
]
navigation = st.navigation(pages)
with st.sidebar:
    st.caption(f"Workspace: `{default_workspace()}`")
navigation.run()
