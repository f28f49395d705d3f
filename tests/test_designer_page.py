"""AppTest of the Layout Designer page: every editor path and every validation message, no browser.

Drops are simulated by patching `streamlit_sortables.sort_items` (the page calls it through the
module, so the patch is seen) to return the containers a user would have produced.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from streamlit.testing.v1 import AppTest

from app import designer_view as view
from app.design_state import DESIGN_KEY, VERSION_KEY
from app.designer.matrix import LAYOUT_SEL
from app.designer.operators import OP_SEL
from app.designer.tensors import TENSOR_SEL
from core.sharding import edits
from core.sharding.design import Design, LayoutSpec, OperatorSpec, Sharding, TensorSpec
from core.sharding.layout import NONE
from core.sharding.operators import analyze_design
from core.workspace import EXAMPLES_DIR

REPO_ROOT = Path(__file__).resolve().parent.parent
PAGE = str(REPO_ROOT / "pages" / "designer.py")


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path))
    return tmp_path


@pytest.fixture
def at(workspace: Path) -> AppTest:  # noqa: ARG001 - the page runs in the test's own workspace
    app = AppTest.from_file(PAGE, default_timeout=90)
    app.run()
    assert not app.exception, app.exception
    return app


def vkey(at: AppTest, *parts: object) -> str:
    return "designer:" + ":".join(str(p) for p in parts) + f"@{at.session_state['designer_version']}"


def design_of(at: AppTest) -> Design:
    return at.session_state[DESIGN_KEY]


def page_text(at: AppTest) -> str:
    parts: list[str] = []
    for kind in ("error", "warning", "success", "info", "caption", "markdown", "code"):
        parts.extend(str(e.value) for e in getattr(at, kind))
    return "\n".join(parts)


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    return at


def with_design(at: AppTest, design: Design) -> AppTest:
    at.session_state[DESIGN_KEY] = design
    at.session_state[VERSION_KEY] = at.session_state[VERSION_KEY] + 1
    return rerun(at)


@pytest.fixture
def drop() -> Iterator[Callable[[str, list[dict[str, Any]]], None]]:
    """drop(key, containers): the next sort_items call with this key returns `containers` (a user's drop)."""
    planned: dict[str, list[dict[str, Any]]] = {}

    def fake(items: list[dict[str, Any]], **kwargs: Any) -> list[dict[str, Any]]:
        return planned.get(kwargs.get("key"), items)

    with mock.patch("streamlit_sortables.sort_items", side_effect=fake):
        yield lambda key, containers: planned.__setitem__(key, containers)


# ---------------------------------------------------------------------------------------------
# first visit and previews
# ---------------------------------------------------------------------------------------------
def test_first_visit_loads_seed004_and_shows_row0_ranks(at: AppTest) -> None:
    design = design_of(at)
    assert design.name == "seed004_dense_matmul"
    text = page_text(at)
    assert "Row 0 of this view lies on ranks: 0, 4, 2, 6" in text
    assert "The design is consistent" in text
    assert 'x_strategy = layout("mp", ("sp", "dp"))' in text
    assert "tensor_map: (0, (1, 2))" in text
    assert not at.error


@pytest.mark.usefixtures("workspace")
def test_stale_session_value_is_replaced() -> None:
    app = AppTest.from_file(PAGE, default_timeout=90)
    app.session_state[DESIGN_KEY] = {"not": "a design"}
    rerun(app)
    assert isinstance(design_of(app), Design)


def test_highlight_rank_and_view_dims(at: AppTest) -> None:
    at.selectbox(key="designer_view:x:hl").set_value(4)
    rerun(at)
    at.selectbox(key="designer_view:x:row").set_value(1)
    rerun(at)
    # rows = dim 1 now: the view's row 0 is column block 0 of x -> ranks with sp=dp=0: 0 then 1 (mp)
    assert "Row 0 of this view lies on ranks: 0, 1" in page_text(at)


def test_three_d_tensor_has_block_sliders(at: AppTest) -> None:
    at.selectbox(key=TENSOR_SEL).set_value("x")
    at.text_input(key=vkey(at, "tensor_shape", "x")).input("8, 4, 6")
    rerun(at)
    design = design_of(at)
    assert design.tensors["x"].shape == (8, 4, 6)
    assert design.tensors["x"].sharding.map == ("mp", ("sp", "dp"), NONE)
    text = page_text(at)
    assert "dim 2 (6): not split" in text
    # split dim 2 over dp (dp leaves dim 1): a slider appears for it
    at.multiselect(key=f"designer:pick:x:dim2@{at.session_state['designer_version']}").set_value(["dp"])
    rerun(at)
    assert design_of(at).tensors["x"].sharding.map == ("mp", "sp", "dp")
    slider = at.slider(key="designer_view:x:fix2")
    slider.set_value(1)
    rerun(at)
    assert "Row 0 of this view lies on ranks: 4, 6" in page_text(at)


# ---------------------------------------------------------------------------------------------
# drag-and-pick and click path
# ---------------------------------------------------------------------------------------------
def test_drop_a_chip_changes_the_map_and_the_preview(at: AppTest, drop: Callable) -> None:
    drop(
        vkey(at, "dnd", "x", "layout"),
        [
            {"header": view.FREE_HEADER, "items": []},
            {"header": "dim 0 (size 8)", "items": ["dp·2"]},
            {"header": "dim 1 (size 4)", "items": ["mp·2", "sp·2"]},
        ],
    )
    rerun(at)
    assert design_of(at).tensors["x"].sharding.map == ("dp", ("mp", "sp"))
    assert "Row 0 of this view lies on ranks: 0, 2, 1, 3" in page_text(at)
    # a drop that makes the design invalid is kept and explained; the preview says why it is missing
    drop(
        vkey(at, "dnd", "x", "layout"),
        [
            {"header": view.FREE_HEADER, "items": []},
            {"header": "dim 0 (size 8)", "items": []},
            {"header": "dim 1 (size 4)", "items": ["mp·2", "sp·2", "dp·2"]},
        ],
    )
    rerun(at)
    assert design_of(at).tensors["x"].sharding.map == (NONE, ("mp", "sp", "dp"))
    text = page_text(at)
    assert "x dimension 1 has size 4, which is not divisible by its split 8" in text
    assert "No preview for x" in text


def test_drop_back_to_the_free_zone_unsplits(at: AppTest, drop: Callable) -> None:
    drop(
        vkey(at, "dnd", "x", "layout"),
        [
            {"header": view.FREE_HEADER, "items": ["sp·2", "dp·2"]},
            {"header": "dim 0", "items": ["mp·2"]},
            {"header": "dim 1", "items": []},
        ],
    )
    rerun(at)
    assert design_of(at).tensors["x"].sharding.map == ("mp", NONE)
    assert "Every slice is held by 4 ranks (replicated over dp, sp)" in page_text(at)


def test_click_path_sets_axes_in_selection_order(at: AppTest) -> None:
    at.multiselect(key=f"designer:pick:x:dim0@{at.session_state['designer_version']}").set_value(["dp", "mp"])
    rerun(at)
    assert design_of(at).tensors["x"].sharding.map == (("dp", "mp"), "sp")
    at.multiselect(key=f"designer:pick:x:dim1@{at.session_state['designer_version']}").set_value([])
    rerun(at)
    assert design_of(at).tensors["x"].sharding.map == (("dp", "mp"), NONE)


# ---------------------------------------------------------------------------------------------
# validation: every message, never a traceback
# ---------------------------------------------------------------------------------------------
def seed() -> Design:
    return edits.default_design()


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (
            lambda d: d.with_layout("layout", LayoutSpec((2, 2, 2), ("dp", "dp", "mp"))),
            "is used for more than one axis",
        ),
        (
            lambda d: edits.set_tensor_shape(d, "x", (8, 6)),
            "x dimension 1 has size 6, which is not divisible by its split 4",
        ),
        (lambda d: edits.set_axis_size(d, "layout", "mp", 3), "spans 12 devices but the job has 8"),
        (lambda d: edits.set_rank_list(d, "layout", "0, 1"), "rank_list has 2 ranks"),
        (lambda d: edits.set_rank_list(d, "layout", "0,0,1,2,3,4,5,6"), "rank 0 appears more than once"),
        (
            lambda d: d.with_layout("layout", LayoutSpec((2, 2, 2), ("interleaved_parallel", "sp", "mp"))),
            "must be the last axis",
        ),
        (
            lambda d: d.with_tensor("x", replace(d.tensors["x"], sharding=Sharding("gone", ("mp", NONE)))),
            "no layout called 'gone'",
        ),
        (lambda d: edits.set_tensor_split(d, "x", (3, 1)), "needs 3 devices, which does not divide the 8 devices"),
        (
            lambda d: replace(d, operators=(*d.operators, OperatorSpec("relu", "ReLU", ("ghost",)))),
            "'ghost' is not a tensor or an earlier operator",
        ),
        (lambda d: replace(d, layouts={}, tensors={}, operators=()), "the design has no layout"),
    ],
)
def test_invalid_designs_are_explained(at: AppTest, make: Callable[[Design], Design], expected: str) -> None:
    with_design(at, make(seed()))
    assert expected in page_text(at)
    assert any("problem(s)" in e.label for e in at.expander)


