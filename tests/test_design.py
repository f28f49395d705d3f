"""Design files: round trips, every example, every problem reported with its JSON path."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.sharding.design import (
    Design,
    DesignError,
    design_from_dict,
    design_problems,
    design_to_dict,
    dumps_design,
    load_design,
    loads_design,
    save_design,
)
from core.sharding.placement import place
from core.workspace import EXAMPLES_DIR

EXAMPLES = sorted(EXAMPLES_DIR.glob("*.json"))


def example(name: str) -> dict[str, Any]:
    return json.loads((EXAMPLES_DIR / f"{name}.json").read_text())


def test_examples_exist_for_every_seed_scenario() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {"seed004_dense_matmul", "seed004_mlp", "dp_sp_mp_2x2x2", "tp8", "data_parallel_8"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_load_and_round_trip(path: Path) -> None:
    design = load_design(path)
    assert design_problems(design) == []
    assert loads_design(dumps_design(design)) == design
    assert design_to_dict(design) == json.loads(path.read_text())


def test_seed_004_example_places_row_0_on_ranks_0_4_2_6() -> None:
    design = load_design(EXAMPLES_DIR / "seed004_dense_matmul.json")
    tensor = design.tensors["x"]
    assert tensor.sharding is not None
    grid = place(tensor.shape, design.tensor_layout(tensor.sharding)).owner_grid(0, 1)
    assert [cell[0] for cell in grid.owners[0]] == [0, 4, 2, 6]


def test_save_is_atomic_and_loadable(tmp_path: Path) -> None:
    design = load_design(EXAMPLES_DIR / "seed004_mlp.json")
    target = save_design(design, tmp_path / "designs" / "mlp.json")
    assert load_design(target) == design
    assert not list(tmp_path.glob("designs/*.tmp"))


def _problems(data: Any, strict: bool = True) -> dict[str, str]:
    with pytest.raises(DesignError) as info:
        design_from_dict(data, strict=strict)
    return {p.path: p.message for p in info.value.problems}


BAD_FIELDS = [
    (
        lambda d: d["layouts"]["layout"].__setitem__("device_matrix", [2, 2, "x"]),
        "$.layouts.layout.device_matrix[2]",
        "whole number",
    ),
    (lambda d: d["layouts"]["layout"].__setitem__("alias_name", ["dp", "dp", "mp"]), "$.layouts.layout", "unique"),
    (
        lambda d: d["layouts"]["layout"].__setitem__("alias_name", ["dp", "s p", "mp"]),
        "$.layouts.layout.alias_name[1]",
        "identifier",
    ),
    (lambda d: d["layouts"]["layout"].__setitem__("rank_list", [0, 1]), "$.layouts.layout", "one rank per position"),
    (lambda d: d["tensors"]["x"].__setitem__("shape", [2, -4]), "$.tensors.x.shape[1]", "out of range"),
    (lambda d: d["tensors"]["x"].__setitem__("dtype", "float8"), "$.tensors.x.dtype", "unknown dtype"),
    (lambda d: d["tensors"]["x"].__setitem__("map", ["mp", ["sp", 3]]), "$.tensors.x.map[1]", "axis name"),
    (lambda d: d["tensors"]["x"].__setitem__("colour", "red"), "$.tensors.x.colour", "unknown field"),
    (lambda d: d["operators"][0].__setitem__("type", "Conv2D"), "$.operators[0].type", "unsupported operator"),
    (lambda d: d["operators"][0].__setitem__("inputs", ["x"]), "$.operators[0].inputs", "takes 2 input"),
    (lambda d: d["operators"][0].__setitem__("name", "import"), "$.operators[0].name", "identifier"),
    (lambda d: d["operators"][0].__setitem__("transpose_a", "yes"), "$.operators[0].transpose_a", "true or false"),
    (lambda d: d.__setitem__("name", "../../etc"), "$.name", "letters, digits"),
    (lambda d: d.__setitem__("device_num", 0), "$.device_num", "out of range"),
    (lambda d: d.__setitem__("shardscope_design", 2), "$.shardscope_design", "format 1"),
]


@pytest.mark.parametrize(("mutate", "path", "phrase"), BAD_FIELDS)
def test_bad_fields_are_reported_with_their_path(mutate: Any, path: str, phrase: str) -> None:
    data = example("seed004_dense_matmul")
    mutate(data)
    problems = _problems(data)
    assert path in problems, problems
    assert phrase in problems[path]


CONSISTENCY = [
    (lambda d: d.__setitem__("device_num", 6), "$.layouts.layout", "spans 8 devices but the job has 6"),
    (lambda d: d["tensors"]["x"].__setitem__("shape", [2, 6]), "$.tensors.x", "not divisible by its split 4"),
    (lambda d: d["tensors"]["x"].__setitem__("map", ["mp", "mp"]), "$.tensors.x", "already used"),
    (lambda d: d["tensors"]["x"].__setitem__("layout", "nope"), "$.tensors.x", "no layout called 'nope'"),
    (
        lambda d: d["operators"][0].__setitem__("inputs", ["x", "missing"]),
        "$.operators[0].inputs[1]",
        "not a tensor or an earlier operator",
    ),
]


@pytest.mark.parametrize(("mutate", "path", "phrase"), CONSISTENCY)
def test_inconsistent_designs_are_reported(mutate: Any, path: str, phrase: str) -> None:
    data = example("seed004_dense_matmul")
    mutate(data)
    problems = _problems(data)
    assert phrase in problems[path], problems
    lenient = design_from_dict(data, strict=False)
    assert any(phrase in p.message for p in design_problems(lenient))


def test_every_problem_is_collected_not_just_the_first() -> None:
    data = example("seed004_mlp")
    data["tensors"]["x"]["dtype"] = "f32"
    data["operators"][1]["type"] = "Conv2D"
    data["layouts"]["layout2"]["device_matrix"] = [0]
    assert len(_problems(data)) == 3


def test_not_json_and_not_utf8() -> None:
    with pytest.raises(DesignError, match="not valid JSON: Expecting"):
        loads_design("{")
    with pytest.raises(DesignError, match="not UTF-8"):
        loads_design(b"\xff\xfe{")
    with pytest.raises(DesignError, match="cannot read"):
        load_design("/nonexistent/design.json")


def test_defaults() -> None:
    design = design_from_dict({})
    assert design == Design()


JSON_SCALARS = st.none() | st.booleans() | st.integers(-3, 10) | st.text(max_size=4)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.sampled_from([p.stem for p in EXAMPLES]), st.data(), JSON_VALUES)
def test_any_mutation_gives_a_design_or_a_design_error(name: str, data: st.DataObject, value: Any) -> None:
    """Nothing a user can put in a design file crashes the loader with anything but DesignError."""
    doc = copy.deepcopy(example(name))
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    for strict in (True, False):
        try:
            design = design_from_dict(doc, strict=strict)
        except DesignError as exc:
            assert exc.problems and all(p.path.startswith("$") and p.message for p in exc.problems)
        else:
            assert isinstance(design, Design)
            design_problems(design)


def test_out_strategy_must_be_one_layout_strategy() -> None:
    data = example("seed004_dense_matmul")
    data["operators"][0]["out_strategy"] = [[8, 1]]
    assert "Layout strategy" in _problems(data)["$.operators[0].out_strategy[0]"]
    one = {"layout": "layout", "map": ["dp", "None"]}
    data["operators"][0]["out_strategy"] = [one, one]
    assert "exactly one" in _problems(data)["$.operators[0].out_strategy"]
    data["operators"][0]["out_strategy"] = [{"layout": "layout", "map": ["dp", "dp"]}]
    assert "already used" in _problems(data)["$.operators[0].out_strategy[0]"]


# ---------------------------------------------------------------------------------------------
# issue 11: operator attributes, tensor roles, loss and repeat
# ---------------------------------------------------------------------------------------------
def _op_index(data: dict[str, Any], name: str) -> int:
    return next(i for i, op in enumerate(data["operators"]) if op["name"] == name)


def test_transformer_example_round_trips_every_new_field() -> None:
    data = example("attention_block")
    design = design_from_dict(data)
    assert design_to_dict(design) == data
    assert design.loss == "cross_entropy"
    assert design.repeat is not None and (design.repeat.count, design.repeat.carry) == (2, "embed")
    assert design.operator("qt").perm == (0, 2, 1, 3)
    assert design.operator("x2d").shape == (64, 32)
    assert design.operator("probs").axis == -1 and design.operator("attn_norm").eps == 1e-6
    assert design.tensors["tokens"].role == "input"
    assert [design.layers_of(n) for n in ("embed", "probs", "h", "logits")] == [1, 2, 2, 1]


def test_tensor_role_defaults() -> None:
    data = {
        "tensors": {
            "x": {"shape": [2]},
            "ids": {"shape": [2], "dtype": "int32"},
            "w": {"shape": [2]},
            "b": {"shape": [2], "role": "input"},
        }
    }
    design = design_from_dict(data)
    assert {n: design.tensor_role(n) for n in design.tensors} == {
        "x": "input",
        "ids": "input",
        "w": "weight",
        "b": "input",
    }
    assert "role" not in design_to_dict(design)["tensors"]["x"]


def _set_op(name: str, key: str, value: Any) -> Any:
    return lambda d: d["operators"][_op_index(d, name)].__setitem__(key, value)


NEW_BAD_FIELDS = [
    (_set_op("qt", "perm", [0, 2, 2, 3]), "qt", "perm", "not a permutation"),
    (_set_op("qt", "perm", [0, 1.5]), "qt", "perm[1]", "whole number"),
    (_set_op("x2d", "shape", [64, 0]), "x2d", "shape[1]", "out of range"),
    (_set_op("x2d", "shape", []), "x2d", "shape", "needs 1..8 entries"),
    (_set_op("probs", "axis", True), "probs", "axis", "whole number"),
    (_set_op("probs", "axis", 9), "probs", "axis", "out of range"),
    (_set_op("attn_norm", "eps", -1), "attn_norm", "eps", "small positive number"),
    (_set_op("q", "perm", [1, 0]), "q", "perm", "unknown field"),
    (_set_op("embed", "transpose_a", True), "embed", "transpose_a", "unknown field"),
    (lambda d: d["operators"][_op_index(d, "qt")].pop("perm"), "qt", "perm", "Transpose needs 'perm'"),
]


@pytest.mark.parametrize(("mutate", "op", "field", "phrase"), NEW_BAD_FIELDS)
def test_bad_operator_attributes_are_reported_with_their_path(mutate: Any, op: str, field: str, phrase: str) -> None:
    data = example("attention_block")
    path = f"$.operators[{_op_index(data, op)}].{field}"
    mutate(data)
    problems = _problems(data)
    assert phrase in problems[path], problems


DESIGN_BAD_FIELDS = [
    (lambda d: d["tensors"]["tokens"].__setitem__("role", "label"), "$.tensors.tokens.role", "unknown role"),
    (lambda d: d["tensors"]["tokens"].__setitem__("role", "weight"), "$.tensors.tokens.role", "needs a float dtype"),
    (lambda d: d.__setitem__("loss", "hinge"), "$.loss", "unknown loss"),
    (lambda d: d["repeat"].__setitem__("count", 0), "$.repeat.count", "out of range"),
    (lambda d: d["repeat"].__setitem__("first", "nope"), "$.repeat.first", "not an operator"),
    (lambda d: d["repeat"].__setitem__("carry", "logits"), "$.repeat.carry", "before the block"),
    (lambda d: d["repeat"].__setitem__("layers", 3), "$.repeat.layers", "unknown field"),
    (lambda d: d.__setitem__("repeat", [1]), "$.repeat", "JSON object"),
]


@pytest.mark.parametrize(("mutate", "path", "phrase"), DESIGN_BAD_FIELDS)
def test_bad_roles_losses_and_repeats_are_reported(mutate: Any, path: str, phrase: str) -> None:
    data = example("attention_block")
    mutate(data)
    assert phrase in _problems(data)[path]


NEW_KEYS = st.sampled_from(["perm", "shape", "axis", "eps", "role", "loss", "repeat", "count", "first", "carry"])


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.data(), NEW_KEYS, JSON_VALUES)
def test_any_value_in_the_new_fields_gives_a_design_or_paths(data: st.DataObject, key: str, value: Any) -> None:
    """The reader never crashes on the new fields: a Design, or DesignError problems that all carry a path."""
    doc = copy.deepcopy(example("attention_block"))
    holders = [doc, doc["repeat"], *doc["operators"], *doc["tensors"].values()]
    target = data.draw(st.sampled_from(holders))
    target[key] = value
    try:
        design = design_from_dict(doc)
    except DesignError as exc:
        assert exc.problems and all(p.path.startswith("$") and p.message for p in exc.problems)
    else:
        assert design_from_dict(design_to_dict(design)) == design
