"""The ranks torch's per-rank prefix names in a lone stream, on any line: each `[rankN]:` says rank N writes there.

Why: in a lone stream (layout `single`: several processes' output in one file) a rank was counted only when a row or
an error line of it was tagged, so a rank whose only lines were chatter was missed: torchrun on 2 NPUs
(github.com/Ascend/pytorch/issues/154, tests/fixtures/real_logs/torchrun-2-npu-compile-rank0-loss-row-rank1-vanishes-
terminated_ascend-pytorch-154) where rank 1's one line is an inductor warning,
`[rank1]:W0721 14:42:21.497000 3204244 torch/_inductor/debug.py:518] [0/0] model__0_forward_1 debug trace: ...`.
Found by a search of each block read (core.logs.rows.failures.settle), not by the line parser: the bulk path hands
the parser only the lines worth it, and a tagged chatter line is not, so every path finds the same ranks. The search
leaves out the ranks already found (one C-speed pass over a block per new rank: ~35 ms for 90 MB of lines that are
all tagged by one rank).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.logs.rows.filestate import FileState

__all__ = ["tagged_ranks"]


@lru_cache(maxsize=64)
def _untold(known: frozenset[bytes]) -> re.Pattern[bytes]:
    """torch's `[rankN]:` prefix whose digits are none of `known`."""
    told = b"|".join(re.escape(k) for k in sorted(known))
    return re.compile(rb"\[rank(?!(?:" + told + rb")\]:)(\d+)\]:" if known else rb"\[rank(\d+)\]:")


def tagged_ranks(st: FileState, buf: bytes | bytearray, floor: int, end: int) -> None:
    """Add to `st.tagged` every rank a `[rankN]:` in `buf[floor:end]` names (a lone stream's file only)."""
    if st.info.layout != "single":
        return
    known = {str(r).encode() for r in st.tagged}
    at = floor
    while (m := _untold(frozenset(known)).search(buf, at, end)) is not None:
        known.add(m.group(1))
        st.tagged.add(int(m.group(1)))
        at = m.end()
