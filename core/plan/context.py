"""Context parallel (MindFormers `parallel_config.context_parallel`): what splitting the sequence over cp cards
costs in memory and communication.

Sources:
* Megatron-Core's context-parallel guide (docs.nvidia.com/megatron-core/developer-guide, "context_parallel"):
  CP splits the network inputs and *all* activations along the sequence; modules other than attention are
  unaffected; attention needs the K/V of the whole sequence, so CP all-gathers K/V in the forward pass and
  reduce-scatters the K/V gradients in the backward pass, and to save memory each card stores only its own
  K/V chunk and gathers K/V again in the backward pass; the all-gather / reduce-scatter run as point-to-point
  steps round a ring (ring attention, MindFormers' `colossalai_cp`). Per layer and micro-batch one card so
  sends (cp − 1) K/V blocks forward and 2 (cp − 1) backward (the K/V again, then the dK/dV), a block being
  2 · (s/cp) · b · h_kv/t elements; full recompute repeats the forward ring once.
* DeepSpeed-Ulysses (Jacobs et al. 2023, §3; MindFormers `ulysses_cp`): an all-to-all turns the sequence
  split of Q, K, V into a head split before attention and another turns the output back; each card sends
  (u − 1)/u of its local Q, K, V and O (s/cp · b · (2h + 2h_kv)/t elements) forward, the same for their
  gradients backward.
* `hybrid_cp` (USP, Fang & Zhao 2024; MindFormers `ulysses_degree_in_cp`): Ulysses over u cards and the ring
  over the cp/u groups: both terms, the ring over cp/u with the same block size.
Memory: every activation of a layer is the one of a sequence chunk s/cp, except the attention scores when
they are stored (no flash attention): a card's queries (s/cp) meet every key (s), so a · s²/cp · b, cp times
the chunk's own s/cp × s/cp. The ring keeps two K/V blocks in flight (the one it computes with and the one it
receives) and Ulysses the gathered Q, K, V of its heads: a working buffer per card, counted once.
Weights are replicated over cp: gradients are reduced over dp × cp, optimizer parallel splits over dp × cp.
"""

from __future__ import annotations

from core.plan.activations import DecoderShape, Recompute, layer_terms
from core.plan.recipes import Recipe


def kv_block_bytes(seq: int, b: int, kv_hidden: int, mp: int, cp: int, act_bytes: int) -> float:
    """One card's K and V for its sequence chunk: 2 · (s/cp) · b · h_kv/mp elements."""
    return 2 * (seq / cp) * b * (kv_hidden / mp) * act_bytes


def cp_layer_send_bytes(
    recipe: Recipe, seq: int, hidden: int, kv_hidden: int, act_bytes: int, recompute: Recompute | None = None
) -> float:
    """Bytes one card sends for context parallel in one layer and one micro-batch (forward + backward)."""
    r = recipe
    if r.cp == 1:
        return 0.0
    recompute = r.recompute if recompute is None else recompute
    forwards = 2 if recompute is Recompute.FULL else 1
    block = kv_block_bytes(seq, r.micro_batch_size, kv_hidden, r.mp, r.cp, act_bytes)
    ring = (r.ring - 1) * block * (forwards + 2)  # forward gathers, backward gathers K/V again + dK/dV
    u = r.ulysses
    local = (seq / r.cp) * r.micro_batch_size * (2 * hidden + 2 * kv_hidden) / r.mp * act_bytes
    ulysses = (u - 1) / u * local * (forwards + 1) if u > 1 else 0.0
    return ring + ulysses


def cp_buffer_bytes(recipe: Recipe, seq: int, hidden: int, kv_hidden: int, act_bytes: int) -> float:
    """The working buffer of one card's attention under cp: two K/V blocks for the ring, the gathered
    Q, K, V (its heads, the whole sequence: the same count as its chunk) for Ulysses."""
    r = recipe
    if r.cp == 1:
        return 0.0
    ring = 2 * kv_block_bytes(seq, r.micro_batch_size, kv_hidden, r.mp, r.cp, act_bytes) if r.ring > 1 else 0.0
    gathered = (seq / r.cp) * r.micro_batch_size * (hidden + 2 * kv_hidden) / r.mp * act_bytes if r.ulysses > 1 else 0
    return ring + gathered


def scores_extra_bytes(shape: DecoderShape, recipe: Recipe, seq: int, act_bytes: int, flash: bool) -> float:
    """Stored attention scores beyond the chunk's own (s/cp)²: a · (s/cp) · s · b in all, per mp rank."""
    r = recipe
    if r.cp == 1 or flash or r.recompute is not Recompute.NONE:
        return 0.0
    terms = layer_terms(shape, seq // r.cp, r.micro_batch_size)
    return (r.cp - 1) * (terms.core * act_bytes + terms.core_masks) / r.mp
