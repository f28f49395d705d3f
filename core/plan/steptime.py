"""How long one training step of a recipe takes on a card, with every assumption visible and switchable.

    step_s = compute_s + bubble_s + exposed_comm_s

* compute: the FLOPs the busiest pipeline stage runs per step divided by the card's peak × `efficiency` (the
  achieved fraction of peak in matmuls and attention). FLOPs per layer and sequence, forward (Narayanan et al.
  2021 §5.1, adapted to SwiGLU and GQA): matmuls 2·s·(h·(h + 2h_kv) + h·h + 3·h·f), attention 4·s²·h (QKᵀ and
  ·V), halved when `attention_flops` is "causal" (flash attention skips the masked blocks); the LM head 2·s·h·V
  on the last stage. Backward is twice the forward; full recompute adds one forward of every layer, selective
  recompute one forward of the attention core. Tensor and context parallel divide a layer's work by mp · cp.
* bubble: a 1F1B pipeline of p stages and m micro-batches idles (p − 1) micro-batch times (Narayanan 2021 §2.2).
* communication: each collective's bytes per card per step (`core.plan.comm`, already including the ring
  factors 2(n−1)/n and (n−1)/n, and the context-parallel ring / all-to-all of `core.plan.context`) over the link
  its group crosses: inside a node when the group's cards fit in one (MindSpore numbers ranks mp fastest, then
  cp, then dp, then stages), else between nodes. `overlap` of it hides behind compute; the rest is exposed.
MFU: the model's FLOPs (without recompute) per card per second over the card's peak.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from core.plan.activations import Recompute
from core.plan.hardware import DEFAULT_HARDWARE, PRESETS, Hardware
from core.plan.recipes import PlanError, PlanModel, Recipe

ATTENTION_FLOPS = ("causal", "full")
# Picked once, not fitted per config (README "Step time"): 0.55 is the model-FLOPs utilisation Megatron-LM
# reports for dense GPT models of 22B-1T with selective recompute (Korthikanti et al. 2022, Table 5: 54-56 %);
# half of the communication is hidden behind compute (gradient reduction overlaps the backward pass, tensor
# parallel mostly does not).
DEFAULT_EFFICIENCY = 0.55
DEFAULT_OVERLAP = 0.5


@dataclass(frozen=True)
class TimeChoices:
    """The assumptions of a step time; `to_dict` is the `time_choices` of `plan --json`."""

    hardware: Hardware = field(default_factory=lambda: PRESETS[DEFAULT_HARDWARE])
    efficiency: float = DEFAULT_EFFICIENCY
    overlap: float = DEFAULT_OVERLAP
    attention_flops: str = "causal"

    def check(self) -> TimeChoices:
        """Refuse a value no time can use, naming it; returns self."""
        self.hardware.check()
        e = self.efficiency
        if isinstance(e, bool) or not isinstance(e, int | float) or not 0 < e <= 1:
            raise PlanError(f"efficiency must be a fraction of the peak > 0 and at most 1, got {e!r}")
        o = self.overlap
        if isinstance(o, bool) or not isinstance(o, int | float) or not 0 <= o <= 1:
            raise PlanError(f"overlap must be a fraction from 0 to 1, got {o!r}")
        if self.attention_flops not in ATTENTION_FLOPS:
            allowed = ", ".join(ATTENTION_FLOPS)
            raise PlanError(f"attention_flops must be one of {allowed}, got {self.attention_flops!r}")
        return self

    def with_changes(self, **changes: Any) -> TimeChoices:
        return replace(self, **{k: v for k, v in changes.items() if v is not None}).check()

    def to_dict(self) -> dict[str, Any]:
        return {
            "hardware": self.hardware.to_dict(),
            "efficiency": self.efficiency,
            "overlap": self.overlap,
            "attention_flops": self.attention_flops,
        }


EXPLAINED_TIME = {
    "hardware": "the card: peak dense 16-bit TFLOPS, link bandwidth inside a node and between nodes, cards per node",
    "efficiency": "the achieved fraction of the peak in matmuls and attention (one global figure)",
    "overlap": "the fraction of communication hidden behind compute",
    "attention_flops": "attention's s² work counted whole, or halved for a causal mask (flash attention skips "
    "the masked blocks)",
}


@dataclass(frozen=True)
class StepTime:
    """One recipe's step on the busiest stage, in seconds, and what it yields."""

    step_s: float
    tokens_per_s_per_card: float
    mfu: float
    compute_s: float
    exposed_comm_s: float
    bubble_s: float
    comm_s: float

    def to_dict(self) -> dict[str, float]:
        return {k: float(f"{v:.6g}") for k, v in asdict(self).items()}


