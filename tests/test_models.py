"""The model library: parameter counts, designs the strict reader and the operator rules accept, the
strategies MindFormers sets, every bad value refused with its value, and the `model` command."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.__main__ import main
from core.cli.model import dtype_arg, positive_int, widths_arg
from core.models import MODELS, ModelError, design_parameter_count, weight_layers
from core.models.llama import LlamaConfig, LlamaRecipe, llama_design, llama_parameter_count, llama_problems
from core.models.mlp import MlpConfig, MlpRecipe, mlp_design, mlp_parameter_count
from core.sharding.design import Design, design_from_dict, design_to_dict, load_design
from core.sharding.operators import analyze_design
from core.workspace import EXAMPLES_DIR

LLAMA_7B = LlamaConfig(hidden=4096, heads=32, ffn=11008, seq=2048, batch=8, layers=32, vocab=32000)
LLAMA2_70B = LlamaConfig(hidden=8192, heads=64, ffn=28672, seq=4096, batch=8, layers=80, vocab=32000, kv_heads=8)
TINY = LlamaConfig(hidden=64, heads=8, ffn=128, seq=16, batch=8, layers=2, vocab=128, kv_heads=4, dtype="float32")
BLOCK_WEIGHTS = {"attention_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w3", "w2"}
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def comms(design: Design) -> list[tuple[str, str, tuple[str, ...]]]:
    """(operator, kind, axes) of every collective that moves bytes."""
    return [(a.name, c.kind, c.axes) for a in analyze_design(design) for c in a.communications if c.bytes_per_rank]


def strategy_maps(design: Design, op: str) -> list[tuple[object, ...]]:
    return [s.map for s in design.operator(op).strategy or ()]


def assert_clean(design: Design) -> None:
    """Strict round trip through the design file and zero analysis problems."""
    assert design_from_dict(json.loads(json.dumps(design_to_dict(design)))) == design
    problems = [(a.name, p) for a in analyze_design(design) for p in a.problems]
    assert problems == []


# ---------------------------------------------------------------------------------------------
# parameter counts
# ---------------------------------------------------------------------------------------------
def test_published_parameter_counts() -> None:
    assert llama_parameter_count(LLAMA_7B) == 6_738_415_616
    assert llama_parameter_count(LLAMA2_70B) == 68_976_648_192


@pytest.mark.parametrize(("config", "recipe"), [(LLAMA_7B, LlamaRecipe(2, 4)), (LLAMA2_70B, LlamaRecipe(8, 8, True))])
def test_the_design_counts_what_the_closed_form_says(config: LlamaConfig, recipe: LlamaRecipe) -> None:
    assert design_parameter_count(llama_design(config, recipe)) == llama_parameter_count(config)


def test_closed_form_term_by_term() -> None:
    h, kv, f, v, layers = 64, 32, 128, 128, 2
    expected = v * h + layers * (2 * h * h + 2 * h * kv + 3 * h * f + 2 * h) + h + h * v
    assert llama_parameter_count(TINY) == expected == 90_432


def test_weights_read_inside_and_outside_the_block_count_once() -> None:
    design = llama_design(TINY, LlamaRecipe())
    assert {n for n in design.tensors if weight_layers(design, n) == TINY.layers} == BLOCK_WEIGHTS
    assert weight_layers(design, "embedding") == weight_layers(design, "lm_head") == 1
    # tie the head to an in-block weight's reader: a weight shared across the block boundary exists once
    ops = [replace(op, inputs=(op.inputs[0], "ffn_norm")) if op.name == "final_rms" else op for op in design.operators]
    tied = replace(design, operators=tuple(ops))
    assert weight_layers(tied, "ffn_norm") == 1


# ---------------------------------------------------------------------------------------------
# the decoder's structure and strategies
# ---------------------------------------------------------------------------------------------
def test_tensors_roles_and_repeat_block_follow_the_contract() -> None:
    design = llama_design(LLAMA2_70B, LlamaRecipe(8, 8))
    h, kv = 8192, 8 * 128
    shapes = {n: t.shape for n, t in design.tensors.items()}
    assert shapes == {
        "tokens": (8, 4096),
        "embedding": (32000, h),
        "attention_norm": (h,),
        "wq": (h, h),
        "wk": (h, kv),
        "wv": (h, kv),
        "wo": (h, h),
        "ffn_norm": (h,),
        "w1": (h, 28672),
        "w3": (h, 28672),
        "w2": (28672, h),
        "final_norm": (h,),
        "lm_head": (h, 32000),
    }
    assert design.tensors["tokens"].dtype == "int32" and design.tensor_role("tokens") == "input"
    assert all(
        design.tensor_role(n) == "weight" and t.dtype == "bfloat16" for n, t in design.tensors.items() if n != "tokens"
    )
    assert design.device_num == 64 and design.loss == "cross_entropy"
    assert design.repeat is not None and (design.repeat.count, design.repeat.carry) == (80, "embed")
    assert design.operators[-1].name == "logits"


def test_shapes_through_grouped_query_attention() -> None:
    out = {a.name: a.output_shape for a in analyze_design(llama_design(TINY, LlamaRecipe(2, 4)))}
    b, s, n, kv, d = 8, 16, 8, 4, 8
    assert out["q_t"] == (b, n, s, d) and out["k_t"] == out["v_t"] == (b, kv, s, d)
    assert out["q_groups"] == (b, kv, 2 * s, d)
    assert out["scores"] == out["probs"] == (b, kv, 2 * s, s)
    assert out["context_heads"] == (b, n, s, d) and out["context_t"] == (b, s, n, d)
    assert out["attn_residual"] == out["ffn_residual"] == (b * s, 64)
    assert out["logits"] == (b, s, 128)


def test_plain_multi_head_attention_has_no_group_reshapes() -> None:
    names = {op.name for op in llama_design(LLAMA_7B, LlamaRecipe(1, 8)).operators}
    assert "q_groups" not in names and "context_heads" not in names and "scores" in names


def test_megatron_column_and_row_splits_as_mindformers_sets_them() -> None:
    design = llama_design(LLAMA_7B, LlamaRecipe(2, 4))
    for op in ("q", "k", "v", "gate", "up", "logits_2d"):
        assert strategy_maps(design, op) == [("dp", "None"), ("None", "mp")], op
    for op in ("attn_out", "down"):
        assert strategy_maps(design, op) == [("dp", "mp"), ("mp", "None")], op
    for op in ("scores", "probs", "context", "context_t"):
        assert all(m == ("dp", "mp", "None", "None") for m in strategy_maps(design, op)), op
    assert strategy_maps(design, "q_t") == [("dp", "None", "mp", "None")]
    assert design.operator("scores").transpose_b
    assert strategy_maps(design, "embed") == [("None", "None"), ("dp",)]
    # every layer: one AllReduce over mp after each row-split MatMul, nothing else
    assert comms(design) == [("attn_out", "AllReduce", ("mp",)), ("down", "AllReduce", ("mp",))]


def test_sequence_parallel_reduce_scatters_and_splits_norms_over_dp_times_mp() -> None:
    design = llama_design(TINY, LlamaRecipe(2, 4, sp=True))
    for op in ("attn_rms", "ffn_rms"):
        assert strategy_maps(design, op) == [(("dp", "mp"), "None"), ("None",)]
    for op in ("attn_out", "down"):
        out = design.operator(op).out_strategy
        assert out is not None and out.map == (("dp", "mp"), "None")
    found = comms(design)
    assert ("attn_out", "ReduceScatter", ("mp",)) in found and ("down", "ReduceScatter", ("mp",)) in found
    assert not any(kind == "AllReduce" for _, kind, _ in found)
    gathered = {op for op, _, axes in found if axes == ("mp",)}
    assert {"q", "k", "v", "gate", "up"} <= gathered  # the row-split stream is gathered before column splits


def test_without_model_parallel_nothing_is_communicated() -> None:
    assert comms(llama_design(TINY, LlamaRecipe(8, 1))) == []


@SETTINGS
@given(
    heads_kv=st.sampled_from([(4, 4), (4, 2), (8, 2), (8, 4), (8, 8)]),
    head_dim=st.sampled_from([4, 8]),
    ffn_mult=st.sampled_from([2, 4]),
    seq=st.sampled_from([2, 4, 8]),
    layers=st.integers(1, 4),
    recipe=st.sampled_from([(1, 1), (2, 1), (1, 2), (2, 2), (4, 2), (2, 4), (1, 4), (8, 1)]),
    sp=st.booleans(),
)
def test_every_valid_config_builds_a_clean_design(
    heads_kv: tuple[int, int], head_dim: int, ffn_mult: int, seq: int, layers: int, recipe: tuple[int, int], sp: bool
) -> None:
    heads, kv = heads_kv
    dp, mp = recipe
    hidden = heads * head_dim
    config = LlamaConfig(hidden, heads, hidden * ffn_mult, seq, 8, layers, 64, kv_heads=kv, dtype="float32")
    r = LlamaRecipe(dp, mp, sp)
    if llama_problems(config, r):
        assert kv % mp or heads % mp or (sp and (8 * seq) % (dp * mp))
        return
    design = llama_design(config, r)
    assert_clean(design)
    assert design_parameter_count(design) == llama_parameter_count(config)


def test_build_and_analysis_of_the_70b_64_card_design_are_fast() -> None:
    started = time.perf_counter()
    design = llama_design(LLAMA2_70B, LlamaRecipe(8, 8, sp=True))
    analyses = analyze_design(design)
    assert time.perf_counter() - started < 5.0  # about 0.03 s here; generous for a loaded machine
    assert all(a.valid for a in analyses)


# ---------------------------------------------------------------------------------------------
# bad values: refused with the offending value
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("changes", "recipe", "field", "words"),
    [
        ({"hidden": 100, "heads": 3}, LlamaRecipe(), "heads", ["heads 3", "hidden 100"]),
        ({"kv_heads": 3}, LlamaRecipe(), "kv_heads", ["kv_heads 3", "heads 8"]),
        ({}, LlamaRecipe(1, 16), "mp", ["mp 16", "heads 8"]),
        ({"heads": 8, "kv_heads": 2}, LlamaRecipe(1, 4), "mp", ["mp 4", "kv_heads 2"]),
        ({"ffn": 130}, LlamaRecipe(1, 4), "mp", ["mp 4", "ffn 130"]),
        ({"vocab": 130}, LlamaRecipe(1, 4), "mp", ["mp 4", "vocab 130"]),
        ({}, LlamaRecipe(3, 1), "dp", ["dp 3", "batch 8"]),
        ({"seq": 1, "batch": 2}, LlamaRecipe(2, 4, sp=True), "sp", ["2 tokens", "8"]),
        ({"layers": 0}, LlamaRecipe(), "layers", ["layers", "0"]),
        ({"hidden": -64}, LlamaRecipe(), "hidden", ["hidden", "-64"]),
        ({"dtype": "int8"}, LlamaRecipe(), "dtype", ["'int8'"]),
    ],
)
def test_bad_values_name_the_field_and_value(
    changes: dict[str, object], recipe: LlamaRecipe, field: str, words: list[str]
) -> None:
    config = LlamaConfig(**{**TINY.__dict__, **changes})  # type: ignore[arg-type]
    with pytest.raises(ModelError) as caught:
        llama_design(config, recipe)
    problem = next(p for p in caught.value.problems if p.field == field)
    for word in words:
        assert word in problem.message


@SETTINGS
@given(hidden=st.integers(1, 10_000), heads=st.integers(1, 200))
def test_heads_not_dividing_hidden_is_always_refused(hidden: int, heads: int) -> None:
    config = LlamaConfig(hidden, heads, 64, 4, 1, 1, 64, dtype="float32")
    problems = llama_problems(config, LlamaRecipe())
    divides = hidden % heads == 0
    assert divides == (not any(p.field == "heads" for p in problems))
    if not divides:
        assert any(f"heads {heads} does not divide hidden {hidden}" in p.message for p in problems)


# ---------------------------------------------------------------------------------------------
# the MLP (seed 004)
# ---------------------------------------------------------------------------------------------
def test_mlp_defaults_are_seed_004s_network() -> None:
    seed = load_design(EXAMPLES_DIR / "seed004_mlp.json")
    design = mlp_design(MlpConfig(), MlpRecipe(2, 4))
    assert {n: (t.shape, t.dtype) for n, t in design.tensors.items()} == {
        n: (t.shape, t.dtype) for n, t in seed.tensors.items()
    }
    assert [(o.name, o.type, o.inputs) for o in design.operators] == [
        (o.name, o.type, o.inputs) for o in seed.operators
    ]
    assert design.loss == seed.loss == "cross_entropy"
    assert mlp_parameter_count(MlpConfig()) == design_parameter_count(design) == design_parameter_count(seed) == 668_672


@pytest.mark.parametrize("recipe", [MlpRecipe(1, 1), MlpRecipe(8, 1), MlpRecipe(2, 4), MlpRecipe(1, 8)])
def test_mlp_column_then_row_split(recipe: MlpRecipe) -> None:
    design = mlp_design(MlpConfig(hidden=(512, 256, 128)), recipe)
    assert_clean(design)
    assert strategy_maps(design, "matmul1") == [("dp", "None"), ("None", "mp")]
    assert strategy_maps(design, "matmul2") == [("dp", "mp"), ("mp", "None")]
    assert strategy_maps(design, "matmul4") == [("dp", "mp"), ("mp", "None")]  # 10 classes after a column split
    expected = [] if recipe.mp == 1 else [("matmul2", "AllReduce", ("mp",)), ("matmul4", "AllReduce", ("mp",))]
    assert comms(design) == expected


def test_mlp_classifier_mp_does_not_divide_stays_whole() -> None:
    design = mlp_design(MlpConfig(), MlpRecipe(1, 4))
    assert strategy_maps(design, "matmul3") == [("dp", "None"), ("None", "None")]
    assert_clean(design)


@pytest.mark.parametrize(
    ("config", "recipe", "words"),
    [
        (MlpConfig(batch=30), MlpRecipe(4, 1), ["dp 4", "batch 30"]),
        (MlpConfig(hidden=(512, 100)), MlpRecipe(1, 8), ["mp 8", "hidden width 2 100"]),
        (MlpConfig(hidden=()), MlpRecipe(), ["hidden widths"]),
        (MlpConfig(hidden=(0,)), MlpRecipe(), ["hidden width 1", "0"]),
        (MlpConfig(dtype="int32"), MlpRecipe(), ["'int32'"]),
    ],
)
def test_mlp_bad_values(config: MlpConfig, recipe: MlpRecipe, words: list[str]) -> None:
    with pytest.raises(ModelError) as caught:
        mlp_design(config, recipe)
    for word in words:
        assert word in str(caught.value)


# ---------------------------------------------------------------------------------------------
# registry and shipped examples
# ---------------------------------------------------------------------------------------------
def test_registry_lists_both_models() -> None:
    assert set(MODELS) == {"llama", "mlp"}
    entry = MODELS["llama"]
    assert entry.parameter_count(entry.config_type(64, 8, 128, 4, 1, 1, 64)) > 0
    assert MODELS["mlp"].problems(MlpConfig(), MlpRecipe()) == []


@pytest.mark.parametrize(
    ("file", "config", "recipe"),
    [
        ("llama_tiny_cpu.json", TINY, LlamaRecipe(2, 4)),
        ("llama7b_8cards.json", LLAMA_7B, LlamaRecipe(2, 4)),
        ("llama2_70b_64cards.json", LLAMA2_70B, LlamaRecipe(8, 8, sp=True)),
    ],
)
def test_shipped_examples_are_the_generators_output(file: str, config: LlamaConfig, recipe: LlamaRecipe) -> None:
    shipped = load_design(EXAMPLES_DIR / file)
    assert shipped == llama_design(config, recipe, name=Path(file).stem)
    assert design_parameter_count(shipped) == llama_parameter_count(config)
    assert all(a.valid for a in analyze_design(shipped))


# ---------------------------------------------------------------------------------------------
# the `model` command
# ---------------------------------------------------------------------------------------------
LLAMA_ARGS = [
    *["--hidden", "4096", "--heads", "32", "--ffn", "11008", "--seq", "2048"],
    *["--batch", "8", "--layers", "32", "--vocab", "32000"],
]


def test_cli_llama_writes_the_design_and_counts_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d.json"
    assert main(["model", "llama", *LLAMA_ARGS, "--dp", "2", "--mp", "4", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "parameters: 6,738,415,616"
    assert int(lines[0].split(": ")[1].replace(",", "")) == 6_738_415_616
    assert "analysis: 0 problem(s)" in "\n".join(lines)
    design = load_design(out)
    assert design.device_num == 8 and design.tensors["wq"].dtype == "bfloat16"


def test_cli_llama_70b_gqa_sp(capsys: pytest.CaptureFixture[str]) -> None:
    argv = "--hidden 8192 --heads 64 --kv-heads 8 --ffn 28672 --seq 4096 --batch 8 --layers 80 --vocab 32000"
    assert main(["model", "llama", *argv.split(), "--dp", "8", "--mp", "8", "--sp"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "parameters: 68,976,648,192" and "ReduceScatter" in text


def test_cli_mlp_defaults_to_the_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "mlp", "--dp", "2", "--mp", "4", "--dtype", "fp32", "--out", str(tmp_path / "m.json")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "parameters: 668,672"
    assert load_design(tmp_path / "m.json").tensors["fc1_weight"].shape == (784, 512)


def _cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert "Traceback" not in captured.err and len(captured.err.strip().splitlines()) == 1
    return captured.err


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        (["--heads", "30"], ["heads 30", "hidden 4096"]),
        (["--kv-heads", "5"], ["kv_heads 5", "heads 32"]),
        (["--mp", "3"], ["mp 3", "heads 32"]),
        (["--dp", "3"], ["dp 3", "batch 8"]),
        (["--vocab", "32001", "--mp", "2"], ["mp 2", "vocab 32001"]),
        (["--hidden", "-1"], ["'-1'"]),
        (["--layers", "zero"], ["'zero'"]),
        (["--dtype", "int8"], ["'int8'"]),
    ],
)
def test_cli_bad_values_are_one_line(changes: list[str], words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    err = _cli_error(["model", "llama", *LLAMA_ARGS, *changes], capsys)
    assert err.startswith("error: ")
    for word in words:
        assert word in err


def test_cli_unwritable_out_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    err = _cli_error(["model", "mlp", "--out", str(blocker / "d.json")], capsys)
    assert "cannot write" in err


@SETTINGS
@given(n=st.integers(-(10**6), 10**12))
def test_positive_int_accepts_exactly_the_whole_numbers_from_one(n: int) -> None:
    if n >= 1:
        assert positive_int(str(n)) == n == positive_int(f"{n:,}")
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=repr(str(n))):
            positive_int(str(n))


@SETTINGS
@given(text=st.text(max_size=12))
def test_positive_int_never_crashes_on_text(text: str) -> None:
    try:
        assert positive_int(text) >= 1
    except argparse.ArgumentTypeError as exc:
        assert repr(text) in str(exc)


@SETTINGS
@given(widths=st.lists(st.integers(1, 10**6), min_size=1, max_size=6))
def test_widths_round_trip(widths: list[int]) -> None:
    assert widths_arg(",".join(map(str, widths))) == tuple(widths)


@SETTINGS
@given(text=st.sampled_from(["bf16", "BF16", "fp16", "fp32", "float32", "bfloat16", "fp64"]) | st.text(max_size=8))
def test_dtype_arg_gives_a_float_dtype_or_refuses(text: str) -> None:
    try:
        assert dtype_arg(text) in ("bfloat16", "float16", "float32", "float64")
    except argparse.ArgumentTypeError as exc:
        assert "not a float type" in str(exc)


@SETTINGS
@given(heads=st.integers(1, 64), mp=st.integers(1, 16))
def test_cli_mp_must_divide_heads(heads: int, mp: int) -> None:
    ffn, vocab = 40320, 40320  # 8!: every mp up to 16 but 11 and 13 divides them
    argv = ["model", "llama", *f"--hidden {heads * 8} --heads {heads} --ffn {ffn} --vocab {vocab} --mp {mp}".split()]
    argv += ["--seq", "4", "--batch", "1", "--layers", "1"]
    refused = heads % mp != 0 or ffn % mp != 0 or vocab % mp != 0
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == (2 if refused else 0)


def test_the_published_llama_shapes_are_one_table_for_the_model_library_and_the_planner() -> None:
    """Meta's LLaMA-2 config.json values, written once: 7B has 6.74 B parameters, 70B uses 8 KV heads."""
    from app.model_picker import LLAMA_PRESETS
    from core.models.llama import PUBLISHED_SHAPES

    seven = PUBLISHED_SHAPES["LLaMA-2 7B"]
    config = LlamaConfig(**{k: seven[k] for k in ("hidden", "heads", "ffn", "layers", "vocab", "seq")}, batch=1)
    assert llama_parameter_count(config) == 6_738_415_616
    for field in ("hidden", "heads", "ffn", "layers", "vocab"):
        assert LLAMA_PRESETS["LLaMA-7B on 8 cards"][field] == seven[field]
        assert LLAMA_PRESETS["LLaMA-2-70B on 64 cards"][field] == PUBLISHED_SHAPES["LLaMA-2 70B"][field]
    assert LLAMA_PRESETS["LLaMA-2-70B on 64 cards"]["kv_heads"] == 8
