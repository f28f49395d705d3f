"""Every parallel recipe for N cards, each either valid or rejected with the reason a user can act on.

A recipe is MindSpore's/MindFormers' knobs for a decoder-only model: data parallel dp, model
(tensor) parallel mp, pipeline stages pp with dp·mp·pp = N, sequence parallel on/off, optimizer
parallel (`enable_parallel_optimizer`, ZeRO-1 style) on/off, recompute none/selective/full, and the
number of micro-batches m each data-parallel replica splits its share of the global batch into
(pipeline micro-batches when pp > 1, gradient accumulation steps when pp = 1).

The divisibility rules are MindFormers' (`LlamaForCausalLM` / `ParallelConfig` checks): heads and
kv_heads split over mp, ffn and vocab split over mp (vocab-parallel lm_head), the sequence split
over mp with sequence parallel, layers split evenly into pp stages, the global batch over dp·m, and
m ≥ pp so every stage has work in a 1F1B pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from core.errors import UserError
from core.plan.activations import Recompute
from core.sharding.design import MAX_DEVICES
from core.sharding.design_types import MAX_REPEAT

MAX_SIZE = 1 << 40  # one dimension beyond this is a typo, not a model (the model library's bound)
MAX_BOUNDS = {"layers": MAX_REPEAT}  # a design's repeat block stands for at most this many layers

DTYPES = ("bfloat16", "float16", "float32")
# MindFormers' `parallel_config.context_parallel_algo` values: ring attention (K/V blocks passed round the cp
# ring), DeepSpeed-Ulysses (all-to-all from sequence to heads), and both (`ulysses_degree_in_cp` for Ulysses).
CP_ALGOS = ("colossalai_cp", "ulysses_cp", "hybrid_cp")
CP_SHORT = {"colossalai_cp": "ring", "ulysses_cp": "ulysses", "hybrid_cp": "hybrid"}
DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


class PlanError(UserError, ValueError):
    """Bad planner input (a model or device count that cannot be planned), with the offending value."""


@dataclass(frozen=True)
class PlanModel:
    """The model flags of `python -m core plan` (the model library's LLaMA-style decoder)."""

    hidden: int
    heads: int
    ffn: int
    layers: int
    vocab: int
    seq: int
    kv_heads: int | None = None
    dtype: str = "bfloat16"

    @property
    def kv(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    def check(self) -> None:
        """Reject shapes no recipe can fix, naming the field."""
        for name in ("hidden", "heads", "ffn", "layers", "vocab", "seq"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PlanError(f"{name} must be a whole number >= 1, got {value!r}")
            top = MAX_BOUNDS.get(name, MAX_SIZE)
            if value > top:
                raise PlanError(f"{name} {value:,} is more than the {top:,} the planner accepts")
        if self.kv_heads is not None and (not isinstance(self.kv_heads, int) or self.kv_heads < 1):
            raise PlanError(f"kv_heads must be a whole number >= 1, got {self.kv_heads!r}")
        if self.hidden % self.heads:
            raise PlanError(f"hidden {self.hidden} is not divisible by heads {self.heads}")
        if self.heads % self.kv:
            raise PlanError(f"heads {self.heads} is not divisible by kv_heads {self.kv}")
        if self.dtype not in DTYPES:
            raise PlanError(f"dtype {self.dtype!r} is not supported: use one of {', '.join(DTYPES)}")


@dataclass(frozen=True)
class Recipe:
    dp: int
    mp: int
    pp: int
    sp: bool
    optimizer_shard: bool
    recompute: Recompute
    micro_batches: int
    micro_batch_size: int
    cp: int = 1  # context parallel: the sequence split over cp cards (MindFormers `context_parallel`)
    cp_algo: str = "colossalai_cp"
    ulysses_in_cp: int = 1  # hybrid_cp only: the Ulysses degree inside cp (`ulysses_degree_in_cp`)

    @property
    def devices(self) -> int:
        return self.dp * self.mp * self.pp * self.cp

    @property
    def ulysses(self) -> int:
        """Cards of the cp group joined by all-to-all (Ulysses); the rest, cp / ulysses, form the K/V ring."""
        if self.cp == 1 or self.cp_algo == "colossalai_cp":
            return 1
        return self.cp if self.cp_algo == "ulysses_cp" else self.ulysses_in_cp

    @property
    def ring(self) -> int:
        return self.cp // self.ulysses

    def cp_label(self) -> str:
        if self.cp == 1:
            return ""
        tail = f"{self.ulysses}" if self.cp_algo == "hybrid_cp" else ""
        return f"cp{self.cp}-{CP_SHORT.get(self.cp_algo, self.cp_algo)}{tail}"

    def label(self) -> str:
        flags = [f"dp{self.dp}", f"mp{self.mp}", f"pp{self.pp}"]
        flags += [self.cp_label()] if self.cp > 1 else []
        flags += ["sp"] if self.sp else []
        flags += ["os"] if self.optimizer_shard else []
        flags += [] if self.recompute is Recompute.NONE else [f"rc-{self.recompute.value}"]
        return " ".join(flags) + f" m{self.micro_batches}×b{self.micro_batch_size}"


@dataclass(frozen=True)
class Candidate:
    """A recipe and, when it cannot run, why not (empty reason = valid)."""

    recipe: Recipe
    reason: str = ""

    @property
    def valid(self) -> bool:
        return not self.reason


def divisors(n: int) -> list[int]:
    """Every positive divisor of n, ascending."""
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


def factorisations(n: int) -> list[tuple[int, int, int]]:
    """Every (dp, mp, pp) with dp·mp·pp = n."""
    return [(dp, mp, n // (dp * mp)) for dp in divisors(n) for mp in divisors(n // dp)]


def cp_reason(model: PlanModel, mp: int, sp: bool, cp: int, ulysses: int) -> str:
    """Why the sequence cannot be split over cp (Ulysses: heads over mp × its degree, MindSpeed's rule), or ''."""
    if cp == 1:
        return ""
    split = cp * (mp if sp else 1)
    if model.seq % split:
        return f"seq {model.seq} is not divisible by cp {cp}" + (f" × mp {mp} (sequence parallel)" if sp else "")
    if ulysses > 1 and model.heads % (mp * ulysses):
        return f"heads {model.heads} is not divisible by mp {mp} × Ulysses degree {ulysses}"
    return ""


def shape_reason(model: PlanModel, mp: int, pp: int, sp: bool) -> str:
    """Why the model cannot be split mp ways (and pp stages), or '' if it can."""
    checks = (
        (model.heads, "heads"),
        (model.kv, "kv_heads"),
        (model.ffn, "ffn"),
        (model.vocab, "vocab"),
    )
    for size, name in checks:
        if size % mp:
            return f"{name} {size} is not divisible by mp {mp}"
    if sp and model.seq % mp:
        return f"seq {model.seq} is not divisible by mp {mp} (sequence parallel splits the sequence)"
    if model.layers % pp:
        return f"layers {model.layers} is not divisible by pp {pp}"
    return ""


def enumerate_recipes(model: PlanModel, global_batch: int, devices: int, cp_algo: str | None = None) -> list[Candidate]:
    """Every recipe for `devices` cards, valid or not; an invalid one says why. With `cp_algo` (one of
    CP_ALGOS) the recipes also split the sequence over every cp > 1 dividing the cards (dp × mp × cp × pp)."""
    model.check()
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise PlanError(f"devices must be a whole number >= 1, got {devices!r}")
    if devices > MAX_DEVICES:
        raise PlanError(f"devices {devices} is more than the {MAX_DEVICES} a design holds")
    if isinstance(global_batch, bool) or not isinstance(global_batch, int) or global_batch < 1:
        raise PlanError(f"global batch must be a whole number >= 1, got {global_batch!r}")
    if cp_algo is not None and cp_algo not in CP_ALGOS:
        raise PlanError(f"context parallel algorithm {cp_algo!r} is not one of {', '.join(CP_ALGOS)}")
    out = list(_candidates(model, global_batch, devices))
    if cp_algo is not None:
        for cp in divisors(devices)[1:]:
            degrees = [d for d in divisors(cp) if 1 < d < cp] if cp_algo == "hybrid_cp" else [1]
            for u in degrees:
                for c in _candidates(model, global_batch, devices // cp):
                    r = replace(c.recipe, cp=cp, cp_algo=cp_algo, ulysses_in_cp=u)
                    reason = c.reason
                    if reason.startswith("optimizer parallel shards over dp"):  # it shards over dp × cp here
                        reason = recipe_candidate(model, r).reason
                    out.append(Candidate(r, reason or cp_reason(model, r.mp, r.sp, cp, r.ulysses)))
    return out


def _candidates(model: PlanModel, global_batch: int, devices: int) -> Iterator[Candidate]:
    recomputes = tuple(Recompute)
    for dp, mp, pp in factorisations(devices):
        per_replica = global_batch // dp if global_batch % dp == 0 else 0
        batch_reason = "" if per_replica else f"global batch {global_batch} is not divisible by dp {dp}"
        # Micro-batch counts: the divisors of the per-replica batch (m ≥ pp is checked per recipe).
        counts = divisors(per_replica) if per_replica else [1]
        for sp in (False, True):
            reason = batch_reason or shape_reason(model, mp, pp, sp)
            if not reason and sp and mp == 1:
                reason = "sequence parallel splits over mp: with mp 1 it is the recipe without it"
            for shard in (False, True):
                shard_reason = reason
                if not shard_reason and shard and dp == 1:
                    shard_reason = "optimizer parallel shards over dp: with dp 1 it is the recipe without it"
                for recompute in recomputes:
                    for m in counts:
                        size = per_replica // m if per_replica else 0
                        why = shard_reason
                        if not why and m < pp:
                            why = f"micro_batches {m} < pp {pp}: a 1F1B pipeline needs at least one per stage"
                        yield Candidate(Recipe(dp, mp, pp, sp, shard, recompute, m, size), why)


def recipe_candidate(model: PlanModel, recipe: Recipe) -> Candidate:
    """One given recipe (a MindFormers YAML's) with the reason it cannot run, by the enumeration's rules."""
    reason = shape_reason(model, recipe.mp, recipe.pp, recipe.sp)
    reason = reason or cp_reason(model, recipe.mp, recipe.sp, recipe.cp, recipe.ulysses)
    if not reason and recipe.micro_batches < recipe.pp:
        reason = f"micro_batches {recipe.micro_batches} < pp {recipe.pp}: a 1F1B pipeline needs at least one per stage"
    return Candidate(recipe, reason)
