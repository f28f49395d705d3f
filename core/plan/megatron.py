"""A second opinion: Megatron-LM's theoretical memory formulas next to ShardScope's, each difference named.

Implemented from the formulas published in NVIDIA/Megatron-LM `megatron/training/theoretical_memory_usage.py`
(last changed in 1bcb3b9e0b029c6109d8d32872645bd540052963, read at d98e8a64ddf34856e74b24714e3bedb2f5a39553),
dense-model terms only, not its code:
* parameters on the most loaded shard (stage 0): (TP-split layer weights / pp + embedding) / tp + the norms
  / pp, plus the untied output layer / tp when pp = 1; SwiGLU counts 3/2 of a 2·h·ffn MLP;
* bytes per parameter: 18 (bf16 weight, fp32 gradient, fp32 master + two moments), or 6 + 12/dp with the
  distributed optimizer;
* activations (Korthikanti Table 2, sequence parallel + selective recompute assumed): s·b·h·(18 + 4·ffn/h)
  per layer × all layers (stage 0 holds pp micro-batches of L/pp layers), + 8sb·pp token ids, + sbh·pp
  embedding dropout, × min(1, m/pp) when pp > 1, + 4sbh(1 + v/h) output layer when pp = 1; all / tp.
Megatron reports only sequence parallel + selective recompute, so the comparison is for those recipes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from core.plan import activations as act
from core.plan.activations import DecoderShape, Recompute
from core.plan.choices import Choices
from core.plan.explore import Evaluation, StructureCache
from core.plan.recipes import PlanModel, Recipe
from core.plan.states import stage_states_from

SOURCE = (
    "Megatron-LM megatron/training/theoretical_memory_usage.py @ 1bcb3b9e (compute_weight_and_optimizer_memory, "
    "compute_activation_memory)"
)


@dataclass(frozen=True)
class MemoryParts:
    """One estimator's stage-0 card, split so each difference has one cause."""

    layer_states: float
    embedding_states: float
    output_states: float
    layer_activations: float
    embedding_activations: float
    output_activations: float

    @property
    def total(self) -> float:
        return (
            self.layer_states
            + self.embedding_states
            + self.output_states
            + self.layer_activations
            + self.embedding_activations
            + self.output_activations
        )


def covered(recipe: Recipe) -> bool:
    """Megatron's report is for sequence parallel + selective recompute only (`report_theoretical_memory`)."""
    return recipe.recompute is Recompute.SELECTIVE and (recipe.sp or recipe.mp == 1)


def megatron_parts(model: PlanModel, recipe: Recipe) -> MemoryParts:
    """Megatron-LM's estimate for stage 0, by part (see the module docstring for the formulas)."""
    h, f, v, s, b = model.hidden, model.ffn, model.vocab, model.seq, recipe.micro_batch_size
    t, p, L = recipe.mp, recipe.pp, model.layers
    attention = 2 * h * h * (1 + model.kv / model.heads)
    mlp = 2 * h * f * 1.5  # swiglu: gated_linear_multiplier 3/2
    norms = 2 * h  # RMSNorm: one gain per norm, two norms per layer
    per_param = 6 + 12 / recipe.dp if recipe.optimizer_shard else 18
    layer_params = (attention + mlp) * L / p / t + norms * L / p
    embedding = h * v / t
    # the final norm is in Megatron's transformer block (/pp on every stage); with pp = 1 it sits with the output
    # layer, where ShardScope counts it, so the parts line up
    output = h * v / t + h if p == 1 else 0.0
    layer_params += 0.0 if p == 1 else h / p
    layer_act: float = s * b * h * (18 + 4 * f / h) * L
    embed_act: float = 8 * s * b * p + s * b * h * p
    if p > 1:
        scale = min(1.0, recipe.micro_batches / p)
        layer_act, embed_act = layer_act * scale, embed_act * scale
    out_act = s * b * h * 4 * (1 + v / h) if p == 1 else 0.0
    return MemoryParts(
        layer_params * per_param, embedding * per_param, output * per_param, layer_act / t, embed_act / t, out_act / t
    )


