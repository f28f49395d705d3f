"""Evaluate every recipe for N cards: memory per card, communication per step, bubble; Pareto front; a proposal.

Per card the planner reports the busiest pipeline stage: memory = max over stages of (model states
from the placement, `states`) + (activations, `activations`: per-layer bytes × layers/pp ×
micro-batches in flight, plus the embedding on the first stage and the logits on the last); comm =
max over stages of tensor-parallel + data-parallel + pipeline bytes (`comm`).

Speed: the weights' placement depends only on (dp, mp, sp) and the tensor-parallel volume only on
(mp, sp), so each is computed once per distinct value (`StructureCache`) and every other knob
(pp, optimizer parallel, recompute, micro-batches) is arithmetic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from core.models import ModelError
from core.models.llama import LlamaConfig, LlamaRecipe, llama_design
from core.plan import activations as act
from core.plan import comm
from core.plan import context as cpx
from core.plan.activations import DecoderShape, Recompute
from core.plan.choices import Choices, default_choices
from core.plan.recipes import Candidate, PlanError, PlanModel, Recipe, enumerate_recipes, recipe_candidate
from core.plan.states import (
    BlockTotals,
    WeightSlice,
    block_totals,
    split_embedding,
    stage_states_from,
    weight_slices,
)
from core.plan.steptime import StepTime, TimeChoices, step_time
from core.sharding.design import Design, PlannerRecipe
from core.sharding.placement import dtype_bytes

GIB = 1 << 30
MAX_CARD_MEMORY_GB = 65536.0  # 64 TiB: far above any accelerator; beyond it (or inf) is a typo


def check_card_memory(card_memory_gb: float) -> int:
    """Card memory in bytes; a non-number, <= 0, inf or an absurd size is refused naming the bound."""
    if isinstance(card_memory_gb, bool) or not isinstance(card_memory_gb, int | float):
        raise PlanError(f"card memory must be a number of GB, got {card_memory_gb!r}")
    if not 0 < card_memory_gb <= MAX_CARD_MEMORY_GB:  # False for nan as well
        raise PlanError(f"card memory must be > 0 and at most {MAX_CARD_MEMORY_GB:g} GB, got {card_memory_gb:g}")
    return int(card_memory_gb * GIB)


@dataclass(frozen=True)
class Evaluation:
    """One recipe's cost per card (the busiest stage), or why it cannot run."""

    recipe: Recipe
    reason: str = ""
    model_state_bytes: int = 0
    activation_bytes: int = 0
    memory_bytes: int = 0
    comm_bytes: int = 0
    tp_comm_bytes: int = 0
    dp_comm_bytes: int = 0
    pp_comm_bytes: int = 0
    bubble: float = 0.0
    fits: bool = False
    peak_stage: int = 0
    comm_source: str = ""
    compute_factor: float = 1.0  # extra compute of recompute (Korthikanti §5), for ranking only
    choices: Choices | None = None
    cp_comm_bytes: int = 0
    time: StepTime | None = None

    @property
    def step_s(self) -> float:
        """The step time when one was computed, else the relative proxy (both: smaller is faster)."""
        return self.time.step_s if self.time is not None else self.relative_step

    @property
    def valid(self) -> bool:
        return not self.reason

    @property
    def relative_step(self) -> float:
        """Ranking proxy, not a time: recompute's extra compute over the pipeline's busy fraction."""
        return self.compute_factor / (1.0 - self.bubble)

    def to_dict(self) -> dict[str, Any]:
        r = self.recipe
        row: dict[str, Any] = {
            "dp": r.dp,
            "mp": r.mp,
            "pp": r.pp,
            "cp": r.cp,
            "sp": r.sp,
            "optimizer_shard": r.optimizer_shard,
            "recompute": r.recompute.value,
            "micro_batch_size": r.micro_batch_size,
            "micro_batches": r.micro_batches,
            "valid": self.valid,
        }
        if r.cp > 1:
            row |= {"cp_algo": r.cp_algo, "ulysses_degree_in_cp": r.ulysses}
        if self.choices is not None:
            row["choices"] = self.choices.to_dict()
        if not self.valid:
            row["reason"] = self.reason
            return row
        row.update(
            model_state_bytes=self.model_state_bytes,
            activation_bytes=self.activation_bytes,
            memory_bytes=self.memory_bytes,
            comm_bytes=self.comm_bytes,
            tp_comm_bytes=self.tp_comm_bytes,
            dp_comm_bytes=self.dp_comm_bytes,
            pp_comm_bytes=self.pp_comm_bytes,
            cp_comm_bytes=self.cp_comm_bytes,
            bubble=round(self.bubble, 6),
            fits=self.fits,
            peak_stage=self.peak_stage,
            comm_source=self.comm_source,
        )
        if self.time is not None:
            row["time"] = self.time.to_dict()
        return row


