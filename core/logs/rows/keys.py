"""How a metric's key is named and in what unit its value is, for the general line reader
(core.logs.rows.general): a key's column name, a key glued to binary bytes (no key), and a time in seconds.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["glued_to_binary", "in_seconds", "metric_name"]


def metric_name(key: bytes) -> str:
    """`per step time` / `Per-Step Time` / `elapsed time per iteration (ms)` -> `per_step_time`, ...:
    lower case, every run of other characters one `_`. A key begins after the prose before it: `Step at 4 with
    Perplexity: nan` names `perplexity` (a key's own words never start with `with`, `the`, ...)."""
    name = re.sub(r"[^a-z0-9]+", "_", key.decode("ascii", "replace").lower()).strip("_")
    words = name.split("_")
    lead = 0
    while lead < len(words) - 1 and words[lead] in _PROSE:
        lead += 1
    return "_".join(words[lead:]) if lead else name


_PROSE = frozenset({"with", "the", "at", "and", "in", "on", "for", "to", "from", "after", "by", "is", "was", "a", "an"})
"""Words of the prose around a key, never its first word (`of` and `per` are: `number of steps`, `per step time`)."""


def in_seconds(name: str, unit: bytes | None, tail: bytes) -> bool:
    """Whether a step time's value is in seconds: its unit says `s`; or it has none (`tail`: what follows the
    number in the pair) and its key does not say ms. A time printed without a unit is a Python `time.time()`
    difference (mmcv's `time: 1.269`, LMOps' `| time: 1.874 |`, `Loss=nan Time=0.040`): milliseconds are always
    labelled (`time: 507.8 ms`, `per_step_time: 103328ms`, `elapsed time per iteration (ms)`)."""
    if unit:
        return unit == b"s"
    return re.search(rb"[A-Za-z%]", tail) is None and not name.endswith("ms")


_CONTROL = frozenset(range(32)) - {9, 10} | {127}  # bytes no text has before a word (tab, LF aside)


def glued_to_binary(line: bytes, start: int) -> bool:
    """Whether the word at `start` follows a byte no text has there: a control byte, or a byte >= 0x80
    that does not end a UTF-8 space, punctuation or symbol (after a letter, the word began before it).
    Such a word names no metric: binary bytes before a loss line once made metrics named `sepoch`
    (after b"\\x07") and `b6epoch` (after b"\\xff"). Digits never decide it (a line shape's template holds)."""
    if start == 0:
        return False
    byte = line[start - 1]
    if byte < 0x80:
        return byte in _CONTROL
    for k in range(2, min(4, start) + 1):  # a UTF-8 character ending here: 2 to 4 bytes
        try:
            text = line[start - k : start].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return unicodedata.category(text[-1])[0] not in "PSZ"  # after a letter the word began before
    return True
