"""core.logs.tokens.linescan.worth_lines looks a literal up by a table of its first three bytes (issue 30, read speed:
a pair table let every ` t`, `in`, ... through to the literal compares). Held to the answer it had with the pair
table, `bytes.find` over the lines (`WorthScan.searched`, the small reads' path), on drawn literals and lines and on
every line of the real-log corpus, for both literal sets a read searches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.rows.failure_kinds import FAILURE_KINDS, LAUNCHER_REPORTS
from core.logs.rows.linekinds import WORTH
from core.logs.tokens.plain import TRIPLES, WorthScan, triple

_CORPUS = Path(__file__).parent / "fixtures" / "real_logs"
# the literals quiet_lines searches (core.logs.rows.templated: WORTH's and the chatter-level kinds' anchors)
_TURNED_AWAY = WorthScan(
    (
        *WORTH.literals,
        *(a for kind in FAILURE_KINDS if kind.chatter for a in kind.anchors),
        *(a for report in LAUNCHER_REPORTS if report.chatter for a in report.anchors),
    )
)


def _lines(texts: list[bytes], lead: bytes = b"") -> tuple[bytes, np.ndarray, np.ndarray]:
    buf = lead.replace(b"\n", b" ") + b"\n" + b"\n".join(texts) + b"\n"
    starts = np.cumsum([len(lead) + 1, *(len(t) + 1 for t in texts[:-1])]).astype(np.int64)
    return buf, starts, starts + np.array([len(t) for t in texts], dtype=np.int64)


def _same(scan: WorthScan, texts: list[bytes], lead: bytes = b"") -> None:
    buf, starts, ends = _lines(texts, lead)
    compiled = scan.compiled(buf, starts, ends).tolist()
    assert compiled == scan.searched(buf, starts, ends).tolist(), [
        t for t, c, s in zip(texts, compiled, scan.searched(buf, starts, ends).tolist(), strict=True) if c != s
    ][:3]
    assert compiled == [bool(scan.positions(t)) for t in texts]


_LETTERS = b"ERTaeinrst :(."  # few letters: drawn literals and lines share their openings and their hashes often
_LITERAL = st.binary(min_size=3, max_size=7).map(lambda b: bytes(_LETTERS[x % len(_LETTERS)] for x in b))


@settings(max_examples=300, deadline=None)
@given(
    literals=st.lists(_LITERAL, min_size=1, max_size=6),
    parts=st.lists(st.lists(_LITERAL | st.binary(max_size=6) | st.sampled_from([b"EI0002", b"E123"]), max_size=5)),
    lead=st.binary(max_size=3),
)
@example(literals=[b"ERR"], parts=[[b"ER"], [b"ERR"], [b"xERR"], [b"EI0002"], [b"EI000"]], lead=b"")
def test_drawn_literals_and_lines(literals: list[bytes], parts: list[list[bytes]], lead: bytes) -> None:
    """Literals of three bytes (the shortest allowed) and more, lines of their pieces, CANN codes, random bytes
    (newlines as spaces): the compiled pass keeps exactly the lines `bytes.find` keeps."""
    texts = [b"".join(p).replace(b"\n", b" ") for p in parts] or [b""]
    _same(WorthScan(literals), texts, lead)


def test_the_table_index_is_within_the_table() -> None:
    """Every three bytes hash into the table (the compiled pass reads it unchecked)."""
    assert max(triple(c, d, e) for c in (0, 97, 255) for d in (0, 255) for e in (0, 255)) < TRIPLES
    assert min(len(x) for x in (*WORTH.literals, *_TURNED_AWAY.literals)) >= 3


def test_every_real_log_line() -> None:
    """Every line of every real log, searched for WORTH's literals and for quiet_lines': the same lines kept."""
    skip = {"expect.json", "README.md", "SOURCE.md"}
    logs = [p for p in sorted(_CORPUS.rglob("*")) if p.is_file() and p.name not in skip]
    assert len(logs) > 400
    kept = 0
    for path in logs:
        texts = path.read_bytes().replace(b"\r", b"\n").split(b"\n")[:4000]
        for scan in (WORTH, _TURNED_AWAY):
            _same(scan, texts)
        buf, starts, ends = _lines(texts)
        kept += int(WORTH.compiled(buf, starts, ends).sum())
    assert kept > 1000  # the corpus's failures, tracebacks and timings: lines the table must let through