@dataclass
class StructureCache:
    """Placement and tensor-parallel volume, computed once per distinct (dp, mp, sp) / (mp, sp)."""

    model: PlanModel
    weights: dict[tuple[int, int, bool], list[WeightSlice]] = field(default_factory=dict)
    totals: dict[tuple[int, int, bool, bool, bool], BlockTotals] = field(default_factory=dict)
    volumes: dict[tuple[int, bool], comm.TensorParallelVolume] = field(default_factory=dict)

    def design(self, dp: int, mp: int, sp: bool, batch: int) -> Design:
        return llama_design(llama_config(self.model, batch), LlamaRecipe(dp=dp, mp=mp, sp=sp))

    def weight_slices(self, dp: int, mp: int, sp: bool) -> list[WeightSlice]:
        key = (dp, mp, sp)
        if key not in self.weights:
            self.weights[key] = weight_slices(self.design(dp, mp, sp, batch=dp))
        return self.weights[key]

    def block_totals(
        self, dp: int, mp: int, sp: bool, optimizer_shard: bool, split_embedding_table: bool = False
    ) -> BlockTotals:
        key = (dp, mp, sp, optimizer_shard, split_embedding_table)
        if key not in self.totals:
            weights = self.weight_slices(dp, mp, sp)
            if split_embedding_table:
                weights = split_embedding(weights, mp)
            self.totals[key] = block_totals(weights, dp, optimizer_shard)
        return self.totals[key]

    def tp_volume(self, mp: int, sp: bool) -> comm.TensorParallelVolume:
        key = (mp, sp)
        if key not in self.volumes:
            self.volumes[key] = self._tp_volume(mp, sp)
        return self.volumes[key]

    def _tp_volume(self, mp: int, sp: bool) -> comm.TensorParallelVolume:
        m = self.model
        fallback = comm.tp_volume_formula(m.seq, m.hidden, mp, dtype_bytes(m.dtype))
        if mp == 1:
            return comm.TensorParallelVolume(0.0, 0.0, 0.0, fallback.source)
        try:
            from core.sharding.operators import analyze_design

            design = self.design(1, mp, sp, batch=1)
            analyses = analyze_design(design)
        except Exception:  # any failure of the operator rules means: use the formula
            return fallback
        if any(not a.valid for a in analyses):
            return fallback
        repeat = getattr(design, "repeat", None)
        weights = [n for n in design.tensors if design.tensor_role(n) == "weight"]
        volume = comm.tp_volume_from_analyses(
            analyses, getattr(repeat, "first", None), getattr(repeat, "last", None), samples=1, weights=weights
        )
        if volume.per_layer <= 0:
            return fallback
        # The LM head's backward AllReduce of its input gradient has no forward twin in the analysis.
        return replace(volume, after=max(volume.after, fallback.after))


def llama_config(model: PlanModel, batch: int) -> LlamaConfig:
    return LlamaConfig(
        hidden=model.hidden,
        heads=model.heads,
        ffn=model.ffn,
        seq=model.seq,
        batch=batch,
        layers=model.layers,
        vocab=model.vocab,
        kv_heads=model.kv_heads,
        dtype=model.dtype,
    )


