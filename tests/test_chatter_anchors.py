"""The chatter failures' anchors found in one pass (core.logs.tokens.anchors, round 16 bulk11): the compiled
Wu-Manber pass lists exactly the starts one `find` per literal lists, on any bytes and any window."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.rows.failure_kinds import FAILURE_KINDS, LAUNCHER_REPORTS
from core.logs.rows.failures import CHATTER_SEARCH
from core.logs.tokens.anchors import AnchorSearch

pytest.importorskip("numba")

SEARCH = CHATTER_SEARCH
_CHATTER_ANCHORS = CHATTER_SEARCH.literals


def _every_start(buf: bytes, literals: tuple[bytes, ...], lo: int, end: int) -> list[int]:
    """The definition: every position of buf[lo:end] where some literal starts and ends by `end`."""
    return [i for i in range(lo, end) if any(buf.startswith(lit, i) and i + len(lit) <= end for lit in literals)]


# pieces that make near misses likely: the anchors, their halves, their last two bytes, line breaks, noise
_PIECES = st.sampled_from(
    [
        *_CHATTER_ANCHORS,
        *(a[: len(a) // 2] for a in _CHATTER_ANCHORS),
        *(a[-2:] for a in _CHATTER_ANCHORS),
        *(b"\n", b" ", b"[WARNING] ", b"crash.", b"Killing", b"KeyboardInterrup"),
    ]
)
_TEXT = st.lists(st.one_of(_PIECES, st.binary(max_size=12)), max_size=40).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.integers(0, 600), st.integers(0, 600))
@example(b"crash.ptcrash.pt", 0, 16)  # two in a row: both starts
@example(b"xcrash.pt", 1, 9)  # a literal ending exactly at `end`
@example(b"xcrash.pt", 2, 9)  # one starting before `lo`: not listed
@example(b"xcrash.pt", 1, 8)  # one ending past `end`: not listed
@example(b"Killing subprocess", 0, 18)
def test_compiled_pass_lists_what_the_finds_list(text: bytes, lo: int, end: int) -> None:
    lo, end = min(lo, len(text)), min(end, len(text))
    want = _every_start(text, _CHATTER_ANCHORS, lo, end)
    for buf in (text, bytearray(text)):
        assert SEARCH.starts(buf, lo, end, compiled=False) == want
        assert SEARCH.starts(buf, lo, end, compiled=True) == want


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.binary(min_size=2, max_size=9), min_size=1, max_size=5, unique=True).map(tuple),
    st.binary(max_size=300),
)
def test_any_literals(literals: tuple[bytes, ...], noise: bytes) -> None:
    """Literals of any lengths and bytes (a short one sets the window), planted in noise."""
    text = noise[:100] + literals[0] + noise[100:200] + literals[-1] + noise[200:]
    search = AnchorSearch(literals)
    want = _every_start(text, literals, 0, len(text))
    assert want  # (planted)
    assert search.starts(text, 0, len(text), compiled=True) == want
    assert search.starts(text, 0, len(text), compiled=False) == want


def _chatter_samples() -> list[str]:
    kinds = [s.line for kind in FAILURE_KINDS if kind.chatter for s in kind.samples]
    return kinds + [s.line for r in LAUNCHER_REPORTS if r.chatter for s, _, _ in r.samples]


@pytest.mark.parametrize("line", _chatter_samples())
def test_real_chatter_lines_at_a_window_end(line: str) -> None:
    """Every chatter-level kind's real sample line (each entry quotes its source), as the last line of a 32 KiB
    window of MindSpore-shaped `[WARNING]` lines (made up), is found by both searches at its anchor."""
    filler = b"[WARNING] ME(12345:281473,MainProcess):2024-05-01-10:00:00.123.456 [mindspore/train/callback.py:10] x\n"
    text = filler * 400 + line.encode() + b"\n"
    lo = len(text) - (32 << 10)
    got = SEARCH.starts(text, lo, len(text), compiled=True)
    assert got == SEARCH.starts(text, lo, len(text), compiled=False)
    assert got and all(len(text) - len(line) - 1 <= at < len(text) for at in got)


def test_a_literal_of_one_byte_is_refused() -> None:
    with pytest.raises(ValueError, match="fewer than 2 bytes"):
        AnchorSearch((b"crash.pt", b"K"))
