"""One tick of the Monitor's live panel: take the watcher's snapshot once, judge it (rank states, diagnosis)
and hand it to each part of the page in turn. Run as a Streamlit fragment that reruns every second while
the run may still write or its logs are still being read.

Everything a tick needs comes in one `LiveView` (the source, the sidebar's options, the other runs to
compare with), never from outer names or session keys read on the side.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import streamlit as st

from app.monitor import figures, panel, scale, state
from app.monitor.alerts import alerts_panel
from app.monitor.diagnosis import diagnosis_strip, failures_view
from app.monitor.figures import behind_caption
from app.monitor.memory import memory_panel
from app.monitor.scale_view import scale_view
from app.monitor.share import share_buttons
from app.monitor.sidebar import MonitorOptions
from app.monitor.source import LIVE_STATUSES, Source, get_watcher
from app.monitor.step_time import time_panel
from core.logs import RunSnapshot, RunWatcher
from core.logs.bytes.discover import folder_notes
from core.logs.bytes.guard import validate_log_dir
from core.logs.judgement.diagnose import Diagnosis, diagnose
from core.logs.judgement.streams import shared_streams
from core.logs.live.watcher import MAX_WATCHES
from core.logs.rows.filestate import note_lines
from core.run.planned import plan_for_log_dir
from core.run.registry import list_runs
from core.workspace import default_workspace


@dataclass(frozen=True)
class LiveView:
    """What the live panel shows: a chosen source (its folder is set), the sidebar's options and the other
    launched runs that can be drawn beside it (run id -> log folder)."""

    source: Source
    options: MonitorOptions
    compare_dirs: dict[str, Path] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        assert self.source.log_dir is not None, "a LiveView is made for a chosen folder"
        return self.source.log_dir

    @property
    def polling(self) -> bool:
        """The polling watcher: asked for, or a run written by other machines (inotify sees nothing there)."""
        return self.options.reading.polling or (self.source.status is not None and self.source.shared_fs)

    @property
    def live(self) -> bool:
        """Whether the page refreshes itself: the logs may still grow and the user did not pause it."""
        return self.source.may_grow and not self.options.paused

    def watcher(self) -> RunWatcher:
        """The shared watcher of the folder (asked of the registry on every tick: an open tab keeps it alive)."""
        r = self.options.reading
        return get_watcher(str(self.folder), self.polling, r.loss_regex, self.source.extra, r.follow_links)

    def snapshot_of(self, run_id: str) -> RunSnapshot:
        """Another run's snapshot; its folder checked as one the user picks (a record's log_dir is never trusted)."""
        folder = validate_log_dir(self.compare_dirs[run_id])
        r = self.options.reading
        return get_watcher(str(folder), self.polling, r.loss_regex, (), r.follow_links).snapshot(refresh=True)


def other_runs(log_dir: Path) -> dict[str, Path]:
    """The workspace's other launched runs (id -> log folder); none when the registry cannot be read (it only
    hides the comparison choices)."""
    try:
        return {r.run_id: Path(r.log_dir) for r in list_runs(default_workspace()) if Path(r.log_dir) != log_dir}
    except Exception:
        return {}


def refresh_s(view: LiveView) -> float | None:
    """Seconds between ticks: every second while live or while the logs already written are read."""
    return 1.0 if view.live or view.watcher().catching_up else None


def live_panel(view: LiveView) -> None:
    """One tick: the snapshot, then each part of the panel from it."""
    watcher = view.watcher()
    snap = watcher.snapshot(refresh=True)
    reading = watcher.catching_up
    _reading_progress(view, watcher, snap, reading)
    ranks = sorted(int(r) for r in snap.ranks["rank"]) if not snap.ranks.empty else []
    big = len(ranks) > scale.SCALE_RANKS
    df = snap.metrics if big else panel.prepared(snap)  # at scale no per-point column at all
    status = view.source.status
    states = figures.rank_states(snap, view.options.stall_after_s, status)
    diag = state.cached(
        "diag",
        (str(view.folder), snap.version, status),
        lambda: diagnose(snap, now=time.time() if status in LIVE_STATUSES else None),
        snap,
    )
    last_step = diag.last_step if big else (None if df.empty else df["global_step"].max())  # the job's
    panel.headline(ranks, states, len(df), last_step)
    if not _folder_notes(view, snap, bool(ranks)):
        return
    diagnosis_strip(diag)
    opts = view.options.chart
    if big:
        scale_view(snap, states, diag, opts, view.options.per_node, view.folder, reading=reading is not None)
    elif ranks:
        opts.ranks = panel.pick_ranks(ranks)
    compare = panel.pick_compared(view.compare_dirs, view.snapshot_of) if view.compare_dirs else []
    if not big:  # at scale, scale_view drew the aggregates
        _small_run(view, snap, df, states, compare, len(ranks))
    _below_the_charts(view, watcher, snap, diag)


def _reading_progress(view: LiveView, watcher: RunWatcher, snap: RunSnapshot, reading: tuple[int, int] | None) -> None:
    """The reading progress, a page that stops refreshing once a finished run is read, and why it lags."""
    panel.reading_progress(reading)
    if reading is not None:
        st.session_state[state.READING] = str(view.folder)
    elif not view.live and st.session_state.pop(state.READING, None) == str(view.folder):
        st.rerun()  # read to the end: a finished run's page stops refreshing itself
    if (behind := behind_caption(snap.behind_bytes)) is not None:
        st.caption(behind)  # the logs grow faster than they are read (issue 22)
    if watcher.watch_limited:
        st.warning(
            f"More log folders than the {MAX_WATCHES:,} watched for changes: new lines in the others "
            "show up with the 1 s rescan instead of at once."
        )


def _folder_notes(view: LiveView, snap: RunSnapshot, any_rank: bool) -> bool:
    """What the folder's files say (a link refused, a log truncated, several ranks in one untagged stream...);
    False when there is nothing more to show (no rank log and no file)."""
    follow = view.options.reading.follow_links
    notes = state.cached(
        "notes",
        (str(view.folder), follow, any_rank, int(time.time() // 5)),  # one folder scan per 5 s, not per tick
        lambda: folder_notes(view.folder, follow),
    )
    if not any_rank:
        st.info("No rank log read. " + " ".join(notes) + " New files are picked up automatically.")
        return bool(snap.files)
    for note in [*notes, *note_lines(snap.errors)]:  # + a log truncated under the reader: its rows kept
        st.warning(note)
    for shared in snap.derived("shared_streams", (), lambda: shared_streams(snap.metrics)):
        st.warning(shared.message())  # why the chart shows one rank with several points a step
    return True


def _small_run(
    view: LiveView,
    snap: RunSnapshot,
    df: pd.DataFrame,
    states: pd.DataFrame,
    compare: list[tuple[str, pd.DataFrame]],
    n_ranks: int,
) -> None:
    """A run of up to SCALE_RANKS ranks: the loss chart (or what a loss line is), the rank table, step time."""
    opts = view.options.chart
    if df.empty and not compare:
        panel.no_rows_help(snap, view.folder)
    else:
        panel.loss_section(snap, df, opts, compare, view.folder)
    table = figures.status_table(states)
    panel.ranks_and_step_time(snap, df, table, n_ranks, opts, view.options.per_node, view.folder)


def _below_the_charts(view: LiveView, watcher: RunWatcher, snap: RunSnapshot, diag: Diagnosis) -> None:
    """Failures, alerts, memory and step time against the plan, the raw log tail, the downloads."""
    folder, label, status = view.folder, view.source.label, view.source.status
    failures_view(diag, snap)
    alerts_panel(folder, label, status, diag, snap)  # notifications, the alert watch's attempts
    plan = plan_for_log_dir(default_workspace(), folder)
    memory_panel(snap, plan)
    time_panel(diag.median_step_time, plan)
    panel.log_tail(snap, folder, view.source.extra, view.options.reading.follow_links)
    with st.container(horizontal=True):  # the three downloads in one row
        panel.csv_button(watcher.snapshot, label)
        share_buttons(watcher.snapshot, label, folder)