def layer_forward_flops(model: PlanModel, seq: int, b: int, causal: bool) -> tuple[float, float]:
    """(matmul, attention-core) FLOPs of one layer's forward for b sequences of length seq."""
    h, f = model.hidden, model.ffn
    kv = h * model.kv // model.heads
    matmul = 2.0 * seq * b * (h * (h + 2 * kv) + h * h + 3 * h * f)
    attention = 4.0 * seq * seq * b * h * (0.5 if causal else 1.0)
    return matmul, attention


def head_forward_flops(model: PlanModel, seq: int, b: int) -> float:
    return 2.0 * seq * b * model.hidden * model.vocab


def micro_batch_flops(model: PlanModel, recipe: Recipe, causal: bool, with_recompute: bool = True) -> float:
    """FLOPs one card of the last (busiest) stage runs for one micro-batch: forward + backward (+ recompute)."""
    matmul, attention = layer_forward_flops(model, model.seq, recipe.micro_batch_size, causal)
    layer = 3 * (matmul + attention)
    if with_recompute and recipe.recompute is Recompute.FULL:
        layer += matmul + attention
    elif with_recompute and recipe.recompute is Recompute.SELECTIVE:
        layer += attention
    head = 3 * head_forward_flops(model, model.seq, recipe.micro_batch_size)
    return (layer * (model.layers // recipe.pp) + head) / (recipe.mp * recipe.cp)


def model_flops_per_step(model: PlanModel, recipe: Recipe, causal: bool) -> float:
    """The whole model's FLOPs of one step on all cards, without recompute (the numerator of MFU)."""
    matmul, attention = layer_forward_flops(model, model.seq, recipe.micro_batch_size, causal)
    per_micro_batch = 3 * (matmul + attention) * model.layers + 3 * head_forward_flops(
        model, model.seq, recipe.micro_batch_size
    )
    return per_micro_batch * recipe.micro_batches * recipe.dp


def link_gbps(hardware: Hardware, span: int) -> float:
    """The bandwidth of a group whose cards span `span` consecutive ranks: inside a node if they fit in one."""
    return hardware.intra_gbps if span <= hardware.cards_per_node else hardware.inter_gbps


def comm_seconds(recipe: Recipe, hardware: Hardware, tp: float, cp: float, dp: float, pp: float) -> float:
    """Each collective's bytes per card over its link: tensor parallel spans mp ranks, context parallel mp·cp,
    the gradient reduction over dp × cp spans dp·mp·cp, the stage boundary every card."""
    r = recipe
    return (
        tp / link_gbps(hardware, r.mp)
        + cp / link_gbps(hardware, r.mp * r.cp)
        + dp / link_gbps(hardware, r.dp * r.mp * r.cp)
        + pp / link_gbps(hardware, r.devices)
    ) / 1e9


def step_time(
    model: PlanModel,
    recipe: Recipe,
    timing: TimeChoices,
    *,
    tp_bytes: float,
    cp_bytes: float,
    dp_bytes: float,
    pp_bytes: float,
) -> StepTime:
    """The step time of `recipe` from its FLOPs and the bytes the planner computed for its busiest stage."""
    r = recipe
    causal = timing.attention_flops == "causal"
    rate = timing.hardware.peak_tflops * 1e12 * timing.efficiency
    micro = micro_batch_flops(model, r, causal) / rate
    compute = micro * r.micro_batches
    bubble = micro * (r.pp - 1)
    comm = comm_seconds(r, timing.hardware, tp_bytes, cp_bytes, dp_bytes, pp_bytes)
    exposed = comm * (1 - timing.overlap)
    step = compute + bubble + exposed
    tokens = r.dp * r.micro_batches * r.micro_batch_size * model.seq
    model_flops = model_flops_per_step(model, r, causal)
    mfu = model_flops / r.devices / step / (timing.hardware.peak_tflops * 1e12)
    return StepTime(step, tokens / step / r.devices, mfu, compute, exposed, bubble, comm)
