"""Model states per card (weights, gradients, optimizer states), counted from the placement of every weight.

Not a parameter-count formula: every weight tensor of the model-library design is placed on the
recipe's device matrix (`core.sharding.placement.place`) and its local bytes are summed, so a
weight MindSpore keeps replicated over mp (RMSNorm gammas) costs its full size on every card and a
split one (wq, w1, lm_head, ...) its slice.

Mixed-precision Adam (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models", 2020, §3.1, https://arxiv.org/abs/1910.02054): 2 bytes of 16-bit weight, 2 of
16-bit gradient and K = 12 of optimizer state (fp32 master weight, momentum, variance) per
parameter, 16 in all. fp32 models need no master copy: 4 + 4 + 8. With optimizer parallel on
(MindSpore `enable_parallel_optimizer`, ZeRO stage 1) a weight's optimizer state is split over the
dp cards holding the same slice when its first local dimension divides by dp (MindSpore's
condition); weights and gradients stay whole (conservative: MindSpore also shards the stored weight
and gathers it for the forward pass, which this model does not credit).
With pp stages, stage i holds layers/pp copies of the repeated block's weights, the weights read
before the block on stage 0 and those read after it on the last stage.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from core.plan.choices import Choices
from core.sharding.design import Design, Sharding, TensorSpec
from core.sharding.layout import TensorLayout
from core.sharding.operators import strategy_layouts
from core.sharding.placement import place

ADAM_STATE_BYTES = 8  # fp32 momentum + fp32 variance
MASTER_BYTES = 4  # fp32 master copy of a 16-bit weight


@dataclass(frozen=True)
class WeightSlice:
    """One weight tensor as one card holds it."""

    name: str
    block: str  # "before" (first stage), "repeat" (once per layer), "after" (last stage)
    shape: tuple[int, ...]
    local_shape: tuple[int, ...]
    local_bytes: int  # placement.local_bytes(dtype)
    dtype: str
    replicas: int  # cards holding this same slice


@dataclass(frozen=True)
class StageStates:
    """Model-state bytes one card of a pipeline stage holds."""

    stage: int
    weight_bytes: int
    gradient_bytes: int
    optimizer_bytes: int

    @property
    def total(self) -> int:
        return self.weight_bytes + self.gradient_bytes + self.optimizer_bytes


def optimizer_bytes_per_param(dtype: str) -> int:
    """Adam state per parameter: two fp32 moments, plus an fp32 master copy unless the weight is fp32."""
    return ADAM_STATE_BYTES + (0 if dtype == "float32" else MASTER_BYTES)


# ---------------------------------------------------------------------------------------------
# which tensors are weights, and where they sit relative to the repeated block
# ---------------------------------------------------------------------------------------------
def weight_blocks(design: Design) -> dict[str, str]:
    """weight name -> 'before' / 'repeat' / 'after': where the first operator reading it sits."""
    block = design.block_range()
    first, last = block if block is not None else (len(design.operators), len(design.operators))
    blocks: dict[str, str] = {}
    for index, op in enumerate(design.operators):
        where = "before" if index < first else "repeat" if index <= last else "after"
        for source in op.inputs:
            if source in design.tensors and source not in blocks and design.tensor_role(source) == "weight":
                blocks[source] = where
    for name in design.tensors:
        if name not in blocks and design.tensor_role(name) == "weight":
            blocks[name] = "before"  # a weight no operator reads still occupies memory
    return blocks


# ---------------------------------------------------------------------------------------------
# the layout each weight is stored with
# ---------------------------------------------------------------------------------------------
def _tuple_layout(split: tuple[int, ...], device_num: int) -> TensorLayout:
    """MindSpore's layout for a tuple strategy on an elementwise input (repeat axis outermost)."""
    return strategy_layouts("ReLU", [split], device_num)[0]


def weight_layout(design: Design, name: str) -> TensorLayout:
    """How a weight is stored: its own sharding, else the strategy of the first operator reading it,
    else replicated on every card."""
    tensor: TensorSpec = design.tensors[name]
    if tensor.sharding is not None:
        return _sharding_layout(design, tensor.sharding, tensor.shape)
    for op in design.operators:
        if name in op.inputs and op.strategy is not None:
            index = op.inputs.index(name)
            sharding = op.strategy[index]
            if sharding.is_layout:
                return design.tensor_layout(sharding)
            splits = [s.split or () for s in op.strategy]
            shapes = [_shape_of(design, source) for source in op.inputs]
            return strategy_layouts(
                op.type,
                splits,
                design.device_num,
                op.transpose_a,
                op.transpose_b,
                shapes=shapes if all(shapes) else None,
            )[index]
    return _tuple_layout((1,) * len(tensor.shape), design.device_num)


def _sharding_layout(design: Design, sharding: Sharding, shape: tuple[int, ...]) -> TensorLayout:
    if sharding.is_layout:
        return design.tensor_layout(sharding)
    return _tuple_layout(tuple(sharding.split or (1,) * len(shape)), design.device_num)


def _shape_of(design: Design, source: str) -> tuple[int, ...]:
    tensor = design.tensors.get(source)
    return tensor.shape if tensor is not None else ()