def test_operator_problem_is_shown(at: AppTest) -> None:
    bad = edits.set_operator_map(seed(), "matmul1", 1, ("dp", NONE))  # reduce dim split over different axes
    with_design(at, bad)
    text = page_text(at)
    assert "operator matmul1" in text
    assert not at.exception


@pytest.mark.parametrize(
    ("widget", "key_parts", "value", "expected"),
    [
        ("text_input", ("alias", "layout", 2), "dp", "Edit not applied: axis name 'dp' is already used"),
        ("text_input", ("alias", "layout", 2), "2x", "Edit not applied: axis name '2x' is not allowed"),
        ("text_input", ("rank_list", "layout"), "0, x", "Edit not applied: rank_list: 'x' is not a whole number"),
        ("text_input", ("layout_name", "layout"), "my layout", "Edit not applied: layout name 'my layout'"),
        ("text_input", ("tensor_shape", "x"), "2, a", "Edit not applied: shape: 'a' is not a whole number"),
        ("text_input", ("tensor_name", "x"), "w", "Edit not applied: 'w' is already a tensor or operator name"),
        ("text_input", ("tensor_name", "x"), "1abc", "Edit not applied: tensor name '1abc' is not allowed"),
    ],
)
def test_refused_edits_say_why_and_keep_the_design(
    at: AppTest, widget: str, key_parts: tuple, value: str, expected: str
) -> None:
    before = design_of(at)
    getattr(at, widget)(key=vkey(at, *key_parts)).input(value)
    rerun(at)
    assert expected in page_text(at)
    assert design_of(at) == before


