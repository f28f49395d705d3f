"""Strategy planner: the published formulas, the placement-exact model states, enumeration, the CLI."""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.cli import plan as plan_cli
from core.models.llama import LlamaConfig, llama_parameter_count
from core.plan import activations as act
from core.plan.activations import DecoderShape, Recompute
from core.plan.comm import (
    allgather_bytes,
    allreduce_bytes,
    pp_stage_bytes,
    tp_volume_formula,
    tp_volume_from_analyses,
)
from core.plan.explore import Plan, StructureCache, explore
from core.plan.mindformers import VERSIONS, mindformers_config, mindformers_yaml
from core.plan.recipes import PlanError, PlanModel, Recipe, enumerate_recipes, factorisations
from core.plan.states import all_stage_states, weight_layout
from core.sharding.design import load_design
from core.sharding.operators import analyze_design
from core.sharding.placement import place

REPO = Path(__file__).resolve().parent.parent

# Korthikanti et al. 2022, Table 3 (s = 2048, t = 8): name -> (h, a, L, micro-batch b, p)
TABLE3 = {
    "22B": (6144, 64, 48, 4, 1),
    "175B": (12288, 96, 96, 1, 8),
    "530B": (20480, 128, 105, 1, 35),
    "1T": (25600, 160, 128, 1, 64),
}
# Bytes per layer per card from Table 2's formulas on those configurations (worked by hand with
# exact fractions): no parallelism, TP, TP+SP, TP+selective, TP+SP+selective, full recompute.
TABLE2_BYTES = {
    "22B": (7079985152, 1325400064, 884998144, 654311424, 213909504, 100663296),
    "175B": (2868903936, 578813952, 358612992, 327155712, 106954752, 50331648),
    "530B": (4110417920, 880803840, 513802240, 545259520, 178257920, 83886080),
    "1T": (5138022400, 1101004800, 642252800, 681574400, 222822400, 104857600),
}
MODEL_70B = PlanModel(hidden=8192, heads=64, ffn=28672, layers=80, vocab=32000, seq=4096, kv_heads=8)
VARIANTS = (
    (1, False, Recompute.NONE),
    (8, False, Recompute.NONE),
    (8, True, Recompute.NONE),
    (8, False, Recompute.SELECTIVE),
    (8, True, Recompute.SELECTIVE),
    (8, False, Recompute.FULL),
)


# ---------------------------------------------------------------------------------------------
# activations: Korthikanti Table 2 and the LLaMA-style derivation
# ---------------------------------------------------------------------------------------------
def test_22b_headline_numbers() -> None:
    assert act.korthikanti_table2(2048, 4, 6144, 64, t=8) == 1_325_400_064
    assert act.korthikanti_table2(2048, 4, 6144, 64, t=8, sp=True, recompute="selective") == 213_909_504


@pytest.mark.parametrize("name", list(TABLE3))
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
def test_table2_on_table3_configs(name: str, variant: int) -> None:
    h, a, _layers, b, _p = TABLE3[name]
    t, sp, recompute = VARIANTS[variant]
    expected = TABLE2_BYTES[name][variant]
    assert act.korthikanti_table2(2048, b, h, a, t=t, sp=sp, recompute=recompute) == pytest.approx(expected, abs=1)


@pytest.mark.parametrize("name", list(TABLE3))
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
def test_term_by_term_count_reproduces_table2_for_gpt(name: str, variant: int) -> None:
    """The general counting, given Korthikanti's GPT layer, gives Table 2 exactly."""
    h, a, _layers, b, _p = TABLE3[name]
    t, sp, recompute = VARIANTS[variant]
    got = act.layer_activation_bytes(DecoderShape.gpt(h, a), 2048, b, t=t, sp=sp, recompute=recompute)
    assert got == pytest.approx(TABLE2_BYTES[name][variant], abs=1)


