"""core.logs.tokens.numscan.column_numbers reads a template's number columns as (lines, columns) in one compiled
call (issue 30, read speed: the flat list of spans built in numpy around `fixed_numbers` cost more than the parse
at 1,024 ranks x 2,000 steps). Held to `fixed_numbers` over the same spans, bit for bit, taken or not, on drawn
number texts, and on the number columns of real loss lines read through the bulk path."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.tokens.numscan import column_numbers, fixed_numbers

_TEXTS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(lambda v: repr(v).encode()),
    st.floats(min_value=-1e6, max_value=1e6).map(lambda v: f"{v:.6f}".encode()),
    st.floats(min_value=-1e30, max_value=1e30).map(lambda v: f"{v:.6E}".encode()),
    st.from_regex(rb"\A[+-]?[0-9]{0,20}\.?[0-9]{0,20}([eE][+-]?[0-9]{1,4})?\Z"),
)


def _bits(values: np.ndarray, ok: np.ndarray) -> list[bytes | None]:
    return [struct.pack("<d", v) if taken else None for v, taken in zip(values.tolist(), ok.tolist(), strict=True)]


def _both(rows: list[list[bytes]], lead: bytes) -> None:
    """Each row's texts padded to their column's width (as one shape's lines hold their numbers at fixed spans)."""
    k = len(rows[0])
    widths = [max(len(r[c]) for r in rows) for c in range(k)]
    lines = [lead + b"|".join(r[c].ljust(widths[c], b" ") for c in range(k)) for r in rows]
    buf = b"\n" + b"\n".join(lines) + b"\n"
    a = np.frombuffer(buf, dtype=np.uint8)
    starts = np.cumsum([1, *(len(x) + 1 for x in lines[:-1])]).astype(np.int64)
    begin = np.cumsum([len(lead), *(w + 1 for w in widths[:-1])]).astype(np.int64)
    width = np.array([len(r) for r in rows[0]], dtype=np.int64)  # (the first row's own widths: others end later)
    values = np.full((len(rows), k), np.nan)
    ok = column_numbers(a, starts, begin, width, values)
    pos = (starts[:, None] + begin[None, :]).ravel()
    flat = np.full(len(pos), np.nan)
    flat_ok = fixed_numbers(a, pos, np.tile(width, len(rows)), flat)
    assert ok.shape == values.shape == (len(rows), k)
    assert _bits(values.ravel(), ok.ravel()) == _bits(flat, flat_ok)
    assert ok.ravel().tolist() == flat_ok.tolist()


@settings(max_examples=400, deadline=None)
@given(
    rows=st.integers(1, 3).flatmap(
        lambda k: st.lists(st.lists(_TEXTS, min_size=k, max_size=k), min_size=1, max_size=8)
    ),
    lead=st.sampled_from([b"", b"loss: ", b"[2026-09-21 14:13:22] x INFO - Epoch: "]),
)
@example(rows=[[b"2.296138E+00", b"0.231"], [b"12345678901234567", b"nan"]], lead=b"")
def test_the_same_numbers_as_one_span_at_a_time(rows: list[list[bytes]], lead: bytes) -> None:
    """Decimals, exponents, reprs, nan/inf and 17-digit mantissas (left to the exact path by both)."""
    _both(rows, lead)


def test_real_loss_line_columns() -> None:
    """The number columns of real loss lines: MindCV's (tests/fixtures/real_logs/mindcv-0.3.0-cpu-resnet18_produced-
    here/log/ckpt/rank0.log: `[2026-11-23 21:20:01] mindcv.utils.callbacks INFO - Epoch: [1/3], batch: [1/8], loss:
    1.569381, lr: 0.010000, time: 18.480284s`) and MindSpeed-LLM's Megatron line (mindspeed-llm-spliced-first-line_
    core-ms-xiaoyi-sft/log/train.log: `... learning rate: 5.000000E-06 | ... | lm loss: 12.0754003524780273 | ...`,
    its 18-digit loss left to the exact path by both)."""
    _both([[b"1.569381", b"0.010000", b"18.480284"], [b"1.153816", b"0.010000", b"10.111475"]], b"loss: ")
    _both([[b"5.000000E-06", b"12.0754003524780273"], [b"4.902113E-06", b"12.1699361801147461"]], b"rate: ")
    values = np.empty((1, 2))
    buf = np.frombuffer(b"\nloss: 1.569381, lr: 0.010000\n", dtype=np.uint8)
    ok = column_numbers(buf, np.array([1]), np.array([6, 20]), np.array([8, 8]), values)
    assert ok.tolist() == [[True, True]] and values.tolist() == [[1.569381, 0.01]]