def test_device_count_mismatch(at: AppTest) -> None:
    at.number_input(key=vkey(at, "device_num")).set_value(16)
    rerun(at)
    text = page_text(at)
    assert design_of(at).device_num == 16
    assert "= **8** ≠ 16 devices: add an axis or grow one by ×2" in text
    assert "spans 8 devices but the job has 16" in text


# ---------------------------------------------------------------------------------------------
# device matrix editor
# ---------------------------------------------------------------------------------------------
def test_axis_rows_add_move_remove_rename_resize(at: AppTest) -> None:
    at.button(key=vkey(at, "add_axis", "layout")).click()
    rerun(at)
    assert design_of(at).layouts["layout"].alias_name == ("dp", "sp", "mp", "ax")
    at.number_input(key=vkey(at, "size", "layout", 3)).set_value(1)
    rerun(at)
    at.button(key=vkey(at, "up", "layout", 3)).click()
    rerun(at)
    assert design_of(at).layouts["layout"].alias_name == ("dp", "sp", "ax", "mp")
    at.button(key=vkey(at, "down", "layout", 0)).click()
    rerun(at)
    assert design_of(at).layouts["layout"].alias_name == ("sp", "dp", "ax", "mp")
    at.button(key=vkey(at, "rm", "layout", 2)).click()
    rerun(at)
    assert design_of(at).layouts["layout"].alias_name == ("sp", "dp", "mp")
    at.text_input(key=vkey(at, "alias", "layout", 2)).input("tp")
    rerun(at)
    design = design_of(at)
    assert design.layouts["layout"].alias_name == ("sp", "dp", "tp")
    assert design.tensors["x"].sharding.map == ("tp", ("sp", "dp"))
    at.number_input(key=vkey(at, "size", "layout", 2)).set_value(4)
    rerun(at)
    assert "= **16** ≠ 8 devices: shrink an axis (÷2)" in page_text(at)


