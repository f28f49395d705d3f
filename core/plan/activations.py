"""Activation bytes a card stores for the backward pass, per transformer layer and per pipeline stage.

Source: V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models", 2022,
https://arxiv.org/abs/2205.05198, Section 4 and Table 2 (16-bit activations, 1-byte dropout masks):

    no parallelism                          s·b·h·(34 + 5·a·s/h)
    tensor parallel (t)                     s·b·h·(10 + 24/t + 5·a·s/(h·t))
    tensor + sequence parallel              s·b·h·(34/t + 5·a·s/(h·t))
    tensor parallel + selective recompute   s·b·h·(10 + 24/t)
    tensor + sequence + selective           s·b·h·(34/t)
    full recompute                          s·b·h·2

`korthikanti_table2` is that table, verbatim. `layer_activation_bytes` rebuilds it term by term
(Section 4.1: attention 11sbh + 5as²b, MLP 19sbh, two LayerNorms 4sbh) so that the same counting
gives the LLaMA-style decoder of `core.models.llama` (see `DecoderShape` for the differences:
SwiGLU, RMSNorm, grouped-query attention, no dropout). The GPT-style shape reproduces the table
exactly (tests/test_plan.py). Pipeline in-flight micro-batches follow Megatron-LM's
`megatron/training/theoretical_memory_usage.py` (`compute_activation_memory`): 1F1B keeps
min(p - i, m) micro-batches alive on stage i.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Recompute(StrEnum):
    """Which activations are dropped in the forward pass and recomputed in the backward pass."""

    NONE = "none"
    SELECTIVE = "selective"  # Korthikanti §5: recompute only the attention core (QKᵀ, softmax, ·V)
    FULL = "full"  # keep only each layer's input (Chen et al. 2016 checkpointing)


def korthikanti_table2(
    s: int, b: int, h: int, a: int, t: int = 1, sp: bool = False, recompute: Recompute | str = Recompute.NONE
) -> float:
    """Bytes per layer per card, exactly Table 2 of Korthikanti et al. 2022 (GPT, 16-bit activations).

    Kept verbatim as the published reference the general counting is tested against.
    """
    recompute = Recompute(recompute)
    sbh = s * b * h
    attention_core = 5 * a * s / (h * t)
    if recompute is Recompute.FULL:
        return sbh * 2.0  # Table 2, "Full Activation Recomputation"
    core = 0.0 if recompute is Recompute.SELECTIVE else attention_core
    if sp:
        return sbh * (34 / t + core)  # "Tensor + Sequence Parallel (+ Selective)"
    return sbh * (10 + 24 / t + core)  # "Tensor Parallel (+ Selective)"; t = 1 is "No Parallelism"


@dataclass(frozen=True)
class DecoderShape:
    """What one transformer layer looks like, for counting its stored activations.

    GPT (Korthikanti's model): LayerNorm, GeLU MLP with ffn = 4h, every head has its own K/V,
    dropout after attention probabilities, attention output and MLP output.
    LLaMA-style decoder (core.models.llama): RMSNorm (stores its input like LayerNorm: 2sbh; its
    per-token rms statistic is s·b values, neglected as Korthikanti neglects LayerNorm's mean/var),
    SwiGLU MLP (gate and up projections, SiLU(gate)·up: four s·b·ffn tensors are stored instead of
    GeLU's two), grouped-query attention (K and V have kv_heads·h/a columns), no dropout (no masks,
    and the softmax output *is* the input of the ·V product, so it is stored once: 2as²b, not 5as²b).
    """

    hidden: int
    heads: int
    ffn: int
    kv_heads: int | None = None
    gated: bool = False  # SwiGLU instead of GeLU
    dropout: bool = True

    @property
    def kv_hidden(self) -> int:
        """Columns of K (and of V): kv_heads · head_dim."""
        kv = self.heads if self.kv_heads is None else self.kv_heads
        return self.hidden * kv // self.heads

    @classmethod
    def gpt(cls, hidden: int, heads: int, ffn: int | None = None) -> DecoderShape:
        return cls(hidden=hidden, heads=heads, ffn=4 * hidden if ffn is None else ffn, gated=False, dropout=True)

    @classmethod
    def llama(cls, hidden: int, heads: int, ffn: int, kv_heads: int | None = None) -> DecoderShape:
        return cls(hidden=hidden, heads=heads, ffn=ffn, kv_heads=kv_heads, gated=True, dropout=False)


@dataclass(frozen=True)
class LayerTerms:
    """Stored activations of one layer, in elements, split by how tensor/sequence parallel divides them.

    `replicated`: tensors every tensor-parallel rank holds whole without sequence parallel (norm
    inputs, the inputs of the first column-parallel matmuls, dropout masks); sequence parallel
    splits them over t. `split`: tensors tensor parallel always divides by t (per-head Q/K/V, the
    MLP's ffn-wide tensors, the row-parallel matmul inputs). `core`: the attention core
    (softmax output, dropout mask and output) that selective recompute drops. Mask entries are
    1 byte; all other entries are `act_bytes` each.
    """

    replicated: int
    replicated_masks: int
    split: int
    core: int
    core_masks: int
    matmul_inputs: int = 0  # the part of `replicated` that feeds the QKV and MLP input matmuls


def layer_terms(shape: DecoderShape, s: int, b: int) -> LayerTerms:
    """Korthikanti §4.1's per-tensor count, generalised to gated MLPs, GQA and dropout-free layers.

    Attention (§4.1): QKV input 2sbh → `h` elements replicated; Q (h) and K, V (kv_hidden each);
    softmax output a·s² per sample; with dropout also its 1-byte mask and its output; the output
    projection's input (h); the dropout mask after attention (1 byte · h).
    MLP: input of the first linear (h, replicated); GeLU: its input and output (ffn each); SwiGLU:
    gate, up, SiLU(gate) and the product fed to the down projection (ffn each); the dropout mask (h).
    Norms: two, each stores its input (h, replicated).
    """
    sb = s * b
    h, f, hkv = shape.hidden, shape.ffn, shape.kv_hidden
    replicated = sb * (2 * h + h + h)  # two norm inputs, QKV-matmul input, MLP-first-linear input
    replicated_masks = sb * 2 * h if shape.dropout else 0  # dropout after attention and after the MLP
    split = sb * (h + 2 * hkv + h + (4 if shape.gated else 2) * f)  # Q, K, V, out-proj input, MLP body
    probs = shape.heads * s * s * b
    core = probs * (2 if shape.dropout else 1)  # softmax output (+ dropout output)
    core_masks = probs if shape.dropout else 0
    return LayerTerms(replicated, replicated_masks, split, core, core_masks, matmul_inputs=sb * 2 * h)


def layer_activation_bytes(
    shape: DecoderShape,
    s: int,
    b: int,
    t: int = 1,
    sp: bool = False,
    recompute: Recompute | str = Recompute.NONE,
    act_bytes: int = 2,
    gathered_inputs: bool = False,
    flash: bool = False,
) -> float:
    """Bytes one card stores for one layer and one micro-batch of b sequences of length s.

    Tensor parallel degree t divides the `split` and `core` terms; sequence parallel also divides the
    `replicated` ones (Korthikanti §4.2.2) — except, with `gathered_inputs`, the inputs of the QKV and
    MLP input matmuls, stored as the gathered tensor the matmul reads. Selective recompute (or `flash`
    attention, which recomputes the scores inside its kernel) drops the attention core; full recompute
    keeps only the layer input, 2sbh (Table 2), which sequence parallel splits over t (the input is
    sequence-sharded between layers; Table 2 does not list this case).
    """
    recompute = Recompute(recompute)
    h = shape.hidden
    if recompute is Recompute.FULL:
        return s * b * h * act_bytes / (t if sp else 1)
    terms = layer_terms(shape, s, b)
    shared = terms.replicated * act_bytes + terms.replicated_masks
    whole = terms.matmul_inputs * act_bytes if sp and gathered_inputs else 0
    per_rank = terms.split * act_bytes
    if recompute is Recompute.NONE and not flash:
        per_rank += terms.core * act_bytes + terms.core_masks
    return ((shared - whole) / t + whole if sp else shared) + per_rank / t


def embedding_activation_bytes(s: int, b: int, hidden: int, dropout: bool = False, id_bytes: int = 4) -> float:
    """The first stage's extra activations per micro-batch: token ids (+ embedding dropout mask).

    Megatron-LM `compute_activation_memory` ("Input to embedding", 8sb for int64 ids; "Dropout in
    embedding layer", sbh); MindSpore feeds int32 ids (4sb) and LLaMA has no embedding dropout.
    """
    return s * b * id_bytes + (s * b * hidden if dropout else 0)


def output_activation_bytes(
    s: int, b: int, hidden: int, vocab: int, t: int = 1, sp: bool = False, act_bytes: int = 2
) -> float:
    """The last stage's extra activations per micro-batch: final norm input, lm_head input, fp32 logits.

    Megatron-LM `compute_activation_memory` ("Inputs to output layer and CE loss": 4sbh(1 + v/h),
    i.e. fp32 logits for the loss). The logits are split over t when the lm_head is vocab-parallel.
    The two hidden-wide inputs are whole on every tensor-parallel card, with or without sequence
    parallel: the model library's head (`core.models.llama._head`, MindFormers' `norm_out.shard((dp, 1))`
    and `lm_head` `((dp, 1), (mp, 1))`) gathers the sequence-split residual before the final norm, so
    `sp` does not divide them (it did before, under-counting the last stage by 2sbh·(1 - 1/t) elements).
    """
    del sp  # kept in the signature: callers state the recipe; the head gathers either way
    hidden_inputs = 2 * s * b * hidden * act_bytes
    logits = 4 * s * b * vocab / t
    return hidden_inputs + logits


def in_flight_micro_batches(stage: int, pp: int, micro_batches: int) -> int:
    """Micro-batches whose activations stage `stage` (0-based) holds at the 1F1B peak: min(p - i, m).

    Narayanan et al. 2021 (PipeDream-Flush / 1F1B); Megatron-LM `compute_activation_memory`
    ("number of microbatches in pipeline can be less than pp_size"). pp = 1 (gradient accumulation)
    keeps one micro-batch alive.
    """
    return max(1, min(pp - stage, micro_batches))


def bubble_fraction(pp: int, micro_batches: int) -> float:
    """Idle fraction of a 1F1B pipeline step: (p − 1)/(m + p − 1) (Narayanan et al. 2021, §2.2)."""
    return (pp - 1) / (micro_batches + pp - 1)
