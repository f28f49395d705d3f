"""Operator strategy rules: validity, output layouts and implied communication (core/sharding/operators/)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.sharding.catalog import OP_ARITY
from core.sharding.design import (
    Design,
    DesignError,
    LayoutSpec,
    OperatorSpec,
    Sharding,
    TensorSpec,
    design_from_dict,
    load_design,
)
from core.sharding.layout import Layout, LayoutError
from core.sharding.operators import (
    Communication,
    OperatorAnalysis,
    analyze_design,
    analyze_operator,
    rank_groups,
    redistribution_bytes,
    strategy_layouts,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
L222 = LayoutSpec((2, 2, 2), ("dp", "sp", "mp"))
TP8 = LayoutSpec((8,), ("tp",))


def example(name: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / f"{name}.json").read_text())


def seed004() -> Design:
    return design_from_dict(example("seed004_mlp"))


def by_name(analyses: list[OperatorAnalysis]) -> dict[str, OperatorAnalysis]:
    return {a.name: a for a in analyses}


def lay(name: str, *entries: Any) -> Sharding:
    return Sharding(layout=name, map=tuple(entries))


def split(*counts: int) -> Sharding:
    return Sharding(split=tuple(counts))


def one_op(
    op_type: str,
    shapes: list[tuple[int, ...]],
    strategy: list[Sharding] | None,
    layouts: dict[str, LayoutSpec] | None = None,
    device_num: int = 8,
    dtype: str = "float32",
    **flags: bool,
) -> OperatorAnalysis:
    names = ["x", "w"][: len(shapes)] if op_type in ("MatMul", "BatchMatMul") else ["a", "b"][: len(shapes)]
    design = Design(
        device_num=device_num,
        layouts=layouts if layouts is not None else {"layout": L222, "layout2": TP8},
        tensors={n: TensorSpec(s, dtype) for n, s in zip(names, shapes, strict=True)},
        operators=(OperatorSpec("op", op_type, tuple(names), None if strategy is None else tuple(strategy), **flags),),
    )
    return analyze_operator(design, "op")


def kinds(analysis: OperatorAnalysis) -> list[str]:
    return [c.kind for c in analysis.communications]


# ---------------------------------------------------------------------------------------------
# seed 004 worked examples
# ---------------------------------------------------------------------------------------------
def test_seed004_matmul1_allreduce_over_sp_dp_in_mp_groups() -> None:
    a = by_name(analyze_design(seed004()))["matmul1"]
    assert a.valid, a.problems
    assert a.output_shape == (32, 512)
    assert a.output_layout is not None
    assert a.output_layout.entries == ("mp", "None")
    assert a.output_layout.layout.device_matrix == (2, 2, 2)
    assert a.output_layout.layout.alias_name == ("dp", "sp", "mp")
    assert a.input_layouts[0] is not None and a.input_layouts[0].entries == ("mp", ("sp", "dp"))
    # x and fc1_weight are stored exactly as matmul1 needs them: the AllReduce is the only communication
    assert kinds(a) == ["AllReduce"]
    reduce = a.communications[0]
    assert reduce.axes == ("sp", "dp")
    assert reduce.groups == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert reduce.bytes_per_rank == (32 // 2) * 512 * 4  # local output slice, float32
    assert "reduce dimension" in reduce.reason


def test_seed004_dense_matmul_without_out_strategy_allreduces() -> None:
    data = example("seed004_dense_matmul")
    del data["operators"][0]["out_strategy"]
    a = analyze_design(design_from_dict(data))[0]
    assert a.valid
    assert a.output_layout is not None and a.output_layout.tensor_map == (0, -1)
    assert [c.kind for c in a.communications] == ["AllReduce"]
    assert a.communications[0].groups == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert a.communications[0].bytes_per_rank == 4 * 8 * 4


def test_seed004_matmul2_allreduce_over_all_eight_tp_ranks() -> None:
    a = by_name(analyze_design(seed004()))["matmul2"]
    assert a.valid, a.problems
    assert a.output_layout is not None and a.output_layout.entries == ("None", "None")
    reduce = [c for c in a.communications if c.kind == "AllReduce"]
    assert len(reduce) == 1
    assert reduce[0].axes == ("tp",)
    assert reduce[0].groups == [list(range(8))]
    assert reduce[0].bytes_per_rank == 32 * 512 * 4


def test_seed004_relu1_redistributes_matmul1_output() -> None:
    a = by_name(analyze_design(seed004()))["relu1"]
    assert a.valid, a.problems
    assert a.input_layouts[0] is not None
    assert a.input_layouts[0].layout.device_matrix == (2, 4, 1)  # rep=2 first, then the strategy (4, 1)
    assert a.input_layouts[0].layout.alias_name == ("rep", "d0", "d1")
    assert any("rep" in note for note in a.notes)
    (redist,) = a.communications
    assert redist.kind == "Redistribution"
    assert "matmul1" in redist.reason
    assert "mp" in redist.axes and "d0" in redist.axes
    # rank r needs rows [8*(r%4), +8) but holds rows [16*(r%2), +16): ranks 1, 2, 5, 6 receive 8 rows
    assert redist.bytes_per_rank == 8 * 512 * 4


def test_seed004_whole_network_valid_and_shapes_flow() -> None:
    analyses = analyze_design(seed004())
    assert [a.name for a in analyses] == ["matmul1", "relu1", "matmul2", "relu2", "matmul3"]
    assert all(a.valid for a in analyses), [a.problems for a in analyses]
    assert [a.output_shape for a in analyses] == [(32, 512)] * 4 + [(32, 10)]
    matmul3 = analyses[-1]
    assert any("no strategy" in n and "data parallel" in n for n in matmul3.notes)
    # relu2 (8, 1) output is exactly what matmul3's default (8, 1) x (1, 1) reads: nothing to move
    assert matmul3.communications == []
    relu2 = analyses[3]
    (slice_only,) = relu2.communications
    assert slice_only.bytes_per_rank == 0 and "no data moves" in slice_only.reason


def test_every_example_design_is_valid() -> None:
    for path in sorted(EXAMPLES.glob("*.json")):
        for a in analyze_design(design_from_dict(json.loads(path.read_text()))):
            assert a.valid, (path.name, a.name, a.problems)


# ---------------------------------------------------------------------------------------------
# MatMul rules
# ---------------------------------------------------------------------------------------------
def test_reduce_dim_split_on_one_input_only_is_invalid() -> None:
    a = one_op("MatMul", [(32, 512), (512, 64)], [lay("layout2", "None", "tp"), lay("layout2", "None", "tp")])
    assert not a.valid
    assert a.output_layout is None
    assert any("reduce dimension" in p and "tp" in p and "same device axes" in p for p in a.problems)


def test_reduce_dim_split_over_different_axes_is_invalid() -> None:
    a = one_op("MatMul", [(32, 512), (512, 64)], [lay("layout", "None", "sp"), lay("layout", "dp", "None")])
    assert not a.valid
    assert any("sp" in p and "dp" in p and "reduce dimension" in p for p in a.problems)


def test_reduce_dim_same_axes_other_order_is_invalid() -> None:
    a = one_op(
        "MatMul",
        [(32, 512), (512, 64)],
        [lay("layout", "mp", ("sp", "dp")), lay("layout", ("dp", "sp"), "None")],
    )
    assert not a.valid
    assert any("different order" in p for p in a.problems)


def test_axis_splitting_rows_and_columns_is_invalid() -> None:
    a = one_op("MatMul", [(32, 64), (64, 16)], [lay("layout", "dp", "None"), lay("layout", "None", "dp")])
    assert not a.valid
    assert any("split twice" in p for p in a.problems)


def test_unsplit_reduce_dim_needs_no_allreduce() -> None:
    a = one_op("MatMul", [(32, 64), (64, 16)], [lay("layout", "dp", "None"), lay("layout", "None", "mp")])
    assert a.valid
    assert a.output_layout is not None and a.output_layout.entries == ("dp", "mp")
    assert a.communications == []


def test_inputs_on_different_device_matrices_are_invalid() -> None:
    a = one_op("MatMul", [(32, 512), (512, 64)], [lay("layout", "None", "mp"), lay("layout2", "tp", "None")])
    assert not a.valid
    assert any("same device matrix" in p for p in a.problems)


def test_layout_not_covering_device_num_is_invalid() -> None:
    a = one_op(
        "MatMul",
        [(32, 512), (512, 64)],
        [lay("half", "None", "tp"), lay("half", "tp", "None")],
        layouts={"half": LayoutSpec((4,), ("tp",))},
    )
    assert not a.valid
    assert any("spans 4" in p for p in a.problems)


def test_split_must_divide_dimension() -> None:
    a = one_op("MatMul", [(30, 512), (512, 64)], [lay("layout2", "tp", "None"), lay("layout2", "None", "None")])
    assert not a.valid
    assert any("not divisible" in p for p in a.problems)


def test_mixed_layout_and_tuple_strategies_are_invalid() -> None:
    a = one_op("MatMul", [(32, 512), (512, 64)], [lay("layout2", "tp", "None"), split(1, 1)])
    assert not a.valid
    assert any("mixes" in p for p in a.problems)


def test_transpose_a_and_b_with_layouts() -> None:
    # x stored transposed (K, M), w transposed (N, K): same maths as seed 004's matmul1
    a = one_op(
        "MatMul",
        [(784, 32), (512, 784)],
        [lay("layout", ("sp", "dp"), "mp"), lay("layout", "None", ("sp", "dp"))],
        transpose_a=True,
        transpose_b=True,
    )
    assert a.valid, a.problems
    assert a.output_shape == (32, 512)
    assert a.output_layout is not None and a.output_layout.entries == ("mp", "None")
    assert a.communications[0].axes == ("sp", "dp")
    assert a.communications[0].groups == [[0, 2, 4, 6], [1, 3, 5, 7]]


def test_transpose_flag_changes_which_dim_is_reduced() -> None:
    # without transpose_b, w (512, 784) has K=512 != 784
    a = one_op("MatMul", [(32, 784), (512, 784)], None)
    assert not a.valid
    assert any("reduce dimensions do not match" in p for p in a.problems)
    b = one_op("MatMul", [(32, 784), (512, 784)], None, transpose_b=True)
    assert b.valid and b.output_shape == (32, 512)


def test_transpose_tuple_strategy_maps_like_mindspore() -> None:
    x, w = strategy_layouts("MatMul", [(4, 2), (1, 2)], 8, transpose_b=True)
    assert x.layout.device_matrix == (4, 2, 1)
    assert x.entries == ("d0", "d1")
    assert w.entries == ("d2", "d1")  # (N, K): MindSpore swaps w's last two map entries
    xt, wt = strategy_layouts("MatMul", [(2, 4), (2, 1)], 8, transpose_a=True)
    assert xt.layout.device_matrix == (4, 2, 1)  # device matrix is always (M, K, N)
    assert xt.entries == ("d1", "d0") and wt.entries == ("d1", "d2")


def test_matmul_needs_two_d_inputs() -> None:
    a = one_op("MatMul", [(4, 32, 64), (64, 16)], None)
    assert not a.valid
    assert any("BatchMatMul" in p for p in a.problems)


# ---------------------------------------------------------------------------------------------
# BatchMatMul
# ---------------------------------------------------------------------------------------------
def test_batchmatmul_example_broadcasts_weight_over_batch() -> None:
    a = analyze_design(design_from_dict(example("dp_sp_mp_2x2x2")))[0]
    assert a.valid
    assert a.output_shape == (8, 128, 1024)
    assert a.output_layout is not None and a.output_layout.entries == ("dp", "sp", "None")
    (reduce,) = a.communications
    assert reduce.axes == ("mp",)
    assert reduce.groups == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert reduce.bytes_per_rank == 4 * 64 * 1024 * 2  # float16 propagated from the first input
    assert a.output_dtype == "float16"


def test_batchmatmul_batch_dims_broadcast_numpy_style() -> None:
    a = one_op(
        "BatchMatMul",
        [(4, 1, 8, 16), (2, 16, 32)],
        [lay("layout", "dp", "None", "None", "None"), lay("layout", "mp", "None", "None")],
    )
    assert a.valid, a.problems
    assert a.output_shape == (4, 2, 8, 32)
    assert a.output_layout is not None and a.output_layout.entries == ("dp", "mp", "None", "None")
    assert a.communications == []
    assert any("broadcast" in n for n in a.notes)


def test_batchmatmul_broadcast_dim_must_be_unsplit() -> None:
    a = one_op(
        "BatchMatMul",
        [(4, 1, 8, 16), (2, 16, 32)],
        [lay("layout", "dp", "sp", "None", "None"), lay("layout", "mp", "None", "None")],
    )
    assert not a.valid
    assert any("size 1" in p and "broadcast" in p for p in a.problems)


def test_batchmatmul_matching_batch_dims_must_split_alike() -> None:
    a = one_op(
        "BatchMatMul",
        [(4, 8, 16), (4, 16, 32)],
        [lay("layout", "dp", "None", "mp"), lay("layout", "None", "mp", "None")],
    )
    assert not a.valid
    assert any("batch dimension 0" in p for p in a.problems)


def test_batchmatmul_incompatible_batch_shapes() -> None:
    a = one_op("BatchMatMul", [(4, 8, 16), (3, 16, 32)], None)
    assert not a.valid and a.output_shape is None
    assert any("do not broadcast" in p for p in a.problems)


def test_batchmatmul_tuple_strategy_device_matrix() -> None:
    x, w = strategy_layouts("BatchMatMul", [(2, 1, 4), (2, 4, 1)], 8)
    assert x.layout.device_matrix == (2, 1, 4, 1)
    assert x.entries == ("d0", "d1", "d2") and w.entries == ("d0", "d2", "d3")
    # w without batch dims (MindSpore: the longer strategy gives the batch part)
    x2, w2 = strategy_layouts("BatchMatMul", [(2, 2, 2), (2, 1)], 8)
    assert x2.layout.device_matrix == (2, 2, 2, 1) and w2.entries == ("d2", "d3")


def test_batchmatmul_tuple_broadcast_with_shapes() -> None:
    a = one_op("BatchMatMul", [(4, 1, 8, 16), (2, 16, 32)], [split(2, 1, 1, 1), split(2, 1, 1)])
    assert a.valid, a.problems
    assert a.input_layouts[0] is not None and a.input_layouts[0].layout.device_matrix == (2, 2, 2, 1, 1, 1)
    assert a.input_layouts[0].entries == ("d0", "None", "d2", "d3")  # the broadcast batch dim is 'None'
    assert a.output_layout is not None and a.output_layout.split == (2, 2, 1, 1)
    bad = one_op("BatchMatMul", [(4, 1, 8, 16), (2, 16, 32)], [split(2, 2, 1, 1), split(2, 1, 1)])
    assert not bad.valid and any("size 1" in p for p in bad.problems)


# ---------------------------------------------------------------------------------------------
# elementwise and unary
# ---------------------------------------------------------------------------------------------
def test_elementwise_matching_dims_split_identically() -> None:
    ok = one_op("Add", [(8, 16), (16,)], [lay("layout", "dp", "mp"), lay("layout", "mp")])
    assert ok.valid, ok.problems
    assert ok.output_shape == (8, 16)
    assert ok.output_layout is not None and ok.output_layout.entries == ("dp", "mp")
    assert ok.communications == []
    bad = one_op("Mul", [(8, 16), (16,)], [lay("layout", "dp", "mp"), lay("layout", "None")])
    assert not bad.valid
    assert any("split identically" in p for p in bad.problems)


def test_elementwise_broadcast_dim_must_be_unsplit() -> None:
    a = one_op("Sub", [(8, 16), (1, 16)], [lay("layout", "dp", "mp"), lay("layout", "dp", "mp")])
    assert not a.valid
    assert any("size 1" in p and "broadcast" in p for p in a.problems)
    ok = one_op("Sub", [(8, 16), (1, 16)], [lay("layout", "dp", "mp"), lay("layout", "None", "mp")])
    assert ok.valid and ok.output_layout is not None and ok.output_layout.entries == ("dp", "mp")


def test_elementwise_output_takes_split_from_non_broadcast_inputs() -> None:
    a = one_op("Maximum", [(8, 1), (1, 16)], [lay("layout", "dp", "None"), lay("layout", "None", "mp")])
    assert a.valid
    assert a.output_shape == (8, 16)
    assert a.output_layout is not None and a.output_layout.entries == ("dp", "mp")
    clash = one_op("Minimum", [(8, 1), (1, 16)], [lay("layout", "dp", "None"), lay("layout", "None", "dp")])
    assert not clash.valid and any("split twice" in p for p in clash.problems)


def test_elementwise_shapes_must_broadcast() -> None:
    a = one_op("RealDiv", [(8, 16), (8,)], None)
    assert not a.valid and a.output_shape is None
    assert any("do not broadcast" in p for p in a.problems)


def test_elementwise_tuple_strategies() -> None:
    a = one_op("Add", [(8, 16), (16,)], [split(2, 4), split(4)])
    assert a.valid
    assert a.input_layouts[0] is not None and a.input_layouts[0].layout.device_matrix == (2, 4)
    assert a.input_layouts[1] is not None and a.input_layouts[1].entries == ("d1",)
    b = one_op("Add", [(8, 16), (1, 16)], [split(2, 4), split(1, 4)])
    assert b.valid and b.input_layouts[1] is not None and b.input_layouts[1].entries == ("None", "d1")
    rep = one_op("Add", [(8, 16), (8, 16)], [split(2, 2), split(2, 2)])
    assert rep.input_layouts[0] is not None
    assert rep.input_layouts[0].layout.alias_name == ("rep", "d0", "d1")
    assert rep.input_layouts[0].layout.device_matrix == (2, 2, 2)
    mismatch = one_op("Add", [(8, 16), (8, 16)], [split(2, 4), split(2, 2)])
    assert not mismatch.valid and any("same number of ways" in p for p in mismatch.problems)


def test_unary_tuple_strategy_and_not_dividing_device_num() -> None:
    a = one_op("GeLU", [(32, 512)], [split(4, 1)])
    assert a.valid and a.output_layout is not None and a.output_layout.split == (4, 1)
    bad = one_op("Tanh", [(30, 512)], [split(3, 1)])
    assert not bad.valid
    assert any("does not divide" in p for p in bad.problems)


@pytest.mark.parametrize("op_type", ["ReLU", "GeLU", "SiLU", "Sigmoid", "Tanh", "Exp", "Neg", "Cast"])
def test_every_unary_op_keeps_shape_and_layout(op_type: str) -> None:
    a = one_op(op_type, [(8, 4)], [lay("layout", ("dp", "sp"), "mp")], dtype="bfloat16")
    assert a.valid
    assert a.output_shape == (8, 4) and a.output_dtype == "bfloat16"
    assert a.output_layout is not None and a.output_layout.entries == (("dp", "sp"), "mp")


# ---------------------------------------------------------------------------------------------
# tuple strategy conversion (MindSpore is the oracle for the tensor maps)
# ---------------------------------------------------------------------------------------------
def test_tuple_matmul_conversion_matches_mindspore() -> None:
    ms_layout = pytest.importorskip("mindspore.parallel").Layout
    x, w = strategy_layouts("MatMul", [(2, 4), (4, 1)], 8)
    assert x.layout.device_matrix == (2, 4, 1)  # rep = 8 / 8 = 1 is left out, like MindSpore
    assert x.layout.alias_name == ("d0", "d1", "d2")
    assert x.tensor_map == (2, 1) and w.tensor_map == (1, 0)  # MindSpore's MatMul maps for [a, b, c]
    oracle = ms_layout((2, 4, 1), ("d0", "d1", "d2"))
    assert x.to_dict() == oracle("d0", "d1").to_dict()
    assert w.to_dict() == oracle("d1", "d2").to_dict()


def test_tuple_matmul_repeated_axis_first() -> None:
    x, w = strategy_layouts("MatMul", [(2, 1), (1, 2)], 8)
    assert x.layout.device_matrix == (2, 2, 1, 2)
    assert x.layout.alias_name == ("rep", "d0", "d1", "d2")
    assert x.replica_axes == ("rep", "d2") and "rep" in w.replica_axes


def test_tuple_strategy_product_must_divide_device_num() -> None:
    with pytest.raises(LayoutError, match="does not divide"):
        strategy_layouts("MatMul", [(3, 1), (1, 1)], 8)
    with pytest.raises(LayoutError, match="does not divide"):
        strategy_layouts("MatMul", [(2, 4), (4, 2)], 8)  # device matrix 2*4*2 = 16 > 8
    with pytest.raises(LayoutError, match="reduce dimension"):
        strategy_layouts("MatMul", [(2, 4), (2, 1)], 8)
    with pytest.raises(LayoutError, match="unsupported"):
        strategy_layouts("Conv2D", [(1, 1)], 8)
    a = one_op("MatMul", [(32, 512), (512, 64)], [split(2, 4), split(4, 2)])
    assert not a.valid and any("does not divide" in p for p in a.problems)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([1, 2, 4, 8, 16]),
    st.integers(0, 4),
    st.integers(0, 4),
    st.integers(0, 4),
    st.booleans(),
    st.booleans(),
)
def test_tuple_matmul_conversion_property(n: int, ea: int, eb: int, ec: int, ta: bool, tb: bool) -> None:
    a, b, c = 2**ea, 2**eb, 2**ec
    sx = (b, a) if ta else (a, b)
    sw = (c, b) if tb else (b, c)
    if n % (a * b * c):
        with pytest.raises(LayoutError):
            strategy_layouts("MatMul", [sx, sw], n, ta, tb)
        return
    x, w = strategy_layouts("MatMul", [sx, sw], n, ta, tb)
    assert x.split == sx and w.split == sw
    assert x.layout == w.layout
    assert math.prod(x.layout.device_matrix) == n
    assert ("rep" in x.layout.alias_name) == (n > a * b * c)


# ---------------------------------------------------------------------------------------------
# rank groups and redistribution
# ---------------------------------------------------------------------------------------------
def test_rank_groups_respect_rank_list() -> None:
    plain = Layout((2, 2), ("a", "b"))
    renamed = Layout((2, 2), ("a", "b"), rank_list=[0, 2, 1, 3])
    assert rank_groups(plain, ["b"]) == [[0, 1], [2, 3]]
    assert rank_groups(renamed, ["b"]) == [[0, 2], [1, 3]]
    assert rank_groups(plain, []) == [[0], [1], [2], [3]]
    assert rank_groups(plain, ["a", "b"]) == [[0, 1, 2, 3]]


def test_rank_groups_interleaved_axis_stays_on_one_card() -> None:
    layout = Layout((4, 2), ("dp", "interleaved_parallel"))
    assert rank_groups(layout, []) == [[0], [1], [2], [3]]
    assert rank_groups(layout, ["dp"]) == [[0, 1, 2, 3]]


def test_allreduce_groups_follow_rank_list() -> None:
    spec = LayoutSpec((2, 4), ("dp", "tp"), rank_list=(7, 6, 5, 4, 3, 2, 1, 0))
    a = one_op("MatMul", [(8, 64), (64, 16)], [lay("r", "dp", "tp"), lay("r", "tp", "None")], layouts={"r": spec})
    assert a.valid
    assert a.communications[0].groups == [[0, 1, 2, 3], [4, 5, 6, 7]]
    spec2 = LayoutSpec((2, 4), ("dp", "tp"), rank_list=(0, 2, 4, 6, 1, 3, 5, 7))
    b = one_op("MatMul", [(8, 64), (64, 16)], [lay("r", "dp", "tp"), lay("r", "tp", "None")], layouts={"r": spec2})
    assert b.communications[0].groups == [[0, 2, 4, 6], [1, 3, 5, 7]]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_rank_groups_partition_ranks(sizes: list[int], data: st.DataObject) -> None:
    aliases = tuple(f"a{i}" for i in range(len(sizes)))
    n = math.prod(sizes)
    perm = data.draw(st.permutations(range(n)))
    layout = Layout(tuple(sizes), aliases, rank_list=list(perm))
    axes = data.draw(st.lists(st.sampled_from(aliases), unique=True))
    groups = rank_groups(layout, axes)
    assert sorted(r for g in groups for r in g) == list(range(n))
    assert {len(g) for g in groups} == {math.prod(layout.axis_size(a) for a in axes)}


def test_tensor_stored_differently_needs_redistribution() -> None:
    design = Design(
        device_num=8,
        layouts={"layout": L222},
        tensors={
            "x": TensorSpec((8, 16), "float32", lay("layout", "dp", "mp")),
            "b": TensorSpec((8, 16), "float32", lay("layout", "dp", "None")),
        },
        operators=(
            OperatorSpec("gather", "ReLU", ("x",), (lay("layout", "dp", "None"),)),
            OperatorSpec("same", "ReLU", ("b",), (lay("layout", "dp", "None"),)),
            OperatorSpec("slice", "ReLU", ("b",), (lay("layout", "dp", "mp"),)),
        ),
    )
    gather, same, sliced = analyze_design(design)
    (redist,) = gather.communications
    assert redist.kind == "Redistribution"
    assert redist.axes == ("mp",)
    assert redist.groups == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert redist.bytes_per_rank == 4 * 8 * 4  # holds (4, 8), needs (4, 16)
    assert "Tensor x" in redist.reason and "AllGather over mp" in redist.reason
    assert same.communications == []
    (local,) = sliced.communications
    assert local.bytes_per_rank == 0 and local.groups == []


def test_tensor_with_tuple_split_is_compared_by_placement() -> None:
    design = Design(
        device_num=8,
        layouts={"layout2": TP8},
        tensors={"x": TensorSpec((32, 16), "float32", split(8, 1))},
        operators=(OperatorSpec("r", "ReLU", ("x",), (lay("layout2", "tp", "None"),)),),
    )
    assert analyze_design(design)[0].communications == []  # (8, 1) == ('tp', 'None') on 8 ranks


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_redistribution_bytes_bounds(data: st.DataObject) -> None:
    layout = Layout((2, 2, 2), ("dp", "sp", "mp"))
    entry = st.sampled_from(["None", "dp", "sp", "mp", ("sp", "dp"), ("mp", "sp")])

    def draw_layout() -> Any:
        while True:
            e0, e1 = data.draw(entry), data.draw(entry)
            try:
                return layout(e0, e1)
            except LayoutError:
                continue

    a, b = draw_layout(), draw_layout()
    shape = (8, 8)
    same = redistribution_bytes(shape, a, a)
    assert same == (0, False)
    result = redistribution_bytes(shape, a, b)
    assert result is not None
    nbytes, differs = result
    need = math.prod(s // p for s, p in zip(shape, b.split, strict=True)) * 4
    assert 0 <= nbytes <= need
    assert differs == (a.split != b.split or any(a.dim_axes(d) != b.dim_axes(d) for d in range(2)))


# ---------------------------------------------------------------------------------------------
# references, defaults, problems instead of exceptions
# ---------------------------------------------------------------------------------------------
def test_unknown_and_invalid_inputs_are_problems() -> None:
    design = Design(
        device_num=8,
        layouts={"layout2": TP8},
        tensors={"x": TensorSpec((32, 512)), "w": TensorSpec((256, 64))},
        operators=(
            OperatorSpec("bad", "MatMul", ("x", "w")),
            OperatorSpec("after", "ReLU", ("bad",)),
            OperatorSpec("ghost", "ReLU", ("nowhere",)),
        ),
    )
    bad, after, ghost = analyze_design(design)
    assert not bad.valid and bad.output_shape is None
    assert any("bad is invalid" in p for p in after.problems)
    assert any("'nowhere' is not a tensor" in p for p in ghost.problems)
    missing = analyze_operator(design, "nope")
    assert not missing.valid and "no operator called" in missing.problems[0]


def test_default_strategy_replicated_when_not_divisible() -> None:
    a = one_op("MatMul", [(30, 64), (64, 16)], None)
    assert a.valid
    assert any("replicated" in n for n in a.notes)
    assert a.input_layouts[0] is not None and a.input_layouts[0].split == (1, 1)
    assert a.communications == []
    dp = one_op("Add", [(16, 4), (4,)], None)
    assert dp.valid and dp.output_layout is not None and dp.output_layout.split == (8, 1)


def test_wrong_strategy_count_and_unknown_layout() -> None:
    a = one_op("Add", [(8, 16), (16,)], [split(2, 4)])
    assert not a.valid and any("one strategy per input" in p for p in a.problems)
    b = one_op("ReLU", [(8, 16)], [lay("missing", "None", "None")])
    assert not b.valid and any("missing" in p for p in b.problems)
    c = one_op("ReLU", [(8, 16)], [lay("layout", "dp")])
    assert not c.valid and any("dimensions" in p for p in c.problems)


# ---------------------------------------------------------------------------------------------
# never raise on a design the loader accepts
# ---------------------------------------------------------------------------------------------
EXAMPLE_DICTS = [json.loads(p.read_text()) for p in sorted(EXAMPLES.glob("*.json"))]
ALIASES = ["dp", "sp", "mp", "tp", "None", "interleaved_parallel", "ghost"]
entry_st = st.one_of(st.sampled_from(ALIASES), st.lists(st.sampled_from(ALIASES), min_size=1, max_size=3))
split_st = st.lists(st.integers(1, 16), min_size=0, max_size=4)


def _mutate(design: dict[str, Any], data: st.DataObject) -> None:
    tensors = design.setdefault("tensors", {})
    ops = design.setdefault("operators", [])
    names = [*tensors, *(o["name"] for o in ops), "ghost"]
    choice = data.draw(st.integers(0, 9))
    if choice == 0 and tensors:
        t = tensors[data.draw(st.sampled_from(sorted(tensors)))]
        t["shape"] = data.draw(st.lists(st.sampled_from([1, 2, 3, 4, 8, 16, 32, 784]), max_size=4))
    elif choice == 1 and tensors:
        t = tensors[data.draw(st.sampled_from(sorted(tensors)))]
        t.pop("split", None)
        t["layout"] = data.draw(st.sampled_from([*design.get("layouts", {}), "nolayout"]))
        t["map"] = data.draw(st.lists(entry_st, max_size=4))
    elif choice == 2 and tensors:
        t = tensors[data.draw(st.sampled_from(sorted(tensors)))]
        t.pop("layout", None)
        t.pop("map", None)
        if data.draw(st.booleans()):
            t["split"] = data.draw(split_st)
        t["dtype"] = data.draw(st.sampled_from(["float32", "float16", "int8", "bool"]))
    elif choice == 3 and ops:
        op = data.draw(st.sampled_from(ops))
        layouts = [*design.get("layouts", {}), "nolayout"]
        op["strategy"] = [
            data.draw(
                st.one_of(
                    split_st,
                    st.fixed_dictionaries({"layout": st.sampled_from(layouts), "map": st.lists(entry_st, max_size=4)}),
                )
            )
            for _ in op["inputs"]
        ]
    elif choice == 4 and ops:
        data.draw(st.sampled_from(ops)).pop("strategy", None)
    elif choice == 5 and ops:
        op = data.draw(st.sampled_from(ops))
        op["type"] = data.draw(st.sampled_from([t for t, n in OP_ARITY.items() if n == len(op["inputs"])]))
    elif choice == 6 and ops:
        op = data.draw(st.sampled_from(ops))
        op["inputs"] = [data.draw(st.sampled_from(names)) for _ in op["inputs"]]
    elif choice == 7 and ops:
        op = data.draw(st.sampled_from(ops))
        op[data.draw(st.sampled_from(["transpose_a", "transpose_b"]))] = data.draw(st.booleans())
    elif choice == 8:
        design["device_num"] = data.draw(st.sampled_from([1, 2, 4, 6, 8, 16, 128]))
    elif choice == 9 and design.get("layouts"):
        spec = design["layouts"][data.draw(st.sampled_from(sorted(design["layouts"])))]
        spec["device_matrix"] = [data.draw(st.sampled_from([1, 2, 3, 4])) for _ in spec["device_matrix"]]
        if data.draw(st.booleans()):
            n = math.prod(spec["device_matrix"])
            spec["rank_list"] = list(data.draw(st.permutations(range(n))))
        else:
            spec.pop("rank_list", None)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(EXAMPLE_DICTS), st.integers(1, 6), st.data())
def test_analyze_never_raises_on_mutated_examples(base: dict[str, Any], steps: int, data: st.DataObject) -> None:
    raw = copy.deepcopy(base)
    for _ in range(steps):
        _mutate(raw, data)
    try:
        design = design_from_dict(raw, strict=False)
    except DesignError:
        return
    analyses = analyze_design(design)
    assert [a.name for a in analyses] == [o.name for o in design.operators]
    for a in analyses:
        assert not any("internal error" in p for p in a.problems), a.problems
        assert len(a.input_shapes) == len(a.input_names) == len(a.input_layouts)
        assert a.valid == (a.problems == [])
        for c in a.communications:
            assert isinstance(c, Communication)
            assert c.kind in ("AllReduce", "ReduceScatter", "AllGather", "Redistribution")
            assert c.bytes_per_rank >= 0 and c.reason
        if a.valid:
            assert a.output_shape is not None and a.output_layout is not None
            a.output_layout.check_shape(a.output_shape)
            for shape, tl in zip(a.input_shapes, a.input_layouts, strict=True):
                assert tl is not None
                tl.check_shape(shape)
        if design.operators:
            first = design.operators[0].name
            assert analyze_operator(design, first) == analyses[0]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([1, 2, 4, 8]), min_size=0, max_size=3),
    st.lists(st.sampled_from([1, 2, 4, 8]), min_size=0, max_size=3),
    st.data(),
)
def test_elementwise_validator_property(sa: list[int], sb: list[int], data: st.DataObject) -> None:
    ka = data.draw(st.lists(st.sampled_from([1, 2, 4]), min_size=len(sa), max_size=len(sa)))
    kb = data.draw(st.lists(st.sampled_from([1, 2, 4]), min_size=len(sb), max_size=len(sb)))
    a = one_op("Add", [tuple(sa), tuple(sb)], [split(*ka), split(*kb)])
    try:
        expected = np.broadcast_shapes(tuple(sa), tuple(sb))
    except ValueError:
        assert a.output_shape is None and not a.valid
        return
    assert a.output_shape == tuple(expected)
    if a.valid:
        assert a.output_layout is not None
        for tl, k in zip(a.input_layouts, (ka, kb), strict=True):
            assert tl is not None and tl.split == tuple(k)
        for d in range(len(expected)):
            parts = [
                k[j]
                for shape, k in ((sa, ka), (sb, kb))
                if (j := d - (len(expected) - len(shape))) >= 0 and shape[j] == expected[d]
            ]
            assert a.output_layout.split[d] == parts[0]
            assert len(set(parts)) == 1


def test_seed_004_dense_matmul_out_strategy_is_a_reduce_scatter() -> None:
    """DenseMatMulNet's out_strategy layout(("mp","sp","dp"), "None") scatters the partial sums."""
    design = load_design(EXAMPLES / "seed004_dense_matmul.json")
    (analysis,) = analyze_design(design)
    assert analysis.valid, analysis.problems
    assert analysis.output_layout is not None
    assert analysis.output_layout.entries == (("mp", "sp", "dp"), "None")
    (comm,) = analysis.communications
    assert comm.kind == "ReduceScatter"
    assert comm.axes == ("sp", "dp")
    assert comm.groups == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert comm.bytes_per_rank == 4 * 8 * 4  # the (4, 8) float32 partial output slice each rank holds


def test_out_strategy_problems_are_reported() -> None:
    data = json.loads((EXAMPLES / "seed004_dense_matmul.json").read_text())
    data["tensors"]["x"]["shape"] = [2, 4]
    analysis = analyze_design(design_from_dict(data, strict=False))[0]
    assert any("out_strategy" in p and "not divisible" in p for p in analysis.problems)
    data["tensors"]["x"]["shape"] = [8, 4]
    data["operators"][0]["out_strategy"] = [{"layout": "layout", "map": ["None", "None"]}]
    analysis = analyze_design(design_from_dict(data, strict=False))[0]
    kinds = [c.kind for c in analysis.communications]
    assert kinds == ["AllReduce", "AllGather"], kinds