def test_presets(at: AppTest) -> None:
    at.selectbox(key=vkey(at, "preset", "layout")).set_value("cluster128")
    at.button(key=vkey(at, "apply_preset", "layout")).click()
    rerun(at)
    design = design_of(at)
    assert design.device_num == 128 and design.layouts["layout"].device_matrix == (8, 4, 4)
    text = page_text(at)
    assert "Applied preset" in text
    assert "= **128** devices — matches" in text
    at.selectbox(key=vkey(at, "preset", "layout")).set_value("dp_mp")
    at.button(key=vkey(at, "apply_preset", "layout")).click()
    rerun(at)
    assert design_of(at).layouts["layout"].device_matrix == (2, 4)
    assert design_of(at).device_num == 8


def test_rank_list_and_interleaved(at: AppTest) -> None:
    at.text_input(key=vkey(at, "rank_list", "layout")).input("7, 6, 5, 4, 3, 2, 1, 0")
    rerun(at)
    assert design_of(at).layouts["layout"].rank_list == (7, 6, 5, 4, 3, 2, 1, 0)
    assert "Row 0 of this view lies on ranks: 7, 3, 5, 1" in page_text(at)
    assert "rank_list=[7, 6, 5, 4, 3, 2, 1, 0]" in page_text(at)
    at.text_input(key=vkey(at, "rank_list", "layout")).input("")
    rerun(at)
    at.checkbox(key=vkey(at, "interleave_on", "layout")).check()
    rerun(at)
    assert design_of(at).layouts["layout"].alias_name[-1] == "interleaved_parallel"
    at.number_input(key=vkey(at, "interleave_size", "layout")).set_value(4)
    rerun(at)
    assert design_of(at).layouts["layout"].device_matrix[-1] == 4
    at.checkbox(key=vkey(at, "interleave_on", "layout")).uncheck()
    rerun(at)
    assert "interleaved_parallel" not in design_of(at).layouts["layout"].alias_name


def test_layouts_new_rename_remove(at: AppTest) -> None:
    at.button(key=vkey(at, "add_layout")).click()
    rerun(at)
    assert "layout2" in design_of(at).layouts
    assert at.session_state[LAYOUT_SEL] == "layout2"
    at.text_input(key=vkey(at, "layout_name", "layout2")).input("tp_layout")
    rerun(at)
    assert "tp_layout" in design_of(at).layouts
    at.button(key=vkey(at, "rm_layout", "tp_layout")).click()
    rerun(at)
    assert set(design_of(at).layouts) == {"layout"}


# ---------------------------------------------------------------------------------------------
# tensors
# ---------------------------------------------------------------------------------------------
def test_tensor_new_rename_dtype_remove(at: AppTest) -> None:
    at.button(key=vkey(at, "add_tensor")).click()
    rerun(at)
    assert "t" in design_of(at).tensors and at.session_state[TENSOR_SEL] == "t"
    assert "t is not split at all" in page_text(at)
    at.text_input(key=vkey(at, "tensor_name", "t")).input("bias")
    rerun(at)
    assert "bias" in design_of(at).tensors
    at.selectbox(key=vkey(at, "tensor_dtype", "bias")).set_value("float16")
    rerun(at)
    assert design_of(at).tensors["bias"].dtype == "float16"
    at.button(key=vkey(at, "rm_tensor", "bias")).click()
    rerun(at)
    assert "bias" not in design_of(at).tensors


