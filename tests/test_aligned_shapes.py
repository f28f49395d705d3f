"""core.logs.tokens.linescan.match_shapes compares a line a whole word at a time with its template's mask shifted to
the line's own start (core.logs.rows.templated.aligned_masks; issue 30, read speed). Held to the definition it had
when it loaded each eight bytes from two words: a line takes the first learnt template whose shape (digits as `#`)
and digits inside words it has. On every line of the real-log corpus at every start within a word, and on drawn
lines and shapes of every length around a word's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.logs.rows.linetemplates import LineTemplate, shape_key
from core.logs.rows.templated import Shapes, aligned_masks
from core.logs.tokens.linescan import match_shapes, words_of

_CORPUS = Path(__file__).parent / "fixtures" / "real_logs"


def _expected(shapes: Shapes, keys: list[bytes], lines: list[bytes]) -> list[int]:
    return [
        next((t for t, k in enumerate(keys) if k == shape_key(x) and shapes.templates[t].applies(x)), -1) for x in lines
    ]


def _matched(shapes: Shapes, lines: list[bytes], lead: int, tail: bytes = b"") -> list[int]:
    raw = bytearray(b"x" * lead + b"\n" + b"\n".join(lines) + b"\n" + tail)
    a = np.frombuffer(raw, dtype=np.uint8)
    nl = np.flatnonzero(a == 10)[: len(lines) + 1]
    return match_shapes(a, words_of(a), nl[:-1] + 1, nl[1:], *shapes.packed()).tolist()


@settings(max_examples=300, deadline=None)
@given(
    learnt=st.lists(st.binary(min_size=0, max_size=27).map(lambda b: b.replace(b"\n", b"x")), max_size=12),
    changes=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 40), st.binary(min_size=1, max_size=1))),
    lead=st.integers(0, 7),
    tail=st.binary(max_size=9).map(lambda b: b.replace(b"\n", b"x")),
    digit=st.booleans(),
)
def test_drawn_lines_at_every_start(
    learnt: list[bytes], changes: list[tuple[int, int, bytes]], lead: int, tail: bytes, digit: bool
) -> None:
    """Shapes of 0 to 27 bytes (shorter than a word, a word, across three), lines of them with bytes changed
    (a digit for a digit keeps the shape), starting at any byte of a word, the last one reaching past the whole
    words or not (`tail`), templates with a digit inside a word or not: the first learnt template, or none."""
    shapes = Shapes()
    for line in learnt:
        at = next((i for i, c in enumerate(line) if 48 <= c <= 57), None)
        digits = ((at, line[at]),) if digit and at is not None else ()
        shapes.add(shape_key(line), LineTemplate(columns=(), constants=(), word_digits=digits, keys=()))
    if not shapes:
        return
    lines = [bytearray(x) for x in learnt]
    for which, at, byte in changes:
        if lines and byte != b"\n" and len(lines[which % len(lines)]):
            line = lines[which % len(lines)]
            line[at % len(line)] = byte[0]
    probe = [bytes(x) for x in lines] + learnt
    assert _matched(shapes, probe, lead, tail) == _expected(shapes, list(dict.fromkeys(map(shape_key, learnt))), probe)


def test_the_shifted_masks_are_the_masks() -> None:
    """Each shifted mask holds its shape's bytes at the start given, and its care words mark exactly them."""
    keys = [b"", b"a#", b"loss: #.####", b"[####-##-## ##:##:##] x INFO - loss: #.######, lr: #.####"]
    at_from, at_mask, at_care = aligned_masks(keys)
    for t, key in enumerate(keys):
        for r in range(8):
            f, g = at_from[8 * t + r], at_from[8 * t + r + 1]
            raw, care = at_mask[f:g].tobytes(), at_care[f:g].tobytes()
            assert len(raw) == (r + len(key) + 7) // 8 * 8
            assert raw[r : r + len(key)] == key and care[r : r + len(key)] == b"\xff" * len(key)
            assert not raw[:r].strip(b"\0") and not care[:r].strip(b"\0") and not care[r + len(key) :].strip(b"\0")


def test_every_real_log_line_at_every_start() -> None:
    """The shapes of real logs (their loss lines, chatter, tags, numbers), every line matched from each of the
    eight starts within a word: the first learnt template of its shape, as the definition gives."""
    skip = {"expect.json", "README.md", "SOURCE.md"}
    logs = [p for p in sorted(_CORPUS.rglob("*")) if p.is_file() and p.name not in skip]
    assert len(logs) > 400
    matched = 0
    for path in logs[::3]:
        lines = [x for x in path.read_bytes().replace(b"\r", b"\n").split(b"\n")[:600] if len(x) <= 1024]
        shapes = Shapes()
        for line in lines[::2]:  # half of them learnt: the others match one of them, or none
            shapes.add(shape_key(line), LineTemplate(columns=(), constants=(), word_digits=(), keys=()))
        if not shapes:
            continue
        want = _expected(shapes, list(dict.fromkeys(map(shape_key, lines[::2]))), lines)
        for lead in range(8):
            assert _matched(shapes, lines, lead) == want, (path, lead)
        matched += sum(t >= 0 for t in want)
    assert matched > 10000
