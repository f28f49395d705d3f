"""Unit tests for the Layout Designer's pure logic: core/sharding/edits/, app/designer_view.py, app/code_view.py,
app/figures.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import code_view, figures
from app import designer_view as view
from core.sharding import edits
from core.sharding.design import (
    Design,
    LayoutSpec,
    OperatorSpec,
    RepeatSpec,
    Sharding,
    TensorSpec,
    design_from_dict,
    design_problems,
    design_to_dict,
    load_design,
)
from core.sharding.layout import NONE, Layout, LayoutError
from core.sharding.operators import analyze_design
from core.sharding.operators.base import OpAttrs
from core.units import format_bytes
from core.workspace import EXAMPLES_DIR, WorkspaceError


@pytest.fixture
def seed() -> Design:
    return edits.default_design()


def mlp() -> Design:
    design, problems = edits.load_from_folder(EXAMPLES_DIR, "seed004_mlp.json")
    assert design is not None, problems
    return design


# ---------------------------------------------------------------------------------------------
# defaults, chips, sortables
# ---------------------------------------------------------------------------------------------
def test_default_design_is_seed004_and_row0_is_on_ranks_0_4_2_6(seed: Design) -> None:
    assert seed.name == "seed004_dense_matmul"
    assert design_problems(seed) == []
    placement = view.tensor_placement(seed, "x")
    grid = placement.owner_grid(0, 1)
    assert view.row_ranks(grid, 0) == [0, 4, 2, 6]
    assert view.row_ranks(grid, 1) == [1, 5, 3, 7]


def test_chip_labels_round_trip() -> None:
    assert view.chip_label("mp", 2) == "mp·2"
    assert view.chip_alias("mp·2") == "mp"
    assert view.chip_alias("interleaved_parallel·4") == "interleaved_parallel"
    assert view.chip_alias("dp") == "dp"


def test_sortable_items_for_seed(seed: Design) -> None:
    spec = seed.layouts["layout"]
    items = view.sortable_items(spec, seed.tensors["x"].sharding.map, (2, 4))
    assert items == [
        {"header": view.FREE_HEADER, "items": []},
        {"header": "dim 0 (size 2)", "items": ["mp·2"]},
        {"header": "dim 1 (size 4)", "items": ["sp·2", "dp·2"]},
    ]
    w_items = view.sortable_items(spec, seed.tensors["w"].sharding.map, (4, 8))
    assert w_items[0]["items"] == ["mp·2"]
    assert w_items[2]["items"] == []


def test_map_from_sortables_keeps_order_and_empty_is_none() -> None:
    result = [
        {"header": view.FREE_HEADER, "items": ["sp·2"]},
        {"header": "dim 0 (size 2)", "items": []},
        {"header": "dim 1 (size 4)", "items": ["dp·2", "mp·2"]},
    ]
    assert view.map_from_sortables(result, 2) == (NONE, ("dp", "mp"))
    assert view.map_from_sortables(result[:2], 2) == (NONE, NONE)  # missing container = None


entries_strategy = st.lists(st.sampled_from(["dp", "sp", "mp", "tp"]), unique=True).flatmap(
    lambda axes: st.integers(1, 4).flatmap(
        lambda ndim: st.lists(st.integers(0, ndim - 1), min_size=len(axes), max_size=len(axes)).map(
            lambda dims: tuple(
                edits.axes_entry([a for a, d in zip(axes, dims, strict=True) if d == k]) for k in range(ndim)
            )
        )
    )
)


@given(entries_strategy)
def test_sortables_round_trip(entries: tuple) -> None:
    spec = LayoutSpec((2, 2, 2, 1), ("dp", "sp", "mp", "tp"))
    items = view.sortable_items(spec, entries, None)
    assert view.map_from_sortables(items, len(entries)) == entries
    used = [a for e in entries for a in edits.entry_axes(e)]
    assert sorted(view.chip_alias(c) for c in items[0]["items"]) == sorted(set(spec.alias_name) - set(used))


@given(entries_strategy, st.integers(0, 3), st.lists(st.sampled_from(["dp", "sp", "mp", "tp"]), max_size=4))
def test_assign_axes_uses_every_axis_at_most_once(entries: tuple, dim: int, axes: list[str]) -> None:
    dim = dim % len(entries)
    result = edits.assign_axes(entries, dim, axes)
    used = [a for e in result for a in edits.entry_axes(e)]
    assert len(used) == len(set(used))
    assert edits.entry_axes(result[dim]) == list(dict.fromkeys(axes))
    Layout((2, 2, 2, 1), ("dp", "sp", "mp", "tp"))(*result)  # MindSpore-valid map


# ---------------------------------------------------------------------------------------------
# parsers
# ---------------------------------------------------------------------------------------------
@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=8), st.sampled_from([", ", ",", " ", " x "]))
def test_parse_shape_round_trip(values: list[int], sep: str) -> None:
    assert edits.parse_shape(sep.join(str(v) for v in values)) == tuple(values)
    assert edits.parse_shape(f"({', '.join(str(v) for v in values)})") == tuple(values)


@given(st.text(max_size=30))
def test_parsers_raise_only_edit_error(text: str) -> None:
    for parser in (edits.parse_shape, edits.parse_split, edits.parse_rank_list):
        try:
            parser(text)
        except edits.EditError as exc:
            assert str(exc)


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "at least one"), ("2, a", "'a' is not a whole number"), ("0, 4", "too small"), ("1," * 9, "at most")],
)
def test_parse_shape_errors(text: str, message: str) -> None:
    with pytest.raises(edits.EditError, match=message):
        edits.parse_shape(text)


def test_parse_rank_list() -> None:
    assert edits.parse_rank_list("  ") is None
    assert edits.parse_rank_list("7, 6 5") == (7, 6, 5)
    assert edits.parse_rank_list("0") == (0,)
    with pytest.raises(edits.EditError, match="too small"):
        edits.parse_rank_list("-1, 2")


# ---------------------------------------------------------------------------------------------
# layout edits
# ---------------------------------------------------------------------------------------------
def messages(design: Design) -> str:
    return "\n".join(m.text for m in view.collect_problems(design))


def test_rename_axis_updates_every_map(seed: Design) -> None:
    renamed = edits.rename_axis(seed, "layout", "mp", "tp")
    assert renamed.layouts["layout"].alias_name == ("dp", "sp", "tp")
    assert renamed.tensors["x"].sharding.map == ("tp", ("sp", "dp"))
    assert renamed.operators[0].strategy[0].map == ("tp", ("sp", "dp"))
    assert design_problems(renamed) == []


@pytest.mark.parametrize(
    ("new", "message"),
    [("dp", "already used"), ("1x", "not allowed"), ("None", None), ("interleaved_parallel", "reserved")],
)
def test_rename_axis_refuses_bad_names(seed: Design, new: str, message: str | None) -> None:
    with pytest.raises((edits.EditError, LayoutError), match=message):
        edits.rename_axis(seed, "layout", "mp", new)


def test_duplicate_alias_is_a_live_problem(seed: Design) -> None:
    bad = seed.with_layout("layout", LayoutSpec((2, 2, 2), ("dp", "dp", "mp")))
    assert "'dp' is used for more than one axis" in messages(bad)


def test_add_remove_move_axis(seed: Design) -> None:
    added = edits.add_axis(seed, "layout", "pp", 1)
    assert added.layouts["layout"].alias_name == ("dp", "sp", "mp", "pp")
    assert design_problems(added) == []  # size 1 keeps the product
    moved = edits.move_axis(seed, "layout", "mp", -1)
    assert moved.layouts["layout"].alias_name == ("dp", "mp", "sp")
    assert edits.move_axis(seed, "layout", "dp", -1) == seed  # already outermost
    removed = edits.remove_axis(seed, "layout", "sp")
    assert removed.layouts["layout"].device_matrix == (2, 2)
    assert removed.tensors["x"].sharding.map == ("mp", "dp")
    assert removed.tensors["w"].sharding.map == ("dp", NONE)
    assert "spans 4 devices but the job has 8" in messages(removed)
    with pytest.raises(edits.EditError, match="already used"):
        edits.add_axis(seed, "layout", "dp", 2)
    single = edits.apply_preset(seed, "layout", "tp8")
    with pytest.raises(edits.EditError, match="at least one axis"):
        edits.remove_axis(single, "layout", "tp")


def test_product_mismatch_message(seed: Design) -> None:
    resized = edits.set_axis_size(seed, "layout", "mp", 3)
    text = messages(resized)
    assert "spans 12 devices but the job has 8" in text
    assert "change the axis sizes" in text
    assert "not divisible" in text  # x dim 0 of size 2 split 3 ways


def test_dim_not_divisible_message(seed: Design) -> None:
    design = edits.set_tensor_shape(seed, "x", (6, 4))
    design = edits.set_dim_axes(design, "x", 0, ["mp", "sp"])
    assert design.tensors["x"].sharding.map == (("mp", "sp"), "dp")
    assert "x dimension 0 has size 6, which is not divisible by its split 4" in messages(design)


def test_presets(seed: Design) -> None:
    big = edits.apply_preset(seed, "layout", "cluster128")
    assert big.device_num == 128
    assert big.layouts["layout"].device_matrix == (8, 4, 4)
    assert big.tensors["x"].sharding.map == ("mp", ("sp", "dp"))  # aliases kept
    assert "not divisible" in messages(big)  # (2, 4) cannot be split 4 x 32
    tp = edits.apply_preset(seed, "layout", "tp8")
    assert tp.layouts["layout"].alias_name == ("tp",)
    assert tp.tensors["x"].sharding.map == (NONE, NONE)
    dpmp = edits.apply_preset(seed, "layout", "dp_mp")
    assert dpmp.layouts["layout"].device_matrix == (2, 4)
    assert design_problems(dpmp) == []
    for key, preset in edits.PRESETS.items():
        assert edits.apply_preset(seed, "layout", key).device_num == preset.device_num


def test_rank_list(seed: Design) -> None:
    design = edits.set_rank_list(seed, "layout", "7,6,5,4,3,2,1,0")
    assert design.layouts["layout"].rank_list == (7, 6, 5, 4, 3, 2, 1, 0)
    grid = view.tensor_placement(design, "x").owner_grid(0, 1)
    assert view.row_ranks(grid) == [7, 3, 5, 1]
    assert "rank_list has 2 ranks" in messages(edits.set_rank_list(seed, "layout", "0, 1"))
    assert "appears more than once" in messages(edits.set_rank_list(seed, "layout", "0,0,1,2,3,4,5,6"))
    assert edits.set_rank_list(design, "layout", "").layouts["layout"].rank_list is None
    with pytest.raises(edits.EditError):
        edits.set_rank_list(seed, "layout", "0, one")


def test_interleaved_axis_is_last_and_virtual(seed: Design) -> None:
    design = edits.set_interleave(seed, "layout", 2)
    assert design.layouts["layout"].alias_name[-1] == "interleaved_parallel"
    assert design_problems(design) == []  # virtual axis adds no devices
    added = edits.add_axis(design, "layout", "pp", 1)
    assert added.layouts["layout"].alias_name == ("dp", "sp", "mp", "pp", "interleaved_parallel")
    design = edits.set_tensor_shape(design, "x", (4, 4))
    design = edits.set_dim_axes(design, "x", 0, ["mp", "interleaved_parallel"])
    placement = view.tensor_placement(design, "x")
    assert placement.pieces_per_rank == 2
    off = edits.set_interleave(design, "layout", None)
    assert "interleaved_parallel" not in off.layouts["layout"].alias_name
    assert off.tensors["x"].sharding.map[0] == "mp"
    misplaced = seed.with_layout("layout", LayoutSpec((2, 2, 2), ("interleaved_parallel", "sp", "mp")))
    assert "must be the last axis" in messages(misplaced)
    with_ranks = edits.set_interleave(edits.set_rank_list(seed, "layout", "0,1,2,3,4,5,6,7"), "layout", 2)
    assert "rank_list has 8 ranks but the device matrix (2, 2, 2, 2) has 16 positions" in messages(with_ranks)


def test_layouts_add_rename_remove() -> None:
    design = mlp()
    assert set(design.layouts) == {"layout", "layout2"}
    design, name = edits.add_layout(design)
    assert name == "layout3" and design.layouts[name].device_matrix == (8,)
    renamed = edits.rename_layout(design, "layout2", "tp_layout")
    assert renamed.tensors["fc2_weight"].sharding.layout == "tp_layout"
    assert renamed.operator("matmul2").strategy[0].layout == "tp_layout"
    with pytest.raises(edits.EditError, match="already exists"):
        edits.rename_layout(design, "layout2", "layout")
    with pytest.raises(edits.EditError, match="not allowed"):
        edits.rename_layout(design, "layout2", "my layout")
    removed = edits.remove_layout(design, "layout2")
    assert removed.tensors["fc2_weight"].sharding is None
    assert removed.operator("matmul2").strategy is None
    assert design_problems(removed) == []


def test_device_num(seed: Design) -> None:
    assert "spans 8 devices but the job has 16" in messages(edits.set_device_num(seed, 16))
    with pytest.raises(edits.EditError):
        edits.set_device_num(seed, 0)


# ---------------------------------------------------------------------------------------------
# tensor edits
# ---------------------------------------------------------------------------------------------
def test_tensor_add_rename_remove(seed: Design) -> None:
    design, name = edits.add_tensor(seed)
    assert name == "t" and design.tensors["t"].sharding == Sharding("layout", (NONE, NONE))
    assert any("not split at all" in m.text and m.severity == "warning" for m in view.collect_problems(design))
    renamed = edits.rename_tensor(seed, "x", "activation")
    assert "activation" in renamed.tensors and "x" not in renamed.tensors
    assert renamed.operators[0].inputs == ("activation", "w")
    with pytest.raises(edits.EditError, match="already a tensor"):
        edits.rename_tensor(seed, "x", "w")
    with pytest.raises(edits.EditError, match="already a tensor"):
        edits.rename_tensor(seed, "x", "matmul1")
    removed = edits.remove_tensor(seed, "x")
    assert "'x' is not a tensor or an earlier operator" in messages(removed)


def test_tensor_shape_pads_and_cuts_map(seed: Design) -> None:
    three = edits.set_tensor_shape(seed, "x", (2, 4, 8))
    assert three.tensors["x"].sharding.map == ("mp", ("sp", "dp"), NONE)
    one = edits.set_tensor_shape(seed, "x", (2,))
    assert one.tensors["x"].sharding.map == ("mp",)
    grid = view.tensor_placement(one, "x").owner_grid(0, 0)
    assert len(grid.owners) == 1


def test_tensor_layout_tuple_and_replicated(seed: Design) -> None:
    tup = edits.set_tensor_split(seed, "x", (2, 4))
    placement = view.tensor_placement(tup, "x")
    assert placement.split == (2, 4)
    assert view.row_ranks(placement.owner_grid(0, 1)) == [0, 1, 2, 3]
    bad = edits.set_tensor_split(seed, "x", (1, 3))
    assert "needs 3 devices, which does not divide the 8 devices" in messages(bad)
    with pytest.raises(LayoutError, match="does not divide 8"):
        view.tensor_placement(bad, "x")
    rep = edits.set_tensor_layout(seed, "x", None)
    groups = view.tensor_placement(rep, "x").replica_groups()
    assert groups == [list(range(8))]
    back = edits.set_tensor_layout(rep, "x", "layout")
    assert back.tensors["x"].sharding.map == (NONE, NONE)
    with pytest.raises(edits.EditError):
        edits.set_tensor_dtype(seed, "x", "complex64")
    assert edits.set_tensor_dtype(seed, "x", "bfloat16").tensors["x"].dtype == "bfloat16"


def test_unknown_layout_reference_is_reported(seed: Design) -> None:
    bad = seed.with_tensor("x", replace(seed.tensors["x"], sharding=Sharding("nope", ("mp", NONE))))
    assert "no layout called 'nope'" in messages(bad)


# ---------------------------------------------------------------------------------------------
# operators
# ---------------------------------------------------------------------------------------------
def test_operator_edits(seed: Design) -> None:
    design, name = edits.add_operator(seed, "ReLU", ["matmul1"])
    assert name == "relu" and design.operators[-1].inputs == ("matmul1",)
    with pytest.raises(edits.EditError, match="takes 2 input"):
        edits.add_operator(seed, "MatMul", ["x"])
    with pytest.raises(edits.EditError, match="not a tensor or an earlier operator"):
        edits.add_operator(seed, "ReLU", ["nothing"])
    with pytest.raises(edits.EditError, match="unsupported"):
        edits.add_operator(seed, "Conv2D", ["x"])
    design = edits.enable_operator_strategy(design, "relu", True)
    assert design.operator("relu").strategy == (Sharding(split=(1, 1)),)
    design = edits.set_operator_split_text(design, "relu", 0, "4,1")
    assert design.operator("relu").strategy == (Sharding(split=(4, 1)),)
    with pytest.raises(edits.EditError):
        edits.set_operator_split_text(design, "relu", 0, "four")
    design = edits.set_operator_input_mode(design, "relu", 0, "layout")
    assert design.operator("relu").strategy[0] == Sharding("layout", (NONE, NONE))
    design = edits.set_operator_dim_axes(design, "relu", 0, 0, ["dp", "sp"])
    assert design.operator("relu").strategy[0].map == (("dp", "sp"), NONE)
    design = edits.set_operator_input_mode(design, "relu", 0, "tuple")
    assert design.operator("relu").strategy[0] == Sharding(split=(4, 1))  # split counts kept
    assert edits.enable_operator_strategy(design, "relu", False).operator("relu").strategy is None
    assert edits.remove_operator(design, "relu").operators == seed.operators


def test_operator_map_and_inputs(seed: Design) -> None:
    design = edits.set_operator_map(seed, "matmul1", 1, (NONE, "mp"))
    assert design.operator("matmul1").strategy[1].map == (NONE, "mp")
    swapped = edits.set_operator_input(seed, "matmul1", 1, "x")
    assert swapped.operator("matmul1").inputs == ("x", "x")
    with pytest.raises(edits.EditError):
        edits.set_operator_input(seed, "matmul1", 0, "matmul1")  # not before itself
    flagged = edits.set_operator_transpose(seed, "matmul1", "transpose_b", True)
    assert flagged.operator("matmul1").transpose_b
    assert edits.input_shapes(seed, "matmul1") == [(8, 4), (4, 8)]
    assert edits.source_ndim(seed, "matmul1") == 2
    design, _ = edits.add_operator(seed, "Add", ["matmul1", "w"])
    assert edits.source_ndim(design, "add") == 2
    assert edits.source_ndim(design, "nothing") is None


def test_operator_problems_are_collected(seed: Design) -> None:
    fake = SimpleNamespace(name="matmul1", problems=["reduce dimension split differently: use the same axes"])
    assert "operator matmul1" in [m.where for m in view.collect_problems(seed, [fake])]


def test_real_operator_analysis(seed: Design) -> None:
    import core.sharding.operators as operators

    analyses = operators.analyze_design(seed)
    assert [a.name for a in analyses] == ["matmul1"]
    bad = edits.set_operator_map(seed, "matmul1", 1, ("dp", NONE))  # reduce dim split differently
    problems = view.collect_problems(bad, operators.analyze_design(bad))
    assert any(m.where == "operator matmul1" for m in problems)


# ---------------------------------------------------------------------------------------------
# random edit sequences never crash, and validation never raises
# ---------------------------------------------------------------------------------------------
EDITS = st.sampled_from(
    [
        lambda d: edits.add_axis(d, "layout", None, 2),
        lambda d: edits.remove_axis(d, "layout", d.layouts["layout"].alias_name[0]),
        lambda d: edits.move_axis(d, "layout", d.layouts["layout"].alias_name[-1], -1),
        lambda d: edits.set_axis_size(d, "layout", d.layouts["layout"].alias_name[0], 3),
        lambda d: edits.rename_axis(d, "layout", d.layouts["layout"].alias_name[0], "zz"),
        lambda d: edits.apply_preset(d, "layout", "cluster128"),
        lambda d: edits.apply_preset(d, "layout", "dp_mp"),
        lambda d: edits.set_interleave(d, "layout", 2),
        lambda d: edits.set_interleave(d, "layout", None),
        lambda d: edits.set_rank_list(d, "layout", "0,1,2"),
        lambda d: edits.set_tensor_shape(d, "x", (6, 4, 2)),
        lambda d: edits.set_tensor_shape(d, "x", (5,)),
        lambda d: edits.set_dim_axes(d, "x", 0, list(d.layouts["layout"].alias_name)),
        lambda d: edits.set_tensor_split(d, "x", (3, 1)),
        lambda d: edits.set_tensor_layout(d, "x", "layout"),
        lambda d: edits.set_device_num(d, 6),
        lambda d: edits.remove_tensor(d, "w"),
        lambda d: edits.add_operator(d, "Add", ["x", "x"])[0],
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(EDITS, max_size=8))
def test_random_edits_never_crash(steps: list) -> None:
    design = edits.default_design()
    for edit in steps:
        try:
            design = edit(design)
        except (edits.EditError, LayoutError, KeyError):
            continue
        view.collect_problems(design)
        for name in design.tensors:
            try:
                placement = view.tensor_placement(design, name)
            except LayoutError:
                continue
            grid = placement.owner_grid(0, 1 if len(placement.shape) > 1 else 0)
            ids = view.view_slice_ids(placement, grid, [0] * len(placement.shape))
            figures.tensor_grid_figure(grid, ids, "r", "c")
            figures.device_matrix_figure(
                view.device_grid(placement.tensor_layout.layout),
                view.position_slice_ids(placement),
                [""] * len(placement.positions),
            )


# ---------------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------------
def test_save_and_load_workspace(tmp_path: Path, seed: Design) -> None:
    folder = tmp_path / "designs"
    path = edits.save_to_folder(seed, folder, "mine")
    assert path == folder / "mine.json"
    assert edits.list_designs(folder) == ["mine.json"]
    loaded, problems = edits.load_from_folder(folder, "mine.json")
    assert problems == [] and loaded == seed
    with pytest.raises(WorkspaceError):
        edits.save_to_folder(seed, folder, "../escape")
    assert edits.load_from_folder(folder, "../x.json")[0] is None
    (folder / "bad.json").write_text('{"layouts": {"l": {"device_matrix": [2, "x"], "alias_name": ["a", "b"]}}}')
    design, problems = edits.load_from_folder(folder, "bad.json")
    assert design is None and any("$.layouts.l.device_matrix[1]" in p for p in problems)
    assert edits.list_designs(tmp_path / "missing") == []


def test_examples_all_load() -> None:
    names = edits.list_designs(EXAMPLES_DIR)
    assert "seed004_dense_matmul.json" in names
    for name in names:
        design, problems = edits.load_from_folder(EXAMPLES_DIR, name)
        assert design is not None, problems


# ---------------------------------------------------------------------------------------------
# previews data, figures and code
# ---------------------------------------------------------------------------------------------
def test_device_grid_flattens_outer_axes() -> None:
    grid = view.device_grid(Layout((8, 4, 4), ("dp", "sp", "mp")))
    assert len(grid.positions) == 32 and len(grid.positions[0]) == 4
    assert grid.row_labels[5] == "dp=1 sp=1"
    assert grid.col_labels == ["mp=0", "mp=1", "mp=2", "mp=3"]
    assert grid.row_title == "dp × sp"
    one = view.device_grid(Layout((8,), ("tp",)))
    assert one.ranks == [list(range(8))]
    renamed = view.device_grid(Layout((2, 2), ("a", "b"), [3, 2, 1, 0]))
    assert renamed.ranks == [[3, 2], [1, 0]]


def test_tensor_grid_figure_labels_and_highlight(seed: Design) -> None:
    placement = view.tensor_placement(seed, "x")
    grid = placement.owner_grid(0, 1)
    ids = view.view_slice_ids(placement, grid, [0, 0])
    assert ids == [[0, 1, 2, 3], [4, 5, 6, 7]]
    fig = figures.tensor_grid_figure(grid, ids, "dim 0", "dim 1", highlight_rank=4)
    texts = [a.text for a in fig.layout.annotations]
    assert texts[:4] == ["r0", "r4", "r2", "r6"]
    assert len(fig.layout.shapes) == 1  # rank 4 holds one block
    assert "ranks: 4" in fig.data[0].hovertext[0][1]
    # colours match between the block and the rank holding it in the device matrix
    slices = view.position_slice_ids(placement)
    assert slices[4] == ids[0][1]
    hover = [f"rank {r}" for r in range(8)]
    matrix = figures.device_matrix_figure(view.device_grid(placement.tensor_layout.layout), slices, hover, 4)
    (frame,) = matrix.layout.shapes  # rank 4 sits at row dp=1 sp=0, column mp=0
    assert (frame.x0, frame.y0) == (-0.5, 1.5)
    assert matrix.data[0].text[2][0] == "r4"


def test_replicated_blocks_list_all_ranks() -> None:
    design = mlp()
    placement = view.tensor_placement(design, "fc1_weight")  # (sp, dp) x None: replicated over mp
    grid = placement.owner_grid(0, 1)
    assert grid.owners[0][0] == [0, 1]
    fig = figures.tensor_grid_figure(grid, view.view_slice_ids(placement, grid, [0, 0]), "a", "b")
    assert fig.layout.annotations[0].text == "r0, r1"
    assert figures.rank_label(list(range(8))) == "r0, r1, r2, r3, … (+4)"


def test_comm_figure_colours_groups() -> None:
    grid = view.device_grid(Layout((2, 4), ("dp", "mp")))
    fig = figures.comm_figure(grid, [[0, 1, 2, 3], [4, 5, 6, 7]])
    z = fig.data[0].z
    assert z[0] == (0, 0, 0, 0) or list(z[0]) == [0, 0, 0, 0]
    assert list(z[1]) == [1, 1, 1, 1]


def test_code_view(seed: Design) -> None:
    code = code_view.tensor_code(seed, "x")
    assert 'layout = Layout((2, 2, 2), ("dp", "sp", "mp"))' in code
    assert 'x_strategy = layout("mp", ("sp", "dp"))' in code
    ops_code = code_view.operators_code(mlp())
    assert (
        'self.matmul2 = ops.MatMul(transpose_a=False, transpose_b=False).shard(in_strategy=(layout2("None", "tp"), '
        'layout2("tp", "None")))' in ops_code
    )
    assert "self.relu1 = ops.ReLU().shard(in_strategy=((4, 1),))" in ops_code
    assert "# matmul3: no strategy, MindSpore chooses one\nself.matmul3 = ops.MatMul(" in ops_code
    ranked = edits.set_rank_list(seed, "layout", "7,6,5,4,3,2,1,0")
    assert "rank_list=[7, 6, 5, 4, 3, 2, 1, 0]" in code_view.layout_code(ranked, "layout")
    info = code_view.tensor_map_dict(seed, seed.tensors["x"].sharding)
    assert info["tensor_map"] == (0, (1, 2))
    assert isinstance(code_view.tensor_map_dict(seed, Sharding(split=(2, 1))), str)
    assert "no layout called" in code_view.tensor_map_dict(seed, Sharding("zz", ("a",)))


def test_tensor_map_matches_mindspore(seed: Design) -> None:
    """MindSpore is the oracle: the dict we show is what mindspore.parallel.Layout computes."""
    ms_parallel = pytest.importorskip("mindspore.parallel")
    for tensor in ("x", "w"):
        sharding = seed.tensors[tensor].sharding
        ours = code_view.tensor_map_dict(seed, sharding)
        spec = seed.layouts["layout"]
        theirs = ms_parallel.Layout(spec.device_matrix, spec.alias_name)(*sharding.map).to_dict()
        assert tuple(theirs["tensor_map"]) == tuple(ours["tensor_map"])
        assert tuple(theirs["device_matrix"]) == tuple(ours["device_matrix"])


def test_format_bytes() -> None:
    assert format_bytes(32) == "32 B"
    assert format_bytes(2048) == "2.0 KiB"
    assert format_bytes(3 * 1024**3) == "3.0 GiB"
    assert format_bytes(5 * 1024**4) == "5.0 TiB"
    assert format_bytes(3 * 1024**5) == "3072.0 TiB"
    assert format_bytes(-2048) == "-2.0 KiB"
    assert format_bytes(512.0) == "512 B"


def test_crafted_designs_never_make_collect_problems_raise() -> None:
    design = Design(
        device_num=8,
        layouts={"l": LayoutSpec((2, 2), ("a", "a"))},
        tensors={
            "t": TensorSpec((3,), "float32", Sharding("l", ("a",))),
            "u": TensorSpec((4,), "float32", Sharding(split=(3,))),
        },
        operators=(OperatorSpec("op", "ReLU", ("missing",)),),
    )
    text = messages(design)
    assert "used for more than one axis" in text
    assert "'missing' is not a tensor" in text
    assert "needs 3 devices" in text


def test_operator_inputs_that_follow_a_tensor_follow_its_drag() -> None:
    """A drag in the Tensors tab reaches operators reading that tensor with its stored sharding."""
    design = edits.default_design()
    assert design.operators[0].strategy[0] == design.tensors["x"].sharding  # type: ignore[index]
    moved = edits.set_dim_axes(design, "x", 0, ["mp", "dp"])
    assert moved.tensors["x"].sharding.map == (("mp", "dp"), "sp")  # type: ignore[union-attr]
    assert moved.operators[0].strategy[0] == moved.tensors["x"].sharding  # type: ignore[index]
    assert moved.operators[0].strategy[1] == design.operators[0].strategy[1]  # type: ignore[index]


def test_an_operator_strategy_set_on_its_own_stays_put() -> None:
    design = edits.set_operator_dim_axes(edits.default_design(), "matmul1", 0, 0, ["dp"])
    own = design.operators[0].strategy[0]  # type: ignore[index]
    moved = edits.set_dim_axes(design, "x", 0, ["sp"])
    assert moved.operators[0].strategy[0] == own  # type: ignore[index]


# ---------------------------------------------------------------------------------------------
# issue 11: Transformer operators, their attributes and tensor roles in the editor
# ---------------------------------------------------------------------------------------------
def attention() -> Design:
    return edits.load_from_folder(EXAMPLES_DIR, "attention_block.json")[0]  # type: ignore[return-value]


def test_new_transpose_and_reshape_start_loadable() -> None:
    design = attention()
    design, name = edits.add_operator(design, "Transpose", ["q4"])
    assert design.operator(name).perm == (0, 1, 3, 2)  # the last two dims swapped
    design, name2 = edits.add_operator(design, "Reshape", ["q4"])
    assert design.operator(name2).shape == (8, 8, 4, 8)  # the input's shape, to edit afterwards
    assert design_from_dict(design_to_dict(design)) == design


def test_operator_attribute_edits_validate_what_is_typed() -> None:
    design = attention()
    design = edits.set_operator_perm(design, "qt", "0 2 3 1")
    assert design.operator("qt").perm == (0, 2, 3, 1)
    with pytest.raises(edits.EditError, match="not a permutation"):
        edits.set_operator_perm(design, "qt", "0, 0, 1")
    design = edits.set_operator_shape(design, "x2d", "8 x 256")
    assert design.operator("x2d").shape == (8, 256)
    with pytest.raises(edits.EditError, match="whole number"):
        edits.set_operator_shape(design, "x2d", "8, a")
    assert edits.set_operator_axis(design, "probs", 2).operator("probs").axis == 2
    with pytest.raises(edits.EditError, match="out of range"):
        edits.set_operator_axis(design, "probs", 9)
    assert edits.set_operator_eps(design, "attn_norm", 1e-5).operator("attn_norm").eps == 1e-5
    with pytest.raises(edits.EditError, match="small positive"):
        edits.set_operator_eps(design, "attn_norm", 0)


def test_tensor_role_edit() -> None:
    design = attention()
    design = edits.set_tensor_role(design, "embedding", None)
    assert design.tensors["embedding"].role is None and design.tensor_role("embedding") == "weight"
    with pytest.raises(edits.EditError, match="needs a float dtype"):
        edits.set_tensor_role(design, "tokens", "weight")
    with pytest.raises(edits.EditError, match="unknown role"):
        edits.set_tensor_role(design, "tokens", "label")


def test_source_ndim_follows_the_new_operator_types() -> None:
    design = attention()
    assert [edits.source_ndim(design, n) for n in ("embed", "x2d", "q4", "qt", "probs", "attn_norm")] == [
        3,
        2,
        4,
        4,
        4,
        3,
    ]


def test_renaming_the_carry_tensor_keeps_the_repeat_block() -> None:
    design = Design(
        tensors={"x": TensorSpec((4, 4)), "w": TensorSpec((4, 4))},
        operators=(OperatorSpec("mm", "MatMul", ("x", "w")),),
        repeat=RepeatSpec(3, "mm", "mm", "x"),
    )
    renamed = edits.rename_tensor(design, "x", "h")
    assert renamed.repeat is not None and renamed.repeat.carry == "h" and not design_problems(renamed)


def test_code_view_renders_softmax_axis_and_rmsnorm_eps() -> None:
    design = attention()
    assert "ops.Softmax(axis=-1).shard(" in code_view.operator_code(design.operator("probs"))
    norm = code_view.operator_code(design.operator("attn_norm"))
    assert "self.attn_norm_square = ops.Square().shard(" in norm and "+ 1e-06)" in norm  # composed, as train.py
    assert "RmsNorm" not in norm


def test_loss_and_repeat_edits(seed: Design) -> None:
    assert edits.set_loss(seed, "cross_entropy").loss == "cross_entropy"
    with pytest.raises(edits.EditError, match="unknown loss"):
        edits.set_loss(seed, "hinge")
    repeated = edits.set_repeat(seed, 4, "matmul1", "matmul1", "x")
    assert repeated.repeat == RepeatSpec(4, "matmul1", "matmul1", "x") and not design_problems(repeated)
    assert design_from_dict(design_to_dict(repeated)) == repeated
    dangling = edits.set_repeat(seed, 4, "matmul1", "gone", "x")  # stored as given, reported live with its path
    assert [m.where for m in view.collect_problems(dangling)] == ["$.repeat.last"]
    with pytest.raises(edits.EditError, match="out of range"):
        edits.set_repeat(seed, 0, "matmul1", "matmul1", "x")
    assert edits.set_repeat(repeated, None).repeat is None


@pytest.mark.parametrize("path", sorted(EXAMPLES_DIR.glob("*.json")), ids=lambda p: p.stem)
def test_operator_ranks_come_from_the_family_and_match_the_analysis(path: Path) -> None:
    """Issue 20: the editor asks each operator's family for its output rank; it agrees with the full analysis."""
    design = load_design(path)
    for analysis in analyze_design(design):
        if analysis.output_shape is not None:
            assert edits.source_ndim(design, analysis.name) == len(analysis.output_shape), analysis.name


