"""A tensor map's entries as lists of axes and back: the small algebra every map edit uses.

>>> assign_axes(("mp", ("sp", "dp")), 0, ["sp"])
('sp', 'dp')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from core.sharding.layout import NONE, DimEntry


def entry_axes(entry: DimEntry) -> list[str]:
    """The axes splitting one dimension, outermost first ('None' = [])."""
    names = entry if isinstance(entry, tuple) else (entry,)
    return [n for n in names if n != NONE]


def axes_entry(axes: Sequence[str]) -> DimEntry:
    """[] -> 'None', ['mp'] -> 'mp', ['sp', 'dp'] -> ('sp', 'dp')."""
    if not axes:
        return NONE
    if len(axes) == 1:
        return axes[0]
    return tuple(axes)


def fit_map(entries: Sequence[DimEntry], ndim: int) -> tuple[DimEntry, ...]:
    """Pad with 'None' or cut so the map has one entry per dimension."""
    return tuple(list(entries)[:ndim] + [NONE] * max(0, ndim - len(entries)))


def strip_aliases(entries: Sequence[DimEntry], keep: Iterable[str]) -> tuple[DimEntry, ...]:
    """Drop aliases that are not in `keep` (after an axis was removed or a preset applied)."""
    allowed = set(keep)
    return tuple(axes_entry([a for a in entry_axes(e) if a in allowed]) for e in entries)


def rename_in_entries(entries: Sequence[DimEntry], old: str, new: str) -> tuple[DimEntry, ...]:
    return tuple(axes_entry([new if a == old else a for a in entry_axes(e)]) for e in entries)


def assign_axes(entries: Sequence[DimEntry], dim: int, axes: Sequence[str]) -> tuple[DimEntry, ...]:
    """Set one dimension's axes and remove those axes from the other dimensions (an axis splits once)."""
    chosen = list(dict.fromkeys(axes))
    result: list[DimEntry] = []
    for d, entry in enumerate(entries):
        if d == dim:
            result.append(axes_entry(chosen))
        else:
            result.append(axes_entry([a for a in entry_axes(entry) if a not in chosen]))
    return tuple(result)
