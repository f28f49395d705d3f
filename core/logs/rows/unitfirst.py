"""A value printed before its unit, the unit naming it: a rate `(0.512 sec/step)` (TF-slim's train loop),
`( 12.3 examples/sec; 0.651 sec/batch; ...)` (TF's cifar10-style loops), `| 113.4k tok/s |` (nanoGPT-style pipe
rows, a `k` / `M` / `G` suffix a power of 1000). For the general line reader (core.logs.rows.general): the unit is
its metric's name (`sec/step` -> `sec_step`, core.logs.rows.keys.metric_name).

The shape, never the digits, decides (the bulk path reuses one parse per shape): a whole cell, opened by `(`, `|`,
`;` or `,` and closed by `)`, `|`, `;`, `,` or the line's end, that holds a number, a space, and a unit written
`word/word` (something per something: a plain word after a number is prose, `3 times`).
"""

from __future__ import annotations

import re

__all__ = ["unit_first"]

_SCALE = {b"": 1.0, b"k": 1e3, b"K": 1e3, b"M": 1e6, b"G": 1e9}
_RE_UNIT_FIRST = re.compile(
    rb"(?<=[(|;,])[ \t]*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)([kKMG]?)[ \t]+"
    rb"([A-Za-z]+/[A-Za-z]+)[ \t]*(?=[)|;,]|$)"
)


def unit_first(line: bytes) -> list[tuple[bytes, tuple[int, int], float]]:
    """(the unit, the span of its number, the scale its suffix says) of each value before its unit on `line`."""
    if b"/" not in line:
        return []
    return [(m.group(3), m.span(1), _SCALE[m.group(2)]) for m in _RE_UNIT_FIRST.finditer(line)]
