"""Monitor page: live per-rank loss curves, step time, rank states and log tails of a run."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pandas as pd
import streamlit as st

from app import monitor_panel as panel
from app import monitor_scale as scale
from app import monitor_widgets as ui
from app.live_chart import live_chart
from app.monitor_alerts import alerts_panel
from app.monitor_memory import memory_panel
from app.monitor_share import share_buttons
from app.monitor_source import get_watcher, pick_source
from app.monitor_time import time_panel
from core.logs import LogFormatError, RunSnapshot, compile_user_regex
from core.logs.bytes.discover import LogRole, folder_notes
from core.logs.bytes.guard import validate_log_dir
from core.logs.judgement.diagnose import Diagnosis, diagnose
from core.logs.judgement.selection import RankSelectionError, select_ranks
from core.logs.judgement.status import RankState
from core.logs.live.watcher import MAX_WATCHES
from core.logs.rows.filestate import note_lines
from core.logs.rows.shapes import line_shapes
from core.run.planned import plan_for_log_dir
from core.run.registry import list_runs
from core.workspace import default_workspace

T = TypeVar("T")
LIVE_STATUSES = (None, "queued", "starting", "running")  # queued = Slurm PENDING: its logs will come


# ----------------------------------------------------------------------------- sidebar options


def sidebar_options() -> tuple[ui.ChartOptions, float, bool, bool, str | None, int]:
    with st.sidebar:
        st.subheader("Monitor")
        paused = st.toggle("Pause live updates", key="mon_paused")
        smoothing = st.slider(
            "Smoothing",
            0.0,
            0.99,
            0.6,
            0.01,
            key="mon_smooth",
            help="TensorBoard's debiased exponential moving average.",
        )
        x_mode = st.radio("X axis", list(ui.X_MODES), horizontal=True, key="mon_x")
        c1, c2 = st.columns(2)
        log_y = c1.checkbox("Log y", key="mon_logy")
        outliers = c2.checkbox("No outliers", key="mon_outliers")
        band = c1.checkbox("Rank band", value=True, key="mon_band")
        per_rank = c2.checkbox("Per-rank lines", value=True, key="mon_per_rank")
        stall = st.number_input("Stalled after (s)", 5, 3600, 60, 5, key="mon_stall")
        with st.expander("Advanced"):
            polling = st.checkbox("Polling watcher (NFS / shared filesystems)", key="mon_polling")
            st.checkbox(
                "Follow links",
                key="mon_follow_links",
                help="Also read logs that are links to files outside the chosen folder (refused by "
                "default: a link could show any file the server can read).",
            )
            per_node = int(
                st.number_input(
                    "Ranks per node",
                    1,
                    1024,
                    8,
                    key="mon_per_node",
                    help="msrun --local_worker_num: `node 3` in a rank expression means ranks 24-31 with 8 per node.",
                )
            )
            regex = st.text_input(
                "Custom loss regex",
                key="mon_regex",
                placeholder=r"it (?P<step>\d+) loss=(?P<loss>\S+)",
                help="Tried on every line (replaces the built-in reader). Named groups: "
                "loss (required), step, epoch, step_time_ms, lr.",
            )
    loss_regex = None
    if regex:
        try:
            compile_user_regex(regex)
            loss_regex = regex
        except LogFormatError as exc:
            st.sidebar.error(str(exc))
    opts = ui.ChartOptions(
        smoothing=smoothing, x_mode=x_mode, log_y=log_y, ignore_outliers=outliers, show_band=band, show_ranks=per_rank
    )
    return opts, float(stall), paused, polling, loss_regex, per_node


def no_rows_help(snap: RunSnapshot, source_dir: Path) -> None:
    """No loss row: say what a loss line is, show the lines that carry numbers (digits as #) and point
    at the regex field, instead of an empty chart (issue 18 item 7)."""
    st.info(
        "No loss lines yet. A loss line has a loss key and a number (`loss: 2.3`, `loss is 2.3`, "
        "`Average Train Loss: [7.0]`, `lm loss: 1.0E+01`), whatever comes before it. For another format, "
        "give a **Custom loss regex** under Advanced in the sidebar: it is tried on every line."
    )
    shapes = cached(
        "shapes",
        (str(source_dir), snap.version),
        lambda: line_shapes(f.path for f in snap.files if f.role == LogRole.WORKER),
    )
    if shapes:
        st.markdown("**Most frequent line shapes with numbers** (digits shown as #, then an example line)")
        st.code("\n".join(f"{s.count:>7} x {s.shape}\n          {s.example}" for s in shapes), language=None)


# ----------------------------------------------------------------------------- diagnosis + scale views


def cached(name: str, key: tuple, make: Callable[[], T], snap: RunSnapshot | None = None) -> T:
    """Recompute `make()` only when `key` (folder, snapshot version, ...) changes: at 1,024 ranks the
    diagnosis and the grids cost 0.1-0.5 s, and most live ticks bring no new line. With `snap`, once
    for every session shown that snapshot (the watcher shares it: issue 22, 20 sessions)."""
    memo = st.session_state.setdefault("_mon_memo", {})
    hit = memo.get(name)
    if hit is None or hit[0] != key:
        hit = memo[name] = (key, make() if snap is None else snap.derived(name, key, make))
    return hit[1]


def _when(t: float | None) -> str:
    if t is None:
        return "time unknown"
    return time.strftime("%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"


def _rank_list(ranks: list[int], limit: int = 24) -> str:
    text = ", ".join(str(r) for r in ranks[:limit])
    return text + (f", … ({len(ranks)} ranks)" if len(ranks) > limit else "")


def failures_view(diag: Diagnosis, snap: RunSnapshot) -> None:
    """Identical exceptions as one group each, the rank that failed first marked (not N tracebacks)."""
    errors = snap.errors
    n = sum(len(g.ranks) for g in diag.failure_groups)
    if not diag.failure_groups and not diag.job_errors:
        return
    with st.expander(f"Failures: {n} rank(s) in {len(diag.failure_groups)} group(s)", expanded=True):
        for g in diag.failure_groups:
            root = g.first_rank == diag.root_cause
            st.markdown(
                f"**{len(g.ranks)} rank(s)** · {'likely root cause' if root else 'first of this group'}: "
                f"**rank {g.first_rank}** at {_when(g.first_time)} ({g.time_source}) · "
                f"ranks {_rank_list(g.ranks)}"
            )
            mine = (
                errors[(errors["rank"] == g.first_rank) & errors["kind"].isin(["exception", "nan"])]
                if not errors.empty
                else errors
            )
            context = str(mine.iloc[0]["context"] or mine.iloc[0]["message"]) if not mine.empty else g.exception
            st.code(context, language=None)
            for e in g.evidence:
                st.caption(e)
        for e in diag.job_errors:
            st.markdown("**job** (launcher / scheduler)")
            st.code(e, language=None)


def diagnosis_strip(diag: Diagnosis) -> None:
    """One line of findings above the charts."""
    parts = []
    if diag.root_cause is not None:
        parts.append(f":red[:material/cancel:] rank **{diag.root_cause}** failed first")
    if diag.hung:
        parts.append(f":orange[:material/hourglass_empty:] hung: {_rank_list([h.rank for h in diag.hung], 8)}")
    if diag.stragglers:
        parts.append(
            ":violet[:material/speed:] stragglers: "
            + ", ".join(f"{s.rank} ({s.ratio:.2f}×)" for s in diag.stragglers[:6])
        )
    if diag.overflow_steps:
        parts.append(f"overflow at {len(diag.overflow_steps)} step(s)")
    if diag.norm_spikes:
        parts.append(f"global_norm spikes: {len(diag.norm_spikes)}")
    if parts:
        st.markdown(" · ".join(parts))


def scale_view(
    snap: RunSnapshot,
    table: pd.DataFrame,
    diag: Diagnosis,
    opts: ui.ChartOptions,
    per_node: int,
    source_dir: Path,
    reading: bool = False,
) -> None:
    """Aggregates, ranks to look at, heatmaps and a filtered status table for runs above SCALE_RANKS."""
    g = cached("grids", (str(source_dir), snap.version), lambda: scale.grids(snap), snap)
    look = scale.look_at(diag, g)
    named = {
        "failed": [r for gr in diag.failure_groups for r in gr.ranks],
        "hung": [h.rank for h in diag.hung],
        "stragglers": [s.rank for s in diag.stragglers],
        "look": look["rank"].tolist(),
    }
    ranks = [int(r) for r in g.ranks]
    expr = st.text_input(
        "Ranks to draw",
        key="mon_rank_expr",
        placeholder="e.g. 0-63, node 3, failed, hung, stragglers (empty: the ranks to look at)",
    )
    try:
        chosen = select_ranks(expr, ranks, named, per_node) if expr.strip() else look["rank"].tolist()[:8]
    except RankSelectionError as exc:
        st.error(str(exc))
        chosen = look["rank"].tolist()[:8]
    if len(chosen) > scale.MAX_HIGHLIGHT:
        st.caption(
            f"{len(chosen)} ranks selected: drawing the first {scale.MAX_HIGHLIGHT} as lines; the band "
            "and the heatmaps cover every rank."
        )
    left, right = st.columns([3, 2], gap="medium")
    with left:
        fig = scale.aggregate_figure(g, chosen, opts.smoothing, opts.log_y)
        live_chart(fig, key="mon_agg_chart", uirevision=f"{source_dir}|agg|{opts.log_y}", height=400)
    with right:
        st.markdown("**Ranks to look at**")
        if look.empty and reading:
            st.caption("Nothing so far in the logs read; the rest are still being read.")
        elif look.empty:
            st.caption("Nothing stands out: no failure, hang, straggler or diverging loss.")
        else:
            st.dataframe(
                look,
                hide_index=True,
                width="stretch",
                height=min(38 + 35 * len(look), 360),
                column_config={"why": st.column_config.TextColumn(width="large")},
            )
    what = st.segmented_control("Heatmap", ["Loss", "Step time"], default="Loss", key="mon_heat")
    if what == "Step time" and g.step_time is not None and g.step_time_x is not None:  # set together
        hfig = scale.heatmap_figure(g.step_time, g.ranks, g.step_time_x, "ms/step", g.step_time_label, "Inferno")
    elif what == "Step time":
        hfig = None
        st.caption("No step times in these logs (add `TimeMonitor()` to the callbacks).")
    else:
        hfig = scale.heatmap_figure(g.loss, g.ranks, g.x, "loss", "step")
    if hfig is not None:
        live_chart(hfig, key="mon_heatmap", uirevision=f"{source_dir}|heat|{what}", height=420)
    states = table["state"].value_counts()
    st.markdown("**Ranks** · " + " · ".join(f"{s}: {n}" for s, n in states.items()))
    calm = [ui.STATE_LABELS[s] for s in (RankState.RUNNING, RankState.FINISHED, RankState.ENDED)]
    shown = table[table["rank"].isin(chosen)] if expr.strip() else table[~table["state"].isin(calm)]
    shown = shown.assign(node=shown["rank"] // per_node)
    st.dataframe(
        shown.head(300),
        hide_index=True,
        width="stretch",
        height=min(38 + 35 * max(len(shown), 1), 300),
        column_config={"detail": st.column_config.TextColumn(width="large")},
    )


# ----------------------------------------------------------------------------- page

st.title("Monitor")
source = pick_source()
source_dir, label, run_status, extra_files = source.log_dir, source.label, source.status, source.extra
opts, stall_after, paused, polling, loss_regex, per_node = sidebar_options()

if source_dir is not None:
    polling = polling or (run_status is not None and st.session_state.get("mon_shared_fs", False))
    watcher = get_watcher(str(source_dir), polling, loss_regex, extra_files)
    compare_labels: list[str] = []
    compare_dirs: dict[str, Path] = {}
    try:
        others = [r for r in list_runs(default_workspace()) if Path(r.log_dir) != source_dir]
    except Exception:  # a broken registry only hides the comparison choices
        others = []
    compare_dirs = {r.run_id: Path(r.log_dir) for r in others}
    live = run_status in LIVE_STATUSES and not paused

    @st.fragment(run_every=1.0 if live or watcher.catching_up else None)
    def live_panel(source_dir: Path) -> None:  # the folder picked (this branch: not None)
        # asked of the registry on every tick: marks the watcher used, so an open tab keeps it alive
        watcher = get_watcher(str(source_dir), polling, loss_regex, extra_files)
        snap = watcher.snapshot(refresh=True)
        reading = watcher.catching_up
        panel.reading_progress(reading)
        if reading is not None:
            st.session_state["mon_reading"] = str(source_dir)
        elif not live and st.session_state.pop("mon_reading", None) == str(source_dir):
            st.rerun()  # read to the end: a finished run's page stops refreshing itself
        if (behind := ui.behind_caption(snap.behind_bytes)) is not None:
            st.caption(behind)  # the logs grow faster than they are read (issue 22)
        if watcher.watch_limited:
            st.warning(
                f"More log folders than the {MAX_WATCHES:,} watched for changes: new lines in the others "
                "show up with the 1 s rescan instead of at once."
            )
        ranks = sorted(int(r) for r in snap.ranks["rank"]) if not snap.ranks.empty else []
        big = len(ranks) > scale.SCALE_RANKS
        df = snap.metrics if big else panel.prepared(snap)  # at scale no per-point column at all
        states = ui.rank_states(snap, stall_after, run_status)
        table = ui.status_table(states)
        diag = cached(
            "diag",
            (str(source_dir), snap.version, run_status),
            lambda: diagnose(snap, now=time.time() if run_status in LIVE_STATUSES[1:] else None),
            snap,
        )
        last_step = diag.last_step if big else (None if df.empty else df["global_step"].max())  # the job's
        panel.headline(ranks, states, len(df), last_step)
        follow = bool(st.session_state.get("mon_follow_links"))  # one folder scan per 5 s, not per tick
        notes = cached(
            "notes",
            (str(source_dir), follow, bool(ranks), int(time.time() // 5)),
            lambda: folder_notes(source_dir, follow),
        )
        if not ranks:
            st.info("No rank log read. " + " ".join(notes) + " New files are picked up automatically.")
            if not snap.files:
                return
        else:
            for note in [*notes, *note_lines(snap.errors)]:  # + a log truncated under the reader: its rows kept
                st.warning(note)
        diagnosis_strip(diag)
        if big:
            scale_view(snap, table, diag, opts, per_node, source_dir, reading=reading is not None)
        elif ranks:
            opts.ranks = panel.pick_ranks(ranks)

        def snapshot_of(run_id: str) -> RunSnapshot:
            # the same checks as a folder the user picks: a record's log_dir is never trusted as written
            folder = validate_log_dir(compare_dirs[run_id])
            return get_watcher(str(folder), polling, loss_regex, ()).snapshot(refresh=True)

        compare = panel.pick_compared(compare_dirs, snapshot_of) if compare_dirs else []
        if big:
            pass  # scale_view drew the aggregates
        elif df.empty and not compare:
            no_rows_help(snap, source_dir)
        else:
            panel.loss_section(snap, df, opts, compare, source_dir)
        if not big:
            panel.ranks_and_step_time(snap, df, table, len(ranks), opts, per_node, source_dir)
        failures_view(diag, snap)
        alerts_panel(source_dir, label, run_status, diag, snap)  # notifications, the alert watch's attempts
        memory_panel(snap, plan_for_log_dir(default_workspace(), source_dir))
        time_panel(diag.median_step_time, plan_for_log_dir(default_workspace(), source_dir))
        panel.log_tail(snap, source_dir, extra_files)
        panel.csv_button(watcher.snapshot, label)
        share_buttons(watcher.snapshot, label, source_dir)

    if paused:
        st.caption("⏸ Live updates paused.")
    live_panel(source_dir)