def _llama_by_hand(s: int, b: int, h: int, a: int, kv: int, f: int, t: int, sp: bool, selective: bool) -> float:
    """The LLaMA-style per-layer bytes written out (module docstring of core.plan.activations):
    replicated 8sbh (2 RMSNorm inputs + QKV input + MLP input); split 4sbh + 4sb·h_kv + 8sbf (Q, out-proj
    input, K, V, gate/up/SiLU/product); attention core 2as²b (softmax output, no dropout)."""
    hkv = h * kv // a
    replicated = 8 * s * b * h
    split = 4 * s * b * h + 4 * s * b * hkv + 8 * s * b * f
    core = 0 if selective else 2 * a * s * s * b
    return (replicated / t if sp else replicated) + (split + core) / t


@pytest.mark.parametrize("t", [1, 2, 8])
@pytest.mark.parametrize("sp", [False, True])
@pytest.mark.parametrize("selective", [False, True])
def test_llama_layer_swiglu_rmsnorm_gqa(t: int, sp: bool, selective: bool) -> None:
    """LLaMA-2-70B-shaped layer: h 8192, 64 heads, 8 KV heads, ffn 28672, s 4096."""
    shape = DecoderShape.llama(8192, 64, 28672, kv_heads=8)
    recompute = Recompute.SELECTIVE if selective else Recompute.NONE
    got = act.layer_activation_bytes(shape, 4096, 1, t=t, sp=sp and t > 1, recompute=recompute)
    assert got == pytest.approx(_llama_by_hand(4096, 1, 8192, 64, 8, 28672, t, sp and t > 1, selective))


