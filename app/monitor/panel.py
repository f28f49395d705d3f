"""The Monitor's live panel, part by part: reading progress, headline figures, rank and run pickers,
the loss chart (or what a loss line is when there is none), the rank table beside step time, the raw log
tail and the CSV export.

Each part draws one block of the page from a snapshot the page already took; none reads logs itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd
import streamlit as st

from app.monitor import figures, state
from app.monitor.chart import live_chart
from app.monitor.figure_data import ChartOptions, metric_choices, prepare, state_count
from core.logs import RunSnapshot, tail_lines
from core.logs.bytes.discover import LogRole
from core.logs.bytes.guard import LogDirError
from core.logs.judgement.status import RankState
from core.logs.rows.shapes import line_shapes


def reading_progress(reading: tuple[int, int] | None) -> None:
    """A progress bar while the logs already written are read; an empty slot otherwise, so the
    elements after it keep their place when it goes."""
    slot = st.empty()
    if reading is not None:
        done, total = reading
        slot.progress(
            done / max(total, 1),
            text=f"Reading the logs already written: {done:,} of {total:,} files. "
            "Ranks not read yet show as waiting; the diagnosis completes when all are read.",
        )


def headline(ranks: list[int], states: pd.DataFrame, points: int, last_step: float | None) -> None:
    """Ranks, loss points, the job's last step, crashed and stalled counts (from RankState, not labels)."""
    c = st.columns(5)
    c[0].metric("Ranks", len(ranks))
    c[1].metric("Loss points", f"{points:,}")
    c[2].metric("Last step", "–" if last_step is None else f"{last_step:.0f}")
    c[3].metric("Crashed / NaN", state_count(states, RankState.CRASHED, RankState.NAN))
    c[4].metric("Stalled", state_count(states, RankState.STALLED))


def pick_ranks(ranks: list[int]) -> tuple[int, ...]:
    """The ranks to draw: pills up to 16 ranks, a multiselect above."""
    if len(ranks) <= 16:
        chosen = st.pills(
            "Ranks",
            ranks,
            selection_mode="multi",
            default=ranks,
            key=state.ranks_key(len(ranks)),
            format_func=lambda r: f"rank {r}",
        )
    else:
        chosen = st.multiselect("Ranks", ranks, default=ranks, key=state.ranks_key(len(ranks)))
    return tuple(chosen)


def pick_compared(runs: Iterable[str], snapshot_of: Callable[[str], RunSnapshot]) -> list[tuple[str, pd.DataFrame]]:
    """Other launched runs to draw beside this one (their mean across ranks)."""
    picked = st.multiselect(
        "Compare with runs",
        list(runs),
        key=state.COMPARE,
        placeholder="other launched runs (their mean across ranks)",
    )
    compared = []
    for run_id in picked:
        try:
            compared.append((run_id, prepared(snapshot_of(run_id))))
        except LogDirError as exc:  # its record names a folder that cannot be watched: said, not drawn
            st.warning(f"run {run_id} is not compared: {exc}")
    return compared


def prepared(snap: RunSnapshot) -> pd.DataFrame:
    """`prepare` of the snapshot's metrics once per snapshot, whoever asks (never a copy per rerun, and
    kept on the snapshot, not in session_state: a closed tab's kept state must not hold the table)."""
    return snap.derived("prepared", (), lambda: prepare(snap.metrics))


def loss_section(
    snap: RunSnapshot,
    df: pd.DataFrame,
    opts: ChartOptions,
    compare: list[tuple[str, pd.DataFrame]],
    source_dir: Path,
) -> None:
    """The metric picker, the evaluation switch and the chart of every chosen rank."""
    choices = metric_choices(snap)
    m1, m2 = st.columns([3, 2], vertical_alignment="bottom")
    opts.metric = m1.selectbox(
        "Metric",
        list(choices),
        format_func=choices.__getitem__,
        key=state.METRIC,
        help="Every `key: number` on the loss lines is a metric.",
    )
    if not snap.evals.empty:
        n_eval = snap.evals["offset"].nunique()
        opts.show_eval = m2.checkbox(
            f"Evaluation points ({n_eval} lines)",
            key=state.EVAL,
            help="Evaluation / validation lines: their own series, never training rows.",
        )
    fig, n_points, note = figures.loss_figure(df, opts, compare, snap.evals)
    if note:
        st.caption(note)
    uirev = f"{source_dir}|{opts.x_mode}|{opts.log_y}|{opts.ignore_outliers}"
    live_chart(fig, key=state.LOSS_CHART, uirevision=uirev, height=430, n_points=n_points)


