"""The typed parts of a run's record: its run options, what an own script's run keeps, and what it was planned to use.

Why: run.json's `options` object has always mixed three things (a generated job's `RunOptions`, an own
script's `join` / `script` / `args` / `python`, and the planner's `plan`), and five readers picked them out
with `.get`. In memory they are now three frozen values (`RunOptions`, `OwnRun`, `PlannedRun`); on disk the
object keeps the layout every earlier release wrote (`options_to_json`), so older run.json files read here
and records written here still read in an older dashboard sharing the workspace.

Every value comes from an untrusted file: a field of the wrong type raises `BadValue` (said by
core.run.record_check as one "not read: runs/NAME/run.json: why" line); keys this release does not know
are skipped (a newer release's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from core.codegen.options import RunOptions
from core.errors import UserError

__all__ = ["BadValue", "OwnRun", "PlannedRun", "PlannedTime", "options_from_json", "options_to_json"]

OWN_KEYS = ("join", "script", "args", "python")  # what an own script's run adds to its options object
MAX_ARGS = 4096
MAX_TEXT = 4096


class BadValue(UserError, ValueError):
    """One value's problem, said as 'not ...' after the field's name (core.run.record_check adds the file)."""


def _text(value: object, key: str) -> str:
    if not isinstance(value, str) or len(value) > MAX_TEXT or "\0" in value:
        raise BadValue(f"not an object whose {key} is text (at most {MAX_TEXT:,} characters, no NUL)")
    return value


def _number(value: object, key: str, integer: bool = False) -> Any:
    kinds = int if integer else int | float
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value):
        raise BadValue(f"not an object whose {key} is {'an integer' if integer else 'a finite number'}")
    return value


def _optional_int(value: object, key: str) -> int | None:
    return None if value is None else _number(value, key, integer=True)


@dataclass(frozen=True)
class OwnRun:
    """What the run of the user's own script keeps of its job (core.run.own)."""

    script: str = ""
    args: tuple[str, ...] = ()
    python: str = ""  # the user's interpreter; "" = the dashboard's
    join: bool = True  # msrun --join: False leaves the workers' exit codes unknown

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OwnRun:
        args = data.get("args", [])
        if not isinstance(args, list) or len(args) > MAX_ARGS:
            raise BadValue(f"not an object whose args is a list of at most {MAX_ARGS:,} words")
        join = data.get("join", True)
        if not isinstance(join, bool):
            raise BadValue("not an object whose join is true or false")
        return cls(
            script=_text(data.get("script", ""), "script"),
            args=tuple(_text(word, "args") for word in args),
            python=_text(data.get("python", ""), "python"),
            join=join,
        )

    def to_json(self) -> dict[str, Any]:
        return {"join": self.join, "script": self.script, "args": list(self.args), "python": self.python}


@dataclass(frozen=True)
class PlannedTime:
    """The planned step time on a hardware preset, and what MFU needs later (core.plan.planned)."""

    step_s: float
    hardware: str = ""
    peak_tflops: float | None = None
    model_flops_per_card_step: float | None = None
    source: str = ""

    @classmethod
    def from_json(cls, data: object) -> PlannedTime | None:
        """None for a plan without a step time ({} or missing: the planner gave none)."""
        if data is None or data == {}:
            return None
        if not isinstance(data, dict) or "step_s" not in data:
            raise BadValue("not an object whose time is an object with step_s")
        optional = {
            k: _number(data[k], f"time.{k}")
            for k in ("peak_tflops", "model_flops_per_card_step")
            if data.get(k) is not None
        }
        return cls(
            step_s=float(_number(data["step_s"], "time.step_s")),
            hardware=_text(data.get("hardware", ""), "time.hardware"),
            source=_text(data.get("source", ""), "time.source"),
            **optional,
        )

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class PlannedRun:
    """What the planner expected of a run (memory per card of the busiest stage, a step time), or why it could
    not plan it (`memory_bytes` None and `why`)."""

    memory_bytes: int | None = None
    model_state_bytes: int | None = None
    activation_bytes: int | None = None
    recipe: str = ""
    peak_stage: int | None = None
    source: str = ""
    why: str = ""
    time: PlannedTime | None = None

    @classmethod
    def from_json(cls, data: object) -> PlannedRun:
        """The plan as core.plan.planned gives it and run.json keeps it."""
        if not isinstance(data, dict):
            raise BadValue("not an object whose plan is an object")
        ints = {k: _optional_int(data.get(k), k) for k in ("memory_bytes", "model_state_bytes", "activation_bytes")}
        return cls(
            **ints,
            recipe=_text(data.get("recipe", ""), "recipe"),
            peak_stage=_optional_int(data.get("peak_stage"), "peak_stage"),
            source=_text(data.get("source", ""), "source"),
            why=_text(data.get("why", ""), "why"),
            time=PlannedTime.from_json(data.get("time")),
        )

    def to_json(self) -> dict[str, Any]:
        """The plan's object: `memory_bytes` always, every other field when it says something."""
        data: dict[str, Any] = {"memory_bytes": self.memory_bytes}
        for f in fields(self)[1:]:
            value = getattr(self, f.name)
            if value not in (None, ""):
                data[f.name] = value.to_json() if isinstance(value, PlannedTime) else value
        return data


_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    f.name: (int,) if isinstance(f.default, int) and not isinstance(f.default, bool) else (type(f.default),)
    for f in fields(RunOptions)
}
_OPTION_TYPES["local_worker_num"] = (int, type(None))
_OPTION_TYPES["learning_rate"] = (int, float)


def options_from_json(data: object) -> tuple[RunOptions, OwnRun | None, PlannedRun | None]:
    """The three values of a run.json's `options` object (any earlier release's layout); BadValue says why not."""
    if not isinstance(data, dict) or len(data) > MAX_ARGS:
        raise BadValue(f"not an object of at most {MAX_ARGS:,} options")
    known: dict[str, Any] = {}
    for key, kinds in _OPTION_TYPES.items():
        if key in data:
            value = data[key]
            if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
                raise BadValue(f"not an object whose {key} is {' or '.join(k.__name__ for k in kinds)}")
            if isinstance(value, str):
                _text(value, key)
            if isinstance(value, float) and not math.isfinite(value):
                raise BadValue(f"not an object whose {key} is finite")
            known[key] = value
    own = OwnRun.from_json(data) if any(k in data for k in OWN_KEYS) else None
    plan = PlannedRun.from_json(data["plan"]) if data.get("plan") is not None else None
    return RunOptions(**known), own, plan


def options_to_json(options: RunOptions, own: OwnRun | None, plan: PlannedRun | None) -> dict[str, Any]:
    """The `options` object as every release wrote it: the run options, an own script's keys, the plan."""
    data: dict[str, Any] = options.to_dict()
    if own is not None:
        data.update(own.to_json())
    if plan is not None:
        data["plan"] = plan.to_json()
    return data