def apply_recipe(model: PlanModel, recipe: Recipe) -> Design:
    """The model library's design for a recipe: one pipeline stage's device matrix (dp × mp cards), fed one
    micro-batch per data-parallel replica (batch = micro_batch_size × dp); pp, recompute and optimizer
    parallel are job settings, kept as the design's `planner_recipe` (and said in its description). A design
    has no sequence split: context parallel is refused (export its MindFormers YAML instead)."""
    if recipe.cp > 1:
        raise PlanError(f"{recipe.label()}: a design cannot split the sequence (cp); use its MindFormers YAML")
    batch = recipe.micro_batch_size * recipe.dp
    name = f"llama_dp{recipe.dp}_mp{recipe.mp}_pp{recipe.pp}" + ("_sp" if recipe.sp else "")
    design = llama_design(llama_config(model, batch), LlamaRecipe(dp=recipe.dp, mp=recipe.mp, sp=recipe.sp), name=name)
    note = (
        f"Planner recipe {recipe.label()}: pipeline_stage {recipe.pp}, micro_batch_num {recipe.micro_batches}, "
        f"optimizer parallel {'on' if recipe.optimizer_shard else 'off'}, recompute {recipe.recompute.value}."
    )
    description = f"{design.description} {note}".strip()[:2000]  # for the reader; the plan reads planner_recipe
    kept = PlannerRecipe(
        recipe.dp,
        recipe.mp,
        recipe.pp,
        recipe.micro_batches,
        recipe.micro_batch_size,
        recipe.sp,
        recipe.optimizer_shard,
        recipe.recompute.value,
    )
    return replace(design, description=description, planner_recipe=kept)


def model_from_design(design: Design) -> PlanModel | None:
    """The LLaMA-style model a model-library design was built from, or None for any other design.

    Read from the weights' shapes (embedding (vocab, h), wk (h, h_kv), w1 (h, ffn)), the repeat count,
    the token input (batch, seq) and the Reshape that splits Q into heads (…, heads, head_dim).
    """
    names = ("embedding", "wq", "wk", "w1", "lm_head")
    if design.repeat is None or any(n not in design.tensors for n in names):
        return None
    try:
        vocab, hidden = design.tensors["embedding"].shape
        kv_hidden = design.tensors["wk"].shape[-1]
        ffn = design.tensors["w1"].shape[-1]
        tokens = next(n for n in design.tensors if design.tensor_role(n) == "input")
        seq = design.tensors[tokens].shape[-1]
        q_op = next(op.name for op in design.operators if "wq" in op.inputs)
        split = next(op for op in design.operators if op.type == "Reshape" and q_op in op.inputs)
        heads = int((split.shape or ())[-2])
    except (StopIteration, ValueError, IndexError):
        return None
    head_dim = hidden // heads if heads else 0
    if not head_dim or kv_hidden % head_dim:
        return None
    kv_heads = kv_hidden // head_dim
    model = PlanModel(
        hidden=hidden,
        heads=heads,
        ffn=ffn,
        layers=design.repeat.count,
        vocab=vocab,
        seq=seq,
        kv_heads=None if kv_heads == heads else kv_heads,
        dtype=design.tensors["embedding"].dtype,
    )
    try:
        model.check()
    except PlanError:
        return None
    return model


@dataclass(frozen=True)
class Plan:
    model: PlanModel
    global_batch: int
    devices: int
    card_memory_bytes: int
    evaluations: list[Evaluation]
    seconds: float
    choices: Choices = field(default_factory=Choices)
    timing: TimeChoices = field(default_factory=TimeChoices)
    cp_algo: str | None = None

    @property
    def valid(self) -> list[Evaluation]:
        return [e for e in self.evaluations if e.valid]

    @property
    def invalid(self) -> list[Evaluation]:
        return [e for e in self.evaluations if not e.valid]

    @property
    def fitting(self) -> list[Evaluation]:
        return [e for e in self.evaluations if e.valid and e.fits]

    @property
    def proposal(self) -> Evaluation | None:
        """The fitting recipe with the least recompute/bubble cost, then the least communication."""
        return best(self.fitting)

    @property
    def pareto(self) -> list[Evaluation]:
        return pareto_front(self.valid)

    @property
    def time_pareto(self) -> list[Evaluation]:
        """Recipes no other recipe beats on both memory per card and step time: the chart's front."""
        return pareto_front(self.valid, key=lambda e: e.step_s)


def rank_key(e: Evaluation) -> tuple[float, int, int, int]:
    """The shortest step (the step-time model; without one, the least recompute/bubble cost), then least
    communication, then the larger micro-batch (fewer, fuller kernels), then the least memory."""
    return (float(f"{e.step_s:.6g}"), e.comm_bytes, -e.recipe.micro_batch_size, e.memory_bytes)


