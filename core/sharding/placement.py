"""Which slice of a tensor lives on which rank, computed with numpy for every device position at once.

The maths follows MindSpore: a rank's device-matrix coordinate is row-major (last axis fastest); a
tensor dimension split over axes (a, b, ...) takes piece index c_a * size_b * ... + c_b * ... (first
name outermost); `rank_list[position]` renames positions. With 'interleaved_parallel' the last axis
is virtual: every card holds `interleave_num` pieces.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from core.sharding.layout import INTERLEAVED, LayoutError, TensorLayout

DTYPE_BYTES: dict[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}


def dtype_bytes(dtype: str) -> int:
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise LayoutError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPE_BYTES)}") from None


@dataclass(frozen=True)
class Placement:
    """Every piece of a tensor with the card holding it. Row i of each array is one piece.

    `positions` index the full device matrix (virtual axis included); `ranks` are the physical
    ranks after rank_list renaming; `starts`/`stops` bound the piece in every tensor dimension.
    """

    shape: tuple[int, ...]
    tensor_layout: TensorLayout
    positions: np.ndarray  # (P,)
    coords: np.ndarray  # (P, n_axes) device-matrix coordinates
    ranks: np.ndarray  # (P,)
    block_index: np.ndarray  # (P, ndim) piece number along each tensor dimension
    local_shape: tuple[int, ...]

    @property
    def starts(self) -> np.ndarray:
        return self.block_index * np.asarray(self.local_shape, dtype=np.int64)

    @property
    def stops(self) -> np.ndarray:
        return self.starts + np.asarray(self.local_shape, dtype=np.int64)

    @property
    def split(self) -> tuple[int, ...]:
        return self.tensor_layout.split

    @property
    def pieces_per_rank(self) -> int:
        return self.tensor_layout.layout.interleave_num

    @cached_property
    def slice_id(self) -> np.ndarray:
        """One id per distinct slice (row-major block number), so equal ids mean replicas."""
        return (
            np.ravel_multi_index(tuple(self.block_index.T), self.split)
            if self.shape
            else np.zeros(len(self.positions), dtype=np.int64)
        )

    def local_bytes(self, dtype: str) -> int:
        """Bytes one card holds (all its interleaved pieces)."""
        return math.prod(self.local_shape) * dtype_bytes(dtype) * self.pieces_per_rank

    def rank_pieces(self) -> dict[int, list[tuple[slice, ...]]]:
        """rank -> every slice it holds (one unless interleaved), in device-matrix order."""
        pieces: dict[int, list[tuple[slice, ...]]] = {}
        starts, stops = self.starts.tolist(), self.stops.tolist()
        for rank, lo, hi in zip(self.ranks.tolist(), starts, stops, strict=True):
            pieces.setdefault(rank, []).append(tuple(slice(a, b) for a, b in zip(lo, hi, strict=True)))
        return pieces

    def replica_groups(self) -> list[list[int]]:
        """Ranks holding the same data, one sorted group per distinct slice, ordered by slice."""
        order = np.lexsort((self.ranks, self.slice_id))
        groups: dict[int, list[int]] = {}
        for sid, rank in zip(self.slice_id[order].tolist(), self.ranks[order].tolist(), strict=True):
            group = groups.setdefault(sid, [])
            if rank not in group:
                group.append(rank)
        return [groups[k] for k in sorted(groups)]

    def owner_grid(self, row_dim: int, col_dim: int, fixed: Sequence[int] | None = None) -> OwnerGrid:
        """Who holds each block of a 2-D view: rows = pieces of `row_dim`, columns = pieces of `col_dim`.

        `fixed[d]` is the element index kept for every other dimension d (default 0). For a 1-D
        tensor pass row_dim == col_dim == 0: the view is one row of blocks.
        """
        ndim = len(self.shape)
        if not (0 <= row_dim < max(ndim, 1) and 0 <= col_dim < max(ndim, 1)):
            raise LayoutError(f"view dimensions ({row_dim}, {col_dim}) do not exist in a {ndim}-D tensor")
        if ndim > 1 and row_dim == col_dim:
            raise LayoutError("pick two different dimensions for the rows and the columns")
        fixed_index = [0] * ndim if fixed is None else list(fixed)
        keep = np.ones(len(self.positions), dtype=bool)
        for d in range(ndim):
            if d in (row_dim, col_dim):
                continue
            if not 0 <= fixed_index[d] < self.shape[d]:
                raise LayoutError(f"index {fixed_index[d]} is outside dimension {d} of size {self.shape[d]}")
            keep &= self.block_index[:, d] == fixed_index[d] // self.local_shape[d]
        one_d = ndim <= 1
        n_rows = 1 if one_d else self.split[row_dim]
        n_cols = self.split[col_dim] if ndim else 1
        rows = np.zeros(keep.sum(), dtype=np.int64) if one_d else self.block_index[keep, row_dim]
        cols = self.block_index[keep, col_dim] if ndim else np.zeros(keep.sum(), dtype=np.int64)
        owners: list[list[list[int]]] = [[[] for _ in range(n_cols)] for _ in range(n_rows)]
        for r, c, rank in zip(rows.tolist(), cols.tolist(), self.ranks[keep].tolist(), strict=True):
            if rank not in owners[r][c]:
                owners[r][c].append(rank)
        for row in owners:
            for cell in row:
                cell.sort()
        row_size = self.shape[row_dim] if not one_d else 1
        col_size = self.shape[col_dim] if ndim else 1
        return OwnerGrid(
            row_dim=row_dim,
            col_dim=col_dim,
            row_edges=[i * (row_size // n_rows) for i in range(n_rows + 1)],
            col_edges=[j * (col_size // n_cols) for j in range(n_cols + 1)],
            owners=owners,
        )


@dataclass(frozen=True)
class OwnerGrid:
    """A 2-D view of a tensor: block (i, j) spans rows row_edges[i]:row_edges[i+1] (same for columns)."""

    row_dim: int
    col_dim: int
    row_edges: list[int]
    col_edges: list[int]
    owners: list[list[list[int]]]

    def element_owners(self, row: int, col: int) -> list[int]:
        """Ranks holding element (row, col) of the view."""
        i = int(np.searchsorted(self.row_edges, row, side="right")) - 1
        j = int(np.searchsorted(self.col_edges, col, side="right")) - 1
        return self.owners[i][j]


def device_coords(device_matrix: Sequence[int]) -> np.ndarray:
    """(positions, axes) coordinates of every device-matrix position, row-major."""
    return np.indices(tuple(device_matrix), dtype=np.int64).reshape(len(device_matrix), -1).T


def place(shape: Sequence[int], tensor_layout: TensorLayout) -> Placement:
    """Compute where every piece of a tensor of `shape` lives under `tensor_layout`."""
    shape = tuple(shape)
    tensor_layout.check_shape(shape)
    layout = tensor_layout.layout
    coords = device_coords(layout.device_matrix)
    positions = np.arange(coords.shape[0], dtype=np.int64)
    if layout.interleaved:
        physical = positions // layout.interleave_num
        ranks = physical
    else:
        ranks = np.asarray(layout.rank_list, dtype=np.int64)
    block_index = np.zeros((len(positions), len(shape)), dtype=np.int64)
    for dim in range(len(shape)):
        for alias in tensor_layout.dim_axes(dim):
            axis = layout.alias_name.index(alias)
            block_index[:, dim] = block_index[:, dim] * layout.device_matrix[axis] + coords[:, axis]
    local_shape = tuple(s // p for s, p in zip(shape, tensor_layout.split, strict=True))
    return Placement(
        shape=shape,
        tensor_layout=tensor_layout,
        positions=positions,
        coords=coords,
        ranks=ranks,
        block_index=block_index,
        local_shape=local_shape,
    )


def rank_slices(shape: Sequence[int], tensor_layout: TensorLayout) -> dict[int, tuple[slice, ...]]:
    """rank -> the slice of the global tensor it holds.

    With interleaved_parallel a card holds several pieces; they are merged when they are adjacent,
    otherwise use `place(...).rank_pieces()` (a LayoutError says so).
    """
    placement = place(shape, tensor_layout)
    result: dict[int, tuple[slice, ...]] = {}
    for rank, pieces in placement.rank_pieces().items():
        result[rank] = _merge_pieces(pieces, rank)
    return result


def _merge_pieces(pieces: list[tuple[slice, ...]], rank: int) -> tuple[slice, ...]:
    if len(pieces) == 1:
        return pieces[0]
    lows = [min(p[d].start for p in pieces) for d in range(len(pieces[0]))]
    highs = [max(p[d].stop for p in pieces) for d in range(len(pieces[0]))]
    hull = math.prod(h - lo for lo, h in zip(lows, highs, strict=True))
    held = sum(math.prod(s.stop - s.start for s in p) for p in pieces)
    if hull != held:
        raise LayoutError(f"rank {rank} holds {len(pieces)} separate interleaved pieces; use place(...).rank_pieces()")
    return tuple(slice(lo, h) for lo, h in zip(lows, highs, strict=True))


def rank_table_rows(placement: Placement, dtype: str) -> list[dict[str, object]]:
    """One row per piece for the per-rank table: rank, device coordinate, slice ranges, local shape, bytes."""
    layout = placement.tensor_layout.layout
    physical_axes = [i for i, a in enumerate(layout.alias_name) if a != INTERLEAVED]
    rows: list[dict[str, object]] = []
    order = np.lexsort((placement.positions, placement.ranks))
    starts, stops = placement.starts, placement.stops
    nbytes = math.prod(placement.local_shape) * dtype_bytes(dtype)
    for i in order.tolist():
        coord = ", ".join(f"{layout.alias_name[a]}={placement.coords[i, a]}" for a in physical_axes)
        row: dict[str, object] = {
            "rank": int(placement.ranks[i]),
            "coordinate": coord,
            "slice": "[" + ", ".join(f"{lo}:{hi}" for lo, hi in zip(starts[i], stops[i], strict=True)) + "]",
            "local_shape": str(placement.local_shape),
            "bytes": nbytes,
            "replica_of": int(placement.slice_id[i]),
        }
        if layout.interleaved:
            row["piece"] = int(placement.coords[i, -1])
        rows.append(row)
    return rows
