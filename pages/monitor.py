"""Monitor page: live per-rank loss curves, step time, rank states and log tails of a run."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import streamlit as st

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from app import monitor_widgets as ui  # noqa: E402
from app.live_chart import live_chart  # noqa: E402
from core.logs import LogFormatError, RunWatcher, compile_user_regex, tail_lines  # noqa: E402
from core.logs.replay import load_recording, replay  # noqa: E402
from core.run.registry import LAUNCHER_LOG, list_runs  # noqa: E402
from core.workspace import EXAMPLES_DIR, default_workspace  # noqa: E402

SOURCES = ["Launched run", "Log folder", "Replay recorded run"]
RECORDINGS_DIRS = [EXAMPLES_DIR / "recordings"]


# ----------------------------------------------------------------------------- long-lived objects

@st.cache_resource(max_entries=32, show_spinner=False)
def get_watcher(log_dir: str, polling: bool, loss_regex: str | None, extra: tuple[str, ...]) -> RunWatcher:
    """One RunWatcher per (folder, polling, regex), shared by every session and rerun."""
    return RunWatcher(Path(log_dir), polling=polling, loss_regex=loss_regex, extra_files=extra).start()


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


def start_replay(name: str, rec_dir: Path, speed: float, polling: bool) -> Path:
    out = Path(tempfile.gettempdir()) / "shardscope_replays" / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)
    get_watcher(str(out), polling, None, ())  # watch before the first byte: every row is seen live
    stop = threading.Event()
    thread = threading.Thread(target=replay, args=(rec_dir, out), kwargs={"speed": speed, "stop_event": stop,
                                                                          "max_gap_s": 5.0}, daemon=True)
    thread.start()
    replay_sessions()[str(out)] = (thread, stop)
    return out


# ----------------------------------------------------------------------------- source picker

def pick_source() -> tuple[Path | None, str, str | None, tuple[str, ...]]:
    """(log folder, label, run status, extra launcher files) chosen by the user, or (None, ...)."""
    params = st.query_params
    runs = []
    registry_error = None
    try:
        runs = list_runs(default_workspace())
    except Exception as exc:  # a broken registry must not break the page
        registry_error = str(exc)
    if params.get("replay"):
        default = "Replay recorded run"
    elif params.get("logdir"):
        default = "Log folder"
    else:
        default = "Launched run" if runs or params.get("run") else None
    source = st.segmented_control("Source", SOURCES, default=default, key="mon_source",
                                  label_visibility="collapsed")
    if registry_error:
        st.warning(f"Could not read the run registry: {registry_error}")
    if source == "Launched run":
        if not runs:
            st.info("No launched runs in this workspace yet: start one on the **Launch** page, "
                    "or pick **Log folder** to watch any msrun / mpirun log folder.")
            return None, "", None, ()
        ids = [r.run_id for r in runs]
        wanted = params.get("run")
        index = ids.index(wanted) if wanted in ids else 0
        by_id = {r.run_id: r for r in runs}
        run_id = st.selectbox("Run", ids, index=index, key="mon_run",
                              format_func=lambda i: f"{i} · {by_id[i].scenario or '?'} · {by_id[i].status}")
        rec = by_id[run_id]
        st.query_params["run"] = run_id
        launcher = getattr(rec, "run_dir", None)
        extra = (str(Path(launcher) / LAUNCHER_LOG),) if launcher else ()
        return Path(rec.log_dir), run_id, rec.status, extra
    if source == "Log folder":
        path = st.text_input("Log folder", value=params.get("logdir", ""), key="mon_folder",
                             placeholder="/path/to/log_output  (msrun --log_dir, mpirun output, or rank-table run)")
        if not path:
            return None, "", None, ()
        folder = Path(path).expanduser()
        if not folder.is_dir():
            st.error(f"`{folder}` is not a folder on this machine.")
            return None, "", None, ()
        return folder.resolve(), folder.name, None, ()
    if source == "Replay recorded run":
        recs = recordings()
        if not recs:
            st.info("No recorded runs yet. A recording is a log folder plus `timing.json` captured from a real "
                    "run (`core.logs.replay.record`); put it under `examples/recordings/`.")
            return None, "", None, ()
        c1, c2, c3 = st.columns([3, 1, 1], vertical_alignment="bottom")
        names = list(recs)
        wanted = params.get("replay")
        name = c1.selectbox("Recording", names, index=names.index(wanted) if wanted in names else 0, key="mon_rec")
        rec = load_recording(recs[name])
        speed = c2.selectbox("Speed", [1.0, 2.0, 5.0, 10.0], index=1, key="mon_speed", format_func=lambda s: f"{s:g}×")
        # ?replay=NAME (the Home page's "Watch the replay") starts it once, without another click.
        autostart = wanted == name and st.session_state.get("mon_replay_autostarted") != name
        if c3.button("▶ Start replay", width="stretch") or autostart:
            st.session_state["mon_replay_autostarted"] = name
            st.session_state["mon_replay_speed"] = speed
            st.session_state["mon_replay_out"] = str(start_replay(name, recs[name], speed,
                                                                   st.session_state.get("mon_polling", False)))
        if rec.synthetic:
            st.caption("⚠️ This recording's timing is synthetic (made up for tests), not a real run's pace.")
        out = st.session_state.get("mon_replay_out")
        if not out:
            return None, "", None, ()
        thread = replay_sessions().get(out, (None, None))[0]
        status = "running" if thread is not None and thread.is_alive() else None
        pace = "synthetic" if rec.synthetic else "recorded"
        started_speed = st.session_state.get("mon_replay_speed", speed)
        st.info(
            f"**Replay** of the recorded run `{name}` ({rec.source or 'no source noted'}), written into a "
            f"fresh log folder at {started_speed:g}× its {pace} pace ({rec.duration_s:.0f} s recorded): "
            "not a live job.",
            icon=":material/replay:",
        )
        return Path(out), f"replay of {name}", status, ()
    st.info("**Pick what to watch.** *Launched run*: a run started from the Launch page. *Log folder*: any "
            "msrun `--log_dir` (worker_N.log), mpirun output (1/rank.N/stdout) or rank-table run "
            "(deviceN/train.logN). *Replay recorded run*: replays a recorded real run so you can try the "
            "Monitor without hardware.")
    return None, "", None, ()


# ----------------------------------------------------------------------------- sidebar options

def sidebar_options() -> tuple[ui.ChartOptions, float, bool, bool, str | None]:
    with st.sidebar:
        st.subheader("Monitor")
        paused = st.toggle("Pause live updates", key="mon_paused")
        smoothing = st.slider("Smoothing", 0.0, 0.99, 0.6, 0.01, key="mon_smooth",
                              help="TensorBoard's debiased exponential moving average.")
        x_mode = st.radio("X axis", list(ui.X_MODES), horizontal=True, key="mon_x")
        c1, c2 = st.columns(2)
        log_y = c1.checkbox("Log y", key="mon_logy")
        outliers = c2.checkbox("No outliers", key="mon_outliers")
        band = c1.checkbox("Rank band", value=True, key="mon_band")
        per_rank = c2.checkbox("Per-rank lines", value=True, key="mon_per_rank")
        stall = st.number_input("Stalled after (s)", 5, 3600, 60, 5, key="mon_stall")
        with st.expander("Advanced"):
            polling = st.checkbox("Polling watcher (NFS / shared filesystems)", key="mon_polling")
            regex = st.text_input("Custom loss regex", key="mon_regex",
                                  placeholder=r"it (?P<step>\d+) loss=(?P<loss>\S+)",
                                  help="Named groups: loss (required), step, epoch, step_time_ms, lr.")
    loss_regex = None
    if regex:
        try:
            compile_user_regex(regex)
            loss_regex = regex
        except LogFormatError as exc:
            st.sidebar.error(str(exc))
    opts = ui.ChartOptions(smoothing=smoothing, x_mode=x_mode, log_y=log_y, ignore_outliers=outliers,
                           show_band=band, show_ranks=per_rank)
    return opts, float(stall), paused, polling, loss_regex


# ----------------------------------------------------------------------------- page

st.title("Monitor")
source_dir, label, run_status, extra_files = pick_source()
opts, stall_after, paused, polling, loss_regex = sidebar_options()

if source_dir is not None:
    watcher = get_watcher(str(source_dir), polling, loss_regex, extra_files)
    compare_labels: list[str] = []
    compare_dirs: dict[str, Path] = {}
    try:
        others = [r for r in list_runs(default_workspace()) if Path(r.log_dir) != source_dir]
    except Exception:  # a broken registry only hides the comparison choices
        others = []
    compare_dirs = {r.run_id: Path(r.log_dir) for r in others}
    live = run_status in (None, "running") and not paused

    @st.fragment(run_every=1.0 if live else None)
    def live_panel() -> None:
        snap = watcher.snapshot(refresh=True)
        df = ui.prepare(snap.metrics)
        ranks = sorted(int(r) for r in snap.ranks["rank"]) if not snap.ranks.empty else []
        table = ui.status_table(snap, stall_after, run_status)
        states = table["state"].str.split(" ", n=1).str[-1] if not table.empty else table["state"]
        c = st.columns(5)
        c[0].metric("Ranks", len(ranks))
        c[1].metric("Loss points", f"{len(df):,}")
        c[2].metric("Last step", "–" if df.empty else f"{df['global_step'].max():.0f}")
        c[3].metric("Crashed / NaN", int(states.isin(["crashed", "NaN/inf loss"]).sum()))
        c[4].metric("Stalled", int((states == "stalled").sum()))
        if not snap.files:
            st.info(f"No rank logs in `{source_dir}` yet (waiting for worker_N.log, 1/rank.N/stdout or "
                    "deviceN/train.logN). New files are picked up automatically.")
            return
        if ranks:
            if len(ranks) <= 16:
                chosen = st.pills("Ranks", ranks, selection_mode="multi", default=ranks, key=f"mon_ranks_{len(ranks)}",
                                  format_func=lambda r: f"rank {r}")
            else:
                chosen = st.multiselect("Ranks", ranks, default=ranks, key=f"mon_ranks_{len(ranks)}")
            opts.ranks = tuple(chosen)
        compare = []
        if compare_dirs:
            picked = st.multiselect("Compare with runs", list(compare_dirs), key="mon_compare",
                                    placeholder="other launched runs (their mean across ranks)")
            for run_id in picked:
                other = get_watcher(str(compare_dirs[run_id]), polling, loss_regex, ()).snapshot(refresh=True)
                compare.append((run_id, ui.prepare(other.metrics)))
        if df.empty and not compare:
            st.info("No loss lines yet. Recognised: MindSpore LossMonitor / prints (`epoch: 1 step: 10, loss is "
                    "2.3`), `global_step: N, loss: x`, printed Tensors and MindFormers' MFLossMonitor; set a "
                    "custom regex in the sidebar for anything else.")
        else:
            fig, n_points, note = ui.loss_figure(df, opts, compare)
            if note:
                st.caption(note)
            uirev = f"{source_dir}|{opts.x_mode}|{opts.log_y}|{opts.ignore_outliers}"
            live_chart(fig, key="mon_loss_chart", uirevision=uirev, height=430, n_points=n_points)
        left, right = st.columns([3, 2], gap="medium")
        with left:
            st.markdown("**Ranks**")
            st.dataframe(table, hide_index=True, width="stretch",
                         height=min(38 + 35 * max(len(table), 1), 360),
                         column_config={"detail": st.column_config.TextColumn(width="large")})
        with right:
            st_fig = ui.step_time_figure(df, snap.timings, opts.ranks)
            st.markdown("**Step time**")
            if st_fig is None:
                st.caption("No step times in these logs (add `TimeMonitor()` to the callbacks).")
            else:
                live_chart(st_fig, key="mon_step_chart", uirevision=f"{source_dir}|steptime", height=260)
        errors = snap.errors
        fatal = errors[errors["kind"].isin(["exception", "nan", "worker_exit", "timeout"])] if not errors.empty \
            else errors
        if not fatal.empty:
            with st.expander(f"Failures ({len(fatal)})", expanded=True):
                for _, e in fatal.iterrows():
                    who = "scheduler" if e["rank"] == -1 else ("rank ?" if str(e["rank"]) == "<NA>"
                                                               else f"rank {e['rank']}")
                    st.markdown(f"**{who}** · `{e['file']}:{e['line']}` · {e['kind']}")
                    st.code(e["context"] or e["message"], language=None)
        with st.expander("Raw log tail", expanded=False):
            files = [f for f in snap.files]
            names = [f.rel for f in files]
            t1, t2 = st.columns([3, 1], vertical_alignment="bottom")
            pick = t1.selectbox("File", names, key="mon_tail_file")
            hide = t2.toggle("Hide [WARNING]/[INFO]", value=True, key="mon_tail_hide")
            path = next(f.path for f in files if f.rel == pick)
            st.code("\n".join(tail_lines(path, n=200, hide_noise=hide)) or "(nothing yet)", language=None,
                    height=320)
        st.download_button("Download all points (CSV)", data=lambda: ui.csv_bytes(watcher.snapshot()),
                           file_name=f"{label or 'run'}-loss.csv".replace("/", "_"), mime="text/csv",
                           on_click="ignore", key="mon_csv")

    if paused:
        st.caption("⏸ Live updates paused.")
    live_panel()