@lru_cache(maxsize=4096)
def _placed(shape: tuple[int, ...], tensor_layout: TensorLayout, dtype: str) -> tuple[tuple[int, ...], int, int]:
    """(local shape, local bytes, replicas) from the placement; cached per distinct shape and layout."""
    placement = place(shape, tensor_layout)
    distinct = int(np.count_nonzero(np.bincount(placement.slice_id)))  # np.unique would import numpy.ma
    replicas = len(placement.positions) // distinct  # positions holding each slice, one per card
    return placement.local_shape, placement.local_bytes(dtype), replicas


def weight_slices(design: Design) -> list[WeightSlice]:
    """Every weight of the design as one card holds it (one entry per tensor, not per layer)."""
    slices: list[WeightSlice] = []
    for name, block in weight_blocks(design).items():
        tensor = design.tensors[name]
        local_shape, nbytes, replicas = _placed(tuple(tensor.shape), weight_layout(design, name), tensor.dtype)
        slices.append(WeightSlice(name, block, tuple(tensor.shape), local_shape, nbytes, tensor.dtype, replicas))
    return slices


# ---------------------------------------------------------------------------------------------
# per stage
# ---------------------------------------------------------------------------------------------
def stage_weight_counts(block: str, stage: int, pp: int, layers: int) -> int:
    """Copies of a weight of `block` that stage `stage` of `pp` holds."""
    if block == "repeat":
        return layers // pp
    if block == "before":
        return int(stage == 0)
    return int(stage == pp - 1)


def optimizer_shard_size(weight: WeightSlice, dp: int, optimizer_shard: bool) -> int:
    """Over how many cards the weight's optimizer state is split (1 when it is not)."""
    if not optimizer_shard or dp <= 1 or weight.replicas % dp or not weight.local_shape:
        return 1
    return dp if weight.local_shape[0] % dp == 0 else 1


@dataclass(frozen=True)
class BlockTotals:
    """Per card, for one copy of each block ("before", "repeat", "after"): weight bytes and optimizer bytes
    in the design's dtype, and the element counts the modelling choices multiply (`elements`: every local
    element; `sharded_elements`: each weight's local elements divided by its optimizer-parallel split)."""

    weight_bytes: Mapping[str, int]
    optimizer_bytes: Mapping[str, int]
    elements: Mapping[str, int] = field(default_factory=dict)
    sharded_elements: Mapping[str, float] = field(default_factory=dict)


def block_totals(weights: Iterable[WeightSlice], dp: int, optimizer_shard: bool) -> BlockTotals:
    """Sum each block's weights once, so every pipeline split is arithmetic on three numbers."""
    weight_bytes = {"before": 0, "repeat": 0, "after": 0}
    optimizer = {"before": 0, "repeat": 0, "after": 0}
    elements = {"before": 0, "repeat": 0, "after": 0}
    sharded: dict[str, float] = {"before": 0.0, "repeat": 0.0, "after": 0.0}
    for w in weights:
        weight_bytes[w.block] += w.local_bytes
        shard = optimizer_shard_size(w, dp, optimizer_shard)
        count = math.prod(w.local_shape)
        optimizer[w.block] += count * optimizer_bytes_per_param(w.dtype) // shard
        elements[w.block] += count
        sharded[w.block] += count / shard
    return BlockTotals(weight_bytes, optimizer, elements, sharded)


def split_embedding(weights: Iterable[WeightSlice], mp: int, name: str = "embedding") -> list[WeightSlice]:
    """The weights with the embedding table split over mp by rows (vocab-parallel embedding, MindFormers'
    `vocab_emb_dp: False`) instead of whole on every tensor-parallel card."""
    out = []
    for w in weights:
        if w.name == name and mp > 1 and w.local_shape and w.local_shape[0] % mp == 0 and w.replicas % mp == 0:
            local = (w.local_shape[0] // mp, *w.local_shape[1:])
            w = WeightSlice(w.name, w.block, w.shape, local, w.local_bytes // mp, w.dtype, w.replicas // mp)
        out.append(w)
    return out


def stage_states_from(
    totals: BlockTotals, stage: int, pp: int, layers: int, choices: Choices | None = None
) -> StageStates:
    """One card's model states on `stage`: in the design's dtype (16 B/param mixed precision) when `choices`
    is None, else the choices' bytes per element (and optimizer parallel's scope)."""
    weight_bytes = optimizer = gradient = 0.0
    for block in ("before", "repeat", "after"):
        copies = stage_weight_counts(block, stage, pp, layers)
        if choices is None:
            weight_bytes += copies * totals.weight_bytes[block]
            optimizer += copies * totals.optimizer_bytes[block]
            continue
        whole, split = totals.elements[block], totals.sharded_elements[block]
        weight_bytes += copies * (split if choices.shard_weights else whole) * choices.param_bytes
        gradient += copies * (split if choices.shard_gradients else whole) * choices.grad_bytes
        optimizer += copies * totals.sharded_elements[block] * choices.optimizer_bytes
    if choices is None:
        gradient = weight_bytes
    return StageStates(stage, int(weight_bytes), int(gradient), int(optimizer))


def all_stage_states(
    weights: list[WeightSlice], pp: int, layers: int, dp: int, optimizer_shard: bool
) -> list[StageStates]:
    totals = block_totals(weights, dp, optimizer_shard)
    return [stage_states_from(totals, i, pp, layers) for i in range(pp)]
