"""Untrusted YAML is bounded before it is used (issue 31 item 1, and its YAML-integer findings).

A 600-byte MindFormers config of nested aliases ("billion laughs") took `plan`, `launch` and the Planner down;
5,000-digit or huge hex integers gave tracebacks; base-60 integers converted in quadratic time; UTF-16 said
only "ReaderError". Each is refused here in one line naming the file and the key, through the one loader
(core.plan.safeyaml). Speed and memory are measured in benchmarks/bench_yaml.py, not asserted.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from core.plan import mfconfig
from core.plan.mfconfig import ConfigError, config_from_bytes, parse_config, read_config
from core.plan.safeyaml import MAX_INT_DIGITS, MAX_VALUES, YamlError, cell, decode_yaml, describe, load_mapping
from core.run.mindformers import parse_parallel_config, read_parallel_config
from tests.helpers import bomb

REPO = Path(__file__).resolve().parents[1]
FIXTURE = (
    REPO
    / "tests"
    / "fixtures"
    / "mindformers"
    / "mindspore-lab__mindformers@v1.3.0__configs__llama2__pretrain_llama2_7b_bf16.yaml"
)
MODEL = (
    "model:\n  model_config: {hidden_size: 64, num_layers: 2, num_heads: 4, vocab_size: 9, seq_length: 8}\n"
    "parallel_config: {data_parallel: 2}\n"
)


def with_line(old: str, new: str) -> str:
    """The real 7B config with one line changed."""
    text = FIXTURE.read_text(encoding="utf-8")
    assert old in text
    return text.replace(old, new, 1)


def one_line(message: str, *parts: str) -> None:
    assert "\n" not in message and len(message) < 400, message
    for part in parts:
        assert part in message, (part, message)


# --- the alias bomb -------------------------------------------------------------------------------------
def test_the_level_8_bomb_is_refused_by_the_planner_in_one_line_naming_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(8))
    assert path.stat().st_size < 1000
    with pytest.raises(ConfigError) as info:
        read_config(path)
    one_line(str(info.value), str(path), "line 5", "key l4[1]", f"more than {MAX_VALUES:,} values")


def test_the_bomb_is_refused_by_the_launchers_reader(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(8))
    with pytest.raises(ValueError) as info:
        read_parallel_config(path)
    one_line(str(info.value), "key l4[1]", "values")
    with pytest.raises(ConfigError):
        parse_parallel_config(bomb(9))


def test_a_small_alias_bomb_below_the_bound_is_not_printed_whole() -> None:
    # level 3 of width 6 expands to ~1,500 values: read, and the wrong type is named with a short form, not 8 KB of text
    with pytest.raises(ConfigError) as info:
        parse_config(bomb(3, width=6))
    one_line(str(info.value), "model_config.hidden_size must be a whole number >= 1, got a list of 6 items [[[")
    found = parse_parallel_config(bomb(3, width=6))
    assert found["data_parallel"].startswith("a list of 6 items") and len(found["data_parallel"]) < 200


def test_real_configs_aliases_still_read() -> None:
    # MindFormers' configs alias their dataset block (`dataset_config: *train_dataset`)
    assert "*train_dataset" in FIXTURE.read_text(encoding="utf-8")
    assert read_config(FIXTURE).recipe.dp == 8
    data = load_mapping(FIXTURE.read_text(encoding="utf-8"))
    assert data["train_dataset_task"]["dataset_config"] is data["train_dataset"]


def test_an_alias_inside_its_own_value_and_deep_nesting_are_refused() -> None:
    with pytest.raises(YamlError, match=r"key a\[0\]\): an alias refers to the value that holds it"):
        load_mapping("a: &a [*a]\n")
    with pytest.raises(YamlError, match="nested more than 64 levels deep"):
        load_mapping("a: " + "[" * 100_000 + "]" * 100_000)  # libyaml's composer crashes on this (C recursion)


# --- integers and numbers -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("old", "new", "parts"),
    [
        (
            "data_parallel: 8",
            "data_parallel: " + "9" * 5000,
            ["line 91", "parallel_config.data_parallel", "5,000 digits"],
        ),
        ("data_parallel: 8", "data_parallel: 0x" + "f" * 20_000, ["parallel_config.data_parallel", "20,002 digits"]),
        ('max_device_memory: "59GB"', "max_device_memory: " + "9" * 5000, ["context.max_device_memory", "digits"]),
        (
            'max_device_memory: "59GB"',
            "max_device_memory: '999999999999999999999GB'",
            ["context.max_device_memory '999999999999999999999GB' is not a memory size like '58GB'"],
        ),
        ('max_device_memory: "59GB"', "max_device_memory: [1, 2]", ["context.max_device_memory a list of 2 items"]),
        (
            "data_parallel: 8",
            "data_parallel: 1:1:1",
            ["parallel_config.data_parallel must be a whole number", "'1:1:1'"],
        ),
        ("data_parallel: 8", "data_parallel: !!int 1:1:1", ["line 91", "'1:1:1' is not an integer"]),
    ],
    ids=["5000-digits", "huge-hex", "huge-int-memory", "huge-memory-text", "list-memory", "base-60", "base-60-tagged"],
)
def test_numbers_are_bounded_and_named(tmp_path: Path, old: str, new: str, parts: list[str]) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(with_line(old, new))
    with pytest.raises(ConfigError) as info:
        read_config(path)
    one_line(str(info.value), str(path), *parts)


def test_base_60_and_other_yaml_11_only_forms_stay_strings() -> None:
    long = ":".join(["1"] * 200_000)  # 400 KB: YAML 1.1 converted it in quadratic time
    text = f"a: 1:1:1\nb: 1_000\nc: 010\nd: 0b11\ne: 0o17\nf: 1e5\ng: 2001-01-01\nh: {long}\n"
    expected = {"a": "1:1:1", "b": "1_000", "c": "010", "d": "0b11", "e": "0o17", "f": "1e5", "g": "2001-01-01"}
    assert load_mapping(text) == expected | {"h": long}
    # forms YAML 1.1 (MindFormers' PyYAML) and 1.2 read alike are numbers, as PyYAML reads them
    shared = "a: 12\nb: -3\nc: 0x1f\nd: 1.5\ne: .5e-3\nf: .inf\ng: 1.0e+3\nh: true\ni: ~\nj: yes\n"
    assert load_mapping(shared) == yaml.safe_load(shared)


def test_the_launcher_names_a_base_60_factor(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("parallel_config:\n  data_parallel: 1:1:1\n")
    with pytest.raises(ValueError, match=r"parallel_config.data_parallel is '1:1:1': a positive whole number"):
        read_parallel_config(path)


# --- encodings ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("encode", "parts"),
    [
        (lambda t: t.encode("utf-16"), ["is UTF-16 text", "save it as UTF-8"]),
        (lambda t: t.encode("utf-32"), ["is UTF-32 text"]),
        (lambda t: t.encode("utf-16-le"), ["holds NUL characters (line 1)"]),
        (lambda t: ("# é\n" + t).encode("latin-1"), ["is not UTF-8 text: byte 0xe9 at line 1"]),
    ],
    ids=["utf-16-bom", "utf-32-bom", "utf-16-no-bom", "latin-1"],
)
def test_an_encoding_other_than_utf8_is_one_line_naming_the_file(tmp_path: Path, encode: Any, parts: list[str]) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(encode(FIXTURE.read_text(encoding="utf-8")))
    with pytest.raises(ConfigError) as info:
        read_config(path)
    one_line(str(info.value), f"MindFormers config {path}", *parts)
    with pytest.raises(ValueError) as launch:
        read_parallel_config(path)
    one_line(str(launch.value), parts[0])


def test_utf8_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(FIXTURE.read_text(encoding="utf-8").encode("utf-8-sig"))
    assert read_config(path).recipe.dp == 8
    assert read_parallel_config(path)["data_parallel"] == 8


def test_an_unprintable_character_names_its_line() -> None:
    with pytest.raises(YamlError, match=r"^not valid YAML at line 2: the character U\+0001 is not allowed"):
        load_mapping("a: 1\nb: \x01\n")


# --- properties -----------------------------------------------------------------------------------------
KEYS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**MAX_INT_DIGITS) + 1, 10**MAX_INT_DIGITS - 1)
    | st.floats(allow_nan=False)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=12
)


@settings(max_examples=300)
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_any_small_mapping_round_trips(data: dict[str, Any]) -> None:
    assert load_mapping(yaml.safe_dump(data)) == data
    assert load_mapping(yaml.safe_dump(data, default_flow_style=True)) == data


@settings(max_examples=300)
@given(st.integers(-(10**60), 10**60) | st.integers().map(lambda n: n * 10**4000), st.sampled_from(["dec", "hex"]))
def test_an_integer_reads_exactly_when_short_and_is_refused_by_name_when_long(n: int, form: str) -> None:
    text = str(n) if form == "dec" else hex(abs(n))
    digits = len(text.lstrip("-"))
    if digits <= MAX_INT_DIGITS:
        assert load_mapping(f"k:\n  v: {text}\n") == {"k": {"v": n if form == "dec" else abs(n)}}
    else:
        with pytest.raises(YamlError) as info:
            load_mapping(f"k:\n  v: {text}\n")
        one_line(str(info.value), "line 2", "(key k.v)", f"an integer of {digits:,} digits")


@settings(max_examples=100)
@given(st.integers(1, 9), st.integers(1, 9))
def test_aliases_read_when_their_expansion_is_small_and_are_refused_when_large(levels: int, width: int) -> None:
    sizes = [1 + width]  # l0: the list and its scalars; each level: its list and `width` uses of the last
    for _ in range(levels):
        sizes.append(1 + width * sizes[-1])
    # the root, each level's key and value, model (13 values and a use of the last level), parallel_config (3 and one)
    total = 1 + sum(1 + size for size in sizes) + 16 + 2 * sizes[-1]
    text = bomb(levels, width)
    if total > MAX_VALUES:
        with pytest.raises(YamlError, match="values \\(each alias counted at every use\\)"):
            load_mapping(text)
    else:
        data = load_mapping(text)
        value = data[f"l{levels}"]
        for _ in range(levels):
            assert len(value) == width
            value = value[0]
        assert value == ["lol"] * width


@given(VALUES | st.integers().map(lambda n: n * 10**5000) | st.text(min_size=1000, max_size=2000))
def test_describe_is_always_short_and_one_line(value: Any) -> None:
    text = describe(value)
    assert "\n" not in text and len(text) <= 160
    assert len(cell(value)) <= 80  # a table cell (the unsupported-keys list)


@settings(max_examples=300)
@given(st.binary(max_size=300) | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_any_bytes_read_or_are_refused_in_one_line(data: bytes) -> None:
    try:
        config_from_bytes(data, "MindFormers config x.yaml")
    except ConfigError as exc:
        assert "\n" not in str(exc) and "x.yaml" in str(exc)


def test_decode_keeps_utf8_text() -> None:
    assert decode_yaml("a: é\n".encode(), "x") == "a: é\n"
    assert math.isinf(load_mapping("a: -.inf\n")["a"])


# --- the CLI: one line, exit 2, no traceback ------------------------------------------------------------
def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SHARDSCOPE_WORKSPACE": str(cwd / "ws")}
    return subprocess.run(
        [sys.executable, "-m", "core", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_cli_plan_and_launch_refuse_the_bomb_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(8))
    script = tmp_path / "train.py"
    script.write_text("print('never run')\n")
    plan = _cli("plan", "--mindformers-config", str(path), cwd=tmp_path)
    launch = _cli("launch", "--script", str(script), "--devices", "8", "--mindformers-config", str(path), cwd=tmp_path)
    for done in (plan, launch):
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        one_line(done.stderr.strip(), "error:", str(path), "key l4[1]", f"more than {MAX_VALUES:,} values")
    assert not (tmp_path / "ws" / "runs").exists() or not any((tmp_path / "ws" / "runs").iterdir())


def test_cli_plan_refuses_a_5000_digit_integer_and_utf16_in_one_line(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text(with_line("data_parallel: 8", "data_parallel: " + "9" * 5000))
    utf16 = tmp_path / "utf16.yaml"
    utf16.write_bytes(FIXTURE.read_text(encoding="utf-8").encode("utf-16"))
    for path, part in ((big, "5,000 digits"), (utf16, "is UTF-16 text")):
        done = _cli("plan", "--mindformers-config", str(path), cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        one_line(done.stderr.strip(), str(path), part)


def test_cli_diagnose_with_the_bomb_reports_why_nothing_was_planned(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(8))
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "worker_0.log").write_text(
        "".join(
            f"{{ Epoch:[  1/  1], step:[ {s:4d}/  10], loss: 2.0, per_step_time: 100ms, lr: 1e-05, "
            "overflow cond: False, loss_scale: 1024.0, global_norm: [1.5]\n"
            for s in range(1, 11)
        )
    )
    done = _cli("diagnose", "--mindformers-config", str(path), str(logs), cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr + done.stdout, done.stderr
    (planned,) = [line for line in done.stdout.splitlines() if line.startswith("device memory planned")]
    one_line(planned, "none", "bomb.yaml", "key l4[1]")


# --- the Planner page: a one-line error, and the parse cached by the file's digest ----------------------
@pytest.fixture()
def planner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import streamlit
    from streamlit.testing.v1 import AppTest

    streamlit.cache_data.clear()
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    at = AppTest.from_file(str(REPO / "app" / "main.py"), default_timeout=120)
    at.run()
    at.switch_page("../pages/planner.py")
    at.run()
    at.selectbox(key="planner_source").set_value("a MindFormers YAML").run()
    return at


def test_planner_shows_the_bomb_as_one_line(planner: Any, tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(8))
    planner.text_input(key="planner_yaml_path").set_value(str(path)).run()
    assert not planner.exception, planner.exception
    (error,) = planner.error
    one_line(error.value, "Cannot read the YAML", "bomb.yaml", "key l4[1]", f"more than {MAX_VALUES:,} values")


def test_planner_parses_a_file_once_whatever_the_reruns(
    planner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = mfconfig.config_from_bytes

    def counted(data: bytes, source: str) -> mfconfig.MindFormersConfig:
        calls.append(source)
        return real(data, source)

    monkeypatch.setattr(mfconfig, "config_from_bytes", counted)
    bad = tmp_path / "bomb.yaml"
    bad.write_text(bomb(8))
    for path in (FIXTURE, bad):
        planner.text_input(key="planner_yaml_path").set_value(str(path)).run()
        planner.run()
        planner.run()
    assert not planner.exception, planner.exception
    assert len(calls) == 2 and calls[1].endswith("bomb.yaml")  # three runs each, one parse each
    assert len(planner.error) == 1


def test_every_yaml_read_goes_through_the_bounded_loader() -> None:
    """PyYAML is imported in one module only: a new reader of a user's YAML cannot bypass the bounds."""
    importers = [
        str(path.relative_to(REPO))
        for folder in ("core", "app", "pages")
        for path in (REPO / folder).rglob("*.py")
        if any(
            line.strip().startswith(("import yaml", "from yaml"))
            for line in path.read_text(encoding="utf-8").splitlines()
        )
    ]
    assert importers == ["core/plan/safeyaml.py"]


