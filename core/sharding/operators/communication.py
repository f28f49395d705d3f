"""Communication implied by layouts: rank groups, the partial-sum reductions and redistributions.

* a split reduce dimension leaves partial sums: an AllReduce (or, with an output strategy that
  splits the result over those axes, a ReduceScatter) over them, bytes per rank = the local output;
* an input whose required layout differs from how the tensor is stored needs a "Redistribution";
  its size is computed exactly from the two placements (what the busiest rank must receive).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from core.sharding.layout import INTERLEAVED, Layout, LayoutError, TensorLayout
from core.sharding.operators.base import (
    MAX_POSITIONS,
    Communication,
    axes_text,
    dtype_bytes,
    layout_text,
    local_bytes,
    physical,
)
from core.sharding.placement import device_coords, place
from core.units import format_bytes


def rank_groups(layout: Layout, axes: Sequence[str]) -> list[list[int]]:
    """Ranks whose device coordinates differ only on `axes`: the communicators of a collective over them.

    Ranks follow `rank_list`; pieces of the virtual interleaved axis belong to their card. Groups
    are sorted, each group sorted. Empty if the device matrix is too large to enumerate.
    """
    if math.prod(layout.device_matrix) > MAX_POSITIONS:
        return []
    coords = device_coords(layout.device_matrix)
    keep = [i for i, a in enumerate(layout.alias_name) if a not in axes and a != INTERLEAVED]
    if keep:
        key = np.ravel_multi_index(tuple(coords[:, keep].T), tuple(layout.device_matrix[i] for i in keep))
    else:
        key = np.zeros(coords.shape[0], dtype=np.int64)
    positions = np.arange(coords.shape[0])
    ranks = positions // layout.interleave_num if layout.interleaved else np.asarray(layout.rank_list, dtype=np.int64)
    groups: dict[int, set[int]] = {}
    for k, rank in zip(key.tolist(), ranks.tolist(), strict=True):
        groups.setdefault(k, set()).add(rank)
    return sorted(sorted(g) for g in groups.values())


def _pieces_by_rank(
    placement_ranks: np.ndarray, starts: np.ndarray, stops: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct rank (sorted), the starts/stops of the pieces it holds: shape (ranks, pieces, ndim)."""
    order = np.argsort(placement_ranks, kind="stable")
    ranks = placement_ranks[order]
    unique, counts = np.unique(ranks, return_counts=True)
    per = int(counts.max()) if len(counts) else 1
    if len(counts) and (counts != per).any():  # pragma: no cover - every rank holds the same number of pieces
        raise LayoutError("uneven pieces per rank")
    nd = starts.shape[1]
    return unique, starts[order].reshape(len(unique), per, nd), stops[order].reshape(len(unique), per, nd)


def redistribution_bytes(
    shape: Sequence[int], stored: TensorLayout, required: TensorLayout, dtype: str = "float32"
) -> tuple[int, bool] | None:
    """(bytes the busiest rank must receive, whether the per-rank slices differ at all).

    Exact from the two placements: a rank receives what it needs minus what it already holds.
    None when the layouts do not fit the shape or are too large to enumerate.
    """
    if max(math.prod(stored.layout.device_matrix), math.prod(required.layout.device_matrix)) > MAX_POSITIONS:
        return None
    try:
        src, dst = place(shape, stored), place(shape, required)
    except LayoutError:
        return None
    nd = len(src.shape)
    if nd == 0:
        src_ranks = set(src.ranks.tolist())
        missing = [r for r in set(dst.ranks.tolist()) if r not in src_ranks]
        return (dtype_bytes(dtype) if missing else 0), bool(missing)
    s_ranks, s_lo, s_hi = _pieces_by_rank(src.ranks, src.starts, src.stops)
    idx = np.searchsorted(s_ranks, dst.ranks)
    idx_clipped = np.minimum(idx, len(s_ranks) - 1)
    has = (idx < len(s_ranks)) & (s_ranks[idx_clipped] == dst.ranks)
    t_lo, t_hi = dst.starts[:, None, :], dst.stops[:, None, :]
    lengths = np.minimum(t_hi, s_hi[idx_clipped]) - np.maximum(t_lo, s_lo[idx_clipped])
    lengths = np.clip(lengths, 0, None).astype(object)
    overlap = np.prod(lengths, axis=2).sum(axis=1)  # (P_t,) exact Python ints
    need = math.prod(dst.local_shape)
    held = math.prod(src.local_shape) * src.pieces_per_rank
    received: dict[int, int] = {}
    covered: dict[int, int] = {}
    for rank, ov, ok in zip(dst.ranks.tolist(), overlap.tolist(), has.tolist(), strict=True):
        ov = int(ov) if ok else 0
        received[rank] = received.get(rank, 0) + need - ov
        covered[rank] = covered.get(rank, 0) + ov
    worst = max(received.values(), default=0)
    differs = worst > 0 or any(total != held for total in covered.values())
    return worst * dtype_bytes(dtype), differs


