"""MindSpore-compatible device-matrix layouts.

`Layout` takes the same arguments as `mindspore.parallel.Layout` and calling it returns a
`TensorLayout` whose `to_dict()` equals MindSpore's. Every input MindSpore rejects is rejected here
with a `LayoutError` whose message names the alias / dimension at fault and says what to do; the
checks MindSpore only makes at graph-compile time (device count, tensor rank, divisibility) are
available as `check_device_num` and `TensorLayout.check_shape`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from core.errors import UserError
from core.sharding.code import entries_expr, layout_expr, layout_strategy

NONE = "None"
INTERLEAVED = "interleaved_parallel"
MAX_DEVICES = 1 << 16  # device-matrix positions a Layout may span: bounds the rank list it builds

DimEntry = str | tuple[str, ...]
MapEntry = int | tuple[int, ...]


class LayoutError(UserError, ValueError):
    """A layout MindSpore would refuse, with a message a user can act on."""


def _count(n: int) -> str:
    """A product for a message: exact when short, else its order of magnitude (2^4096 has 1,234 digits)."""
    return f"{n:,}" if n < 10**15 else f"about 2^{n.bit_length() - 1}"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Layout:
    """A device matrix with one alias per axis, like `mindspore.parallel.Layout`.

    Ranks are numbered row-major over the device matrix (last axis fastest); `rank_list[position]`
    renames position -> rank.
    """

    __slots__ = ("alias_name", "device_matrix", "rank_list")

    def __init__(
        self,
        device_matrix: tuple[int, ...],
        alias_name: tuple[str, ...],
        rank_list: list[int] | None = None,
    ) -> None:
        if not isinstance(device_matrix, tuple):
            raise LayoutError(
                f"device_matrix must be a tuple of axis sizes such as (2, 2, 2), got {type(device_matrix).__name__}"
            )
        if not isinstance(alias_name, tuple):
            raise LayoutError(
                f"alias_name must be a tuple of axis names such as ('dp', 'mp'), got {type(alias_name).__name__}"
            )
        if len(device_matrix) != len(alias_name):
            raise LayoutError(
                f"device_matrix has {len(device_matrix)} axes but alias_name has {len(alias_name)} names: "
                "give exactly one name per axis"
            )
        if not device_matrix:
            raise LayoutError("the device matrix needs at least one axis")
        for position, size in enumerate(device_matrix):
            if not _is_int(size):
                raise LayoutError(f"axis {position} size must be a whole number, got {size!r}")
            if size < 1:
                raise LayoutError(f"axis {position} ({alias_name[position]!r}) has size {size}: sizes must be >= 1")
        for position, alias in enumerate(alias_name):
            if not isinstance(alias, str):
                raise LayoutError(f"axis {position} name must be a string, got {alias!r}")
            if not alias:
                raise LayoutError(f"axis {position} has an empty name: give it a name such as 'dp'")
            if alias == NONE:
                raise LayoutError(f"axis {position} cannot be called 'None': 'None' means 'not sharded'")
        duplicates = sorted({a for a in alias_name if alias_name.count(a) > 1})
        if duplicates:
            raise LayoutError(f"axis name {duplicates[0]!r} is used for more than one axis: names must be unique")
        if INTERLEAVED in alias_name and alias_name.index(INTERLEAVED) != len(alias_name) - 1:
            raise LayoutError("'interleaved_parallel' must be the last axis (it is a virtual split inside one card)")
        full_size = math.prod(device_matrix)
        if full_size > MAX_DEVICES:
            # checked before any rank list is built: (65536, 65536) would otherwise allocate 2^32 ranks
            shown = " x ".join(str(s) for s in device_matrix[:8]) + (" x ..." if len(device_matrix) > 8 else "")
            raise LayoutError(
                f"the device matrix ({shown}) spans {_count(full_size)} positions: "
                f"at most {MAX_DEVICES:,} are supported"
            )
        if rank_list is None:
            ranks = list(range(full_size))
        else:
            if not isinstance(rank_list, list):
                raise LayoutError(f"rank_list must be a list of ranks, got {type(rank_list).__name__}")
            for rank in rank_list:  # element types first, as MindSpore checks them
                if not _is_int(rank):
                    raise LayoutError(f"rank_list must hold whole numbers, got {str(rank)[:40]}")
            if len(rank_list) != full_size:
                raise LayoutError(
                    f"rank_list has {len(rank_list)} ranks but the device matrix {device_matrix} has "
                    f"{full_size} positions: give one rank per position"
                )
            negative = [r for r in rank_list if r < 0]
            if negative:
                raise LayoutError(f"rank_list holds negative rank {negative[0]}: ranks start at 0")
            repeated = sorted(r for r, n in Counter(rank_list).items() if n > 1)  # linear, not list.count
            if repeated:
                raise LayoutError(f"rank {repeated[0]} appears more than once in rank_list")
            if INTERLEAVED in alias_name:
                raise LayoutError(
                    "rank_list together with 'interleaved_parallel' is not supported: "
                    "the virtual axis has no ranks of its own"
                )
            ranks = list(rank_list)
        self.device_matrix: tuple[int, ...] = device_matrix
        self.alias_name: tuple[str, ...] = alias_name
        self.rank_list: list[int] = ranks

    # -- queries ---------------------------------------------------------------------------
    @property
    def interleaved(self) -> bool:
        return INTERLEAVED in self.alias_name

    @property
    def interleave_num(self) -> int:
        """Pieces per card along the virtual axis (1 without interleaved_parallel)."""
        return self.device_matrix[-1] if self.interleaved else 1

    @property
    def device_num(self) -> int:
        """Physical cards the layout spans (the virtual interleaved axis adds none)."""
        return math.prod(self.device_matrix) // self.interleave_num

    def axis_size(self, alias: str) -> int:
        return self.device_matrix[self.alias_name.index(alias)]

    def map_index(self, alias: str) -> int:
        """MindSpore's tensor_map number for an alias: axes are counted from the right."""
        return len(self.alias_name) - 1 - self.alias_name.index(alias)

    def check_device_num(self, device_num: int) -> None:
        """The compile-time check: the matrix must cover exactly the cards of a pipeline stage."""
        if self.device_num != device_num:
            axes = " x ".join(f"{a}={s}" for a, s in zip(self.alias_name, self.device_matrix, strict=True))
            raise LayoutError(
                f"the device matrix ({axes}) spans {self.device_num} devices but the job has {device_num}: "
                "change the axis sizes so their product matches the device count"
            )

    # -- building tensor layouts -----------------------------------------------------------
    def __call__(self, *tensor_map: DimEntry) -> TensorLayout:
        used: list[str] = []
        entries: list[DimEntry] = []
        for dim, entry in enumerate(tensor_map):
            if isinstance(entry, tuple):
                if not entry:
                    raise LayoutError(f"dimension {dim} is an empty tuple: write 'None' for an unsplit dimension")
                for alias in entry:
                    self._check_alias(alias, dim, used)
                entries.append(tuple(entry))
            else:
                self._check_alias(entry, dim, used)
                entries.append(entry)
        return TensorLayout(self, tuple(entries))

    def _check_alias(self, alias: object, dim: int, used: list[str]) -> None:
        if alias == NONE:
            return
        if not isinstance(alias, str) or alias not in self.alias_name:
            raise LayoutError(
                f"dimension {dim}: {alias!r} is not an axis of this layout; use one of "
                f"{', '.join(repr(a) for a in self.alias_name)} or 'None'"
            )
        if alias in used:
            raise LayoutError(
                f"dimension {dim}: axis {alias!r} is already used by another dimension; each axis may "
                "split a tensor only once"
            )
        used.append(alias)

    # -- value semantics -------------------------------------------------------------------
    def _key(self) -> tuple[object, ...]:
        return (self.device_matrix, self.alias_name, tuple(self.rank_list))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return self.to_code()

    def to_code(self) -> str:
        """The Python that builds this layout in MindSpore."""
        default = self.rank_list == list(range(math.prod(self.device_matrix)))
        return layout_expr(self.device_matrix, self.alias_name, None if default else self.rank_list)