@pytest.mark.parametrize(
    ("content", "part"),
    [
        (bomb(8), "key l4[1]"),
        (with_line("data_parallel: 8", "data_parallel: 0x" + "f" * 20_000), "20,002 digits"),
        (with_line("data_parallel: 8", "data_parallel: " + "9" * 5000), "5,000 digits"),
    ],
    ids=["bomb", "huge-hex", "5000-digits"],
)
def test_launch_page_shows_a_hostile_config_as_one_line(
    content: str, part: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    from tests.browser import free_port

    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.syspath_prepend(str(REPO))
    config = tmp_path / "config.yaml"
    config.write_text(content)
    script = tmp_path / "run_mindformer.py"
    script.write_text("print('never run')\n")
    page = AppTest.from_file(str(REPO / "pages" / "launch.py"), default_timeout=120)
    page.session_state["launch_port"] = free_port()
    page.run()
    page.text_input(key="own_script").set_value(str(script)).run()
    page.toggle(key="own_mf").set_value(True).run()
    page.text_input(key="own_mf_config").set_value(str(config)).run()
    assert not page.exception, page.exception
    (error,) = [e.value for e in page.error if "MindFormers config" in e.value]
    one_line(error, f"cannot read the MindFormers config {config}", part)


def test_the_loader_stops_reading_where_a_bound_is_crossed() -> None:
    """Counted while composing: a 1 MiB list is dropped after 20,000 values, not parsed whole first (PyYAML's
    pure-Python scanner took 49 s and 400 MB for this list before it could be counted)."""
    from core.plan.safeyaml import BoundedLoader

    text = "a: [" + ",".join(["0"] * 520_000) + "]\n"
    loader = BoundedLoader(text)
    with pytest.raises(yaml.YAMLError, match="more than 20,000 values"):
        loader.get_single_data()
    assert loader.pointer < len(text) // 10
    with pytest.raises(YamlError, match=r"^refused at line 1 \(key a\[19997\]\)"):
        load_mapping(text)


YAML_TOKENS = st.sampled_from(
    [
        *("a", "b", ": ", "- ", "\n", "  ", "[", "]", "{", "}", ", ", "? ", "#c", "'q'", '"q"', "|", ">", "~"),
        *("&x ", "&y ", "*x", "*y", "<<: ", "0", "1:2", "0x1f", "1.5", ".inf", "yes", "2001-01-01", "9" * 40),
        *("!!int ", "!!float ", "!!bool ", "!!timestamp ", "!!binary ", "!!set ", "!!omap ", "!!pairs ", "!!str "),
        *("!!map ", "!!seq ", "!!null ", "!!merge ", "!!python/object ", "!x ", "%YAML 1.1\n", "---\n", "...\n"),
    ]
)


@settings(max_examples=500)
@given(st.lists(YAML_TOKENS, max_size=30).map("".join))
def test_any_yaml_shaped_text_reads_or_is_refused_in_one_line(text: str) -> None:
    """Tags, anchors, merges, flow and block in any order: a mapping, or a YamlError of one line; never
    another exception (before: `!!bool maybe` was a KeyError, `!!timestamp foo` an AttributeError)."""
    try:
        assert isinstance(load_mapping(text, "S"), dict)
    except YamlError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("S: ")