def test_tensor_placement_kinds(at: AppTest) -> None:
    at.selectbox(key=vkey(at, "tensor_place", "x")).set_value("tuple")
    rerun(at)
    assert design_of(at).tensors["x"].sharding == Sharding(split=(2, 4))
    at.text_input(key=vkey(at, "tensor_split", "x")).input("8, 1")
    rerun(at)
    assert design_of(at).tensors["x"].sharding == Sharding(split=(8, 1))
    assert "Row 0 of this view lies on ranks: 0" in page_text(at)
    at.text_input(key=vkey(at, "tensor_split", "x")).input("3, 1")
    rerun(at)
    assert "No preview for x" in page_text(at)
    at.selectbox(key=vkey(at, "tensor_place", "x")).set_value("none")
    rerun(at)
    assert "x is replicated" in page_text(at)
    at.selectbox(key=vkey(at, "tensor_place", "x")).set_value("layout")
    rerun(at)
    assert design_of(at).tensors["x"].sharding == Sharding("layout", (NONE, NONE))


def test_rename_tensor_updates_operator_inputs(at: AppTest) -> None:
    at.text_input(key=vkey(at, "tensor_name", "x")).input("act")
    rerun(at)
    assert design_of(at).operator("matmul1").inputs == ("act", "w")
    assert at.session_state[TENSOR_SEL] == "act"


# ---------------------------------------------------------------------------------------------
# operators
# ---------------------------------------------------------------------------------------------
def test_operator_analysis_is_shown(at: AppTest) -> None:
    text = page_text(at)
    assert "Valid strategy." in text
    assert "self.matmul1 = ops.MatMul(transpose_a=False, transpose_b=False).shard(" in text
    assert any(df.value.shape[0] >= 1 for df in at.dataframe)


def test_add_operator_and_tuple_strategy(at: AppTest) -> None:
    at.selectbox(key="designer_newop_type").set_value("ReLU")
    rerun(at)
    at.selectbox(key="designer_newop_in0").set_value("matmul1")
    at.text_input(key="designer_newop_name").input("relu1")
    at.button(key="designer_newop_add").click()
    rerun(at)
    design = design_of(at)
    assert design.operators[-1] == OperatorSpec("relu1", "ReLU", ("matmul1",))
    assert at.session_state[OP_SEL] == "relu1"
    at.toggle(key=vkey(at, "op_strategy_on", "relu1")).set_value(True)
    rerun(at)
    assert design_of(at).operator("relu1").strategy == (Sharding(split=(1, 1)),)
    at.text_input(key=vkey(at, "op_split", "relu1", 0)).input("4,1")
    rerun(at)
    assert design_of(at).operator("relu1").strategy == (Sharding(split=(4, 1)),)
    assert "self.relu1 = ops.ReLU().shard(in_strategy=((4, 1),))" in page_text(at)
    at.text_input(key=vkey(at, "op_split", "relu1", 0)).input("four")
    rerun(at)
    assert "Edit not applied: tuple strategy: 'four' is not a whole number" in page_text(at)
    at.radio(key=vkey(at, "op_mode", "relu1", 0)).set_value("layout")
    rerun(at)
    assert design_of(at).operator("relu1").strategy[0].layout == "layout"
    at.button(key=vkey(at, "rm_op", "relu1")).click()
    rerun(at)
    assert [op.name for op in design_of(at).operators] == ["matmul1"]


def test_add_operator_refuses_duplicate_name(at: AppTest) -> None:
    at.selectbox(key="designer_newop_type").set_value("Add")
    rerun(at)
    at.text_input(key="designer_newop_name").input("x")
    at.button(key="designer_newop_add").click()
    rerun(at)
    assert "Edit not applied: 'x' is already a tensor or operator name" in page_text(at)


def test_operator_input_drop_and_click(at: AppTest, drop: Callable) -> None:
    drop(
        vkey(at, "op_dnd", "matmul1", 1),
        [
            {"header": view.FREE_HEADER, "items": ["mp·2"]},
            {"header": "dim 0", "items": ["sp·2"]},
            {"header": "dim 1", "items": ["dp·2"]},
        ],
    )
    rerun(at)
    assert design_of(at).operator("matmul1").strategy[1].map == ("sp", "dp")
    key = f"designer:oppick:matmul1:1:dim0@{at.session_state['designer_version']}"
    at.multiselect(key=key).set_value(["sp", "dp"])
    rerun(at)
    assert design_of(at).operator("matmul1").strategy[1].map == (("sp", "dp"), NONE)