def test_every_family_answers_the_rank_questions() -> None:
    from core.sharding.catalog import OP_TYPES
    from core.sharding.operators.registry import family_of

    for op_type in OP_TYPES:
        family = family_of(op_type)
        assert family is not None, op_type
        assert family.output_ndim(op_type, [3, 3], OpAttrs(shape=(2, 2, 2))) in (2, 3, 4), op_type
    assert family_of("MatMul").input_ndim("MatMul", 0) == 2
    assert family_of("ReLU").input_ndim("ReLU", 0) is None


def test_stale_indexes_and_unknown_presets_are_edit_errors(seed: Design) -> None:
    """Issue 20: edits say what is missing (the page no longer catches KeyError / IndexError)."""
    with pytest.raises(edits.EditError, match="matmul1 has no input 5: it has 2"):
        edits.set_operator_input(seed, "matmul1", 5, "x")
    with pytest.raises(edits.EditError, match="has no input 2"):
        edits.set_operator_strategy(seed, "matmul1", 2, None)
    with pytest.raises(edits.EditError, match="has no input -1"):
        edits.set_operator_input_mode(seed, "matmul1", -1, "tuple")
    with pytest.raises(edits.EditError, match="there is no preset called 'tp9'"):
        edits.apply_preset(seed, "layout", "tp9")
    with pytest.raises(edits.EditError, match="there is no operator called 'nope'"):
        edits.operator_of(seed, "nope")
