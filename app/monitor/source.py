"""The Monitor's source picker and the long-lived objects behind it: the shared watchers and replays."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from app.launch_widgets import not_read_lines
from app.monitor import state
from core.errors import UserError
from core.logs import RunWatcher
from core.logs.bytes.guard import LogDirError, validate_log_dir
from core.logs.live.replay import load_recording, new_replay_dir, replay
from core.logs.live.watcher import WatcherRegistry
from core.run.registry import RunListing, RunStatus, launcher_output_paths, scan_runs
from core.workspace import EXAMPLES_DIR, default_workspace

SOURCES = ["Launched run", "Log folder", "Replay recorded run"]
RECORDINGS_DIRS = [EXAMPLES_DIR / "recordings"]
LIVE_STATUSES: Final = frozenset({RunStatus.QUEUED, RunStatus.STARTING, RunStatus.RUNNING})
"""A run in one of these may still write (queued = Slurm PENDING: its logs will come)."""


@dataclass(frozen=True)
class Source:
    """What the Monitor watches: a log folder (None: nothing chosen yet), its label, the run's status (None for a
    plain folder), files outside the folder that belong to it (the launcher's own log) and whether other
    machines write it (a Slurm / multi-node / watched-folder run on a shared filesystem)."""

    log_dir: Path | None = None
    label: str = ""
    status: RunStatus | None = None
    extra: tuple[str, ...] = ()
    shared_fs: bool = False

    @property
    def may_grow(self) -> bool:
        """Whether its logs may still grow: a run not over, or a plain folder (nobody says it ended)."""
        return self.status is None or self.status in LIVE_STATUSES


# ----------------------------------------------------------------------------- long-lived objects


@st.cache_resource(show_spinner=False)
def watcher_registry() -> WatcherRegistry:
    """Owner of every live RunWatcher: releases one (stops it, drops its loss table, trims the heap) a few
    seconds after the last session using it ends (its tab closed; a tab reconnecting within 3 s keeps it),
    and any no page asked for in 2 minutes."""
    return WatcherRegistry(idle_s=120.0, max_watchers=32, session_alive=_session_alive, grace_s=3.0)


def _session_alive(session_id: str) -> bool:
    """Whether a browser session is still connected (a closed tab's session is not: Streamlit keeps it
    only to restore it if the tab reconnects, and a reconnected session just asks again)."""
    if not Runtime.exists():
        return True  # no server (AppTest, bare mode): sessions are never ended from here
    return Runtime.instance().is_active_session(session_id)


def _session_id() -> str | None:
    ctx = get_script_run_ctx()
    return None if ctx is None else ctx.session_id


def get_watcher(
    log_dir: str, polling: bool, loss_regex: str | None, extra: tuple[str, ...], follow_links: bool
) -> RunWatcher:
    """One RunWatcher per (folder, polling, regex, extra files, follow links), shared by every session and rerun.
    `follow_links`: also read logs that are links to files outside the folder (the sidebar's box)."""
    return watcher_registry().get(
        (log_dir, polling, loss_regex, extra, follow_links),
        lambda: RunWatcher(
            Path(log_dir),
            polling=polling,
            loss_regex=loss_regex,
            extra_files=extra,
            background_catch_up=True,
            follow_links=follow_links,
        ),
        session=_session_id(),  # released a few seconds after the last tab using it closes
    )  # paint at once, fill in later


@st.cache_resource(show_spinner=False)
def replay_sessions() -> dict[str, tuple[threading.Thread, threading.Event]]:
    """Replays in progress, by output folder."""
    return {}


def recordings() -> dict[str, Path]:
    """Recorded runs: examples/recordings/* and $SHARDSCOPE_RECORDINGS/* (folders with timing.json)."""
    dirs = list(RECORDINGS_DIRS)
    extra = os.environ.get("SHARDSCOPE_RECORDINGS")
    if extra:
        dirs += [Path(p) for p in extra.split(os.pathsep) if p]
    found: dict[str, Path] = {}
    for d in dirs:
        if d.is_dir():
            for rec in sorted(d.iterdir()):
                if (rec / "timing.json").is_file():
                    found[rec.name] = rec
    return found


def start_replay(name: str, rec_dir: Path, speed: float, polling: bool, follow_links: bool) -> Path:
    """Replay `rec_dir` into a fresh private folder (never a predictable $TMPDIR name: issue 31) and watch it
    (with the page's polling and follow-links choices: the page then asks for the same watcher)."""
    out = new_replay_dir(name)
    get_watcher(str(out), polling, None, (), follow_links)  # watch before the first byte: every row is seen live
    stop = threading.Event()
    thread = threading.Thread(
        target=replay, args=(rec_dir, out), kwargs={"speed": speed, "stop_event": stop, "max_gap_s": 5.0}, daemon=True
    )
    thread.start()
    replay_sessions()[str(out)] = (thread, stop)
    return out


# ----------------------------------------------------------------------------- source picker


def pick_source() -> Source:
    """What the user chose to watch (a launched run, a log folder or a replay); `Source()` when nothing yet."""
    params = st.query_params
    listing = RunListing([], [])
    registry_error = None
    try:
        listing = scan_runs(default_workspace())
    except (UserError, OSError) as exc:  # each record is read alone; runs/ itself may still be unreadable
        registry_error = str(exc)
    runs = listing.records
    default: str | None
    if params.get("replay"):
        default = "Replay recorded run"
    elif params.get("logdir"):
        default = "Log folder"
    else:
        default = "Launched run" if runs or params.get("run") else None
    source = st.segmented_control("Source", SOURCES, default=default, key=state.SOURCE, label_visibility="collapsed")
    if registry_error:
        st.warning(f"Could not read the run registry: {registry_error}")
    if source == "Launched run":
        return _launched_run(listing)
    if source == "Log folder":
        return _log_folder()
    if source == "Replay recorded run":
        return _replay()
    st.info(
        "**Pick what to watch.** *Launched run*: a run started from the Launch page. *Log folder*: any "
        "msrun `--log_dir` (worker_N.log), MindFormers `output/` (log/rank_N/info.log), mpirun output "
        "(1/rank.N/stdout), rank-table or model-zoo run (deviceN/train.logN, train_parallelN/log), Slurm "
        "outputs (slurm-J_N.out) or a folder with one log. *Replay recorded run*: replays a recorded real "
        "run so you can try the Monitor without hardware."
    )
    return Source()


def _launched_run(listing: RunListing) -> Source:
    """A run of this workspace's registry: its log folder (checked like a folder the user names), status and
    launcher log. A run folder whose record was not read is one greyed line under the picker."""
    params = st.query_params
    runs = listing.records
    not_read_lines(listing.lines[:20])
    if not runs:
        st.info(
            "No launched runs in this workspace yet: start one on the **Launch** page, "
            "or pick **Log folder** to watch any msrun / mpirun log folder."
        )
        return Source()
    ids = [r.run_id for r in runs]
    wanted = params.get("run")
    index = ids.index(wanted) if wanted in ids else 0
    by_id = {r.run_id: r for r in runs}
    run_id = st.selectbox(
        "Run",
        ids,
        index=index,
        key=state.RUN,
        format_func=lambda i: f"{i} · {by_id[i].scenario or '?'} · {by_id[i].status}",
    )
    rec = by_id[run_id]
    st.query_params["run"] = run_id
    per_node = rec.options.local_worker_num
    if st.session_state.get(state.PER_NODE_RUN) != run_id:  # a new run: take its node size, once
        st.session_state[state.PER_NODE_RUN] = run_id
        if isinstance(per_node, int) and per_node >= 1:
            st.session_state[state.PER_NODE] = per_node
    extra = tuple(str(p) for p in launcher_output_paths(rec))  # mpirun / srun report a killed rank there
    folder = Path(rec.log_dir)
    if rec.watch_only or folder.exists():  # a launched run's folder may not be made yet: waited for
        try:
            folder = validate_log_dir(folder)
        except LogDirError as exc:
            st.warning(f"Run {run_id}: its log folder is refused, not watched: {exc}.")
            return Source()
    # Slurm / multi-node / watched-folder runs are written by other machines: inotify sees nothing there
    return Source(folder, run_id, rec.status, extra, shared_fs=rec.shared_filesystem)


def _log_folder() -> Source:
    """Any folder the user names, checked before it is watched."""
    params = st.query_params
    path = st.text_input(
        "Log folder",
        value=params.get("logdir", ""),
        key=state.FOLDER,
        placeholder="/path/to/log_output  (msrun --log_dir, mpirun output, or rank-table run)",
    )
    if not path:
        return Source()
    try:
        folder = validate_log_dir(path)
    except LogDirError as exc:
        st.error(f"Cannot watch this folder: {exc}.")
        return Source()
    return Source(folder, folder.name)


def _replay() -> Source:
    """A recorded real run written into a fresh folder at its recorded pace (or faster)."""
    params = st.query_params
    recs = recordings()
    if not recs:
        st.info(
            "No recorded runs yet. A recording is a log folder plus `timing.json` captured from a real "
            "run (`core.logs.live.replay.record`); put it under `examples/recordings/`."
        )
        return Source()
    c1, c2, c3 = st.columns([3, 1, 1], vertical_alignment="bottom")
    names = list(recs)
    wanted = params.get("replay")
    name = c1.selectbox("Recording", names, index=names.index(wanted) if wanted in names else 0, key=state.RECORDING)
    rec = load_recording(recs[name])
    speed = c2.selectbox("Speed", [1.0, 2.0, 5.0, 10.0], index=1, key=state.SPEED, format_func=lambda s: f"{s:g}×")
    # ?replay=NAME (the Home page's "Watch the replay") starts it once, without another click.
    autostart = wanted == name and st.session_state.get(state.REPLAY_AUTOSTARTED) != name
    if c3.button("▶ Start replay", width="stretch") or autostart:
        st.session_state[state.REPLAY_AUTOSTARTED] = name
        st.session_state[state.REPLAY_SPEED] = speed
        st.session_state[state.REPLAY_OUT] = str(start_replay(name, recs[name], speed, *state.watch_choices()))
    if rec.synthetic:
        st.caption("⚠️ This recording's timing is synthetic (made up for tests), not a real run's pace.")
    out = st.session_state.get(state.REPLAY_OUT)
    if not out:
        return Source()
    thread = replay_sessions().get(out, (None, None))[0]
    status = RunStatus.RUNNING if thread is not None and thread.is_alive() else None
    pace = "synthetic" if rec.synthetic else "recorded"
    started_speed = st.session_state.get(state.REPLAY_SPEED, speed)
    st.info(
        f"**Replay** of the recorded run `{name}` ({rec.source or 'no source noted'}), written into a "
        f"fresh log folder at {started_speed:g}× its {pace} pace ({rec.duration_s:.0f} s recorded): "
        "not a live job.",
        icon=":material/replay:",
    )
    return Source(Path(out), f"replay of {name}", status)
