"""The modelling choices behind every estimate, each visible and switchable.

Two honest estimators differ by up to ±25 % per card on the same recipe (Megatron-LM's
`theoretical_memory_usage` against this planner) and every difference is one of these choices, so a
user must see and set them: bytes per parameter of the stored weight, its gradient and the optimizer
state; whether the embedding table is whole on every tensor-parallel card (MindFormers'
`vocab_emb_dp: True`) or split over mp; whether sequence parallel stores the attention / MLP input
matmuls' inputs as the sequence slice (Korthikanti §4.2.2) or as the gathered tensor the matmul reads;
whether the attention scores (a·s² per sample) are stored or not (flash attention recomputes them
inside the kernel); whether optimizer parallel splits only the optimizer state (ZeRO-1) or also the
stored weights and gradients (MindSpore's parallel optimizer).

The defaults without a YAML are the planner's historical ones (16 B/param for a 16-bit model).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from core.plan.recipes import PlanError

EMBEDDING = ("replicated", "split")
SP_STORED_INPUTS = ("sharded", "gathered")
ATTENTION_SCORES = ("stored", "flash")
OPTIMIZER_PARALLEL = ("states", "states+weights", "states+weights+gradients")
BYTE_CHOICES = ("param_bytes", "grad_bytes", "optimizer_bytes")
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
MAX_BYTES_PER_PARAM = 64


@dataclass(frozen=True)
class Choices:
    """What one card is assumed to hold; `to_dict` is the `choices` object of `plan --json`."""

    param_bytes: int = 2
    grad_bytes: int = 2
    optimizer_bytes: int = 12
    embedding: str = "replicated"
    sp_stored_inputs: str = "sharded"
    attention_scores: str = "stored"
    optimizer_parallel: str = "states"

    def check(self) -> Choices:
        """Refuse a value no estimate can use, naming the choice; returns self."""
        for name in BYTE_CHOICES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_BYTES_PER_PARAM:
                bound = f"a whole number of bytes from 0 to {MAX_BYTES_PER_PARAM}"
                raise PlanError(f"{name} must be {bound}, got {value!r}")
        for name, allowed in (
            ("embedding", EMBEDDING),
            ("sp_stored_inputs", SP_STORED_INPUTS),
            ("attention_scores", ATTENTION_SCORES),
            ("optimizer_parallel", OPTIMIZER_PARALLEL),
        ):
            if getattr(self, name) not in allowed:
                raise PlanError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        return self

    @property
    def split_embedding(self) -> bool:
        return self.embedding == "split"

    @property
    def gathered_inputs(self) -> bool:
        return self.sp_stored_inputs == "gathered"

    @property
    def flash(self) -> bool:
        return self.attention_scores == "flash"

    @property
    def shard_weights(self) -> bool:
        return self.optimizer_parallel != "states"

    @property
    def shard_gradients(self) -> bool:
        return self.optimizer_parallel == "states+weights+gradients"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_choices(dtype: str) -> Choices:
    """The planner's own defaults for a model of `dtype`: mixed-precision Adam (ZeRO §3.1) — 16-bit weight and
    gradient, 12 B of fp32 master + two moments; an fp32 model has no master copy (4 + 4 + 8)."""
    size = DTYPE_BYTES.get(dtype, 2)
    return Choices(param_bytes=size, grad_bytes=size, optimizer_bytes=8 + (0 if size == 4 else 4))


def with_changes(choices: Choices, changes: dict[str, Any]) -> Choices:
    """`choices` with some fields replaced (from the page or the CLI), checked."""
    unknown = sorted(set(changes) - set(Choices.__dataclass_fields__))
    if unknown:
        names = ", ".join(Choices.__dataclass_fields__)
        raise PlanError(f"unknown modelling choice {unknown[0]!r}: use one of {names}")
    return replace(choices, **changes).check()


# What each choice changes in the estimate: the "what is counted" table reads it.
EXPLAINED = {
    "param_bytes": "bytes of each stored weight element (param_init_type)",
    "grad_bytes": "bytes of each gradient element (MindSpore keeps gradients in the weight's dtype)",
    "optimizer_bytes": "optimizer bytes per parameter (Adam moments, plus an fp32 master copy when the optimizer "
    "keeps one)",
    "embedding": "the embedding table on each tensor-parallel card of stage 0: whole (vocab_emb_dp True) or 1/mp",
    "sp_stored_inputs": "with sequence parallel, the stored inputs of the QKV and MLP input matmuls: the "
    "sequence slice (1/mp, Korthikanti) or the gathered tensor the matmul reads",
    "attention_scores": "the softmax output a·s² per sample: stored for the backward pass, or not (flash "
    "attention recomputes it inside the kernel)",
    "optimizer_parallel": "what optimizer parallel splits over dp: the optimizer state only (ZeRO-1), also the "
    "stored weights (MindSpore's parallel optimizer with a whole gradient-accumulation "
    "buffer), or weights and gradients too",
}