def _entry_axes(entry: DimEntry) -> tuple[str, ...]:
    """The aliases that split one tensor dimension, outermost first ('None' dropped)."""
    names = entry if isinstance(entry, tuple) else (entry,)
    return tuple(n for n in names if n != NONE)


@dataclass(frozen=True, eq=True)
class TensorLayout:
    """One tensor's mapping onto a `Layout`: per dimension an alias, a tuple of aliases, or 'None'."""

    layout: Layout
    entries: tuple[DimEntry, ...]

    @property
    def ndim(self) -> int:
        return len(self.entries)

    @property
    def tensor_map(self) -> tuple[MapEntry, ...]:
        """MindSpore's tensor_map: axes counted from the right, 'None' = -1."""
        result: list[MapEntry] = []
        for entry in self.entries:
            if isinstance(entry, tuple):
                result.append(tuple(-1 if a == NONE else self.layout.map_index(a) for a in entry))
            else:
                result.append(-1 if entry == NONE else self.layout.map_index(entry))
        return tuple(result)

    def dim_axes(self, dim: int) -> tuple[str, ...]:
        return _entry_axes(self.entries[dim])

    @property
    def split(self) -> tuple[int, ...]:
        """Pieces per dimension (MindSpore's `_get_tensor_strategy`)."""
        return tuple(math.prod(self.layout.axis_size(a) for a in self.dim_axes(d)) for d in range(self.ndim))

    @property
    def used_axes(self) -> tuple[str, ...]:
        return tuple(a for d in range(self.ndim) for a in self.dim_axes(d))

    @property
    def replica_axes(self) -> tuple[str, ...]:
        """Axes that do not split the tensor: ranks along them hold identical copies."""
        used = set(self.used_axes)
        return tuple(a for a in self.layout.alias_name if a not in used and a != INTERLEAVED)

    def to_dict(self) -> dict[str, object]:
        """Exactly `mindspore.parallel.Layout(...)(...).to_dict()`."""
        return {
            "device_matrix": self.layout.device_matrix,
            "tensor_map": self.tensor_map,
            "interleaved_parallel": self.layout.interleaved,
            "alias_name": self.layout.alias_name,
            "rank_list": list(self.layout.rank_list),
        }

    def check_shape(self, shape: Sequence[int], name: str = "tensor") -> None:
        """The compile-time checks: one entry per dimension and every dimension divisible by its split."""
        if len(shape) != self.ndim:
            raise LayoutError(
                f"{name} has {len(shape)} dimensions {tuple(shape)} but its layout gives {self.ndim} entries: "
                "give one entry ('None', an axis or a tuple of axes) per dimension"
            )
        for dim, (size, pieces) in enumerate(zip(shape, self.split, strict=True)):
            if not _is_int(size) or size < 1:
                raise LayoutError(f"{name} dimension {dim} has size {size!r}: sizes must be whole numbers >= 1")
            if size % pieces:
                axes = " x ".join(f"{a}({self.layout.axis_size(a)})" for a in self.dim_axes(dim))
                raise LayoutError(
                    f"{name} dimension {dim} has size {size}, which is not divisible by its split {pieces} "
                    f"({axes}): change the size to a multiple of {pieces} or split it over fewer axes"
                )

    def entry_code(self) -> str:
        return entries_expr(self.entries)

    def to_code(self, layout_name: str = "layout") -> str:
        """`layout("mp", ("sp", "dp"))` as MindSpore code."""
        return layout_strategy(layout_name, self.entries)
