"""Bytes one card sends per training step: tensor-parallel collectives, the data-parallel gradient
reduction and pipeline send/recv.

Volumes are bytes *sent* per card with bandwidth-optimal ring algorithms (Patarasuk & Yuan 2009;
Thakur et al. 2005): AllReduce of S bytes over n cards 2(n−1)/n·S, AllGather / ReduceScatter of
a tensor of S bytes (the gathered size) (n−1)/n·S.

Tensor parallel, two sources (the result says which):
* "operators": the forward collectives `core.sharding.operators.analyze_design` implies for the
  design's own strategies (AllReduce of a split reduce dimension, AllGather / ReduceScatter of an
  out_strategy, redistributions), per layer and outside the layers; the backward pass has the
  conjugate of each (Megatron's f/g pairs: the forward AllReduce of a row-parallel matmul ↔ the
  backward AllReduce of the column-parallel input gradient; AllGather ↔ ReduceScatter), same size.
* "formula": Korthikanti et al. 2022 §4.2: per layer and micro-batch 2 AllReduce of s·b·h forward
  and 2 backward without sequence parallel; with it 2 AllGather + 2 ReduceScatter each way, the
  same volume. Full recompute repeats the forward collectives once.
Data parallel (Megatron / ZeRO §5): one gradient AllReduce of every local gradient over dp per
step, 2(dp−1)/dp·G; with optimizer parallel a ReduceScatter of gradients plus an AllGather of the
updated weights, the same 2(dp−1)/dp volume (ZeRO-1/2 "same communication as DP").
Pipeline (Narayanan et al. 2021): per micro-batch, a stage sends its output activation s·b·h
forward and the activation gradient backward; with sequence parallel each mp rank sends its
sequence slice (1/t), without it every mp rank sends the whole (replicated) tensor.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.plan.activations import Recompute
from core.sharding.operators import Communication, OperatorAnalysis

FORMULA = "formula"
OPERATORS = "operators"


def allreduce_bytes(size: float, n: int) -> float:
    """Ring AllReduce: each card sends 2(n−1)/n of the tensor."""
    return 2 * (n - 1) / n * size if n > 1 else 0.0


def allgather_bytes(size: float, n: int) -> float:
    """Ring AllGather (or ReduceScatter) of a tensor of `size` bytes in all: (n−1)/n of it per card."""
    return (n - 1) / n * size if n > 1 else 0.0


def collective_send_bytes(comm: Communication) -> float:
    """Bytes one card sends for one implied collective of `core.sharding.operators`.

    `bytes_per_rank` is the local (partial) output slice for AllReduce / ReduceScatter, the gathered
    slice for AllGather, and what the busiest rank receives for a Redistribution.
    """
    n = len(comm.groups[0]) if comm.groups else 1
    if comm.kind == "AllReduce":
        return allreduce_bytes(comm.bytes_per_rank, n)
    if comm.kind in ("AllGather", "ReduceScatter", "AllToAll"):
        return allgather_bytes(comm.bytes_per_rank, n)
    return float(comm.bytes_per_rank)


@dataclass(frozen=True)
class TensorParallelVolume:
    """Forward tensor-parallel bytes one card sends for one sample (b = 1)."""

    per_layer: float
    before: float  # operators before the repeated block (embedding), first stage
    after: float  # operators after it (final norm, lm_head), last stage
    source: str


def _moved_input(analysis: OperatorAnalysis, weights: frozenset[str]) -> tuple[str, object] | None:
    """(activation input, the layout it is moved to) when the operator's only redistribution is of its only
    activation input (the weights are stored as they are read): the key to count one tensor's gather once."""
    moves = [c for c in analysis.communications if c.kind == "Redistribution" and c.bytes_per_rank]
    activations = [i for i, name in enumerate(analysis.input_names) if name not in weights]
    if len(moves) != 1 or len(activations) != 1:
        return None
    index = activations[0]
    return analysis.input_names[index], analysis.input_layouts[index]


