"""Reading one run.json as untrusted text: bounded size, bounded nesting, every known field typed and in range.

Why: run.json is a file on disk that anything may have written (a crash mid-edit, a hand edit, a forged
record). One bad record used to end `runs`, every `launch` and the Launch page in a traceback that named
neither the run nor the file. Here a record is either fields the registry can trust or one `RecordError`
naming the run and what is wrong ("not read: runs/NAME/run.json: why"), and the caller goes on with the
other runs.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from core.run.record_types import BadValue, options_from_json
from core.run.states import LaunchError, RunKind, RunStatus
from core.workspace import is_safe_name, short

RUN_FILE = "run.json"
MAX_RUN_FILE_BYTES = 1 << 20  # a record is ~2 KB; a planned run's options add a few hundred bytes
MAX_JSON_DEPTH = 16  # record -> options -> plan -> ... is 3 deep
MAX_TEXT = 4096  # PATH_MAX; a message or an argv word is far shorter
MAX_ITEMS = 4096  # argv words, nodes, option keys
PID_MAX = 1 << 22  # Linux's PID_MAX_LIMIT
TIME_MAX = float(1 << 34)  # seconds since 1970: the year 2514
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
CODE_RANGE = range(-999, 1000)  # an exit status as the wrappers write it (-?\d{1,3})


class RecordError(LaunchError):
    """A run.json that is not read: `line` is what a listing shows, `str()` what `runs NAME` says."""

    def __init__(self, name: str, why: str, message: str = "") -> None:
        self.name, self.why = name, why
        super().__init__(message or f"run {name}: {RUN_FILE} {why}")

    @property
    def line(self) -> str:
        return f"not read: runs/{self.name}/{RUN_FILE}: {self.why}"


class RecordWriteError(LaunchError):
    """run.json could not be saved (a full disk, a read-only workspace): one line, the OSError's errno kept."""

    def __init__(self, run_id: str, exc: OSError) -> None:
        self.errno, self.reason = exc.errno, exc.strerror or str(exc)
        hint = ": free some space, then try again" if exc.errno in DISK_FULL else ""
        super().__init__(f"cannot save runs/{run_id}/{RUN_FILE}: {exc.strerror or exc}{hint}")


class _Bad(ValueError):
    """One field's problem, said as 'not ...' after the field's name and value."""


_ESCAPES = re.compile(r"\\\\|\\\"")  # JSON's escaped backslash and escaped quote, paired from the left
_STRINGS = re.compile(r'"[^"]*"')  # once escapes are gone a string has no quote inside: linear
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth(text: str) -> int:
    """How deep the arrays and objects of JSON `text` nest, found without parsing it (so a deep
    nesting is refused before the recursive decoder sees it). Exact for valid JSON; for other text
    an upper bound of what a decoder would enter before it fails."""
    brackets = _NOT_BRACKET.sub("", _STRINGS.sub("", _ESCAPES.sub("", text)))
    if not brackets:
        return 0
    codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)  # the running sum of opens and closes
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1)
    return max(0, int(np.cumsum(steps).max()))


def parse(name: str, data: bytes) -> dict[str, Any]:
    """The JSON object of a run.json's bytes, or RecordError (size, encoding, nesting, syntax, not an object)."""
    if len(data) > MAX_RUN_FILE_BYTES:
        raise RecordError(name, f"has {len(data):,} bytes, more than the {MAX_RUN_FILE_BYTES:,} allowed")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(name, f"is not UTF-8 text (byte {exc.start})") from None
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise RecordError(name, f"nests {depth:,} levels deep, more than the {MAX_JSON_DEPTH} allowed")
    try:
        found = json.loads(text)
    except RecursionError:  # json_depth is exact for valid JSON: a belt over the braces
        raise RecordError(name, "nests too deeply") from None
    except ValueError as exc:
        raise RecordError(name, f"is not valid JSON ({short(str(exc))})") from None
    if not isinstance(found, dict):
        raise RecordError(name, f"holds {_kind(found)}, not an object of fields")
    return found


def _kind(value: object) -> str:
    names = {list: "a list", dict: "an object", str: "text", bool: "true/false", type(None): "null"}
    return names.get(type(value), "a number")


def _int_in(low: int, high: int, what: str) -> Callable[[object], int]:
    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _Bad(f"not {what} (an integer {low:,}..{high:,})")
        return value

    return check


def _optional(check: Callable[[object], Any]) -> Callable[[object], Any]:
    return lambda value: None if value is None else check(value)


