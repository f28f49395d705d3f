"""The second opinion: Megatron-LM's published formulas, and every difference from ShardScope traced to a choice."""

from __future__ import annotations

import pytest

from core.models.llama import LlamaConfig, llama_parameter_count
from core.plan import activations as act
from core.plan.activations import Recompute
from core.plan.choices import Choices
from core.plan.explore import StructureCache, explore
from core.plan.megatron import covered, megatron_parts, second_opinion, shardscope_parts
from core.plan.recipes import PlanModel, Recipe

L7 = PlanModel(hidden=4096, heads=32, ffn=11008, layers=32, vocab=32000, seq=4096)
L70 = PlanModel(hidden=8192, heads=64, ffn=28672, layers=80, vocab=32000, seq=4096, kv_heads=8)
MEGATRON_LIKE = Choices(param_bytes=2, grad_bytes=4, optimizer_bytes=12, embedding="split")


@pytest.mark.parametrize("model", [L7, L70])
def test_megatron_parameters_are_the_llama_count_at_18_bytes(model: PlanModel) -> None:
    parts = megatron_parts(model, Recipe(1, 1, 1, False, False, Recompute.SELECTIVE, 1, 1))
    config = LlamaConfig(
        hidden=model.hidden,
        heads=model.heads,
        ffn=model.ffn,
        seq=model.seq,
        batch=1,
        layers=model.layers,
        vocab=model.vocab,
        kv_heads=model.kv_heads,
    )
    states = parts.layer_states + parts.embedding_states + parts.output_states
    assert states == pytest.approx(18 * llama_parameter_count(config), rel=1e-12)


def test_megatron_layer_activations_are_korthikanti_sp_selective_for_a_gpt_mlp() -> None:
    gpt = PlanModel(hidden=6144, heads=64, ffn=4 * 6144, layers=48, vocab=51200, seq=2048)
    parts = megatron_parts(gpt, Recipe(1, 8, 1, True, False, Recompute.SELECTIVE, 4, 4))
    table2 = act.korthikanti_table2(2048, 4, 6144, 64, t=8, sp=True, recompute=Recompute.SELECTIVE)
    assert parts.layer_activations == pytest.approx(48 * table2)


@pytest.mark.parametrize(
    "recipe",
    [
        Recipe(1, 8, 8, True, True, Recompute.SELECTIVE, 16, 1),
        Recipe(8, 8, 1, True, True, Recompute.SELECTIVE, 2, 2),
        Recipe(2, 4, 8, True, False, Recompute.SELECTIVE, 64, 1),
    ],
)
def test_with_megatrons_choices_the_model_states_agree(recipe: Recipe) -> None:
    """The state difference is the choices (bytes per parameter, embedding split, ZeRO-1): set them as Megatron
    has them and the two agree to the byte fraction (optimizer parallel off, or on with dividing shapes)."""
    ours = shardscope_parts(L70, recipe, MEGATRON_LIKE, StructureCache(L70))
    theirs = megatron_parts(L70, recipe)
    assert ours.layer_states == pytest.approx(theirs.layer_states, rel=1e-6)
    assert ours.embedding_states == pytest.approx(theirs.embedding_states, rel=1e-6)
    assert ours.output_states == pytest.approx(theirs.output_states, rel=1e-6)


def test_the_per_layer_activation_difference_is_swiglu_gqa_and_dropout() -> None:
    """ShardScope − Megatron per layer = s·b·h·(4·ffn/h [SwiGLU's two extra ffn-wide tensors] − 2 [no dropout
    masks] − 4·(1 − kv/a) [narrower K and V]) / t, and nothing else."""
    recipe = Recipe(1, 8, 8, True, False, Recompute.SELECTIVE, 16, 1)
    ours = shardscope_parts(L70, recipe, Choices(), StructureCache(L70))
    theirs = megatron_parts(L70, recipe)
    s, b, h, f, t = 4096, 1, 8192, 28672, 8
    expected = s * b * h * (4 * f / h - 2 - 4 * (1 - 8 / 64)) / t * L70.layers
    assert ours.layer_activations - theirs.layer_activations == pytest.approx(expected)


def test_second_opinion_names_a_cause_for_every_part() -> None:
    plan = explore(L70, 512, 64, 64)
    sample = [e for e in plan.valid if covered(e.recipe)][:20]
    assert sample
    for e in sample:
        rows = second_opinion(L70, e)
        assert rows[-1].part == "total (stage 0)"
        assert sum(r.shardscope for r in rows[:-1]) == pytest.approx(rows[-1].shardscope)
        assert sum(r.megatron for r in rows[:-1]) == pytest.approx(rows[-1].megatron)
        assert all(r.cause for r in rows)
    embedding = second_opinion(L70, sample[0])[1]
    assert "vocab_emb_dp" in embedding.cause or "split over mp" in embedding.cause


def test_megatron_covers_only_sequence_parallel_with_selective_recompute() -> None:
    assert covered(Recipe(1, 8, 1, True, False, Recompute.SELECTIVE, 1, 1))
    assert not covered(Recipe(1, 8, 1, False, False, Recompute.SELECTIVE, 1, 1))
    assert not covered(Recipe(1, 8, 1, True, False, Recompute.FULL, 1, 1))
