"""Hypothesis strategies more than one test module draws from: import them from here, never from a
tests/test_*.py module (a test module is not a library: importing one runs its collection twice)."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from core.sharding.layout import INTERLEAVED, NONE

ALIASES = ["dp", "sp", "mp", "tp", "ep", "pp"]


@st.composite
def layouts_and_maps(draw: st.DrawFn, allow_interleaved: bool = True) -> tuple[tuple, tuple, list | None, tuple]:
    """A valid (device_matrix, alias_name, rank_list, tensor_map entries) quadruple."""
    n_axes = draw(st.integers(1, 4))
    sizes = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=n_axes, max_size=n_axes)))
    names = list(draw(st.permutations(ALIASES)))[:n_axes]
    if allow_interleaved and draw(st.booleans()) and n_axes > 1:
        names[-1] = INTERLEAVED
    aliases = tuple(names)
    rank_list = None
    if INTERLEAVED not in aliases and draw(st.booleans()):
        rank_list = list(draw(st.permutations(range(math.prod(sizes)))))
    ndim = draw(st.integers(0, 4))
    pool = list(draw(st.permutations(aliases)))
    entries: list = []
    for _ in range(ndim):
        kind = draw(st.sampled_from(["none", "one", "tuple"]))
        if kind == "one" and pool:
            entries.append(pool.pop())
        elif kind == "tuple" and pool:
            k = draw(st.integers(1, len(pool)))
            entries.append(tuple(pool.pop() for _ in range(k)))
        else:
            entries.append(NONE)
    return sizes, aliases, rank_list, tuple(entries)
