"""A JSON document a trainer keeps its log in, read whole: Hugging Face's `trainer_state.json` (pretty-printed, each
`log_history` record spread over several lines). Its records become one JSON line each, which the general line
reader reads as it reads a trainer's printed log dicts (core.logs.rows.general): a record with `loss` and `step` a
training row, an `eval_loss` record an evaluation, the final `train_runtime` record a summary.

Why in the byte source, as UTF-16 (core.logs.bytes.utf16): a document is no stream of lines; only its parsed
records are. Why whole and bounded: a trainer rewrites the file at each save (never appends), so every change is
read again from its start (its head changes: the reader starts the file over), and a document over
`MAX_DOCUMENT` bytes is not parsed (a `json.loads` of it would hold it all in memory).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Protocol, TypeVar

from core.logs.bytes.rawio import read_exact

__all__ = ["DOCUMENT_NAMES", "MAX_DOCUMENT", "document_lines", "is_document", "read_document"]

DOCUMENT_NAMES = frozenset({"trainer_state.json"})
"""File names read as a JSON document (core.logs.bytes.discover takes a folder's one such file as rank 0)."""
MAX_DOCUMENT = 64 << 20  # bytes: a long run's trainer_state.json is a few MB


class _Consumed(Protocol):
    consumed: int


_State = TypeVar("_State", bound=_Consumed)


def is_document(path: Path) -> bool:
    """Whether the file at `path` is read as a JSON document, by its name."""
    return path.name in DOCUMENT_NAMES


def document_lines(raw: bytes) -> bytes:
    """A document's `log_history` records, one compact JSON line each (b"" when it is no JSON object with such a
    list: a save caught half-written is read at its next change)."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return b""
    history = doc.get("log_history") if isinstance(doc, dict) else None
    if not isinstance(history, list):
        return b""
    return b"".join(json.dumps(r).encode() + b"\n" for r in history if isinstance(r, dict))


def read_document(
    feed: Callable[[_State, bytes, int, float, int], None], st: _State, f: BinaryIO, size: int, *, now: float
) -> bool:
    """Feed the records of the document `f` (`size` bytes) not fed yet to the parser's `feed`; `st.consumed` counts
    the record lines' bytes fed (the document is read again whole on a change). Whether any were fed."""
    if size > MAX_DOCUMENT:
        return False
    f.seek(0)
    text = document_lines(read_exact(f, size))
    if len(text) <= st.consumed:
        return False
    feed(st, text[st.consumed :], st.consumed, now, len(text) - st.consumed)
    st.consumed = len(text)
    return True