def _time(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= TIME_MAX:
        raise _Bad(f"not a time (seconds 0..{TIME_MAX:,.0f})")
    if not math.isfinite(value):
        raise _Bad("not a finite time")
    return float(value)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise _Bad(f"not text but {_kind(value)}")
    if len(value) > MAX_TEXT:
        raise _Bad(f"longer than {MAX_TEXT:,} characters")
    if "\0" in value:
        raise _Bad("text holding a NUL character")
    return value


def _words(value: object) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_ITEMS:
        raise _Bad(f"not a list of at most {MAX_ITEMS:,} words")
    return [_text(word) for word in value]


def _options(value: object) -> tuple[Any, ...]:
    """(RunOptions, OwnRun | None, PlannedRun | None) of the options object (core.run.record_types)."""
    try:
        return options_from_json(value)
    except BadValue as exc:
        raise _Bad(str(exc)) from None


PID = _optional(_int_in(1, PID_MAX, "a process id"))
CODE = _optional(_int_in(CODE_RANGE.start, CODE_RANGE.stop - 1, "an exit code"))
_NODE_FIELDS: dict[str, Callable[[object], Any]] = {
    "node": _int_in(0, 65535, "a node number"),
    "argv": _words,
    "pid": PID,
    "pgid": PID,
    "create_time": _optional(_time),
    "exit_code": CODE,
}


def _nodes(value: object) -> list[dict[str, Any]]:
    if not isinstance(value, list) or len(value) > MAX_ITEMS:
        raise _Bad(f"not a list of at most {MAX_ITEMS:,} nodes")
    nodes = []
    for i, entry in enumerate(value):
        if not isinstance(entry, dict) or "node" not in entry or "argv" not in entry:
            raise _Bad(f"a list whose item {i} is not a node (an object with node and argv)")
        try:
            nodes.append({k: _NODE_FIELDS[k](v) for k, v in entry.items() if k in _NODE_FIELDS})
        except _Bad as exc:
            raise _Bad(f"a list whose node {i} is {exc}") from None
    return nodes


FIELDS: dict[str, Callable[[object], Any]] = {
    **dict.fromkeys(("scenario", "design", "launcher", "device_target", "message", "slurm_job_id"), _text),
    **dict.fromkeys(("job_dir", "workdir", "log_dir"), _text),
    **dict.fromkeys(("command", "argv"), _words),
    **dict.fromkeys(("started_at", "ended_at", "pid_create_time", "supervisor_create_time"), _optional(_time)),
    **dict.fromkeys(("pid", "pgid", "supervisor_pid"), PID),
    "exit_code": CODE,
    "master_port": _optional(_int_in(0, 65535, "a port")),
    "device_num": _int_in(0, 1 << 20, "a device count"),
    "options": _options,
    "nodes": _nodes,
}


def check_fields(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """The known fields of a record, typed (statuses as enums), or RecordError naming the first bad one.

    `name` is the run folder's name: a record must be its folder's (a copied or forged record naming
    another run is not that run)."""
    run_id = data.get("run_id")
    if not is_safe_name(run_id):
        raise RecordError(name, f"has run_id {short(run_id)}, not a run name")
    if run_id != name:
        raise RecordError(name, f"has run_id {short(run_id)}, not its folder's name")
    values: dict[str, Any] = {"run_id": run_id}
    for key, words in (("status", RunStatus), ("kind", RunKind)):
        if key in data:
            if not isinstance(data[key], str) or data[key] not in set(words):
                raise RecordError(name, f"has {key} {short(data[key])}, not one of {', '.join(words)}")
            values[key] = words(data[key])
    for key, check in FIELDS.items():
        if key in data:
            try:
                values[key] = check(data[key])
            except _Bad as exc:
                raise RecordError(name, f"has {key} {short(data[key])}, {exc}") from None
    if "options" in values:  # one object on disk, three typed values in the record
        values["options"], values["own"], values["plan"] = values["options"]
    return values


def check_trusted(run_dir: Path) -> None:
    """A run folder is read only when it is a real folder (never a link: a link leads out of runs/, or to
    another run) and it and its run.json belong to runs/' owner or to this process's user (never planted
    by another user)."""
    name = run_dir.name
    try:
        folder = os.lstat(run_dir)
        if stat.S_ISLNK(folder.st_mode):
            why = f"runs/{name} is a symbolic link: never read or deleted through"
            raise RecordError(name, why, f"run {name}: {why}")
        owners = {os.stat(run_dir.parent).st_uid, os.geteuid()}
        record = os.lstat(run_dir / RUN_FILE)
    except FileNotFoundError:
        return  # said by the read
    except OSError as exc:
        raise RecordError(name, f"cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISLNK(record.st_mode):
        raise RecordError(name, "is a symbolic link: never read")
    for what, info in (("its folder", folder), (RUN_FILE, record)):
        if info.st_uid not in owners:
            raise RecordError(name, f"is untrusted: {what} belongs to uid {info.st_uid}, not to the workspace's user")
