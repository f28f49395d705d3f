"""The ranks a person should look at first, and why: one list for the Monitor at scale and the shared
report (the first failing rank, each failure group's first rank, hung ranks, stragglers, then ranks whose
latest loss is far from the others' at the same step)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.logs.judgement.diagnose import Diagnosis
from core.logs.judgement.metrics import lagging_ranks

__all__ = ["LookAt", "look_at"]

MAX_WHY = 120  # an exception's first characters: the whole of it is in the failure groups below


@dataclass(frozen=True)
class LookAt:
    """A rank to look at first, and why (most important first)."""

    rank: int
    what: str
    why: str


def look_at(diag: Diagnosis, loss_grid: np.ndarray, grid_ranks: np.ndarray) -> list[LookAt]:
    """One entry per rank, most important first (`loss_grid`: ranks x steps of loss, `grid_ranks` its rows)."""
    out: dict[int, LookAt] = {}

    def add(rank: int, what: str, why: str) -> None:
        out.setdefault(rank, LookAt(rank, what, why))

    if diag.root_cause is not None:
        group = next(g for g in diag.failure_groups if g.first_rank == diag.root_cause)
        add(diag.root_cause, "failed first", f"{group.exception[:MAX_WHY]} (failed first of {len(group.ranks)})")
    for g in diag.failure_groups:
        add(g.first_rank, "failed first in its group", g.exception[:MAX_WHY])
    for h in diag.hung:
        add(h.rank, "hung", h.reason)
    for s in diag.stragglers:
        add(s.rank, "straggler", f"{s.step_time:.0f} ms/step = {s.ratio:.2f}x the median {s.median_step_time:.0f} ms")
    for r in lagging_ranks(loss_grid, grid_ranks) if loss_grid.size else []:
        add(r, "loss diverges", "its latest loss is far from the other ranks'")
    return list(out.values())
