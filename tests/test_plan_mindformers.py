"""Opening a MindFormers YAML: real configs (tests/fixtures/mindformers, sources in SOURCES.md) give their model,
their recipe and their modelling choices; each config MindFormers documents as running on its cards fits them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.cli import plan as plan_cli
from core.models.llama import LlamaConfig, llama_parameter_count
from core.plan.activations import Recompute
from core.plan.choices import default_choices, with_changes
from core.plan.explore import explore, find_recipe
from core.plan.mfconfig import ConfigError, feed_forward_size, load_yaml, parse_config, read_config
from core.plan.recipes import PlanModel, Recipe
from core.run.mindformers import parse_parallel_config

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "mindformers"
CARD_GB = 64.0  # Atlas 800T A2 / 900 A2 PoDc: 64 GB per NPU (MindFormers' docs, SOURCES.md)


def fixture(part: str) -> Path:
    (path,) = [p for p in FIXTURES.glob("*.yaml") if part in p.name]
    return path


# file part -> (model, recipe) the YAML states
EXPECTED = {
    "pretrain_llama2_7b_bf16": (
        PlanModel(4096, 32, 11008, 32, 32000, 4096, None, "bfloat16"),
        Recipe(8, 1, 1, False, True, Recompute.NONE, 8, 1),
    ),
    "finetune_llama2_13b_bf16": (
        PlanModel(5120, 40, 13824, 40, 32000, 4096, None, "bfloat16"),
        Recipe(8, 1, 1, False, True, Recompute.FULL, 1, 4),
    ),
    "llama2_70b_bf16_32p": (
        PlanModel(8192, 64, 28672, 80, 32000, 4096, 8, "bfloat16"),
        Recipe(1, 4, 8, True, False, Recompute.SELECTIVE, 256, 1),
    ),
    "llama2_70b_bf16_64p": (
        PlanModel(8192, 64, 28672, 80, 32000, 4096, 8, "bfloat16"),
        Recipe(2, 4, 8, True, True, Recompute.SELECTIVE, 256, 1),
    ),
    "llama3_8b_8k": (
        PlanModel(4096, 32, 14336, 32, 128256, 8192, 8, "bfloat16"),
        Recipe(8, 1, 1, False, True, Recompute.FULL, 1, 1),
    ),
    "llama3_70b": (
        PlanModel(8192, 64, 28672, 80, 128256, 8192, 8, "bfloat16"),
        Recipe(1, 8, 8, True, False, Recompute.SELECTIVE, 256, 1),
    ),
    "internlm2_20b": (
        PlanModel(6144, 48, 16384, 48, 92544, 4096, 8, "bfloat16"),
        Recipe(1, 8, 2, False, False, Recompute.NONE, 128, 1),
    ),
    "qwen3_32b": (
        PlanModel(5120, 64, 25600, 64, 151936, 4096, 8, "bfloat16"),
        Recipe(1, 4, 4, False, False, Recompute.FULL, 4, 1),
    ),
}


@pytest.mark.parametrize("part", list(EXPECTED))
def test_each_real_config_gives_its_model_and_recipe(part: str) -> None:
    config = read_config(fixture(part))
    model, recipe = EXPECTED[part]
    assert config.model == model
    assert config.recipe == recipe


@pytest.mark.parametrize("part", list(EXPECTED))
def test_each_config_documented_as_running_fits_its_cards(part: str) -> None:
    """MindFormers publishes throughput for each of these on 64 GB NPUs: the YAML's recipe must fit 64 GB with
    the YAML's own choices (flash attention, fp32 moments, vocab_emb_dp, MindSpore's parallel optimizer)."""
    config = read_config(fixture(part))
    plan = explore(config.model, config.global_batch, config.devices, CARD_GB, config.choices)
    chosen = find_recipe(plan, config.recipe)
    assert chosen.valid, chosen.reason
    assert chosen.fits, f"{part}: {chosen.memory_bytes / 2**30:.1f} GiB"
    assert chosen in plan.evaluations  # the YAML's recipe is one of the recipes the page lists


def test_a_fit_that_depends_on_a_choice_says_which() -> None:
    """LLaMA-2 13B on 8 cards fits 64 GB because MindSpore's parallel optimizer splits the weights and gradients
    as well as the optimizer state over dp 8; counted as ZeRO-1 (state only) it needs ~69 GiB and would not,
    and with all the planner's own defaults (16 B/param, scores stored) ~75 GiB: the note is the choice."""
    config = read_config(fixture("finetune_llama2_13b_bf16"))
    zero1 = with_changes(config.choices, {"optimizer_parallel": "states"})
    evals = {}
    for name, choices in (("yaml", config.choices), ("zero1", zero1), ("defaults", default_choices("bfloat16"))):
        plan = explore(config.model, config.global_batch, config.devices, CARD_GB, choices)
        evals[name] = find_recipe(plan, config.recipe)
    assert evals["yaml"].fits and not evals["zero1"].fits and not evals["defaults"].fits
    assert evals["zero1"].choices is not None and evals["zero1"].choices.optimizer_parallel == "states"


