"""Which of a rank's failures names it: the best-named (`core.logs.rows.failures.failure_weight`; a NaN loss above
all), the first of those, but never an exception a chained traceback went on from (`core.logs.rows.chains`): the
chain's last exception ended the run, the earlier ones led to it.

Why the chain's last one, not its first: Python raises the last (`raise ... from`, or a handler that failed) and it
is what the user's own code saw (kd_thesis's `wandb.errors.errors.AuthenticationError` after two network time-outs,
tests/fixtures/real_logs/wandb-output-log-lightning-bar-collapsed-to-one-line-then-wandb-authenticationerror-at-
epoch-17_kd-thesis-7534idpa); it still yields to an earlier exception of the chain that names the failure better (a
chain whose last traceback is cut off by the log's end is named by its last whole exception).
"""

from __future__ import annotations

import pandas as pd

from core.logs.rows.chains import chained
from core.logs.rows.failures import failure_weight
from core.logs.rows.filestate import ErrorKind

__all__ = ["naming_failure"]

_NAN_WEIGHT = 4  # a NaN loss names a rank's failure above any line


def naming_failure(exc: pd.DataFrame) -> int:
    """The position in `exc` (a rank's exception and NaN errors, file order) of the failure that names the rank's."""
    rows = list(zip(exc["kind"], exc["message"], exc["context"], strict=True))
    weight = [_NAN_WEIGHT if k == ErrorKind.NAN else float(failure_weight(str(m))) for k, m, _ in rows]
    # a chain: failures each of which but the last holds the chain's fixed line; its best-named failure is the last
    # of its highest weight, the others rank half a step below their weight (below the next of the same weight)
    start = 0
    for i, (_, _, context) in enumerate(rows):
        if i + 1 < len(rows) and chained(str(context)):
            continue
        top = max(weight[start : i + 1])
        named = max(j for j in range(start, i + 1) if weight[j] == top)
        for j in range(start, i + 1):
            weight[j] -= 0.5 * (j != named)
        start = i + 1
    return weight.index(max(weight))
