"""Strategy planner: the published formulas, the placement-exact model states, enumeration, the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.plan import activations as act
from core.plan.activations import DecoderShape, Recompute
from core.plan.comm import allgather_bytes, allreduce_bytes, pp_stage_bytes
from core.plan.mindformers import VERSIONS, mindformers_config, mindformers_yaml
from core.plan.recipes import PlanError, PlanModel, Recipe, enumerate_recipes, factorisations

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


def test_bad_device_count() -> None:
    with pytest.raises(PlanError, match="devices must be"):
        enumerate_recipes(SMALL, 8, 0)


# ---------------------------------------------------------------------------------------------
# MindFormers export
# ---------------------------------------------------------------------------------------------
def test_mindformers_keys_of_the_named_versions() -> None:
    recipe = Recipe(4, 2, 2, True, True, Recompute.SELECTIVE, 8, 1)
    cfg = mindformers_config(recipe, "1.3")
    assert cfg["parallel_config"] == {
        "data_parallel": 4, "model_parallel": 2, "pipeline_stage": 2, "use_seq_parallel": True,
        "micro_batch_num": 8, "vocab_emb_dp": True, "gradient_aggregation_group": 4,
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