def test_choices_come_from_the_yaml_with_their_source() -> None:
    config = read_config(fixture("llama3_70b"))
    c = config.choices
    assert (c.param_bytes, c.grad_bytes, c.optimizer_bytes) == (4, 4, 8)  # param_init_type float32, fp32 moments
    assert c.embedding == "split" and "vocab_emb_dp: False" in config.sources["embedding"]
    assert c.attention_scores == "flash"
    seven = read_config(fixture("pretrain_llama2_7b"))
    assert seven.choices.param_bytes == 2 and seven.choices.embedding == "replicated"
    qwen = read_config(fixture("qwen3_32b"))
    assert qwen.choices.embedding == "split" and "use_legacy: False" in qwen.sources["embedding"]


def test_unsupported_keys_are_listed_never_dropped() -> None:
    qwen = read_config(fixture("qwen3_32b"))
    keys = {i.key for i in qwen.unsupported}
    assert {"model_config.head_dim", "model_config.qk_layernorm", "model_config.offset"} <= keys
    seventy = read_config(fixture("llama2_70b_bf16_32p"))
    assert "recompute_config.select_recompute" in {i.key for i in seventy.unsupported}
    assert "parallel.enable_parallel_optimizer" in {i.key for i in seventy.unsupported}  # dp 1: nothing to split


def test_moe_mla_and_unknown_keys_are_listed() -> None:
    text = fixture("pretrain_llama2_7b").read_text()
    text = text.replace(
        "    num_heads: 32\n", "    num_heads: 32\n    expert_num: 8\n    q_lora_rank: 1536\n    shiny_new_knob: 3\n"
    )
    reasons = {i.key: i.reason for i in parse_config(text).unsupported}
    assert "mixture of experts" in reasons["model_config.expert_num"]
    assert "latent attention" in reasons["model_config.q_lora_rank"]
    assert "not known" in reasons["model_config.shiny_new_knob"]


def test_the_feed_forward_rule_gives_llamas_sizes() -> None:
    assert feed_forward_size(4096, 256, None) == 11008
    assert feed_forward_size(5120, 256, None) == 13824
    assert feed_forward_size(8192, 256, 1.3) == 28672
    config = LlamaConfig(hidden=4096, heads=32, ffn=11008, seq=4096, batch=1, layers=32, vocab=32000)
    assert llama_parameter_count(config) == 6_738_415_616


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model: [1, 2\n", "not valid YAML at line"),
        ("- a\n- b\n", "a MindFormers config is a mapping"),
        ("runner_config: {}\n", "no model.model_config"),
        ("model:\n  model_config:\n    hidden_size: 64\n", "model_config has no num_layers / num_hidden_layers"),
        (
            "model:\n  model_config: {hidden_size: -4, num_layers: 2, num_heads: 4, vocab_size: 9, seq_length: 8}\n",
            "model_config.hidden_size must be a whole number >= 1, got -4",
        ),
        (
            "model:\n  model_config: {hidden_size: 64, num_layers: 2, num_heads: 4, vocab_size: 9, seq_length: 8,"
            " compute_dtype: int8}\n",
            "model_config.compute_dtype 'int8' is not supported",
        ),
        (
            "model:\n  model_config: {hidden_size: 64, num_layers: 2, num_heads: 4, vocab_size: 9, seq_length: 8}\n"
            "parallel_config: {data_parallel: 2, context_parallel: 2, context_parallel_algo: ring}\n",
            "context_parallel_algo 'ring' is not one of colossalai_cp, ulysses_cp, hybrid_cp",
        ),
        (
            "model:\n  model_config: {hidden_size: 64, num_layers: 2, num_heads: 4, vocab_size: 9, seq_length: 8}\n"
            "parallel_config: {use_seq_parallel: maybe}\n",
            "use_seq_parallel must be True or False",
        ),
        (
            "model:\n  model_config: {hidden_size: 64, num_layers: 2, num_heads: 4, vocab_size: 9, seq_length: 8}\n"
            "parallel_config: 7\n",
            "parallel_config must be a mapping",
        ),
    ],
)
def test_bad_yaml_is_one_line_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_config(text)
    assert "\n" not in str(info.value)


