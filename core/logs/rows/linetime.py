"""The time a line's own leading timestamp says (python logging's `YYYY-mm-dd HH:MM:SS,mmm`, MindFormers', MindCV's
`[date]`): a row's wall time. Apart from the general line reader (core.logs.rows.general, which re-exports it) so
that module stays within its length bound.
"""

from __future__ import annotations

import re
from datetime import datetime

__all__ = ["RE_LINE_TS", "line_time"]

_NAN = float("nan")
RE_LINE_TS = re.compile(rb"^[ \t]*(?:\[[A-Z]+\][ \t]*)?\[?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[,.](\d{1,6}))?")
_TS_CACHE: dict[bytes, float] = {}


def line_time(line: bytes) -> float:
    """Unix time from a leading `YYYY-mm-dd HH:MM:SS,mmm` (python logging, MindFormers, `[date]` of
    MindCV/MindOCR), else NaN."""
    m = RE_LINE_TS.match(line)
    if not m:
        return _NAN
    key = m.group(1)
    base = _TS_CACHE.get(key)
    if base is None:
        try:
            base = datetime.strptime(key.decode().replace("T", " "), "%Y-%m-%d %H:%M:%S").timestamp()
        except ValueError:
            return _NAN
        if len(_TS_CACHE) > 4096:
            _TS_CACHE.clear()
        _TS_CACHE[key] = base
    frac = m.group(2)
    return base + (int(frac) / 10 ** len(frac) if frac else 0.0)
