"""Hostile design files (issue 12, item 1): every limit is checked before the work it bounds.

Each reproduction from the issue used to end in a MemoryError / OverflowError / ValueError /
RecursionError traceback, or in seconds of work and megabytes of errors; now each is one DesignError
with a JSON path, found cheaply. No timed assertions: benchmarks/bench_design_limits.py has figures.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.__main__ import main
from core.sharding.design import (
    MAX_AXES,
    MAX_DEPTH,
    MAX_DESIGN_BYTES,
    MAX_DEVICES,
    MAX_NUMBER_CHARS,
    MAX_PROBLEMS,
    MAX_TENSORS,
    Design,
    DesignError,
    design_from_dict,
    design_to_dict,
    load_design,
    loads_design,
)
from core.sharding.edits import load_from_folder
from core.sharding.layout import Layout, LayoutError
from core.workspace import EXAMPLES_DIR


def _problems(text: str | bytes, strict: bool = True) -> list[tuple[str, str]]:
    with pytest.raises(DesignError) as caught:
        loads_design(text, strict=strict)
    return [(p.path, p.message) for p in caught.value.problems]


def _peak_mb(text: str) -> float:
    """Peak traced allocation while loading `text` (a DesignError is expected)."""
    tracemalloc.start()
    try:
        with pytest.raises(DesignError):
            loads_design(text)
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


# -- the reproductions from the issue ----------------------------------------------------------
def test_huge_device_matrix_is_refused_before_any_rank_list_is_built() -> None:
    text = '{"layouts":{"l":{"device_matrix":[65536,65536],"alias_name":["a","b"]}}}'
    problems = _problems(text)
    assert problems == [
        (
            "$.layouts.l.device_matrix",
            f"the axis sizes multiply to 4,294,967,296 devices: at most {MAX_DEVICES:,} are supported",
        )
    ]
    assert _peak_mb(text) < 5  # before: list(range(2**32)), 34 GB


def test_layout_itself_bounds_its_positions_before_building_ranks() -> None:
    with pytest.raises(LayoutError, match="4,294,967,296 positions: at most 65,536"):
        Layout((65536, 65536), ("a", "b"))
    with pytest.raises(LayoutError, match=r"about 2\^4096 positions"):
        Layout((2,) * 4096, tuple(f"a{i}" for i in range(4096)))


def test_4096_axes_of_size_2_is_a_problem_not_an_overflow() -> None:
    layout = {"device_matrix": [2] * 4096, "alias_name": [f"a{i}" for i in range(4096)]}
    problems = _problems(json.dumps({"layouts": {"l": layout}}))
    assert ("$.layouts.l.device_matrix", f"device_matrix has 4,096 entries: at most {MAX_AXES} are supported") in (
        problems
    )


def test_too_many_axes_within_the_axis_limit_still_multiply_to_too_many_devices() -> None:
    layout = {"device_matrix": [2] * MAX_AXES + [2] * 0, "alias_name": [f"a{i}" for i in range(MAX_AXES)]}
    layout["device_matrix"][0] = 4  # 2^17 positions
    problems = _problems(json.dumps({"layouts": {"l": layout}}))
    assert problems[0][0] == "$.layouts.l.device_matrix"
    assert "131,072 devices" in problems[0][1]


@pytest.mark.parametrize("literal", ["1" + "0" * 5000, "-" + "9" * 40, "1." + "5" * 40, "1e" + "9" * 40])
def test_long_numbers_are_refused_while_parsing(literal: str) -> None:
    problems = _problems('{"device_num": ' + literal + "}")
    assert len(problems) == 1
    path, message = problems[0]
    assert path == "$"
    assert f"a number of {len(literal):,} characters at line 1, column 16" in message
    assert f"at most {MAX_NUMBER_CHARS}" in message


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_constants_are_refused(constant: str) -> None:
    problems = _problems('{"device_num": ' + constant + "}")
    assert problems[0][0] == "$"
    assert f"{constant} is not a JSON number" in problems[0][1]


@pytest.mark.parametrize(
    "text",
    [
        "[" * 3000 + "]" * 3000,
        '{"a":' * 3000 + "1" + "}" * 3000,
        "[" * 100_000,  # unbalanced and deep
        '{"tensors": ' + "[" * 17 + "]" * 17 + "}",
    ],
)
def test_deep_nesting_is_refused_before_json_recurses(text: str) -> None:
    assert _problems(text) == [("$", f"the JSON nests deeper than {MAX_DEPTH} levels (a design needs 7)")]


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    problems = _problems(json.dumps({"description": "[" * 5000 + "{" * 5000}))
    assert problems == [("$.description", "must be text of at most 2000 characters")]


def test_shallow_but_broken_json_still_gets_the_json_message() -> None:
    problems = _problems('{"layouts": [}')
    assert problems[0][0] == "$"
    assert problems[0][1].startswith("not valid JSON:")


def test_an_oversized_text_is_refused_before_parsing() -> None:
    text = " " * (MAX_DESIGN_BYTES + 1)
    assert _problems(text) == [
        ("$", f"the file is {MAX_DESIGN_BYTES + 1:,} bytes: a design file may be at most {MAX_DESIGN_BYTES:,} bytes")
    ]


def test_an_oversized_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(50 << 20)  # a sparse 50 MB file: reading it would be the cost we refuse
    with pytest.raises(DesignError) as caught:
        load_design(path)
    assert [p.path for p in caught.value.problems] == ["$"]
    assert "52,428,800 bytes" in caught.value.problems[0].message


def test_too_many_tensors_are_refused_unread() -> None:
    tensors = {f"t{i}": {"shape": [0]} for i in range(MAX_TENSORS + 1)}
    problems = _problems(json.dumps({"tensors": tensors}, separators=(",", ":")))
    assert problems == [
        ("$.tensors", f"tensors has {MAX_TENSORS + 1:,} entries: at most {MAX_TENSORS:,} are supported")
    ]


def test_problems_are_capped_with_a_count_of_the_rest() -> None:
    tensors = {f"t{i}": {"shape": [0]} for i in range(MAX_TENSORS)}
    with pytest.raises(DesignError) as caught:
        loads_design(json.dumps({"tensors": tensors}))
    problems = caught.value.problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[0].path == "$.tensors.t0.shape[0]"
    assert problems[-1].message == f"... and {MAX_TENSORS - MAX_PROBLEMS:,} more problems"
    assert len(str(caught.value)) < 20_000  # before: 97 MB of errors for 490k tensors


def test_design_error_caps_any_list_it_is_given() -> None:
    from core.sharding.design import Problem

    error = DesignError([Problem(f"$.x[{i}]", "bad") for i in range(1000)])
    assert len(error.problems) == MAX_PROBLEMS + 1
    assert error.problems[-1].message == "... and 900 more problems"


def test_long_strings_and_keys_make_short_messages() -> None:
    long = "x" * 50_000
    design = {
        "name": long,
        "loss": long,
        long: 1,
        "tensors": {long: {"shape": [2], "dtype": long, "role": long}, "t": {"shape": [long]}},
        "layouts": {"l": {"device_matrix": [2], "alias_name": [long]}},
        "operators": [{"name": long, "type": long, "inputs": [long]}],
    }
    with pytest.raises(DesignError) as caught:
        loads_design(json.dumps(design))
    assert len(caught.value.problems) >= 8
    for problem in caught.value.problems:
        assert len(problem.path) < 120, problem.path
        assert len(problem.message) < 400, problem.message


def test_rank_list_longer_than_the_matrix_is_refused_before_its_entries_are_read() -> None:
    layout = {"device_matrix": [4], "alias_name": ["a"], "rank_list": ["bad"] * 50_000}
    problems = _problems(json.dumps({"layouts": {"l": layout}}))
    assert problems == [
        (
            "$.layouts.l",
            "rank_list has 50,000 ranks but the device matrix has 4 positions: give one rank per position",
        )
    ]


def test_largest_rank_list_with_a_repeat_is_found() -> None:
    ranks = list(range(MAX_DEVICES))
    ranks[-1] = 0
    layout = {"device_matrix": [MAX_DEVICES], "alias_name": ["a"], "rank_list": ranks}
    problems = _problems(json.dumps({"device_num": MAX_DEVICES, "layouts": {"l": layout}}))
    assert problems == [("$.layouts.l", "rank 0 appears more than once in rank_list")]


def test_lists_inside_a_tensor_and_an_operator_are_bounded() -> None:
    design = {
        "tensors": {
            "x": {"shape": ["bad"] * 100, "split": [1] * 100},
            "y": {"shape": [2], "layout": "l", "map": ["a"] * 99},
        },
        "operators": [{"name": "o", "type": "ReLU", "inputs": ["x"] * 1000, "strategy": [[1]] * 1000}],
    }
    paths = {path for path, _ in _problems(json.dumps(design), strict=False)}
    assert {"$.tensors.x.shape", "$.tensors.x.split", "$.tensors.y.map", "$.operators[0].inputs"} <= paths
    assert not any(path.startswith(("$.tensors.x.shape[", "$.operators[0].inputs[")) for path in paths)  # unread


# -- what still loads ----------------------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(EXAMPLES_DIR.glob("*.json")), ids=lambda p: p.name)
def test_every_example_still_loads(path: Path) -> None:
    assert isinstance(load_design(path), Design)


def test_a_design_at_the_limits_loads() -> None:
    layout = {"device_matrix": [256, 256], "alias_name": ["a", "b"]}
    tensors = {f"t{i}": {"shape": [256, 256], "layout": "l", "map": ["a", "b"]} for i in range(MAX_TENSORS)}
    design = loads_design(json.dumps({"device_num": MAX_DEVICES, "layouts": {"l": layout}, "tensors": tensors}))
    assert len(design.tensors) == MAX_TENSORS


# -- the CLI and the designer say it in one line -----------------------------------------------
HOSTILE = {
    "matrix": '{"layouts":{"l":{"device_matrix":[65536,65536],"alias_name":["a","b"]}}}',
    "deep": "[" * 3000 + "]" * 3000,
    "digits": '{"device_num": 1' + "0" * 5000 + "}",
    "axes": json.dumps({"layouts": {"l": {"device_matrix": [2] * 4096, "alias_name": [f"a{i}" for i in range(4096)]}}}),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("command", ["preview", "generate"])
def test_cli_reports_hostile_designs_in_one_line(tmp_path: Path, capsys: Any, kind: str, command: str) -> None:
    path = tmp_path / f"{kind}.json"
    path.write_text(HOSTILE[kind])
    argv = [command, "--design", str(path)] + (["--out", str(tmp_path / "job")] if command == "generate" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) <= 3
    assert not (tmp_path / "job").exists()


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_designer_load_from_folder_lists_problems(tmp_path: Path, kind: str) -> None:
    (tmp_path / f"{kind}.json").write_text(HOSTILE[kind])
    design, problems = load_from_folder(tmp_path, f"{kind}.json")
    assert design is None
    assert problems and all(p.startswith("$") for p in problems)


# -- fuzzing: any input is a Design or a DesignError ---------------------------------------------
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)
_KEYS = [
    "shardscope_design",
    "name",
    "device_num",
    "layouts",
    "tensors",
    "operators",
    "loss",
    "repeat",
    "device_matrix",
    "alias_name",
    "rank_list",
    "shape",
    "dtype",
    "layout",
    "map",
    "split",
    "role",
    "type",
    "inputs",
    "strategy",
    "out_strategy",
    "perm",
    "axis",
    "eps",
    "count",
    "first",
    "last",
    "carry",
]


def _load(value: Any) -> None:
    for strict in (False, True):
        try:
            result = design_from_dict(value, strict=strict)
        except DesignError as exc:
            assert exc.problems and all(p.path.startswith("$") for p in exc.problems)
        else:
            assert isinstance(result, Design)
            design_from_dict(design_to_dict(result), strict=False)  # what was read can be written and re-read


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json)
def test_fuzz_any_json_value(value: Any) -> None:
    _load(value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutated_examples(data: st.DataObject) -> None:
    """Valid designs with one subtree replaced by random JSON: reaches deep into the reader."""
    path = data.draw(st.sampled_from(sorted(EXAMPLES_DIR.glob("*.json"))))
    design = json.loads(path.read_text())
    for _ in range(data.draw(st.integers(1, 3))):
        node = design
        while isinstance(node, dict | list) and node and data.draw(st.booleans()):
            key = data.draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
            if not isinstance(node[key], dict | list) or not node[key]:
                break
            node = node[key]
        if isinstance(node, dict):
            node[data.draw(st.sampled_from([*_KEYS, *node]))] = data.draw(_json)
        elif isinstance(node, list) and node:
            node[data.draw(st.integers(0, len(node) - 1))] = data.draw(_json)
    _load(design)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.text(alphabet='[]{}",:0123456789.eE-+ \\ntruefalsn', max_size=200))
def test_fuzz_any_text(text: bytes | str) -> None:
    try:
        loads_design(text)
    except DesignError as exc:
        assert exc.problems


# -- the designer page: upload and load-from-folder show the problems, never an exception box ------
PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "designer.py")
UPLOADS = {**HOSTILE, "oversized": " " * (MAX_DESIGN_BYTES + 1)}


def _page_text(at: Any) -> str:
    return "\n".join(str(e.value) for kind in ("error", "success", "markdown") for e in getattr(at, kind))


def test_designer_upload_and_folder_load_of_hostile_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path))
    at = AppTest.from_file(PAGE, default_timeout=90)
    at.run()
    before = at.session_state["design"]
    expected = {
        "matrix": "4,294,967,296 devices",
        "deep": f"nests deeper than {MAX_DEPTH} levels",
        "digits": "a number of 5,001 characters",
        "axes": "device_matrix has 4,096 entries",
        "oversized": f"may be at most {MAX_DESIGN_BYTES:,}",
    }
    for kind, text in UPLOADS.items():
        at.file_uploader(key="designer_upload").set_value((f"{kind}.json", text.encode(), "application/json"))
        at.run()
        assert not at.exception, at.exception
        assert f"Could not load {kind}.json" in _page_text(at)
        assert expected[kind] in _page_text(at)
    folder = tmp_path / "designs"
    folder.mkdir()
    (folder / "deep.json").write_text(HOSTILE["deep"])
    at.run()
    at.selectbox(key="designer_ws_pick").set_value("deep.json")
    at.button(key="designer_ws_load").click()
    at.run()
    assert not at.exception, at.exception
    assert "Could not load deep.json" in _page_text(at) and expected["deep"] in _page_text(at)
    assert at.session_state["design"] == before