def test_llama_differences_from_gpt_are_the_documented_ones() -> None:
    s, b, h, a = 2048, 1, 4096, 32
    gpt = act.layer_terms(DecoderShape.gpt(h, a), s, b)
    # No dropout: no masks, and the attention core keeps only the softmax output (2as²b instead of 5as²b).
    no_dropout = act.layer_terms(DecoderShape(h, a, 4 * h, gated=False, dropout=False), s, b)
    assert no_dropout.replicated_masks == 0 and no_dropout.core_masks == 0
    assert gpt.core * 2 + gpt.core_masks == 5 * a * s * s * b and no_dropout.core * 2 == 2 * a * s * s * b
    # SwiGLU stores four ffn-wide tensors instead of GeLU's two.
    gated = act.layer_terms(DecoderShape(h, a, 4 * h, gated=True, dropout=False), s, b)
    assert gated.split - no_dropout.split == 2 * s * b * 4 * h
    # GQA: K and V shrink to kv_heads/heads of h.
    gqa = act.layer_terms(DecoderShape(h, a, 4 * h, kv_heads=8, gated=True, dropout=False), s, b)
    assert gated.split - gqa.split == 2 * s * b * (h - h * 8 // a)


def test_full_recompute_keeps_only_the_layer_input() -> None:
    shape = DecoderShape.llama(8192, 64, 28672, kv_heads=8)
    assert act.layer_activation_bytes(shape, 4096, 2, t=8, recompute="full") == 2 * 4096 * 2 * 8192
    assert act.layer_activation_bytes(shape, 4096, 2, t=8, sp=True, recompute="full") == 2 * 4096 * 2 * 8192 / 8


def test_pipeline_in_flight_and_bubble() -> None:
    assert [act.in_flight_micro_batches(i, 4, 8) for i in range(4)] == [4, 3, 2, 1]
    assert [act.in_flight_micro_batches(i, 4, 2) for i in range(4)] == [2, 2, 2, 1]
    assert act.in_flight_micro_batches(0, 1, 16) == 1
    assert act.bubble_fraction(1, 8) == 0
    assert act.bubble_fraction(4, 8) == pytest.approx(3 / 11)


# ---------------------------------------------------------------------------------------------
# communication formulas
# ---------------------------------------------------------------------------------------------
def test_ring_collective_volumes() -> None:
    assert allreduce_bytes(1000, 1) == 0
    assert allreduce_bytes(1000, 4) == pytest.approx(1500)  # 2(n-1)/n
    assert allgather_bytes(1000, 4) == pytest.approx(750)  # (n-1)/n
    # AllGather + ReduceScatter (sequence parallel) move as much as one AllReduce (tensor parallel).
    assert 2 * allgather_bytes(1000, 8) == pytest.approx(allreduce_bytes(1000, 8))


def test_tensor_parallel_volume_from_the_operators_implied_collectives() -> None:
    """examples/attention_block.json: the row-parallel output projection's AllReduce of a 4,096-byte
    partial output over 4 ranks is the only per-layer collective: 2·3/4·4096 bytes sent per card."""
    design = load_design(REPO / "examples" / "attention_block.json")
    volume = tp_volume_from_analyses(analyze_design(design), design.repeat.first, design.repeat.last, samples=1)
    assert volume.source == "operators"
    assert volume.per_layer == pytest.approx(allreduce_bytes(4096, 4)) == pytest.approx(6144)
    assert volume.before == 0 and volume.after == 0
    formula = tp_volume_formula(seq=128, hidden=4096, t=8, act_bytes=2)
    assert formula.source == "formula" and formula.per_layer == pytest.approx(2 * allreduce_bytes(128 * 4096 * 2, 8))


@pytest.mark.parametrize("sp", [False, True])
def test_llama_operators_volume_matches_korthikanti(sp: bool) -> None:
    """The collectives the LLaMA design's strategies imply per layer (2 AllReduce, or with sequence parallel
    the gathers of the two norm outputs + 2 ReduceScatter) equal Korthikanti's per-layer volume."""
    volume = StructureCache(MODEL_70B).tp_volume(8, sp)
    assert volume.source == "operators"
    assert volume.per_layer == pytest.approx(tp_volume_formula(4096, 8192, 8, 2).per_layer)


def test_pipeline_send_recv_per_micro_batch_boundary() -> None:
    boundary = 4096 * 2 * 8192 * 2  # s·b·h bf16
    assert pp_stage_bytes(0, 4, 4096, 8192, 8, 2, 8, False, 2) == 8 * boundary  # first stage: one link
    assert pp_stage_bytes(1, 4, 4096, 8192, 8, 2, 8, False, 2) == 16 * boundary  # middle: both links
    assert pp_stage_bytes(1, 4, 4096, 8192, 8, 2, 8, True, 2) == 16 * boundary / 8  # SP: sequence slice
    assert pp_stage_bytes(0, 1, 4096, 8192, 8, 2, 8, False, 2) == 0


# ---------------------------------------------------------------------------------------------
# enumeration
# ---------------------------------------------------------------------------------------------
SMALL = PlanModel(hidden=512, heads=8, ffn=1376, layers=4, vocab=1000, seq=128, kv_heads=4)


def test_factorisations_cover_every_product() -> None:
    got = factorisations(12)
    assert len(got) == len(set(got)) == 18
    assert all(dp * mp * pp == 12 for dp, mp, pp in got)


def test_every_recipe_is_enumerated_and_every_invalid_one_says_why() -> None:
    candidates = enumerate_recipes(SMALL, global_batch=8, devices=8)
    assert all(c.recipe.devices == 8 for c in candidates)
    assert all(c.valid or c.reason for c in candidates)
    reasons = {c.reason for c in candidates if not c.valid}
    assert "kv_heads 4 is not divisible by mp 8" in reasons
    assert "layers 4 is not divisible by pp 8" in reasons
    assert any(r.startswith("micro_batches 1 < pp 2") for r in reasons)
    valid = [c.recipe for c in candidates if c.valid]
    assert Recipe(8, 1, 1, False, True, Recompute.FULL, 1, 1) in valid
    assert all(r.micro_batches * r.micro_batch_size * r.dp == 8 for r in valid)
    assert all(not r.sp or r.mp > 1 for r in valid) and all(not r.optimizer_shard or r.dp > 1 for r in valid)


def test_batch_and_vocab_divisibility_reasons() -> None:
    model = PlanModel(hidden=512, heads=8, ffn=1376, layers=4, vocab=1001, seq=128)
    candidates = enumerate_recipes(model, global_batch=6, devices=4)
    reasons = {c.reason for c in candidates}
    assert "global batch 6 is not divisible by dp 4" in reasons
    assert "vocab 1001 is not divisible by mp 2" in reasons


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (PlanModel(500, 8, 1376, 4, 1000, 128), "hidden 500 is not divisible by heads 8"),
        (PlanModel(512, 8, 1376, 4, 1000, 128, kv_heads=3), "heads 8 is not divisible by kv_heads 3"),
        (PlanModel(512, 8, 0, 4, 1000, 128), "ffn must be a whole number >= 1"),
        (PlanModel(512, 8, 64, 4, 1000, 128, dtype="int8"), "dtype 'int8'"),
    ],
)
def test_bad_models_are_refused_with_the_field(model: PlanModel, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        enumerate_recipes(model, 8, 8)


@pytest.mark.parametrize("card", [float("inf"), 1e308, float("nan"), 0.0, -3.0, 65537.0])
def test_explore_refuses_card_memory_out_of_bounds_naming_the_bound(card: float) -> None:
    with pytest.raises(PlanError, match="card memory must be > 0 and at most 65536 GB"):
        explore(SMALL, 8, 8, card)


def test_bad_device_count() -> None:
    with pytest.raises(PlanError, match="devices must be"):
        enumerate_recipes(SMALL, 8, 0)
    with pytest.raises(PlanError, match="devices 1000000 is more than the 65536 a design holds"):
        enumerate_recipes(SMALL, 8, 1_000_000)


# ---------------------------------------------------------------------------------------------
# MindFormers export
# ---------------------------------------------------------------------------------------------
def test_mindformers_keys_of_the_named_versions() -> None:
    recipe = Recipe(4, 2, 2, True, True, Recompute.SELECTIVE, 8, 1)
    cfg = mindformers_config(recipe, "1.3")
    assert cfg["parallel_config"] == {
        "data_parallel": 4,
        "model_parallel": 2,
        "pipeline_stage": 2,
        "use_seq_parallel": True,
        "micro_batch_num": 8,
        "vocab_emb_dp": True,
        "gradient_aggregation_group": 4,
    }
    assert cfg["parallel"]["enable_parallel_optimizer"] is True
    assert cfg["recompute_config"]["select_recompute"] is True and cfg["recompute_config"]["recompute"] is False
    assert cfg["runner_config"] == {"batch_size": 1, "gradient_accumulation_steps": 1}
    assert "context_parallel" in mindformers_config(recipe, "master")["parallel_config"]
    legacy = mindformers_config(recipe, "0.x")
    assert legacy["parallel_config"]["optimizer_shard"] is True
    assert "enable_parallel_optimizer" not in legacy["parallel"]
    text = mindformers_yaml(recipe, "1.3", card_memory_gb=64)
    assert VERSIONS["1.3"] in text
    assert "parallel_config:\n  data_parallel: 4\n  model_parallel: 2\n  pipeline_stage: 2\n" in text
    assert "  use_seq_parallel: True\n" in text and 'max_device_memory: "64GB"' in text
    with pytest.raises(ValueError, match="unknown MindFormers version"):
        mindformers_config(recipe, "9.9")


def test_gradient_accumulation_without_pipeline() -> None:
    cfg = mindformers_config(Recipe(8, 1, 1, False, False, Recompute.FULL, 4, 2), "1.3")
    assert cfg["parallel_config"]["micro_batch_num"] == 1
    assert cfg["runner_config"] == {"batch_size": 2, "gradient_accumulation_steps": 4}
    assert cfg["recompute_config"]["recompute"] is True


# ---------------------------------------------------------------------------------------------
# model states from the placement (needs core.models.llama)
# ---------------------------------------------------------------------------------------------
TINY = PlanModel(hidden=256, heads=8, ffn=688, layers=4, vocab=512, seq=64, kv_heads=4)


def _placement_bytes(model: PlanModel, dp: int, mp: int, sp: bool) -> tuple[int, dict[str, int]]:
    """Σ over every weight tensor of the full model of the bytes one card holds, straight from place();
    also name -> local bytes. Layers inside the repeat block count `layers` times."""
    design = StructureCache(model).design(dp, mp, sp, batch=dp)
    total, local = 0, {}
    for name, tensor in design.tensors.items():
        if design.tensor_role(name) != "weight":
            continue
        placement = place(tensor.shape, weight_layout(design, name))
        local[name] = placement.local_bytes(tensor.dtype)
        readers = [op.name for op in design.operators if name in op.inputs]
        total += local[name] * design.layers_of(readers[0])
    return total, local


def test_sixteen_bytes_per_parameter_without_optimizer_sharding() -> None:
    """ZeRO §3.1: 2 (bf16 weight) + 2 (bf16 gradient) + 12 (fp32 master, momentum, variance)."""
    cache = StructureCache(TINY)
    weights = cache.weight_slices(1, 1, False)
    [stage] = all_stage_states(weights, 1, TINY.layers, 1, False)
    count = llama_parameter_count(
        LlamaConfig(hidden=256, heads=8, ffn=688, seq=64, batch=1, layers=4, vocab=512, kv_heads=4)
    )
    assert stage.weight_bytes == 2 * count and stage.gradient_bytes == 2 * count
    assert stage.optimizer_bytes == 12 * count and stage.total == 16 * count


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dp=st.sampled_from([1, 2, 4]),
    mp=st.sampled_from([1, 2, 4]),
    pp=st.sampled_from([1, 2, 4]),
    sp=st.booleans(),
    shard=st.booleans(),
)
def test_model_states_equal_the_placement_local_bytes(dp: int, mp: int, pp: int, sp: bool, shard: bool) -> None:
    sp = sp and mp > 1
    total, local = _placement_bytes(TINY, dp, mp, sp)
    weights = StructureCache(TINY).weight_slices(dp, mp, sp)
    stages = all_stage_states(weights, pp, TINY.layers, dp, shard)
    assert {w.name: w.local_bytes for w in weights} == local
    assert sum(s.weight_bytes for s in stages) == total  # every weight on exactly one stage
    assert sum(s.gradient_bytes for s in stages) == total
    if not shard or dp == 1:
        assert sum(s.optimizer_bytes for s in stages) == 6 * total  # 12 B per 2-byte element
    else:
        assert sum(s.optimizer_bytes for s in stages) < 6 * total
        assert sum(s.optimizer_bytes for s in stages) >= 6 * total // dp
    if pp > 1:  # the embedding sits on the first stage, the final norm and the LM head on the last
        per_stage_layers = stages[0].weight_bytes - local["embedding"]
        assert stages[-1].weight_bytes == per_stage_layers + local["final_norm"] + local["lm_head"]
        assert all(s.weight_bytes == per_stage_layers for s in stages[1:-1])


