"""Where ShardScope keeps designs, generated jobs and runs, and names that cannot escape it."""

from __future__ import annotations

import json
import keyword
import os
import re
import reprlib
import tempfile
from contextlib import suppress
from pathlib import Path

from core.errors import UserError

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = REPO_ROOT / "examples"

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxlevel = 40, 40, 4, 4, 2


_SHORT_MAX = 120  # reprlib bounds each part, not the whole: nested keys of escaped characters add up


def short(value: object) -> str:
    """`value` as a repr of ~40 characters (a nested value's at most 120; NUL and newlines escaped): a message
    quotes a long or forged value, never echoes it whole."""
    text = _SHORT.repr(value)
    return text if len(text) <= _SHORT_MAX else text[: _SHORT_MAX - 3] + "..."


class WorkspaceError(UserError, ValueError):
    """A name or path the workspace refuses (it would escape the workspace or is unreadable)."""


def default_workspace() -> Path:
    """The workspace the dashboard and CLI use: $SHARDSCOPE_WORKSPACE, else the embedded ./workspace."""
    return Path(os.environ.get("SHARDSCOPE_WORKSPACE") or REPO_ROOT / "workspace").resolve()


def is_safe_name(name: object) -> bool:
    """The one safe-name check: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit
    (a design, job or file name that cannot escape its folder: no '/', spaces or '..')."""
    return isinstance(name, str) and bool(_SAFE_NAME.fullmatch(name)) and name not in {".", ".."}


def is_identifier(name: object) -> bool:
    """The one identifier check: a Python identifier of at most 64 characters that is not a keyword
    (layout, tensor, operator and axis names become names in the generated script)."""
    return isinstance(name, str) and bool(_IDENTIFIER.fullmatch(name)) and not keyword.iskeyword(name)


def check_name(name: str, what: str = "name") -> str:
    """Return `name` if it is a plain file name (letters, digits, . _ -), else raise WorkspaceError."""
    if not is_safe_name(name):
        size = f" ({len(name):,} characters)" if isinstance(name, str) and len(name) > 64 else ""
        raise WorkspaceError(
            f"{what} {short(name)}{size} is not allowed: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (no '/', NUL, spaces or '..')."
        )
    return name


def child(root: Path, name: str, what: str = "name") -> Path:
    """`root / name` for a checked name, guaranteed to stay inside `root`."""
    path = (root / check_name(name, what)).resolve()
    if path.parent != root.resolve():
        raise WorkspaceError(f"{what} {short(name)} would leave the workspace {root}")
    return path


SETTINGS_FILE = "settings.json"
# The workspace's alert settings (core.alerts.settings reads it): named here, on the ground floor, so a run's
# supervisor (core.run, which may not import core.alerts) can tell whether to start the run's alert watch.
ALERTS_FILE = "alerts.json"
MAX_SETTINGS_BYTES = 64 * 1024


def read_settings(workspace: Path) -> dict[str, str]:
    """What the user chose last in this workspace (e.g. the Python interpreter of their own scripts).

    A missing, unreadable or malformed file is no settings: a preference never blocks a page."""
    path = workspace / SETTINGS_FILE
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_SETTINGS_BYTES:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, str)}


def remember(workspace: Path, key: str, value: str) -> None:
    """Store one setting of the workspace (atomically: a reader never sees half a file)."""
    settings = {**read_settings(workspace), key: value}
    workspace.mkdir(parents=True, exist_ok=True)
    # a fresh temp name (mkstemp: O_EXCL), never a predictable one a planted link could stand at
    fd, tmp = tempfile.mkstemp(dir=workspace, prefix=f".{SETTINGS_FILE}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(settings, indent=1))
        os.replace(tmp, workspace / SETTINGS_FILE)
    except OSError:
        with suppress(OSError):
            os.unlink(tmp)  # a full disk leaves no half-written temp file behind
        raise