def best(evaluations: Sequence[Evaluation]) -> Evaluation | None:
    return min(evaluations, key=rank_key) if evaluations else None


def pareto_front(
    evaluations: Sequence[Evaluation], key: Callable[[Evaluation], float] | None = None
) -> list[Evaluation]:
    """Recipes no other recipe beats on both memory per card and `key` (default: communication per step)."""
    cost = key or (lambda e: e.comm_bytes)
    ordered = sorted(evaluations, key=lambda e: (e.memory_bytes, cost(e)))
    front: list[Evaluation] = []
    for e in ordered:
        if not front or cost(e) < cost(front[-1]):
            front.append(e)
    return front


def recompute_factor(recompute: Recompute, seq: int, hidden: int) -> float:
    """Extra compute of recompute (Korthikanti §5; model FLOPs per layer 72bsh² + 12bs²h, the
    attention core's forward 4bs²h): selective 1 + s/(18h + 3s), full 4/3 (one more forward)."""
    if recompute is Recompute.FULL:
        return 4 / 3
    if recompute is Recompute.SELECTIVE:
        return 1 + seq / (18 * hidden + 3 * seq)
    return 1.0


def evaluate(
    candidate: Candidate,
    model: PlanModel,
    cache: StructureCache,
    card_memory_bytes: int,
    choices: Choices | None = None,
    timing: TimeChoices | None = None,
) -> Evaluation:
    """Cost of one recipe on its busiest stage (memory and communication maximised separately) and its step
    time. Context parallel (`core.plan.context`): each card holds the sequence chunk s/cp; weights are
    replicated over dp × cp, so placement, optimizer parallel and the gradient reduction see dp × cp."""
    r = candidate.recipe
    choices = choices or default_choices(model.dtype)
    if not candidate.valid:
        return Evaluation(r, candidate.reason, choices=choices)
    replicas = r.dp * r.cp
    try:
        totals = cache.block_totals(replicas, r.mp, r.sp, r.optimizer_shard, choices.split_embedding)
    except ModelError as exc:  # the model library refuses what the enumeration let through
        return Evaluation(r, f"the model library cannot build it: {exc}", choices=choices)
    volume = cache.tp_volume(r.mp, r.sp)
    if r.cp > 1:
        v = volume  # per sample of the whole sequence: a card's chunk is 1/cp of it
        volume = replace(v, per_layer=v.per_layer / r.cp, before=v.before / r.cp, after=v.after / r.cp)
    e_bytes = dtype_bytes(model.dtype)
    shape = DecoderShape.llama(model.hidden, model.heads, model.ffn, model.kv_heads)
    seq = model.seq // r.cp
    per_layer = act.layer_activation_bytes(
        shape,
        seq,
        r.micro_batch_size,
        r.mp,
        r.sp,
        r.recompute,
        e_bytes,
        gathered_inputs=choices.gathered_inputs,
        flash=choices.flash,
    ) + cpx.scores_extra_bytes(shape, r, model.seq, e_bytes, choices.flash)
    embed = act.embedding_activation_bytes(seq, r.micro_batch_size, model.hidden)
    out = act.output_activation_bytes(seq, r.micro_batch_size, model.hidden, model.vocab, r.mp, r.sp, e_bytes)
    layers_here = model.layers // r.pp
    buffer = cpx.cp_buffer_bytes(r, model.seq, model.hidden, shape.kv_hidden, e_bytes)
    states = [stage_states_from(totals, i, r.pp, model.layers, choices) for i in range(r.pp)]
    peak = (-1.0, 0, 0, 0)
    worst_comm: comm.StageComm | None = None
    for stage in range(r.pp):
        flight = act.in_flight_micro_batches(stage, r.pp, r.micro_batches)
        activation = flight * (layers_here * per_layer + (embed if stage == 0 else 0.0))
        activation += (out if stage == r.pp - 1 else 0.0) + buffer
        total = states[stage].total + activation
        if total > peak[0]:
            peak = (total, stage, states[stage].total, int(activation))
        sc = comm.stage_comm(
            volume,
            states[stage].gradient_bytes,
            stage,
            pp=r.pp,
            layers=model.layers,
            dp=replicas,
            mp=r.mp,
            sp=r.sp,
            seq=seq,
            hidden=model.hidden,
            micro_batches=r.micro_batches,
            micro_batch_size=r.micro_batch_size,
            recompute=r.recompute,
            act_bytes=e_bytes,
        )
        if worst_comm is None or sc.total > worst_comm.total:
            worst_comm = sc
    assert worst_comm is not None
    memory = peak[2] + peak[3]
    cp_bytes = cpx.cp_layer_send_bytes(r, model.seq, model.hidden, shape.kv_hidden, e_bytes)
    cp_bytes *= layers_here * r.micro_batches
    timed = step_time(
        model,
        r,
        timing or TimeChoices(),
        tp_bytes=worst_comm.tp,
        cp_bytes=cp_bytes,
        dp_bytes=worst_comm.dp,
        pp_bytes=worst_comm.pp,
    )
    return Evaluation(
        recipe=r,
        model_state_bytes=peak[2],
        activation_bytes=peak[3],
        memory_bytes=memory,
        comm_bytes=int(worst_comm.total + cp_bytes),
        cp_comm_bytes=int(cp_bytes),
        time=timed,
        tp_comm_bytes=int(worst_comm.tp),
        dp_comm_bytes=int(worst_comm.dp),
        pp_comm_bytes=int(worst_comm.pp),
        bubble=act.bubble_fraction(r.pp, r.micro_batches),
        fits=memory <= card_memory_bytes,
        peak_stage=peak[1],
        comm_source=volume.source,
        compute_factor=recompute_factor(r.recompute, model.seq, model.hidden),
        choices=choices,
    )