def test_the_file_is_checked_before_it_is_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder, not a regular file"):
        read_config(tmp_path)
    with pytest.raises(ConfigError, match="is a character device, not a regular file"):
        read_config(Path("/dev/zero"))
    big = tmp_path / "big.yaml"
    big.write_text("a: 1\n" * 300_000)
    with pytest.raises(ConfigError, match="is 1,500,000 bytes, more than the 1,048,576 allowed"):
        read_config(big)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_reads_or_is_refused_with_a_config_error(text: str) -> None:
    try:
        parse_config(text)
    except ConfigError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["data_parallel", "model_parallel", "pipeline_stage", "context_parallel"]), st.integers(1, 64)
    )
)
def test_launcher_reader_reads_block_and_flow_style_alike(factors: dict[str, int]) -> None:
    block = "parallel_config:\n" + "".join(f"  {k}: {v}  # note\n" for k, v in factors.items())
    flow = "parallel_config: {" + ", ".join(f"{k}: {v}" for k, v in factors.items()) + "}\n"
    assert parse_parallel_config(block) == parse_parallel_config(flow) == factors


def test_launcher_reader_refuses_what_the_old_subset_parser_misread() -> None:
    # an anchor (Qwen3's `data_parallel: &dp 1`) was read as the text '&dp 1'; bools and floats stay refusable
    assert parse_parallel_config("parallel_config:\n  data_parallel: &dp 2\n  model_parallel: 4\n") == {
        "data_parallel": 2,
        "model_parallel": 4,
    }
    assert parse_parallel_config("parallel_config: {data_parallel: true, model_parallel: 2.0}\n") == {
        "data_parallel": "True",
        "model_parallel": "2.0",
    }
    assert load_yaml("") == {}


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m core")
    plan_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["plan", *argv])
    return args.func(args)


