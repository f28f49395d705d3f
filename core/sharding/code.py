"""The one renderer of MindSpore sharding expressions: literals, `Layout(...)`, strategies, `in_strategy=`.

`Layout.to_code`, the generated `train.py` (core.codegen) and the Designer's code views all call these
functions, so what the Designer and `python -m core preview` show is, byte for byte, what `train.py`
contains. Kept at the sharding level (it imports nothing from this package at run time) because
`core.sharding.layout` renders itself and imports run one way: codegen -> sharding.

    >>> layout_expr((2, 2, 2), ("dp", "sp", "mp"))
    'Layout((2, 2, 2), ("dp", "sp", "mp"))'
    >>> layout_strategy("layout", ("mp", ("sp", "dp")))
    'layout("mp", ("sp", "dp"))'
    >>> shard_call([layout_strategy("layout", ("mp", "None"))], None)
    '.shard(in_strategy=(layout("mp", "None"),))'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol


class Strategy(Protocol):
    """What a strategy renderer reads of `design_types.Sharding` (not imported: it imports `layout`,
    which renders itself with this module)."""

    @property
    def is_layout(self) -> bool: ...
    @property
    def layout(self) -> str | None: ...
    @property
    def map(self) -> tuple[str | tuple[str, ...], ...] | None: ...
    @property
    def split(self) -> tuple[int, ...] | None: ...


def lit(value: object) -> str:
    """A Python literal for a str/number/tuple/list, strings in double quotes (json escapes are valid Python)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        inner = ", ".join(lit(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(lit(v) for v in value) + "]"
    if isinstance(value, bool | int | float):
        return repr(value)
    raise TypeError(f"cannot render {type(value).__name__} as a literal")


def tuple_expr(items: Sequence[str]) -> str:
    """Already-rendered items as a Python tuple: `(a,)` for one, `(a, b)` for two."""
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def layout_expr(device_matrix: Sequence[int], alias_name: Sequence[str], rank_list: Sequence[int] | None = None) -> str:
    """`Layout((2, 2, 2), ("dp", "sp", "mp"))`, with `rank_list=[...]` when one is given."""
    rank_part = "" if rank_list is None else f", rank_list={lit([int(r) for r in rank_list])}"
    return f"Layout({lit(tuple(int(d) for d in device_matrix))}, {lit(tuple(alias_name))}{rank_part})"


def layout_definition(
    name: str, device_matrix: Sequence[int], alias_name: Sequence[str], rank_list: Sequence[int] | None = None
) -> str:
    """`layout = Layout(...)`: the line that defines a named layout in a script."""
    return f"{name} = {layout_expr(device_matrix, alias_name, rank_list)}"


def entries_expr(entries: Sequence[str | tuple[str, ...]]) -> str:
    """A tensor map's entries as call arguments: `"mp", ("sp", "dp"), "None"`."""
    return ", ".join(lit(e) for e in entries)


def layout_strategy(layout_name: str, entries: Sequence[str | tuple[str, ...]]) -> str:
    """`layout("mp", ("sp", "dp"))`: a Layout strategy of one input."""
    return f"{layout_name}({entries_expr(entries)})"


def strategy_expr(sharding: Strategy) -> str:
    """One input's strategy as written in a design: a Layout strategy or a tuple such as `(4, 1)`."""
    if sharding.is_layout:
        return layout_strategy(sharding.layout or "layout", sharding.map or ())
    return lit(tuple(int(s) for s in sharding.split or ()))


def shard_call(in_parts: Sequence[str], out_part: str | None) -> str:
    """`.shard(in_strategy=(...), out_strategy=(...))` from rendered strategies; "" without any."""
    if not in_parts:
        return ""
    text = f"in_strategy={tuple_expr(in_parts)}"
    if out_part is not None:
        text += f", out_strategy={tuple_expr([out_part])}"
    return f".shard({text})"
