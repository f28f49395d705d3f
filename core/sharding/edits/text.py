"""Typed text the Designer and the CLI turn into design values, and the error an edit raises.

`EditError` is the one refusal of an edit: the input cannot be stored at all (a name that is not an
identifier, a shape that is not numbers); its message says what to type instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.errors import UserError
from core.sharding.design import MAX_DIMS
from core.workspace import is_identifier


class EditError(UserError, ValueError):
    """An edit the design cannot store (bad name, unparsable number); the message says what to type."""


def check_identifier(name: str, what: str) -> str:
    """`name` stripped, if it is a Python identifier (layout, tensor, operator and axis names), else EditError."""
    name = name.strip() if isinstance(name, str) else name
    if not is_identifier(name):
        raise EditError(
            f"{what} {name!r} is not allowed: use letters, digits and '_' (not starting with a digit, "
            "at most 64 characters, not a Python keyword)"
        )
    return name


def parse_int_list(text: str, what: str, minimum: int = 1, times: bool = False) -> tuple[int, ...]:
    """`"2, 4"`, `"(2,4)"` or `"2 4"` (and `"2x4"` when `times`) -> (2, 4). Raises EditError naming the
    bad item."""
    cleaned = text.strip().strip("()[]")
    parts = [p for p in re.split(r"[\s,;x×]+" if times else r"[\s,;]+", cleaned) if p]
    values: list[int] = []
    for part in parts:
        try:
            value = int(part)
        except ValueError:
            raise EditError(f"{what}: {part!r} is not a whole number; type numbers separated by commas") from None
        if value < minimum:
            raise EditError(f"{what}: {value} is too small; every entry must be >= {minimum}")
        values.append(value)
    return tuple(values)


def parse_shape(text: str) -> tuple[int, ...]:
    shape = parse_int_list(text, "shape", times=True)
    if not shape:
        raise EditError("shape: give at least one dimension size, e.g. 2, 4")
    if len(shape) > MAX_DIMS:
        raise EditError(f"shape: {len(shape)} dimensions; at most {MAX_DIMS} are supported")
    return shape


def parse_split(text: str) -> tuple[int, ...]:
    """A tuple strategy as typed: `"4,1"` -> (4, 1)."""
    split = parse_int_list(text, "tuple strategy")
    if not split:
        raise EditError("tuple strategy: give one split count per dimension, e.g. 4,1")
    return split


def parse_rank_list(text: str) -> tuple[int, ...] | None:
    """Empty text = default order (None); otherwise whole numbers >= 0 separated by commas or spaces."""
    if not text.strip():
        return None
    return parse_int_list(text, "rank_list", minimum=0)


def format_ints(values: Iterable[int]) -> str:
    return ", ".join(str(v) for v in values)