def test_cli_mindformers_config_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(["--mindformers-config", str(fixture("llama2_70b_bf16_64p")), "--card-memory", "64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"model", "config_recipe", "recipes", "unsupported_keys"}
    recipe = out["config_recipe"]
    assert (recipe["dp"], recipe["mp"], recipe["pp"], recipe["fits"]) == (2, 4, 8, True)
    assert set(recipe["choices"]) >= {"param_bytes", "grad_bytes", "optimizer_bytes", "embedding", "sp_stored_inputs"}
    assert recipe["choices"]["embedding"] == "split"
    assert all("choices" in r for r in out["recipes"])
    assert out["model"]["hidden"] == 8192 and out["model"]["kv_heads"] == 8
    assert any(k["key"] == "recompute_config.select_recompute" for k in out["unsupported_keys"])


def test_cli_choice_flags_override_the_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(fixture("pretrain_llama2_7b"))
    assert _cli(["--mindformers-config", path, "--card-memory", "64", "--json"]) == 0
    base = json.loads(capsys.readouterr().out)["config_recipe"]
    assert (
        _cli(
            [
                "--mindformers-config",
                path,
                "--card-memory",
                "64",
                "--json",
                "--grad-bytes",
                "4",
                "--attention-scores",
                "stored",
            ]
        )
        == 0
    )
    changed = json.loads(capsys.readouterr().out)["config_recipe"]
    assert changed["choices"]["grad_bytes"] == 4 and changed["memory_bytes"] > base["memory_bytes"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mindformers-config", "/nonexistent.yaml"], "error: cannot open MindFormers config /nonexistent.yaml"),
        (["--mindformers-config", "/dev/zero"], "/dev/zero is a character device, not a regular file"),
        (["--mindformers-config", "CFG", "--hidden", "64"], "error: --hidden and --mindformers-config"),
        (["--hidden", "64"], "error: --heads, --ffn, --layers, --vocab, --seq needed"),
        (["--mindformers-config", "CFG", "--card-memory", "inf"], "error: --card-memory must be > 0 and at most"),
        (["--mindformers-config", "CFG", "--param-bytes", "99"], "error: param_bytes must be a whole number"),
    ],
)
def test_cli_config_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(fixture("pretrain_llama2_7b")) if a == "CFG" else a for a in argv]
    assert _cli(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_cli_text_names_the_configs_recipe_and_whether_it_fits(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(["--mindformers-config", str(fixture("llama3_8b_8k")), "--card-memory", "64"]) == 0
    out = capsys.readouterr().out
    assert "dp8 mp1 pp1 os rc-full m1×b1 on 8 cards (the YAML's recipe)" in out and ": fits;" in out


def test_cli_json_carries_the_second_opinion_of_the_configs_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(["--mindformers-config", str(fixture("llama2_70b_bf16_64p")), "--card-memory", "64", "--json"]) == 0
    opinion = json.loads(capsys.readouterr().out)["config_recipe"]["second_opinion"]
    assert opinion[-1]["part"] == "total (stage 0)" and all(p["cause"] for p in opinion)
    assert sum(p["shardscope_bytes"] for p in opinion[:-1]) == pytest.approx(opinion[-1]["shardscope_bytes"], abs=8)


def test_accumulated_gradients_stay_whole_unless_the_yaml_shards_them() -> None:
    """MindSpore's parallel optimizer splits weights and states; micro-batches (pp 8 here) accumulate into a whole
    gradient buffer unless parallel_optimizer_config.gradient_accumulation_shard is True."""
    text = fixture("llama2_70b_bf16_64p").read_text()
    assert read_config(fixture("llama2_70b_bf16_64p")).choices.optimizer_parallel == "states+weights"
    sharded = parse_config(text.replace("gradient_accumulation_shard: False", "gradient_accumulation_shard: True"))
    assert sharded.choices.optimizer_parallel == "states+weights+gradients"
    assert read_config(fixture("finetune_llama2_13b_bf16")).choices.optimizer_parallel == "states+weights+gradients"


LEGACY = {
    "hidden": "hidden_size",
    "layers": "num_layers",
    "heads": "num_heads",
    "kv": "n_kv_heads",
    "ffn": "intermediate_size",
    "dtype": "param_init_type",
}
CURRENT = {
    "hidden": "hidden_size",
    "layers": "num_hidden_layers",
    "heads": "num_attention_heads",
    "kv": "num_key_value_heads",
    "ffn": "intermediate_size",
    "dtype": "params_dtype",
}


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 16),
    st.sampled_from([1, 2, 4]),
    st.integers(1, 64),
    st.integers(1, 8),
    st.sampled_from(["float16", "bfloat16", "float32"]),
    st.booleans(),
)
def test_legacy_and_current_key_names_read_the_same_model(
    head_dim: int, group: int, layers: int, kv: int, dtype: str, current: bool
) -> None:
    heads = kv * group
    names = CURRENT if current else LEGACY
    model_config = {
        names["hidden"]: heads * head_dim * 8,
        names["layers"]: layers,
        names["heads"]: heads,
        names["kv"]: kv,
        names["ffn"]: 3 * heads * head_dim,
        "vocab_size": 64 * heads,
        "seq_length": 32,
        "compute_dtype": "bfloat16",
        names["dtype"]: dtype,
    }
    import yaml

    config = parse_config(yaml.safe_dump({"model": {"model_config": model_config}}))
    assert (config.model.hidden, config.model.layers, config.model.heads, config.model.kv) == (
        heads * head_dim * 8,
        layers,
        heads,
        kv,
    )
    assert config.choices.param_bytes == {"float16": 2, "bfloat16": 2, "float32": 4}[dtype]