def tp_volume_from_analyses(
    analyses: Sequence[OperatorAnalysis],
    first: str | None,
    last: str | None,
    samples: int,
    weights: Iterable[str] = (),
) -> TensorParallelVolume:
    """Sum the forward collectives of an analysed design (built for `samples` sequences) per sample.

    One tensor moved to the same layout for several readers (with sequence parallel, the norm output
    gathered for wq, wk and wv) is counted once, as Megatron-LM gathers it once; an implementation
    that gathers per reader sends up to 2.5× more in those layers.
    """
    names = [a.name for a in analyses]
    lo = names.index(first) if first in names else len(names)
    hi = names.index(last) if last in names else len(names)
    weight_names = frozenset(weights)
    seen: set[tuple[str, object]] = set()
    parts = [0.0, 0.0, 0.0]
    for index, analysis in enumerate(analyses):
        part = 0 if index < lo else 1 if index <= hi else 2
        moved = _moved_input(analysis, weight_names)
        for c in analysis.communications:
            if moved is not None and c.kind == "Redistribution":
                if moved in seen:
                    continue
                seen.add(moved)
            parts[part] += collective_send_bytes(c)
    before, per_layer, after = (p / samples for p in parts)
    return TensorParallelVolume(per_layer, before, after, OPERATORS)


def tp_volume_formula(seq: int, hidden: int, t: int, act_bytes: int) -> TensorParallelVolume:
    """Korthikanti §4.2, forward only, one sample: two AllReduce of s·h per layer (or, with sequence
    parallel, two AllGather + two ReduceScatter: the same bytes); the vocab-parallel lm_head adds the
    backward AllReduce of its input gradient, counted here as one forward-sized collective."""
    size = seq * hidden * act_bytes
    layer = 2 * allreduce_bytes(size, t)
    return TensorParallelVolume(layer, 0.0, allreduce_bytes(size, t) / 2, FORMULA)


@dataclass(frozen=True)
class StageComm:
    stage: int
    tp: float
    dp: float
    pp: float

    @property
    def total(self) -> float:
        return self.tp + self.dp + self.pp


def tp_stage_bytes(
    volume: TensorParallelVolume,
    stage: int,
    pp: int,
    layers: int,
    micro_batches: int,
    micro_batch_size: int,
    recompute: Recompute,
) -> float:
    """Forward + backward (+ recomputed forward) tensor-parallel bytes of one stage per step."""
    passes = 3 if recompute is Recompute.FULL else 2
    layer_part = volume.per_layer * (layers // pp) * passes
    edge = (volume.before if stage == 0 else 0.0) + (volume.after if stage == pp - 1 else 0.0)
    return (layer_part + 2 * edge) * micro_batches * micro_batch_size


def dp_stage_bytes(gradient_bytes: int, dp: int) -> float:
    """The gradient AllReduce (or ReduceScatter + AllGather) over dp of every gradient a stage's card holds."""
    return allreduce_bytes(gradient_bytes, dp)


def pp_stage_bytes(
    stage: int,
    pp: int,
    seq: int,
    hidden: int,
    micro_batches: int,
    micro_batch_size: int,
    mp: int,
    sp: bool,
    act_bytes: int,
) -> float:
    """Activations sent to the next stage and gradients sent to the previous one, per step."""
    if pp == 1:
        return 0.0
    boundary = seq * micro_batch_size * hidden * act_bytes / (mp if sp else 1)
    links = int(stage < pp - 1) + int(stage > 0)
    return links * boundary * micro_batches


def stage_comm(
    volume: TensorParallelVolume,
    gradient_bytes: int,
    stage: int,
    *,
    pp: int,
    layers: int,
    dp: int,
    mp: int,
    sp: bool,
    seq: int,
    hidden: int,
    micro_batches: int,
    micro_batch_size: int,
    recompute: Recompute,
    act_bytes: int,
) -> StageComm:
    return StageComm(
        stage,
        tp_stage_bytes(volume, stage, pp, layers, micro_batches, micro_batch_size, recompute),
        dp_stage_bytes(gradient_bytes, dp),
        pp_stage_bytes(stage, pp, seq, hidden, micro_batches, micro_batch_size, mp, sp, act_bytes),
    )