def test_out_strategy_toggle_and_drop(at: AppTest, drop: Callable) -> None:
    assert design_of(at).operator("matmul1").out_strategy is not None  # seed 004 has one
    at.toggle(key=vkey(at, "op_out_on", "matmul1")).set_value(False)
    rerun(at)
    assert design_of(at).operator("matmul1").out_strategy is None
    assert (
        "self.matmul1 = ops.MatMul(transpose_a=False, transpose_b=False)"
        '.shard(in_strategy=(layout("mp", ("sp", "dp")), layout(("sp", "dp"), "None")))' in page_text(at)
    )
    at.toggle(key=vkey(at, "op_out_on", "matmul1")).set_value(True)
    rerun(at)
    assert design_of(at).operator("matmul1").out_strategy == Sharding("layout", (NONE, NONE))
    drop(
        vkey(at, "op_out_dnd", "matmul1"),
        [
            {"header": view.FREE_HEADER, "items": []},
            {"header": "dim 0", "items": ["mp·2", "sp·2", "dp·2"]},
            {"header": "dim 1", "items": []},
        ],
    )
    rerun(at)
    assert design_of(at).operator("matmul1").out_strategy.map == (("mp", "sp", "dp"), NONE)


@pytest.mark.usefixtures("workspace")
def test_operator_analysis_crash_is_contained(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in one family's rule is that operator's problem (the one guard, in analyze_design): the page
    still renders, and says which error it was."""
    from core.sharding.operators import matmul

    def boom(*_args: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(matmul.MatMulFamily, "rule", boom)
    app = AppTest.from_file(PAGE, default_timeout=90)
    rerun(app)
    assert "internal error while analysing this operator (RuntimeError: kaboom)" in page_text(app)
    assert not app.exception


# ---------------------------------------------------------------------------------------------
# save / load
# ---------------------------------------------------------------------------------------------
def test_save_and_load_workspace(at: AppTest, workspace: Path) -> None:
    at.text_input(key=vkey(at, "save_name")).input("mine")
    at.button(key="designer_save").click()
    rerun(at)
    assert (workspace / "designs" / "mine.json").is_file()
    assert "Saved to" in page_text(at)
    with_design(at, edits.apply_preset(seed(), "layout", "tp8"))
    at.selectbox(key="designer_ws_pick").set_value("mine.json")
    at.button(key="designer_ws_load").click()
    rerun(at)
    assert design_of(at) == seed()
    assert "Loaded mine.json from the workspace" in page_text(at)


def test_save_refuses_escaping_names(at: AppTest, workspace: Path) -> None:
    at.text_input(key=vkey(at, "save_name")).input("../outside")
    at.button(key="designer_save").click()
    rerun(at)
    assert "is not allowed" in page_text(at)
    assert not (workspace.parent / "outside.json").exists()


def test_broken_workspace_file_lists_problems_and_keeps_design(at: AppTest, workspace: Path) -> None:
    folder = workspace / "designs"
    folder.mkdir()
    (folder / "broken.json").write_text(json.dumps({"device_num": 0, "tensors": {"x": {"shape": [2, -1]}}}))
    rerun(at)
    before = design_of(at)
    at.selectbox(key="designer_ws_pick").set_value("broken.json")
    at.button(key="designer_ws_load").click()
    rerun(at)
    text = page_text(at)
    assert "Could not load broken.json — your current design is unchanged" in text
    assert "$.device_num" in text and "$.tensors.x.shape[1]" in text
    assert design_of(at) == before


@pytest.mark.parametrize("example", edits.list_designs(EXAMPLES_DIR))
def test_every_example_loads_and_previews(at: AppTest, example: str) -> None:
    at.selectbox(key="designer_example_pick").set_value(example)
    at.button(key="designer_example_load").click()
    rerun(at)
    design = design_of(at)
    assert f"Loaded {example}" in page_text(at)
    for tensor in design.tensors:
        at.selectbox(key=TENSOR_SEL).set_value(tensor)
        rerun(at)
        assert "Row 0 of this view lies on ranks" in page_text(at) or "No preview" in page_text(at)
    for op in design.operators:
        at.radio(key=OP_SEL).set_value(op.name)
        rerun(at)


def test_mlp_example_has_two_layouts(at: AppTest) -> None:
    at.selectbox(key="designer_example_pick").set_value("seed004_mlp.json")
    at.button(key="designer_example_load").click()
    rerun(at)
    assert set(design_of(at).layouts) == {"layout", "layout2"}
    at.selectbox(key=LAYOUT_SEL).set_value("layout2")
    rerun(at)
    assert 'layout2 = Layout((8,), ("tp",))' in page_text(at)


def test_upload_valid_and_invalid(at: AppTest) -> None:
    mlp = (EXAMPLES_DIR / "seed004_mlp.json").read_bytes()
    at.file_uploader(key="designer_upload").set_value(("mlp.json", mlp, "application/json"))
    rerun(at)
    assert design_of(at).name == "seed004_mlp"
    assert "Loaded mlp.json" in page_text(at)
    before = design_of(at)
    bad = json.dumps({"layouts": {"l": {"device_matrix": [2, "x"], "alias_name": ["a", "b"]}}, "bogus": 1}).encode()
    at.file_uploader(key="designer_upload").set_value(("bad.json", bad, "application/json"))
    rerun(at)
    text = page_text(at)
    assert "Could not load bad.json" in text
    assert "$.layouts.l.device_matrix[1]" in text and "$.bogus" in text
    assert design_of(at) == before
    at.file_uploader(key="designer_upload").set_value(("junk.json", b"{not json", "application/json"))
    rerun(at)
    assert "not valid JSON" in page_text(at)


def test_rename_design_and_download(at: AppTest) -> None:
    at.text_input(key=vkey(at, "design_name")).input("my_design")
    rerun(at)
    assert design_of(at).name == "my_design"
    at.text_input(key=vkey(at, "design_name")).input("bad name/..")
    rerun(at)
    assert "Edit not applied: design name" in page_text(at)
    assert at.get("download_button")


@pytest.mark.usefixtures("workspace")
def test_page_runs_from_the_app_entry() -> None:
    app = AppTest.from_file(str(REPO_ROOT / "app" / "main.py"), default_timeout=90)
    rerun(app)
    app.switch_page("../pages/designer.py")
    rerun(app)
    assert "Row 0 of this view lies on ranks: 0, 4, 2, 6" in page_text(app)


def test_tensor_only_design_without_operators(at: AppTest) -> None:
    design = Design(
        name="solo",
        device_num=4,
        layouts={"l": LayoutSpec((4,), ("dp",))},
        tensors={"v": TensorSpec((8,), "int8", Sharding("l", ("dp",)))},
    )
    with_design(at, design)
    assert "Row 0 of this view lies on ranks: 0, 1, 2, 3" in page_text(at)
    assert "No operators yet." in page_text(at)


# ---------------------------------------------------------------------------------------------
# issue 11: Transformer operators and tensor roles
# ---------------------------------------------------------------------------------------------
def load_example(at: AppTest, name: str) -> None:
    at.selectbox(key="designer_example_pick").set_value(name)
    at.button(key="designer_example_load").click()
    rerun(at)


def test_transformer_operator_fields(at: AppTest) -> None:
    load_example(at, "attention_block.json")
    at.radio(key=OP_SEL).set_value("qt")
    rerun(at)
    assert any("qt · Transpose × 2" in str(o) for o in at.radio(key=OP_SEL).options)
    at.text_input(key=vkey(at, "op_perm", "qt")).input("0, 2, 1")
    rerun(at)
    assert "Edit not applied" not in page_text(at)
    assert design_of(at).operator("qt").perm == (0, 2, 1)
    assert "perm (0, 2, 1) does not fit" in page_text(at)  # the analysis explains the 4-D input
    at.text_input(key=vkey(at, "op_perm", "qt")).input("0, 0, 1, 2")
    rerun(at)
    assert "Edit not applied: perm: (0, 0, 1, 2) is not a permutation" in page_text(at)
    at.text_input(key=vkey(at, "op_perm", "qt")).input("0, 2, 1, 3")
    rerun(at)

    at.radio(key=OP_SEL).set_value("x2d")
    rerun(at)
    at.text_input(key=vkey(at, "op_shape", "x2d")).input("8, 256")
    rerun(at)
    assert design_of(at).operator("x2d").shape == (8, 256)
    at.text_input(key=vkey(at, "op_shape", "x2d")).input("64, 32")
    rerun(at)
    assert all(a.valid for a in analyze_design(design_of(at)))

    at.radio(key=OP_SEL).set_value("probs")
    rerun(at)
    at.number_input(key=vkey(at, "op_axis", "probs")).set_value(1)
    rerun(at)
    assert design_of(at).operator("probs").axis == 1
    assert "Softmax normalises dimension 1" in page_text(at)  # dimension 1 is split over mp

    at.radio(key=OP_SEL).set_value("attn_norm")
    rerun(at)
    at.number_input(key=vkey(at, "op_eps", "attn_norm")).set_value(1e-5)
    rerun(at)
    assert design_of(at).operator("attn_norm").eps == pytest.approx(1e-5)


def test_add_gather_and_transpose_from_the_type_picker(at: AppTest) -> None:
    assert {"Transpose", "Reshape", "Softmax", "RMSNorm", "Gather"} <= set(
        at.selectbox(key="designer_newop_type").options
    )
    at.selectbox(key="designer_newop_type").set_value("Transpose")
    rerun(at)
    at.selectbox(key="designer_newop_in0").set_value("x")
    at.button(key="designer_newop_add").click()
    rerun(at)
    op = design_of(at).operators[-1]
    assert (op.type, op.perm) == ("Transpose", (1, 0))
    assert at.text_input(key=vkey(at, "op_perm", op.name)).value == "1, 0"


def test_tensor_role_picker(at: AppTest) -> None:
    at.selectbox(key=vkey(at, "tensor_role", "x")).set_value("weight")
    rerun(at)
    assert design_of(at).tensors["x"].role == "weight"
    at.selectbox(key=vkey(at, "tensor_dtype", "x")).set_value("int32")
    rerun(at)
    at.selectbox(key=vkey(at, "tensor_role", "x")).set_value("input")
    rerun(at)
    assert design_of(at).tensors["x"].role == "input"
    at.selectbox(key=vkey(at, "tensor_role", "x")).set_value("weight")
    rerun(at)
    assert "Edit not applied: x is int32: a weight is trained" in page_text(at)
    assert design_of(at).tensors["x"].role == "input"


def test_loss_and_repeat_block_editor(at: AppTest) -> None:
    at.selectbox(key=vkey(at, "loss")).set_value("cross_entropy")
    rerun(at)
    assert design_of(at).loss == "cross_entropy"
    at.toggle(key=vkey(at, "repeat", "on")).set_value(True)
    rerun(at)
    repeat = design_of(at).repeat
    assert repeat is not None
    assert (repeat.count, repeat.first, repeat.last, repeat.carry) == (2, "matmul1", "matmul1", "x")
    assert any("matmul1 · MatMul × 2" in str(o) for o in at.radio(key=OP_SEL).options)
    at.number_input(key=vkey(at, "repeat", "count")).set_value(32)
    rerun(at)
    assert design_of(at).repeat.count == 32
    at.selectbox(key=vkey(at, "repeat", "carry")).set_value("matmul1")
    rerun(at)
    assert "$.repeat.carry" in page_text(at)  # carry must come before the block: explained live
    at.toggle(key=vkey(at, "repeat", "on")).set_value(False)
    rerun(at)
    assert design_of(at).repeat is None


@pytest.mark.usefixtures("workspace")
@pytest.mark.parametrize("page", ["launch", "planner"])
def test_every_page_seeds_the_same_shared_design(page: str) -> None:
    """Issue 20: one current_design() with one default; Launch used to seed data_parallel_8 on its own."""
    other = AppTest.from_file(str(REPO_ROOT / "pages" / f"{page}.py"), default_timeout=180)
    other.run()
    assert not other.exception, other.exception
    assert design_of(other).name == edits.default_design().name == "seed004_dense_matmul"
