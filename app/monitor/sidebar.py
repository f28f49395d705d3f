"""The Monitor's sidebar: the chart options, when a rank counts as stalled, and how the logs are read."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from app.monitor import state
from app.monitor.figure_data import X_MODES, ChartOptions
from core.logs import LogFormatError, compile_user_regex


@dataclass(frozen=True)
class Reading:
    """How the logs are read: the polling watcher, links followed out of the folder, the custom loss regex
    (None: the built-in reader; a regex that does not compile is said in the sidebar and not used)."""

    polling: bool = False
    follow_links: bool = False
    loss_regex: str | None = None


@dataclass(frozen=True)
class MonitorOptions:
    """Everything the sidebar sets."""

    chart: ChartOptions
    stall_after_s: float
    paused: bool
    reading: Reading
    per_node: int  # ranks per node (msrun --local_worker_num): `node 3` in a rank expression


def sidebar_options() -> MonitorOptions:
    """Draw the sidebar and read it."""
    with st.sidebar:
        st.subheader("Monitor")
        paused = st.toggle("Pause live updates", key=state.PAUSED)
        smoothing = st.slider(
            "Smoothing",
            0.0,
            0.99,
            0.6,
            0.01,
            key=state.SMOOTHING,
            help="TensorBoard's debiased exponential moving average.",
        )
        x_mode = st.radio("X axis", list(X_MODES), horizontal=True, key=state.X_AXIS)
        c1, c2 = st.columns(2)
        log_y = c1.checkbox("Log y", key=state.LOG_Y)
        outliers = c2.checkbox("No outliers", key=state.NO_OUTLIERS)
        band = c1.checkbox("Rank band", value=True, key=state.BAND)
        per_rank = c2.checkbox("Per-rank lines", value=True, key=state.PER_RANK)
        stall = st.number_input("Stalled after (s)", 5, 3600, 60, 5, key=state.STALL_S)
        with st.expander("Advanced"):
            reading, per_node = _advanced()
    chart = ChartOptions(
        smoothing=smoothing, x_mode=x_mode, log_y=log_y, ignore_outliers=outliers, show_band=band, show_ranks=per_rank
    )
    return MonitorOptions(chart, float(stall), paused, reading, per_node)


def _advanced() -> tuple[Reading, int]:
    """The Advanced expander: polling, follow links, ranks per node and the custom loss regex."""
    polling = st.checkbox("Polling watcher (NFS / shared filesystems)", key=state.POLLING)
    follow = st.checkbox(
        "Follow links",
        key=state.FOLLOW_LINKS,
        help="Also read logs that are links to files outside the chosen folder (refused by "
        "default: a link could show any file the server can read).",
    )
    per_node = int(
        st.number_input(
            "Ranks per node",
            1,
            1024,
            8,
            key=state.PER_NODE,
            help="msrun --local_worker_num: `node 3` in a rank expression means ranks 24-31 with 8 per node.",
        )
    )
    regex = st.text_input(
        "Custom loss regex",
        key=state.REGEX,
        placeholder=r"it (?P<step>\d+) loss=(?P<loss>\S+)",
        help="Tried on every line (replaces the built-in reader). Named groups: "
        "loss (required), step, epoch, step_time_ms, lr.",
    )
    return Reading(polling, follow, _checked_regex(regex)), per_node


def _checked_regex(regex: str) -> str | None:
    if not regex:
        return None
    try:
        compile_user_regex(regex)
    except LogFormatError as exc:
        st.sidebar.error(str(exc))
        return None
    return regex
