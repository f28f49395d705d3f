"""Writing a job folder without losing anything: a file is replaced only when ShardScope wrote it and
nobody changed it since (job.json records what was written), or when asked to (`force`).

A user who edits the generated train.py, or points `--out` at a folder of their own, keeps their files
unless they say --force (the Launch page: "Overwrite them").
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from core.codegen.options import CodegenError

JOB_FILE = "job.json"
WRITTEN_KEY = "written"  # job.json: file name -> sha256 of the text ShardScope wrote there
MAX_JOB_FILE_BYTES = 16 << 20  # a generated file is far smaller; a bigger one is not ours


class JobExistsError(CodegenError):
    """The folder holds files writing the job would overwrite and lose (`names`)."""

    def __init__(self, folder: Path, names: list[str]) -> None:
        self.folder = folder
        self.names = names
        super().__init__(f"{folder} already holds {', '.join(names)} (not written by ShardScope, or edited since)")


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_regular(path: Path) -> bytes | None:
    """The bytes of a regular, bounded file (never following a link or opening a FIFO), else None."""
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_JOB_FILE_BYTES:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_JOB_FILE_BYTES + 1)
    except OSError:
        return None
    return data if len(data) <= MAX_JOB_FILE_BYTES else None


def _job_record(folder: Path) -> dict | None:
    """The folder's job.json when it is ShardScope's, else None."""
    data = read_regular(folder / JOB_FILE)
    try:
        job = json.loads(data) if data is not None else None
    except ValueError:
        return None
    return job if isinstance(job, dict) and "shardscope_job" in job else None


def files_at_risk(folder: Path, files: dict[str, str]) -> list[str]:
    """The names in `files` whose current file in `folder` would be lost by writing `files` there.

    Safe to replace: a missing file, the same text, ShardScope's job.json, and a file whose content
    is still what ShardScope recorded writing. Anything else (edited, foreign, a link, a FIFO) is at risk.
    """
    if not folder.is_dir():
        return []
    record = _job_record(folder)
    written = record.get(WRITTEN_KEY, {}) if record else {}
    written = written if isinstance(written, dict) else {}
    at_risk = []
    for name, text in files.items():
        path = folder / name
        if not os.path.lexists(path) or (name == JOB_FILE and record is not None):
            continue
        data = read_regular(path)
        digest = hashlib.sha256(data).hexdigest() if data is not None else None
        if digest is None or (digest != text_digest(text) and digest != written.get(name)):
            at_risk.append(name)
    return at_risk


def write_files(folder: Path, files: dict[str, str], executable: tuple[str, ...], force: bool = False) -> None:
    """Write `files` into `folder` (each atomically: a fresh private temp file, then rename).

    Refuses with JobExistsError when a file would be lost, unless `force`. job.json (when among
    `files`) gets the digests of the other files, so the next write knows they are ShardScope's.
    """
    at_risk = [] if force else files_at_risk(folder, files)
    if at_risk:
        raise JobExistsError(folder, at_risk)
    created = _missing_folders(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_all(folder, dict(files), executable)
    except BaseException:
        if created:  # made here, just now: nothing in it is anybody else's (a full disk leaves no empty job)
            shutil.rmtree(created[0], ignore_errors=True)
        raise


def _missing_folders(folder: Path) -> list[Path]:
    """The folders `mkdir(parents=True)` would make for `folder`, outermost first."""
    missing = []
    for path in (folder, *folder.parents):
        if os.path.lexists(path):
            break
        missing.append(path)
    return missing[::-1]


def _write_all(folder: Path, files: dict[str, str], executable: tuple[str, ...]) -> None:
    """Each file atomically; a file that fails leaves no temp file behind."""
    if JOB_FILE in files:
        job = json.loads(files[JOB_FILE])
        job[WRITTEN_KEY] = {name: text_digest(text) for name, text in files.items() if name != JOB_FILE}
        files[JOB_FILE] = json.dumps(job, indent=2) + "\n"
    for name, text in files.items():
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.chmod(tmp, 0o755 if name in executable else 0o644)
            os.replace(tmp, folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
