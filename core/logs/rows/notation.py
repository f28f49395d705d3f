"""The shape of a notation entry (core.logs.rows.notations, core.logs.rows.notations_more): a real line, where it
was seen, the reading it must give; a notation, its samples and, only when the general grammar does not read it,
its pattern.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CORPUS", "Notation", "NotationSample"]

CORPUS = "{} (tests/fixtures/real_logs/{})"


@dataclass(frozen=True)
class NotationSample:
    """A real line, where it was seen, and the reading it must give (see the module's doc)."""

    line: str
    source: str
    expect: Mapping[str, float | None] | None
    eval: bool = False
    header: str | None = None  # a column table's header printed above the line (core.logs.rows.columns)


@dataclass(frozen=True)
class Notation:
    """One way users print a line's numbers: what it is, real samples, and a pattern only when the general
    grammar does not read it."""

    name: str
    what: str
    samples: tuple[NotationSample, ...]
    pattern: bytes | None = None
    suite: bool = False
