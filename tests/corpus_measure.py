"""How a reading of a real-log corpus entry is compared with its expect.json: one definition for the corpus test
(tests/test_real_logs_corpus.py) and the score (benchmarks/score_corpus.py), so the two cannot measure differently.

- a loss within 1e-6 relative of the expected one (`"nan"` expects a NaN);
- loss rows per rank, the ranks with rows only (a rank of no row is not in the count);
- a rank's first and last training loss, its rows in file and offset order.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

__all__ = ["REL_TOL", "expected_rows", "first_and_last", "rows_per_rank", "same"]

REL_TOL = 1e-6


def same(actual: float, expected: float | str) -> bool:
    """Whether a read loss is the expected one: within 1e-6 relative, or both NaN (`"nan"`)."""
    if expected == "nan":
        return math.isnan(actual)
    return math.isclose(actual, float(expected), rel_tol=REL_TOL, abs_tol=1e-12)


def rows_per_rank(metrics: pd.DataFrame) -> dict[str, int]:
    """Loss rows per rank of a reading (`RunSnapshot.metrics`), keyed by the rank as text (as expect.json)."""
    return {str(int(r)): int(n) for r, n in metrics.groupby("rank").size().items()} if not metrics.empty else {}


def expected_rows(expect: dict[str, Any]) -> dict[str, int]:
    """expect.json's `loss_rows`, the ranks with rows only (what `rows_per_rank` gives)."""
    return {str(r): int(n) for r, n in expect["loss_rows"].items() if int(n) > 0}


def first_and_last(metrics: pd.DataFrame, rank: int) -> tuple[float, float] | None:
    """A rank's first and last training loss (its rows in file and offset order), None when it has no row."""
    if metrics.empty:
        return None
    rows = metrics[metrics["rank"] == rank].sort_values(["file", "offset"], kind="stable")
    if rows.empty:
        return None
    return float(rows["loss"].iloc[0]), float(rows["loss"].iloc[-1])
