"""Checks on a log folder before anything reads or watches it (issue 12 item 5).

Why: `?logdir=/` once made the Monitor watch the whole filesystem (30k inotify watches, minutes of
CPU after the tab closed). Every entry point (page, `watch`, `diagnose`) validates the folder first
and gets one plain sentence back instead of a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import UserError
from core.files import expand_home

__all__ = ["MAX_DIR_ENTRIES", "MAX_PATH_CHARS", "LogDirError", "validate_log_dir"]

MAX_PATH_CHARS = 4096  # PATH_MAX on Linux: anything longer fails in the kernel anyway
MAX_DIR_ENTRIES = 20000  # 1,024-rank runs have ~1,030 entries; /usr/lib has tens of thousands


class LogDirError(UserError, ValueError):
    """The folder cannot be a run's log folder; the message is one line for a user."""


def validate_log_dir(path: Path | str, max_entries: int = MAX_DIR_ENTRIES) -> Path:
    """Return the resolved folder, or raise LogDirError saying why it cannot be watched."""
    text = os.fspath(path)
    if not text.strip():
        raise LogDirError("no log folder given")
    if len(text) > MAX_PATH_CHARS or "\x00" in text:
        raise LogDirError(
            f"the log folder path is too long or invalid ({len(text):,} characters; the limit is {MAX_PATH_CHARS:,})"
        )
    folder = expand_home(text)
    try:
        if not folder.exists():
            raise LogDirError(f"{_short(text)} does not exist")
        if not folder.is_dir():
            raise LogDirError(f"{_short(text)} is not a folder")
        folder = folder.resolve()
    except OSError as exc:
        raise LogDirError(f"{_short(text)} cannot be used: {exc.strerror or exc}") from None
    if folder.parent == folder:
        raise LogDirError(f"{folder} is the filesystem root, not a run's log folder")
    if not os.access(folder, os.R_OK | os.X_OK):
        raise LogDirError(f"{_short(str(folder))} is not readable (permission denied)")
    count = 0
    try:
        with os.scandir(folder) as it:
            for _ in it:
                count += 1
                if count > max_entries:
                    raise LogDirError(
                        f"{_short(str(folder))} has more than {max_entries:,} entries: "
                        "not a run's log folder (pick the run's own log folder)"
                    )
    except PermissionError:
        raise LogDirError(f"{_short(str(folder))} is not readable (permission denied)") from None
    except OSError as exc:
        raise LogDirError(f"{_short(str(folder))} cannot be listed: {exc.strerror or exc}") from None
    return folder


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
