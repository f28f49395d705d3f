"""The Monitor's view of a big run (more than SCALE_RANKS ranks): the ranks to draw (a rank expression), the
aggregate chart beside the ranks to look at, a rank x step heatmap and the ranks worth a look, counted by
their RankState."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from app.monitor import scale, state
from app.monitor.chart import live_chart
from app.monitor.figure_data import ChartOptions, state_counts
from app.monitor.figures import STATE_LABELS, status_table
from app.monitor.panel import no_rows_help
from core.logs import RunSnapshot
from core.logs.judgement.diagnose import Diagnosis
from core.logs.judgement.selection import RankSelectionError, select_ranks
from core.logs.judgement.status import RankState

CALM = (RankState.RUNNING, RankState.FINISHED, RankState.ENDED)
"""Ranks in these states are left out of the table when no rank expression is given."""


def scale_view(
    snap: RunSnapshot,
    states: pd.DataFrame,
    diag: Diagnosis,
    opts: ChartOptions,
    per_node: int,
    source_dir: Path,
    reading: bool = False,
) -> None:
    """Aggregates, ranks to look at, heatmaps and a filtered status table for runs above SCALE_RANKS.
    `states`: `figures.rank_states` (typed RankState values); `reading`: logs are still being read."""
    g = state.cached("grids", (str(source_dir), snap.version), lambda: scale.grids(snap), snap)
    look = scale.look_at(diag, g)
    expr, chosen = _chosen_ranks(diag, g, look, per_node)
    left, right = st.columns([3, 2], gap="medium")
    with left:
        if snap.metrics.empty:  # an empty chart says nothing: say what a loss line is and what was seen
            no_rows_help(snap, source_dir)
        else:
            fig = scale.aggregate_figure(g, chosen, opts.smoothing, opts.log_y)
            live_chart(fig, key=state.AGG_CHART, uirevision=f"{source_dir}|agg|{opts.log_y}", height=400)
    with right:
        _look_at_table(look, reading)
    _heatmap(g, source_dir)
    _rank_table(states, chosen if expr else None, per_node)


def _chosen_ranks(diag: Diagnosis, g: scale.Grids, look: pd.DataFrame, per_node: int) -> tuple[str, list[int]]:
    """The rank expression typed (stripped; "" for none) and the ranks it names (else the first 8 to look at)."""
    named = {
        "failed": [r for gr in diag.failure_groups for r in gr.ranks],
        "hung": [h.rank for h in diag.hung],
        "stragglers": [s.rank for s in diag.stragglers],
        "look": look["rank"].tolist(),
    }
    expr = st.text_input(
        "Ranks to draw",
        key=state.RANK_EXPR,
        placeholder="e.g. 0-63, node 3, failed, hung, stragglers (empty: the ranks to look at)",
    ).strip()
    try:
        chosen = select_ranks(expr, [int(r) for r in g.ranks], named, per_node) if expr else look["rank"].tolist()[:8]
    except RankSelectionError as exc:
        st.error(str(exc))
        chosen = look["rank"].tolist()[:8]
    if len(chosen) > scale.MAX_HIGHLIGHT:
        st.caption(
            f"{len(chosen)} ranks selected: drawing the first {scale.MAX_HIGHLIGHT} as lines; the band "
            "and the heatmaps cover every rank."
        )
    return expr, chosen


def _look_at_table(look: pd.DataFrame, reading: bool) -> None:
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


def _heatmap(g: scale.Grids, source_dir: Path) -> None:
    """The loss (or step time) of every rank at every step, one heatmap."""
    what = st.segmented_control("Heatmap", ["Loss", "Step time"], default="Loss", key=state.HEAT)
    if what == "Step time" and g.step_time is not None and g.step_time_x is not None:  # set together
        hfig = scale.heatmap_figure(g.step_time, g.ranks, g.step_time_x, "ms/step", g.step_time_label, "Inferno")
    elif what == "Step time":
        hfig = None
        st.caption("No step times in these logs (add `TimeMonitor()` to the callbacks).")
    elif g.loss.shape[1] == 0:
        hfig = None
        st.caption("No loss line yet: the heatmap fills in as the ranks print them.")
    else:
        hfig = scale.heatmap_figure(g.loss, g.ranks, g.x, "loss", "step")
    if hfig is not None:
        live_chart(hfig, key=state.HEATMAP, uirevision=f"{source_dir}|heat|{what}", height=420)


def _rank_table(states: pd.DataFrame, chosen: list[int] | None, per_node: int) -> None:
    """Ranks per state, then the table of the chosen ranks (None: every rank not calm), with their node."""
    counts = state_counts(states)
    st.markdown("**Ranks** · " + " · ".join(f"{STATE_LABELS[s]}: {n}" for s, n in counts.items()))
    table = status_table(states)
    if chosen is not None:
        shown = table[table["rank"].isin(chosen)]
    else:
        shown = table[~states["state"].isin(CALM)] if not states.empty else table
    shown = shown.assign(node=shown["rank"] // per_node)
    st.dataframe(
        shown.head(300),
        hide_index=True,
        width="stretch",
        height=min(38 + 35 * max(len(shown), 1), 300),
        column_config={"detail": st.column_config.TextColumn(width="large")},
    )
