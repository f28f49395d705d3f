"""Where any of a fixed set of literals starts in a window of bytes: one compiled pass once a big read loaded the
compiled scans (core.logs.tokens.anchorscan), else one `find` per literal.

Why: the chatter-level failure kinds are found by their anchors at the end of every read block
(core.logs.rows.failures.chatter_failures): 4 literal searches of each file's last 32 KiB cost ~6 % of a 1,024-file
synthetic read's CPU; the compiled pass searches the window once for all of them. Both ways list the same starts.
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["AnchorSearch"]

_COMPILED = "core.logs.tokens.linescan"  # loaded by a big read's compiled passes: then numba is already paid for


class AnchorSearch:
    """A set of literals (each at least 2 bytes) searched together; `starts` lists where any of them starts."""

    def __init__(self, literals: tuple[bytes, ...]) -> None:
        if any(len(lit) < 2 for lit in literals):
            raise ValueError("a literal of fewer than 2 bytes (the compiled pass steps by byte pairs)")
        self.literals = literals
        self._flat = np.frombuffer(b"".join(literals), dtype=np.uint8)
        self._bounds = np.cumsum([0, *map(len, literals)]).astype(np.int64)
        m = min(map(len, literals), default=2)
        # (Wu-Manber: a window of `m` bytes moves by what its last two bytes allow; 0 where they may end an opening)
        skip = np.full(4096, m - 1, dtype=np.uint8)
        for lit in literals:
            for q in range(1, m):
                pair = ((lit[q - 1] << 5) ^ lit[q]) & 4095
                skip[pair] = min(skip[pair], m - 1 - q)
        self._skip = skip

    def starts(self, buf: bytes | bytearray, lo: int, end: int, compiled: bool | None = None) -> list[int]:
        """The ascending starts in buf[lo:end] of every literal wholly inside it, each start once. `compiled`:
        whether the compiled pass searches (None: when the compiled scans are loaded)."""
        if not self.literals or lo >= end:
            return []
        if compiled if compiled is not None else _COMPILED in sys.modules:
            from core.logs.tokens.anchorscan import anchor_starts

            a = np.frombuffer(buf, dtype=np.uint8)
            return anchor_starts(a, self._flat, self._bounds, self._skip, lo, end).tolist()
        found: set[int] = set()
        for lit in self.literals:
            at = buf.find(lit, lo, end)
            while at != -1:
                found.add(at)
                at = buf.find(lit, at + 1, end)
        return sorted(found)
