"""core.logs.tokens.sortedsearch.searchsorted against `np.searchsorted`, the statement it replaces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.logs.tokens.sortedsearch import searchsorted

_INTS = st.integers(min_value=-(2**40), max_value=2**40)


@settings(max_examples=300, deadline=None)
@given(
    a=st.lists(st.integers(-50, 50) | _INTS, max_size=60),
    q=st.lists(st.integers(-60, 60) | _INTS, max_size=60),
    ascending=st.booleans(),
    side=st.sampled_from(["left", "right"]),
)
def test_same_as_numpy(a: list[int], q: list[int], ascending: bool, side: str) -> None:
    """Any ascending `a` (repeats too) and any queries, ascending or not: numpy's indices."""
    arr = np.array(sorted(a), dtype=np.int64)
    queries = np.array(sorted(q) if ascending else q, dtype=np.int64)
    got = searchsorted(arr, queries, side)
    assert got.dtype == np.intp
    assert got.tolist() == np.searchsorted(arr, queries, side=side).tolist()


def test_line_ends_of_a_real_block() -> None:
    """Line starts against a block's newlines (what the reader asks): each line's own newline."""
    buf = np.frombuffer(b"\nab\n\ncd ef\n\nx\n", dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    starts = newlines[:-1] + 1
    ends = newlines[searchsorted(newlines, starts)]
    assert ends.tolist() == [3, 4, 10, 11, 13]


def test_other_dtypes_and_a_bad_side() -> None:
    """A float array is numpy's to answer; a side that is neither is one clear error naming it."""
    assert searchsorted(np.array([1.0, 2.0]), np.array([1.5]), "left").tolist() == [1]
    with pytest.raises(ValueError, match="'middle'"):
        searchsorted(np.array([1], dtype=np.int64), np.array([1], dtype=np.int64), "middle")
