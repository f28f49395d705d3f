"""core.sharding.placement against MindSpore's own slicing code (`_expand_layout` + `_load_tensor`)."""

from __future__ import annotations

import math

import mindspore as ms
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from mindspore.parallel._tensor import _expand_layout, _load_tensor

from core.sharding.layout import INTERLEAVED, Layout, LayoutError
from core.sharding.placement import dtype_bytes, place, rank_slices, rank_table_rows
from tests.strategies import layouts_and_maps


def mindspore_slice(global_array: np.ndarray, tensor_layout, position: int) -> np.ndarray:
    """What MindSpore loads onto device-matrix position `position` (checkpoint-loading path)."""
    info = tensor_layout.to_dict()
    dev_matrix, tensor_map, shape = _expand_layout(
        list(info["device_matrix"]), list(info["tensor_map"]), list(global_array.shape)
    )
    expanded = ms.Tensor(global_array.reshape(shape))
    return _load_tensor(expanded, dev_matrix, tensor_map, full_shape=shape, rank_id=position)


@st.composite
def placed_cases(draw: st.DrawFn) -> tuple:
    sizes, aliases, rank_list, entries = draw(layouts_and_maps(allow_interleaved=False))
    assume(entries)  # MindSpore's chunking has no 0-d case
    tensor_layout = Layout(sizes, aliases, rank_list)(*entries)
    multiples = draw(st.lists(st.integers(1, 3), min_size=len(entries), max_size=len(entries)))
    shape = tuple(p * m for p, m in zip(tensor_layout.split, multiples, strict=True))
    return tensor_layout, shape


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(placed_cases())
def test_slices_match_mindspore_load_tensor(case: tuple) -> None:
    tensor_layout, shape = case
    global_array = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    slices = rank_slices(shape, tensor_layout)
    ranks = tensor_layout.layout.rank_list
    assert sorted(slices) == sorted(ranks)
    for position, rank in enumerate(ranks):
        expected = mindspore_slice(global_array, tensor_layout, position)
        ours = global_array[slices[rank]]
        assert np.array_equal(ours.reshape(-1), np.asarray(expected).reshape(-1)), (position, rank)
        assert ours.shape == place(shape, tensor_layout).local_shape


def test_seed_004_row_0_lies_on_ranks_0_4_2_6() -> None:
    tensor_layout = Layout((2, 2, 2), ("dp", "sp", "mp"))("mp", ("sp", "dp"))
    grid = place((2, 4), tensor_layout).owner_grid(0, 1)
    assert [cell[0] for cell in grid.owners[0]] == [0, 4, 2, 6]
    assert [cell[0] for cell in grid.owners[1]] == [1, 5, 3, 7]
    assert grid.element_owners(0, 3) == [6]


def test_replica_groups_follow_unused_axes() -> None:
    tensor_layout = Layout((2, 2, 2), ("dp", "sp", "mp"))("mp", "None")
    groups = place((4, 4), tensor_layout).replica_groups()
    assert groups == [[0, 2, 4, 6], [1, 3, 5, 7]]


def test_rank_list_renames_positions() -> None:
    tensor_layout = Layout((4,), ("dp",), [3, 2, 1, 0])("dp")
    slices = rank_slices((8,), tensor_layout)
    assert slices[3] == (slice(0, 2),)
    assert slices[0] == (slice(6, 8),)


def test_indivisible_dimension_is_refused() -> None:
    tensor_layout = Layout((2, 4), ("dp", "mp"))("dp", "mp")
    with pytest.raises(LayoutError, match="dimension 1 has size 6"):
        rank_slices((4, 6), tensor_layout)


def test_owner_grid_on_3d_tensor_fixes_the_other_dimension() -> None:
    tensor_layout = Layout((2, 2, 2), ("dp", "sp", "mp"))("dp", "sp", "mp")
    placement = place((2, 4, 6), tensor_layout)
    top = placement.owner_grid(1, 2, fixed=[0, 0, 0])
    bottom = placement.owner_grid(1, 2, fixed=[1, 0, 0])
    assert top.owners == [[[0], [1]], [[2], [3]]]
    assert bottom.owners == [[[4], [5]], [[6], [7]]]
    assert top.row_edges == [0, 2, 4] and top.col_edges == [0, 3, 6]
    with pytest.raises(LayoutError, match="outside dimension 0"):
        placement.owner_grid(1, 2, fixed=[5, 0, 0])
    with pytest.raises(LayoutError, match="two different dimensions"):
        placement.owner_grid(1, 1)


def test_one_dimensional_view() -> None:
    tensor_layout = Layout((4,), ("tp",))("tp")
    grid = place((8,), tensor_layout).owner_grid(0, 0)
    assert grid.owners == [[[0], [1], [2], [3]]]


def test_interleaved_card_holds_several_pieces() -> None:
    layout = Layout((2, 2, 2), ("dp", "sp", INTERLEAVED))
    inner = place((8, 4), layout(("dp", INTERLEAVED), "sp"))
    pieces = inner.rank_pieces()
    assert sorted(pieces) == [0, 1, 2, 3]
    assert pieces[0] == [(slice(0, 2), slice(0, 2)), (slice(2, 4), slice(0, 2))]
    assert rank_slices((8, 4), layout(("dp", INTERLEAVED), "sp"))[0] == (slice(0, 4), slice(0, 2))
    assert inner.local_bytes("float32") == 2 * 2 * 4 * 2
    outer = layout((INTERLEAVED, "dp"), "sp")
    assert place((8, 4), outer).rank_pieces()[0] == [(slice(0, 2), slice(0, 2)), (slice(4, 6), slice(0, 2))]
    with pytest.raises(LayoutError, match="separate interleaved pieces"):
        rank_slices((8, 4), outer)


def test_rank_table_rows() -> None:
    tensor_layout = Layout((2, 2, 2), ("dp", "sp", "mp"))("mp", ("sp", "dp"))
    rows = rank_table_rows(place((2, 4), tensor_layout), "float16")
    assert [r["rank"] for r in rows] == list(range(8))
    assert rows[4] == {
        "rank": 4,
        "coordinate": "dp=1, sp=0, mp=0",
        "slice": "[0:1, 1:2]",
        "local_shape": "(1, 1)",
        "bytes": 2,
        "replica_of": 1,
    }


def test_dtype_bytes() -> None:
    assert dtype_bytes("bfloat16") == 2
    with pytest.raises(LayoutError, match="unknown dtype 'float8'"):
        dtype_bytes("float8")


def test_scalar_tensor_is_replicated() -> None:
    tensor_layout = Layout((2,), ("dp",))()
    assert rank_slices((), tensor_layout) == {0: (), 1: ()}