def explore(
    model: PlanModel,
    global_batch: int,
    devices: int,
    card_memory_gb: float,
    choices: Choices | None = None,
    timing: TimeChoices | None = None,
    cp_algo: str | None = None,
) -> Plan:
    """Enumerate and evaluate every recipe. `card_memory_gb` is in GiB (MindSpore's "GB"); `choices` default
    to the planner's own (`default_choices(model.dtype)`), `timing` to `TimeChoices()`; with `cp_algo` the
    recipes also use context parallel of that algorithm."""
    start = time.perf_counter()
    card = check_card_memory(card_memory_gb)
    candidates = enumerate_recipes(model, global_batch, devices, cp_algo)
    choices = (choices or default_choices(model.dtype)).check()
    timing = (timing or TimeChoices()).check()
    cache = StructureCache(model)
    evaluations = [evaluate(c, model, cache, card, choices, timing) for c in candidates]
    seconds = time.perf_counter() - start
    return Plan(model, global_batch, devices, card, evaluations, seconds, choices, timing, cp_algo)


def find_recipe(plan: Plan, recipe: Recipe) -> Evaluation:
    """The plan's evaluation of `recipe` (a YAML's), or that recipe evaluated alone when the plan is for another
    device count or batch, with the plan's choices."""
    for e in plan.evaluations:
        if e.recipe == recipe:
            return e
    cache = StructureCache(plan.model)
    candidate = recipe_candidate(plan.model, recipe)
    return evaluate(candidate, plan.model, cache, plan.card_memory_bytes, plan.choices, plan.timing)


def plan_rows(evaluations: Sequence[Evaluation]) -> list[dict[str, Any]]:
    """JSON-ready rows (the CLI's --json and the page's table)."""
    return [e.to_dict() for e in evaluations]


# Shown next to every estimate: users of every planner complain the estimate misses measured memory.
COUNTED = (
    "weights, gradients and Adam states of every weight tensor, from its placement on the device matrix, at the "
    "modelling choices' bytes per element",
    "optimizer states split over dp with optimizer parallel (when the weight's first local dimension divides)",
    "activations per layer (Korthikanti et al. 2022, adapted to SwiGLU / RMSNorm / GQA) × layers per stage",
    "1F1B micro-batches in flight on each stage; token ids on the first stage; fp32 logits on the last",
)
NOT_COUNTED = (
    "the framework's workspace, communication buffers and memory-pool fragmentation (often 5-15 %)",
    "temporary tensors inside an operator (e.g. the full softmax before dropout, flash-attention workspace)",
    "with optimizer_parallel 'states', MindSpore's sharded weight storage (weights counted whole: conservative)",
    "the gathered full weights / gradients held briefly by optimizer-parallel AllGather / ReduceScatter",
    "the loss-scale, dataset queues and the compiled graph's own constants",
)