def shardscope_parts(model: PlanModel, recipe: Recipe, choices: Choices, cache: StructureCache) -> MemoryParts:
    """ShardScope's estimate for the same stage-0 card, by the same parts."""
    totals = cache.block_totals(recipe.dp, recipe.mp, recipe.sp, recipe.optimizer_shard, choices.split_embedding)
    states = stage_states_from(totals, 0, recipe.pp, model.layers, choices)
    only = {}
    for block in ("before", "repeat", "after"):
        single = type(totals)(
            totals.weight_bytes,
            totals.optimizer_bytes,
            {k: (n if k == block else 0) for k, n in totals.elements.items()},
            {k: (n if k == block else 0.0) for k, n in totals.sharded_elements.items()},
        )
        only[block] = stage_states_from(single, 0, recipe.pp, model.layers, choices).total
    e_bytes = 4 if model.dtype == "float32" else 2
    shape = DecoderShape.llama(model.hidden, model.heads, model.ffn, model.kv_heads)
    flight = act.in_flight_micro_batches(0, recipe.pp, recipe.micro_batches)
    per_layer = act.layer_activation_bytes(
        shape,
        model.seq,
        recipe.micro_batch_size,
        recipe.mp,
        recipe.sp,
        recipe.recompute,
        e_bytes,
        choices.gathered_inputs,
        choices.flash,
    )
    layer_act = flight * per_layer * model.layers // recipe.pp
    embed_act = flight * act.embedding_activation_bytes(model.seq, recipe.micro_batch_size, model.hidden)
    out_act = (
        act.output_activation_bytes(
            model.seq, recipe.micro_batch_size, model.hidden, model.vocab, recipe.mp, recipe.sp, e_bytes
        )
        if recipe.pp == 1
        else 0.0
    )
    assert abs(sum(only.values()) - states.total) <= 3  # the parts add up to the stage's states
    return MemoryParts(only["repeat"], only["before"], only["after"], layer_act, embed_act, out_act)


@dataclass(frozen=True)
class Difference:
    part: str
    shardscope: float
    megatron: float
    cause: str

    @property
    def relative(self) -> float:
        return (self.shardscope - self.megatron) / self.megatron if self.megatron else 0.0


def explain(
    model: PlanModel, recipe: Recipe, choices: Choices, ours: MemoryParts, theirs: MemoryParts
) -> list[Difference]:
    """Each part side by side with the choice that makes the two differ."""
    per = choices.param_bytes + choices.grad_bytes + choices.optimizer_bytes
    mega = "6 + 12/dp" if recipe.optimizer_shard else "18"
    scope = {
        "states": "the state only (ZeRO-1)",
        "states+weights": "the weights too",
        "states+weights+gradients": "weights and gradients too",
    }[choices.optimizer_parallel]
    sharded = f"; optimizer parallel splits {scope}" if recipe.optimizer_shard else ""
    states = (
        f"bytes/param: ShardScope {choices.param_bytes}+{choices.grad_bytes}+{choices.optimizer_bytes} = {per}"
        f"{sharded}; Megatron {mega} (fp32 gradients)"
    )
    emb = "embedding: ShardScope " + (
        "split over mp, as Megatron"
        if choices.split_embedding
        else f"whole on each of the mp {recipe.mp} cards (vocab_emb_dp), Megatron /tp"
    )
    swiglu = (
        f"per layer: ShardScope counts SwiGLU's 4 ffn-wide tensors, {model.kv}/{model.heads} KV heads, "
        "no dropout masks"
        + (", flash attention" if choices.flash else "")
        + (", gathered matmul inputs" if choices.gathered_inputs and recipe.sp else "")
        + "; Megatron 18 + 4·ffn/h (GPT-shaped: 2 ffn-wide tensors, dropout masks)"
    )
    tokens = "token ids: ShardScope int32 (4sb), no embedding dropout; Megatron int64 ids (8sb) + dropout mask (sbh)"
    output = (
        "output layer: ShardScope keeps the final norm and lm_head inputs whole (the head gathers them); "
        "Megatron divides them by tp"
        if recipe.pp == 1
        else "output layer: on the last stage, not stage 0"
    )
    head = (
        (
            "lm_head weights: ShardScope on the last stage"
            if recipe.pp > 1
            else "lm_head weights: untied, split over mp in both"
        )
        + "; "
        + states
    )
    return [
        Difference("layer weights + gradients + optimizer", ours.layer_states, theirs.layer_states, states),
        Difference(
            "embedding weights + gradients + optimizer",
            ours.embedding_states,
            theirs.embedding_states,
            emb + "; " + states,
        ),
        Difference("output-layer weights (pp = 1)", ours.output_states, theirs.output_states, head),
        Difference("layer activations", ours.layer_activations, theirs.layer_activations, swiglu),
        Difference("embedding activations", ours.embedding_activations, theirs.embedding_activations, tokens),
        Difference("output-layer activations", ours.output_activations, theirs.output_activations, output),
        Difference("total (stage 0)", ours.total, theirs.total, "the sum of the parts above"),
    ]


def second_opinion(model: PlanModel, evaluation: Evaluation, cache: StructureCache | None = None) -> list[Difference]:
    """ShardScope against Megatron-LM for one evaluated recipe (stage 0, the card Megatron reports). A
    context-parallel recipe is compared as its equivalent without cp (Megatron-Core: cp splits every activation
    along the sequence, weights replicated over cp): the sequence chunk s/cp on dp × cp replicas; the ring's
    K/V buffers and stored cross-chunk scores are ShardScope's own, outside this comparison."""
    choices = evaluation.choices or Choices()
    recipe = evaluation.recipe
    if recipe.cp > 1:
        model = replace(model, seq=model.seq // recipe.cp)
        recipe = replace(recipe, dp=recipe.dp * recipe.cp, cp=1)
        cache = None
    cache = cache or StructureCache(model)
    ours = shardscope_parts(model, recipe, choices, cache)
    return explain(model, recipe, choices, ours, megatron_parts(model, recipe))