def ranks_and_step_time(
    snap: RunSnapshot,
    df: pd.DataFrame,
    table: pd.DataFrame,
    n_ranks: int,
    opts: ChartOptions,
    per_node: int,
    source_dir: Path,
) -> None:
    """The rank table (with each rank's node when there are several) beside the step-time chart."""
    left, right = st.columns([3, 2], gap="medium")
    with left:
        st.markdown("**Ranks**")
        if 0 < per_node < n_ranks:  # several nodes: say which node each rank is on
            table = table.assign(node=table["rank"] // per_node).sort_values(["node", "rank"])
            st.caption(f"{n_ranks} ranks on {-(-n_ranks // per_node)} nodes, {per_node} per node")
        st.dataframe(
            table,
            hide_index=True,
            width="stretch",
            height=min(38 + 35 * max(len(table), 1), 360),
            column_config={"detail": st.column_config.TextColumn(width="large")},
        )
    with right:
        st_fig = figures.step_time_figure(df, snap.timings, opts.ranks)
        st.markdown("**Step time**")
        if st_fig is None:
            st.caption("No step times in these logs (add `TimeMonitor()` to the callbacks).")
        else:
            live_chart(st_fig, key=state.STEP_CHART, uirevision=f"{source_dir}|steptime", height=260)


def log_tail(snap: RunSnapshot, source_dir: Path, extra_files: tuple[str, ...], follow_links: bool) -> None:
    """The last 200 lines of one file, [WARNING]/[INFO] hidden by default (a file outside the folder only
    with `follow_links`, or when it is the run's own launcher log)."""
    with st.expander("Raw log tail", expanded=False):
        names = [f.rel for f in snap.files]
        t1, t2 = st.columns([3, 1], vertical_alignment="bottom")
        pick = t1.selectbox("File", names, key=state.TAIL_FILE)
        hide = t2.toggle("Hide [WARNING]/[INFO]", value=True, key=state.TAIL_HIDE)
        path = next(f.path for f in snap.files if f.rel == pick)
        # the real path is checked again as it is read (the run's own launcher log lives beside the folder)
        own = follow_links or str(path) in extra_files
        st.code(
            "\n".join(tail_lines(path, n=200, hide_noise=hide, inside=None if own else source_dir)) or "(nothing yet)",
            language=None,
            height=320,
        )


def csv_button(latest: Callable[[], RunSnapshot], label: str | None) -> None:
    """Every parsed point as CSV, built only when the button is pressed."""
    st.download_button(
        "Download all points (CSV)",
        data=lambda: figures.csv_bytes(latest()),
        file_name=f"{label or 'run'}-loss.csv".replace("/", "_"),
        mime="text/csv",
        on_click="ignore",
        key=state.CSV,
    )


def no_rows_crash_text(n_crashed: int, n_ranks: int) -> str:
    """What a run that failed before its first loss line shows above the format help."""
    who = "Every rank" if n_crashed >= n_ranks else f"{n_crashed} of {n_ranks} ranks"
    return f"{who} failed before printing a loss line: the failure and its first lines are under **Failures** below."


def no_rows_help(snap: RunSnapshot, source_dir: Path) -> None:
    """No loss row: say what a loss line is, show the lines that carry numbers (digits as #) and point
    at the regex field, instead of an empty chart (issue 18 item 7)."""
    crashed = snap.crashed_ranks()
    if crashed:  # the run died before it trained: that, not the loss format, is the news
        st.error(no_rows_crash_text(len(crashed), snap.n_ranks))
    st.info(
        "No loss lines yet. A loss line has a loss key and a number (`loss: 2.3`, `loss is 2.3`, "
        "`Average Train Loss: [7.0]`, `lm loss: 1.0E+01`), whatever comes before it. For another format, "
        "give a **Custom loss regex** under Advanced in the sidebar: it is tried on every line."
    )
    shapes = state.cached(
        "shapes",
        (str(source_dir), snap.version),
        lambda: line_shapes(f.path for f in snap.files if f.role == LogRole.WORKER),
    )
    if shapes:
        st.markdown("**Most frequent line shapes with numbers** (digits shown as #, then an example line)")
        st.code("\n".join(f"{s.count:>7} x {s.shape}\n          {s.example}" for s in shapes), language=None)