def redistribution(
    shape: tuple[int, ...],
    dtype: str,
    stored: TensorLayout,
    required: TensorLayout,
    origin: str,
    op_name: str,
) -> Communication | None:
    """The Redistribution before `op_name` computes on `origin`, None when no rank's slice changes."""
    measured = redistribution_bytes(shape, stored, required, dtype)
    if measured is None:
        return None
    nbytes, differs = measured
    if not differs:
        return None
    same = stored.layout == required.layout
    changed_dims = [
        d
        for d in range(len(shape))
        if stored.dim_axes(d) != required.dim_axes(d) or stored.split[d] != required.split[d]
    ]
    if same:
        moved: set[str] = set()
        for d in changed_dims:
            before, after = stored.dim_axes(d), required.dim_axes(d)
            keep = 0
            while keep < min(len(before), len(after)) and before[keep] == after[keep]:
                keep += 1
            moved.update(before[keep:], after[keep:])
        axes = physical(stored.layout, [a for a in stored.layout.alias_name if a in moved])
        groups = rank_groups(stored.layout, axes) if nbytes else []
    else:
        names: list[str] = []
        for tl in (stored, required):
            for d in changed_dims:
                names += [a for a in tl.dim_axes(d) if a not in names and a != INTERLEAVED]
        axes = tuple(
            a
            for a in names
            if (a in stored.layout.alias_name and a in physical(stored.layout, [a]))
            or (a in required.layout.alias_name and a in physical(required.layout, [a]))
        )
        everyone = sorted(set(stored.layout.rank_list) | set(required.layout.rank_list))
        groups = [everyone] if nbytes else []
    head = (
        f"{origin[0].upper() + origin[1:]} is stored as {layout_text(stored)} but {op_name} needs it as "
        f"{layout_text(required)}"
    )
    gather = same and all(
        stored.dim_axes(d)[: len(required.dim_axes(d))] == required.dim_axes(d) for d in range(len(shape))
    )
    if nbytes:
        how = f" (an AllGather over {axes_text(axes)})" if gather and axes else ""
        reason = (
            f"{head}: before computing, the busiest rank receives {format_bytes(nbytes)} of it from other "
            f"ranks{how}"
            + ("" if same else " (different device matrices: the group shown is every rank involved)")
            + "."
        )
    else:
        reason = f"{head}: every rank already holds what it needs and keeps only a slice — no data moves."
    return Communication("Redistribution", axes, groups, nbytes, reason)


def reduction(
    kind: str,
    out_shape: tuple[int, ...],
    partial: TensorLayout,
    axes: tuple[str, ...],
    dtype: str,
    why: str = "",
    scatter_by_default: bool = False,
) -> Communication:
    """The collective that sums the partial outputs left by a split reduce dimension (or table rows).

    `why` (with a `{bytes}` slot) replaces the MatMul wording of where the partial sums come from;
    `scatter_by_default` says a ReduceScatter is MindSpore's own choice, not the output strategy's.
    """
    groups = rank_groups(partial.layout, axes)
    nbytes = local_bytes(out_shape, partial, dtype)
    size = len(groups[0]) if groups else math.prod(partial.layout.axis_size(a) for a in axes)
    if kind == "AllReduce":
        how = "an AllReduce (sum) over {axes} in groups of {size} ranks adds them up"
    elif scatter_by_default:
        how = (
            "MindSpore sums them with a ReduceScatter over {axes} in groups of {size} ranks, which leaves each "
            "rank only its part of output dimension 0"
        )
    else:
        how = (
            "the output strategy splits the result over {axes}, so a ReduceScatter in groups of {size} ranks "
            "sums them and leaves each rank only its part"
        )
    head = (
        why.format(bytes=format_bytes(nbytes))
        if why
        else f"The reduce dimension is split over {axes_text(axes)}, so every rank holds a partial sum of its "
        f"{format_bytes(nbytes)} output slice; "
    )
    return Communication(kind, axes, groups, nbytes, head + how.format(axes=axes_text(axes), size=size))
