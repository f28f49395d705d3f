"""The Monitor's diagnosis: one line of findings above the charts, and the failures grouped (identical
exceptions once, the rank that failed first marked) from `core.logs.judgement.diagnose`."""

from __future__ import annotations

import time

import streamlit as st

from core.logs import RunSnapshot
from core.logs.judgement.diagnose import Diagnosis


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