def test_a_split_weight_costs_its_slice_and_a_replicated_one_its_whole() -> None:
    weights = {w.name: w for w in StructureCache(TINY).weight_slices(2, 4, False)}
    assert weights["wq"].local_bytes * 4 == math.prod(weights["wq"].shape) * 2
    assert weights["attention_norm"].local_bytes == math.prod(weights["attention_norm"].shape) * 2


# ---------------------------------------------------------------------------------------------
# explorer: LLaMA-70B on 64 cards of 64 GB
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def plan_70b() -> Plan:
    return explore(MODEL_70B, global_batch=64, devices=64, card_memory_gb=64)


def test_70b_pure_data_parallel_does_not_fit_and_a_fitting_recipe_is_proposed(plan_70b: Plan) -> None:
    by_recipe = {e.recipe: e for e in plan_70b.evaluations}
    dp64 = by_recipe[Recipe(64, 1, 1, False, False, Recompute.NONE, 1, 1)]
    assert dp64.valid and not dp64.fits
    assert dp64.model_state_bytes > 16 * 68e9  # ≈ 16 B × 69 B parameters on every card
    proposal = plan_70b.proposal
    assert proposal is not None and proposal.fits and proposal.memory_bytes <= 64 * (1 << 30)
    assert proposal.recipe.mp * proposal.recipe.pp > 1
    assert proposal in plan_70b.fitting


