"""The Monitor's share buttons: the run's report (one HTML file that opens offline) and its metrics for
TensorBoard (a zip of event files, one folder per rank). Both are built only when pressed, from core."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

from app.monitor import state
from core.logs import RunSnapshot
from core.report.make import report_html
from core.report.source import source_of_folder
from core.report.tensorboard import tensorboard_zip
from core.workspace import default_workspace


def share_buttons(latest: Callable[[], RunSnapshot], label: str | None, log_dir: Path) -> None:
    """Two download buttons beside the CSV one (the caller's row); the file is made from the latest snapshot on
    click."""
    name = (label or "run").replace("/", "_")
    st.download_button(
        "Download report (HTML)",
        data=lambda: report_html(latest(), source_of_folder(log_dir, default_workspace())).encode("utf-8"),
        file_name=f"{name}-report.html",
        mime="text/html",
        on_click="ignore",
        key=state.REPORT,
        help="One file with the charts, every rank, the diagnosis and the run's options; it opens offline.",
    )
    st.download_button(
        "Download for TensorBoard (zip)",
        data=lambda: tensorboard_zip(latest()),
        file_name=f"{name}-tensorboard.zip",
        mime="application/zip",
        on_click="ignore",
        key=state.TENSORBOARD,
        help="Event files, one folder per rank: unzip, then `tensorboard --logdir` the folder.",
    )
