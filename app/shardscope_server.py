"""The dashboard's server: `streamlit run app/shardscope_server.py` serves app/main.py behind the Host check.

`streamlit run` finds `app` below (an `st.App`) and serves it with Streamlit's own Uvicorn runner, so
config.toml and the command-line flags apply as with `streamlit run app/main.py`; every HTTP request
and WebSocket upgrade first passes app/host_check.py (loopback Host headers only, and an Origin, when
there is one, that is this server's own scheme, loopback name and port; else 403); the chart's plotly
bundle is served cacheable (app/bundle_cache.py).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from app.bundle_cache import BundleCacheMiddleware  # noqa: E402
from app.host_check import LoopbackHostMiddleware  # noqa: E402
from core.logs.tokens.linescan import warm_up  # noqa: E402

# The log reader's compiled passes take ~1 s to load once per process: load them while the first page
# is drawn, so the Monitor's first read of a big folder does not wait for them.
threading.Thread(target=warm_up, name="shardscope-warm-up", daemon=True).start()

app = st.App(
    REPO_ROOT / "app" / "main.py",
    middleware=[Middleware(LoopbackHostMiddleware), Middleware(BundleCacheMiddleware)],
)