def test_pareto_front_is_not_dominated(plan_70b: Plan) -> None:
    front = plan_70b.pareto
    assert front
    for e in front:
        assert not any(o.memory_bytes <= e.memory_bytes and o.comm_bytes < e.comm_bytes for o in plan_70b.valid)


def test_more_parallelism_never_costs_more_states_per_card(plan_70b: Plan) -> None:
    by_recipe = {e.recipe: e for e in plan_70b.evaluations}
    base = by_recipe[Recipe(8, 8, 1, False, False, Recompute.FULL, 8, 1)]
    sharded = by_recipe[Recipe(8, 8, 1, False, True, Recompute.FULL, 8, 1)]
    assert sharded.model_state_bytes < base.model_state_bytes
    selective = by_recipe[Recipe(8, 8, 1, True, False, Recompute.SELECTIVE, 8, 1)]
    none = by_recipe[Recipe(8, 8, 1, True, False, Recompute.NONE, 8, 1)]
    assert selective.activation_bytes < none.activation_bytes
    assert base.tp_comm_bytes > 0 and base.dp_comm_bytes > 0 and base.pp_comm_bytes == 0


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
SMALL_ARGS = [
    "--hidden",
    "512",
    "--heads",
    "8",
    "--kv-heads",
    "4",
    "--ffn",
    "1376",
    "--layers",
    "4",
    "--vocab",
    "1000",
    "--seq",
    "128",
    "--global-batch",
    "8",
    "--devices",
    "8",
    "--card-memory",
    "32",
]
JSON_FIELDS = {
    "dp",
    "mp",
    "pp",
    "sp",
    "optimizer_shard",
    "recompute",
    "micro_batch_size",
    "micro_batches",
    "model_state_bytes",
    "activation_bytes",
    "memory_bytes",
    "comm_bytes",
    "bubble",
    "fits",
}


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m core")
    plan_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["plan", *argv])
    return args.func(args)


