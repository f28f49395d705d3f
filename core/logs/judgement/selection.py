"""Rank selection by expression, for runs too big for one pill per rank.

Grammar: comma-separated terms, the union of what each term names.
  `5`            one rank
  `0-63`         a range (inclusive)
  `node 3`       the ranks of node 3 (needs ranks per node: msrun's --local_worker_num, 8 by default)
  `failed` / `hung` / `stragglers` / `nan` / ...   a named set the caller provides (from the diagnosis)
  `all`          every rank
Example with 16 ranks, 8 per node, failed = {9}: "0-2, node 1, failed" -> [0, 1, 2, 8, ..., 15].
Errors name the offending term, so the page can show them as typed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from core.errors import UserError

__all__ = ["RankSelectionError", "nodes_of", "select_ranks"]

_RE_RANGE = re.compile(r"^([0-9]+)\s*(?:-|\.\.)\s*([0-9]+)$")
_RE_NODE = re.compile(r"^node\s*([0-9]+)$", re.IGNORECASE)


class RankSelectionError(UserError, ValueError):
    """A rank expression that names nothing we know (the message says which term)."""


def nodes_of(ranks: Iterable[int], per_node: int) -> dict[int, list[int]]:
    """Ranks grouped by node: rank r sits on node r // per_node (msrun numbers ranks node by node)."""
    if per_node < 1:
        raise RankSelectionError(f"ranks per node must be at least 1, got {per_node}")
    out: dict[int, list[int]] = {}
    for r in sorted(ranks):
        out.setdefault(r // per_node, []).append(r)
    return out


def select_ranks(
    expr: str, ranks: Iterable[int], named: Mapping[str, Iterable[int]] | None = None, per_node: int = 8
) -> list[int]:
    """The ranks `expr` names, sorted, restricted to `ranks` (those that have logs).

    Raises RankSelectionError for a term that is not a rank, range, node or known name; an empty
    expression selects nothing (the caller shows aggregates only).
    """
    known = sorted(set(int(r) for r in ranks))
    have = set(known)
    names = {k.lower(): set(v) for k, v in (named or {}).items()}
    picked: set[int] = set()
    for raw in expr.split(","):
        term = raw.strip()
        if not term:
            continue
        low = term.lower()
        if low == "all":
            picked |= have
        elif low in names:
            picked |= names[low] & have
        elif term.isascii() and term.isdigit():  # not "²": str.isdigit takes any Unicode digit
            r = int(term)
            if r not in have:
                raise RankSelectionError(f"rank {r} has no log (ranks are {_span(known)})")
            picked.add(r)
        elif (m := _RE_RANGE.match(term)) is not None:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi:
                raise RankSelectionError(f"'{term}': the range runs backwards (write {hi}-{lo})")
            picked |= {r for r in known if lo <= r <= hi}
        elif (m := _RE_NODE.match(term)) is not None:
            node = int(m.group(1))
            nodes = nodes_of(known, per_node)
            if node not in nodes:
                raise RankSelectionError(
                    f"'{term}': there are {len(nodes)} nodes of {per_node} ranks (0-{max(nodes, default=0)})"
                )
            picked |= set(nodes[node])
        else:
            choices = ", ".join(sorted(names)) or "none here"
            raise RankSelectionError(f"'{term}' is not a rank, a range (0-63), 'node N' or a name ({choices})")
    return sorted(picked)


def _span(ranks: list[int]) -> str:
    return f"{ranks[0]}-{ranks[-1]}" if ranks else "none"
