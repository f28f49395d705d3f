"""MindFormers mode: read `parallel_config` from a training YAML and count the devices it needs.

Only the part the launcher needs is read (no YAML library in the venv): the top-level
`parallel_config:` mapping with integer values, block style (`  data_parallel: 2`) or flow style
(`parallel_config: {data_parallel: 2, model_parallel: 4}`). Devices = dp x mp x cp x pp
(MindFormers' docs: data_parallel, model_parallel, context_parallel, pipeline_stage).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from core.files import FileCheckError, read_checked

FACTORS = ("data_parallel", "model_parallel", "context_parallel", "pipeline_stage")
_KEY_VALUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*?)\s*$")
MAX_BYTES = 2_000_000


def _strip_comment(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line) if not line.lstrip().startswith("#") else ""


def _scalar(text: str) -> int | str:
    text = text.strip().strip("'\"")
    return int(text) if re.fullmatch(r"[+-]?\d{1,9}", text) else text


def parse_parallel_config(text: str) -> dict[str, int | str]:
    """The `parallel_config` mapping of a MindFormers YAML text ({} when there is none)."""
    lines = [_strip_comment(raw.rstrip("\n")) for raw in text.splitlines()]
    for i, line in enumerate(lines):
        match = _KEY_VALUE.match(line)
        if not match or match.group(1) != "parallel_config":
            continue
        rest = match.group(2)
        if rest.startswith("{"):
            body = rest.strip("{} ")
            pairs = (item.split(":", 1) for item in body.split(",") if ":" in item)
            return {k.strip(): _scalar(v) for k, v in pairs}
        found: dict[str, int | str] = {}
        indent = None
        for child in lines[i + 1:]:
            if not child.strip():
                continue
            width = len(child) - len(child.lstrip(" "))
            if width == 0:
                break
            indent = indent or width
            if width != indent:
                continue  # a nested mapping below a key: not needed here
            inner = _KEY_VALUE.match(child.strip())
            if inner:
                found[inner.group(1)] = _scalar(inner.group(2))
        return found
    return {}


def read_parallel_config(path: Path) -> dict[str, int]:
    """The integer factors of a YAML's parallel_config (missing ones are 1). Raises ValueError if absent,
    unreadable, not a regular file (a FIFO would block, /dev/zero never ends) or over MAX_BYTES.

    The Launch page asks on every rerun: the file is read again only when its size or mtime changed.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ValueError((exc.strerror or str(exc)).lower()) from None
    return dict(_parallel_config(str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))


@lru_cache(maxsize=16)
def _parallel_config(path: str, dev: int, ino: int, size: int, mtime_ns: int) -> dict[str, int]:
    """read_parallel_config for one version of the file (the stat fields are the cache key only)."""
    try:
        text = read_checked(path, MAX_BYTES, "MindFormers config").decode("utf-8", errors="replace")
    except FileCheckError as exc:
        raise ValueError(exc.reason) from None
    found = parse_parallel_config(text)
    if not found:
        raise ValueError("it has no top-level parallel_config mapping")
    factors = {}
    for key in FACTORS:
        value = found.get(key, 1)
        if isinstance(value, str) or value < 1:
            raise ValueError(f"parallel_config.{key} is {value!r}: a positive whole number is needed")
        factors[key] = value
    return factors


def parallel_devices(factors: dict[str, int]) -> tuple[int, str]:
    """(devices, 'dp 2 x mp 4 x cp 1 x pp 1') for a message."""
    total = 1
    for key in FACTORS:
        total *= factors.get(key, 1)
    short = {"data_parallel": "dp", "model_parallel": "mp", "context_parallel": "cp", "pipeline_stage": "pp"}
    formula = " x ".join(f"{short[k]} {factors.get(k, 1)}" for k in FACTORS)
    return total, formula