def test_cli_json_lists_every_valid_recipe_with_the_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli([*SMALL_ARGS, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(set(r) >= JSON_FIELDS and r["valid"] for r in rows)
    assert all(r["dp"] * r["mp"] * r["pp"] == 8 for r in rows)
    assert any(r["fits"] for r in rows)
    assert all(r["memory_bytes"] == r["model_state_bytes"] + r["activation_bytes"] for r in rows)


def test_cli_all_adds_invalid_recipes_with_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli([*SMALL_ARGS, "--json", "--all"]) == 0
    rows = json.loads(capsys.readouterr().out)
    invalid = [r for r in rows if not r["valid"]]
    assert invalid and all(r["reason"] for r in invalid)
    assert any(r["reason"] == "kv_heads 4 is not divisible by mp 8" for r in invalid)


def test_cli_text_names_the_best_fitting_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(SMALL_ARGS) == 0
    out = capsys.readouterr().out
    assert "Pareto front" in out and "Proposed" in out and "valid" in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (["--hidden", "500"], "error: hidden 500 is not divisible by heads 8"),
        (["--devices", "0"], "error: devices must be a whole number >= 1"),
        (["--card-memory", "-1"], "error: --card-memory must be > 0 and at most 65536 GB, got -1"),
        (["--card-memory", "inf"], "error: --card-memory must be > 0 and at most 65536 GB, got inf"),
        (["--card-memory", "1e308"], "error: --card-memory must be > 0 and at most 65536 GB, got 1e+308"),
        (["--card-memory", "nan"], "error: --card-memory must be > 0 and at most 65536 GB, got nan"),
        (["--layers", "1000000000000"], "error: layers 1,000,000,000,000 is more than the 100,000 the planner"),
        (["--hidden", str(1 << 41)], "error: hidden 2,199,023,255,552 is more than the 1,099,511,627,776"),
        (["--dtype", "int4"], "error: --dtype 'int4' is not supported"),
        (["--global-batch", "0"], "error: global batch must be a whole number >= 1"),
    ],
)
def test_cli_bad_input_is_one_line(change: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*SMALL_ARGS, *change]  # argparse keeps the last value of a repeated flag
    assert _cli(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == err.strip().splitlines()[0] and message in err and "Traceback" not in err


def test_cli_non_numbers_are_argparse_errors_not_tracebacks(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _cli([*SMALL_ARGS, "--hidden", "abc"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid int value: 'abc'" in err and "Traceback" not in err


def test_python_m_core_plan_when_wired() -> None:
    from core.cli import COMMANDS

    if plan_cli not in COMMANDS:
        pytest.skip("core/cli/__init__.py does not list the plan command yet (the lead wires it)")
    done = subprocess.run(
        [sys.executable, "-m", "core", "plan", *SMALL_ARGS, "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)[0]) >= JSON_FIELDS


def test_a_model_library_design_gives_back_its_model_and_others_give_none() -> None:
    from core.plan.explore import apply_recipe, model_from_design

    design = apply_recipe(TINY, Recipe(2, 2, 2, True, True, Recompute.SELECTIVE, 4, 1))
    assert design.device_num == 4 and design.name == "llama_dp2_mp2_pp2_sp"
    assert "pipeline_stage 2" in design.description and "recompute selective" in design.description
    assert model_from_design(design) == TINY
    assert model_from_design(load_design(REPO / "examples" / "attention_block.json")) is None


@pytest.mark.parametrize("t", [2, 4, 8])
def test_last_stage_inputs_match_the_model_librarys_head_under_sequence_parallel(t: int) -> None:
    """The final norm and lm_head read the gathered residual (core/models/llama.py:_head): whole on each card."""
    from core.models.llama import LlamaRecipe, llama_design

    s, b, h, v = 64, 2, 256, 512
    design = llama_design(
        LlamaConfig(hidden=h, heads=8, ffn=688, seq=s, batch=b, layers=2, vocab=v), LlamaRecipe(dp=1, mp=t, sp=True)
    )
    ops = {op.name: op for op in design.operators}
    stored = 0
    for name in ("final_rms", "logits_2d"):
        layout = design.tensor_layout(ops[name].strategy[0])
        stored += math.prod(place((b * s, h), layout).local_shape) * 2
    logits = 4 * s * b * v / t
    assert act.output_activation_bytes(s, b, h, v, t=t, sp=True) == stored + logits
    assert act.output_activation_bytes(s, b, h, v, t=t, sp=True) == act.output_activation_bytes(s, b, h, v, t=t)


@pytest.mark.parametrize("t", [2, 8])
def test_gathered_stored_inputs_keep_the_two_matmul_inputs_whole_under_sequence_parallel(t: int) -> None:
    shape = DecoderShape.llama(8192, 64, 28672, 8)
    s, b = 4096, 1
    sharded = act.layer_activation_bytes(shape, s, b, t, True, Recompute.SELECTIVE)
    gathered = act.layer_activation_bytes(shape, s, b, t, True, Recompute.SELECTIVE, gathered_inputs=True)
    assert gathered - sharded == pytest.approx(2 * s * b * 8192 * 2 * (1 - 1 / t))
    without_sp = act.layer_activation_bytes(shape, s, b, t, False, Recompute.SELECTIVE, gathered_inputs=True)
    assert without_sp == act.layer_activation_bytes(shape, s, b, t, False, Recompute.SELECTIVE)
    flash = act.layer_activation_bytes(shape, s, b, t, True, Recompute.NONE, flash=True)
    assert flash == sharded  # flash attention stores what selective recompute stores


def test_cli_json_carries_the_choices_of_every_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli([*SMALL_ARGS, "--json", "--embedding", "split", "--grad-bytes", "4"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["choices"]["embedding"] == "split" and r["choices"]["grad_bytes"] == 4 for r in rows)
    assert set(rows[0]["choices"]) >= {"param_bytes", "grad_bytes", "optimizer_bytes", "embedding", "sp_stored_inputs"}


def test_the_exported_yaml_carries_the_embedding_choice_and_reads_back() -> None:
    from core.plan.mfconfig import load_yaml

    recipe = Recipe(2, 4, 8, True, True, Recompute.SELECTIVE, 256, 1)
    text = mindformers_yaml(recipe, "1.3", card_memory_gb=64, split_embedding=True)
    data = load_yaml(text)
    assert data["parallel_config"]["vocab_emb_dp"] is False
    assert data["parallel_config"] == mindformers_config(recipe, "1.3", split_embedding=True)["parallel_config"]
    assert load_yaml(mindformers_yaml(recipe, "1.3"))["parallel_config"]["vocab_emb_dp"] is True
