"""Every session-state key of the Monitor, and the per-session memo the live panel keeps.

Why one module: the keys were 36 literals across four files, and one of them (`FOLLOW_LINKS`) was read
behind `get_watcher`'s back. Here each key has one name; the values are kept as they were, so a tab
that reconnects and the tests that drive widgets by key see the same state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import streamlit as st

from core.logs import RunSnapshot

T = TypeVar("T")

PREFIX: Final = "mon_"
"""Every widget key below starts with it (the memo and alert keys with `_mon_`: not widgets)."""

# ---------------------------------------------------------------- the source picker
SOURCE: Final = "mon_source"  # Launched run / Log folder / Replay recorded run
RUN: Final = "mon_run"  # the launched run's id
FOLDER: Final = "mon_folder"  # the log folder typed in
RECORDING: Final = "mon_rec"  # the recording replayed
SPEED: Final = "mon_speed"  # its replay speed
REPLAY_AUTOSTARTED: Final = "mon_replay_autostarted"  # the recording ?replay=NAME started once
REPLAY_SPEED: Final = "mon_replay_speed"  # the speed the replay running was started at
REPLAY_OUT: Final = "mon_replay_out"  # the fresh folder the replay writes
PER_NODE_RUN: Final = "mon_per_node_run"  # the run whose node size was last taken into PER_NODE

# ---------------------------------------------------------------- the sidebar
PAUSED: Final = "mon_paused"
SMOOTHING: Final = "mon_smooth"
X_AXIS: Final = "mon_x"
LOG_Y: Final = "mon_logy"
NO_OUTLIERS: Final = "mon_outliers"
BAND: Final = "mon_band"
PER_RANK: Final = "mon_per_rank"
STALL_S: Final = "mon_stall"
POLLING: Final = "mon_polling"
FOLLOW_LINKS: Final = "mon_follow_links"
PER_NODE: Final = "mon_per_node"  # ranks per node (msrun --local_worker_num)
REGEX: Final = "mon_regex"

# ---------------------------------------------------------------- the live panel
READING: Final = "mon_reading"  # the folder whose logs were still being read at the last tick
RANKS_PREFIX: Final = "mon_ranks_"  # + the number of ranks: the rank pills / multiselect
COMPARE: Final = "mon_compare"
METRIC: Final = "mon_metric"
EVAL: Final = "mon_eval"
LOSS_CHART: Final = "mon_loss_chart"
STEP_CHART: Final = "mon_step_chart"
RANK_EXPR: Final = "mon_rank_expr"  # the big-run view's "Ranks to draw"
AGG_CHART: Final = "mon_agg_chart"
HEAT: Final = "mon_heat"  # which heatmap: loss or step time
HEATMAP: Final = "mon_heatmap"
TAIL_FILE: Final = "mon_tail_file"
TAIL_HIDE: Final = "mon_tail_hide"
MEMORY_READ: Final = "mon_memory_read"
CSV: Final = "mon_csv"
REPORT: Final = "mon_report"
TENSORBOARD: Final = "mon_tensorboard"
TIME_BOX: Final = "monitor_time"  # the step-time container (its CSS class: st-key-monitor_time)

# ---------------------------------------------------------------- not widgets
MEMO: Final = "_mon_memo"  # `cached`: name -> (key, value)
ALERT_KEYS: Final = "_mon_alert_keys"  # folder -> the failure keys already judged
ALERT_NOTICES: Final = "_mon_alert_notices"  # folder -> the notices shown in this tab


def ranks_key(n_ranks: int) -> str:
    """The rank picker's key: one per rank count, so a run that grows gets every rank picked again."""
    return f"{RANKS_PREFIX}{n_ranks}"


def watch_choices() -> tuple[bool, bool]:
    """(polling, follow links) as the sidebar last set them, for the source picker drawn before the sidebar
    (it must be: it sets PER_NODE before the sidebar's widget exists)."""
    return bool(st.session_state.get(POLLING, False)), bool(st.session_state.get(FOLLOW_LINKS, False))


def cached(name: str, key: tuple[Any, ...], make: Callable[[], T], snap: RunSnapshot | None = None) -> T:
    """Recompute `make()` only when `key` (folder, snapshot version, ...) changes: at 1,024 ranks the
    diagnosis and the grids cost 0.1-0.5 s, and most live ticks bring no new line. With `snap`, once
    for every session shown that snapshot (the watcher shares it: issue 22, 20 sessions)."""
    memo = st.session_state.setdefault(MEMO, {})
    hit = memo.get(name)
    if hit is None or hit[0] != key:
        hit = memo[name] = (key, make() if snap is None else snap.derived(name, key, make))
    return hit[1]
