"""MindFormers mode: read `parallel_config` from a training YAML and count the devices it needs.

The YAML is read with the planner's bounded loader (`core.plan.safeyaml` through
`core.plan.mfconfig.parallel_section`: PyYAML's safe loader with bounds on size, depth, alias expansion and
numbers), so block style, flow style, anchors and comments all read as MindFormers reads them, and a file
built to explode (an alias bomb, a 5,000-digit integer) is refused in one line. Devices = dp x mp x cp
x pp (MindFormers' docs: data_parallel, model_parallel, context_parallel, pipeline_stage).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from core.errors import UserError
from core.files import read_checked
from core.plan.mfconfig import parallel_section
from core.plan.safeyaml import MAX_YAML_BYTES, decode_yaml, describe

FACTORS = ("data_parallel", "model_parallel", "context_parallel", "pipeline_stage")
MAX_BYTES = MAX_YAML_BYTES  # the planner's bound: one limit for every reader of this file


def parse_parallel_config(text: str) -> dict[str, int | str]:
    """The top-level `parallel_config` mapping of a MindFormers YAML text ({} when there is none).

    Whole numbers stay ints; anything else (a bool, a float, a word) becomes its text so the caller's
    check refuses it by name (a list or mapping: its short `describe` form, never the value whole). Raises
    ValueError (ConfigError) with the line and key for text that is not YAML or is refused by the loader."""
    found = parallel_section(text)
    return {
        describe(k) if not isinstance(k, str) else k: v
        if isinstance(v, int) and not isinstance(v, bool)
        else str(v)
        if v is None or isinstance(v, bool | float | str)
        else describe(v)
        for k, v in found.items()
    }


def read_parallel_config(path: Path) -> dict[str, int]:
    """The integer factors of a YAML's parallel_config (missing ones are 1). Raises ValueError if absent,
    unreadable, not a regular file (a FIFO would block, /dev/zero never ends) or over MAX_BYTES.

    The Launch page asks on every rerun: the file is read again only when its size or mtime changed (a
    refused file too: its message is kept, so a rerun never parses it again).
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ValueError((exc.strerror or str(exc)).lower()) from None
    found = _parallel_config(str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if isinstance(found, str):
        raise ValueError(found)
    return dict(found)


@lru_cache(maxsize=16)
def _parallel_config(path: str, dev: int, ino: int, size: int, mtime_ns: int) -> dict[str, int] | str:  # noqa: ARG001
    """read_parallel_config for one version of the file (the stat fields are the cache key only): the
    factors, or the one-line reason the file is refused."""
    try:
        found = parse_parallel_config(decode_yaml(read_checked(path, MAX_BYTES, "MindFormers config"), "it"))
    except UserError as exc:  # FileCheckError (its reason: the caller names the file), YamlError, ConfigError
        return getattr(exc, "reason", None) or str(exc)
    if not found:
        return "it has no top-level parallel_config mapping"
    factors = {}
    for key in FACTORS:
        value = found.get(key, 1)
        if isinstance(value, str) or value < 1:
            return f"parallel_config.{key} is {describe(value)}: a positive whole number is needed"
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
