"""Typed numbers from the snapshot's DataFrame cells.

pandas types a cell (`.iat`, `.iloc`, a groupby key) as any scalar at all; these say which kind the caller
relies on and fail as `int()` / `float()` would on anything else, so the type checker sees a number.
"""

from __future__ import annotations

import numpy as np

_NUMBER = (int, float, str, np.integer, np.floating, np.bool_)


def as_int(value: object) -> int:
    """`int(value)` for a number (or its text) read from a frame; TypeError for anything else."""
    if isinstance(value, _NUMBER):
        return int(value)
    raise TypeError(f"not a number: {type(value).__name__}")


def as_float(value: object) -> float:
    """`float(value)` for a number (or its text) read from a frame; TypeError for anything else."""
    if isinstance(value, _NUMBER):
        return float(value)
    raise TypeError(f"not a number: {type(value).__name__}")
