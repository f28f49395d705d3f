"""Record a live run's logs with their timing, and replay them so the Monitor sees a genuinely live run.

A recording is a folder with the final log files (same relative paths as the run's log folder) and
`timing.json`:

    {"version": 1, "synthetic": false, "source": "...", "recorded_at": 1700000000.0,
     "files": {"worker_0.log": [[0.0, 5594], [1.53, 5639], ...], ...}}

Each file maps to (seconds since the recording started, byte offset the file had reached) pairs,
captured at line boundaries. `replay` rewrites the files into an output folder at that pace, so a
RunWatcher on the output folder behaves as on a real run (used when there is no hardware).

No write follows a link (issue 31): the Monitor replays into a fresh private folder (`new_replay_dir`,
tempfile.mkdtemp, 0700), never a predictable name under $TMPDIR another user could create first with
links planted in it; each output file is created with O_CREAT | O_EXCL | O_NOFOLLOW below the output
folder's own descriptor (no component may be a link) and grown through that descriptor. A recording's
files and timing.json are written by `write_replacing` (temp file + rename: a planted link is replaced).
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from core.errors import UserError
from core.files import FileCheckError, open_checked, read_checked, write_replacing
from core.logs.bytes.discover import discover_logs

__all__ = [
    "TIMING_FILE",
    "Recording",
    "ReplayError",
    "load_recording",
    "new_replay_dir",
    "record",
    "replay",
    "synthetic_recording",
]

TIMING_FILE = "timing.json"
MAX_TIMING_BYTES = 64 << 20  # timing.json: a few pairs per line of every file
MAX_RECORDED_BYTES = 1 << 30  # one recorded log (replay holds the recorded files in memory)
REPLAY_PREFIX = "shardscope_replay_"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_APPEND | os.O_CLOEXEC


class ReplayError(UserError):
    """A replay cannot write its output where asked (a file already there, a link, no permission)."""


@dataclass
class Recording:
    """A loaded recording: folder, per-file [(t, end_offset)] schedule and whether timing is synthetic."""

    path: Path
    files: dict[str, list[tuple[float, int]]]
    synthetic: bool
    source: str
    duration_s: float


def load_recording(recording_dir: Path | str) -> Recording:
    """Read and check `timing.json` (offsets must grow and stay within the recorded files)."""
    root = Path(recording_dir)
    meta = json.loads(read_checked(root / TIMING_FILE, MAX_TIMING_BYTES, "recording timing file"))
    files: dict[str, list[tuple[float, int]]] = {}
    for rel, events in meta.get("files", {}).items():
        target = (root / rel).resolve()
        plain = not PurePosixPath(rel).is_absolute() and all(p not in ("", ".", "..") for p in rel.split("/"))
        if not plain or root.resolve() not in target.parents or not target.is_file():
            raise ValueError(f"recording {root}: {rel!r} is missing or outside the recording")
        size = target.stat().st_size
        pairs = [(float(t), int(o)) for t, o in events]
        if any(b[1] < a[1] or b[0] < a[0] for a, b in itertools.pairwise(pairs)) or any(o > size for _, o in pairs):
            raise ValueError(f"recording {root}: timing of {rel!r} is not monotonic or exceeds the file")
        files[rel] = pairs
    duration = max((p[-1][0] for p in files.values() if p), default=0.0)
    return Recording(root, files, bool(meta.get("synthetic", False)), str(meta.get("source", "")), duration)


def new_replay_dir(name: str, parent: Path | str | None = None) -> Path:
    """A fresh folder for one replay's output, made by tempfile.mkdtemp (0700, ours, a name nobody could
    guess and create first) in `parent` ($TMPDIR by default); `name` (the recording's) only labels it."""
    label = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:64]
    prefix = f"{REPLAY_PREFIX}{label}-{time.strftime('%Y%m%d-%H%M%S')}-"
    return Path(tempfile.mkdtemp(prefix=prefix, dir=None if parent is None else str(parent)))


class _ReplayFiles:
    """The output files of one replay: each created new below the output folder's descriptor and grown
    through its own descriptor, so no link (planted before or during the replay) is ever written through."""

    def __init__(self, out: Path) -> None:
        self.out = out
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(out, 0o700)
        except FileExistsError:
            pass  # the Monitor's folder from new_replay_dir, or one the caller chose
        except OSError as exc:
            raise self._error(out, exc) from None
        self.dirs: dict[tuple[str, ...], int] = {(): self._open_dir(out, None, str(out))}
        self.files: dict[str, int] = {}

    def __enter__(self) -> _ReplayFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in [*self.files.values(), *self.dirs.values()]:
            os.close(fd)
        self.files.clear()
        self.dirs.clear()

    def _error(self, path: Path | str, exc: OSError) -> ReplayError:
        if isinstance(exc, FileExistsError):
            why = "already exists (a replay writes only files it creates: replay into a new folder)"
        elif exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link (or a file) where a folder must be
            why = "is a link or not a folder (a replay never writes through a link)"
        else:
            why = exc.strerror or str(exc)
        return ReplayError(f"cannot replay into {path}: {why}")

    def _open_dir(self, name: str | Path, dir_fd: int | None, shown: str) -> int:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            raise self._error(shown, exc) from None

    def _folder(self, parts: tuple[str, ...]) -> int:
        """The descriptor of out/parts..., each folder made if missing and opened without following a link."""
        if parts not in self.dirs:
            parent = self._folder(parts[:-1])
            try:
                os.mkdir(parts[-1], 0o755, dir_fd=parent)
            except FileExistsError:
                pass
            except OSError as exc:
                raise self._error(self.out.joinpath(*parts), exc) from None
            self.dirs[parts] = self._open_dir(parts[-1], parent, str(self.out.joinpath(*parts)))
        return self.dirs[parts]

    def create(self, rel: str) -> None:
        """Create `rel` empty (as msrun opens its logs with "w"); refused when anything is there already."""
        parts = tuple(rel.split("/"))
        parent = self._folder(parts[:-1])
        try:
            self.files[rel] = os.open(parts[-1], _NEW_FILE_FLAGS, 0o644, dir_fd=parent)
        except OSError as exc:
            raise self._error(self.out / rel, exc) from None

    def append(self, rel: str, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.files[rel], view) :]


def replay(
    recording_dir: Path | str,
    out_dir: Path | str,
    speed: float = 1.0,
    stop_event: threading.Event | None = None,
    max_gap_s: float | None = None,
) -> bool:
    """Write the recorded files into `out_dir` at the recorded pace (`speed` x faster).

    Files are created empty first (as msrun opens them with "w"), then grown chunk by chunk at line
    boundaries. `max_gap_s` caps long idle gaps (e.g. compile time). Returns False when stopped early.
    """
    if speed <= 0:
        raise ValueError("speed must be > 0")
    rec = load_recording(recording_dir)
    out = Path(out_dir)
    events: list[tuple[float, str, int]] = []
    for rel, pairs in rec.files.items():
        events.extend((t, rel, off) for t, off in pairs)
    events.sort(key=lambda e: (e[0], e[1]))
    if max_gap_s is not None:
        shifted, prev_t, shift = [], 0.0, 0.0
        for t, rel, off in events:
            gap = t - prev_t
            if gap > max_gap_s:
                shift += gap - max_gap_s
            prev_t = t
            shifted.append((t - shift, rel, off))
        events = shifted
    sources = {rel: read_checked(rec.path / rel, MAX_RECORDED_BYTES, "recorded log") for rel in rec.files}
    written = dict.fromkeys(rec.files, 0)
    with _ReplayFiles(out) as files:
        for rel in rec.files:
            files.create(rel)
        t_start = time.monotonic()
        for t, rel, off in events:
            delay = t / speed - (time.monotonic() - t_start)
            if delay > 0:
                if stop_event is not None:
                    if stop_event.wait(delay):
                        return False
                else:
                    time.sleep(delay)
            elif stop_event is not None and stop_event.is_set():
                return False
            if off > written[rel]:
                files.append(rel, sources[rel][written[rel] : off])
                written[rel] = off
        for rel, data in sources.items():  # anything after the last timed offset (e.g. no final newline)
            if len(data) > written[rel]:
                files.append(rel, data[written[rel] :])
    return True


def record(
    log_dir: Path | str, recording_dir: Path | str, stop_event: threading.Event, poll_s: float = 0.05, source: str = ""
) -> Recording:
    """Watch a live log folder until `stop_event` is set and save a recording of it.

    Every `poll_s` the size each log reached (cut at its last newline) is noted with the time.
    A file that shrinks (msrun relaunch truncates logs) restarts its schedule.
    """
    src = Path(log_dir)
    dst = Path(recording_dir)
    dst.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    schedules: dict[str, list[tuple[float, int]]] = {}
    last: dict[str, int] = {}

    def poll() -> None:
        now = time.monotonic() - t0
        for info in discover_logs(src):
            rel = info.rel
            try:
                size = info.path.stat().st_size
            except OSError:
                continue
            prev = last.get(rel, 0)
            if size < prev:
                schedules[rel] = []
                prev = 0
            if size == prev:
                continue
            try:
                with open_checked(info.path, None, "log file") as f:
                    f.seek(prev)
                    chunk = f.read(size - prev)
            except FileCheckError:
                continue
            nl = chunk.rfind(b"\n")
            if nl == -1:
                continue
            end = prev + nl + 1
            schedules.setdefault(rel, []).append((round(now, 4), end))
            last[rel] = end

    while not stop_event.wait(poll_s):
        poll()
    poll()
    for rel, pairs in schedules.items():
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open_checked(src / rel, None, "log file") as f:
            data = f.read(pairs[-1][1] if pairs else 0)
        write_replacing(target, data)
    meta = {
        "version": 1,
        "synthetic": False,
        "source": source or str(src),
        "recorded_at": time.time(),
        "files": {rel: [list(p) for p in pairs] for rel, pairs in schedules.items()},
    }
    write_replacing(dst / TIMING_FILE, json.dumps(meta, indent=1).encode())
    return load_recording(dst)


def synthetic_recording(
    log_dir: Path | str, recording_dir: Path | str, seconds_per_line: float = 0.05, loss_lines_only_pace: bool = True
) -> Recording:
    """Build a recording from finished logs with made-up timing, marked `"synthetic": true`.

    For tests and demos only: the timing is invented (each loss line `seconds_per_line` after the
    previous one, noise lines written together with the next loss line), never present it as real.
    """
    src = Path(log_dir)
    dst = Path(recording_dir)
    dst.mkdir(parents=True, exist_ok=True)
    files: dict[str, list[list[float]]] = {}
    for info in discover_logs(src):
        data = read_checked(info.path, MAX_RECORDED_BYTES, "log file")
        target = dst / info.rel
        target.parent.mkdir(parents=True, exist_ok=True)
        write_replacing(target, data)  # what was checked and read, not a second open of the path
        pairs: list[list[float]] = []
        t = 0.0
        pos = 0
        for line in data.splitlines(keepends=True):
            pos += len(line)
            if not line.endswith(b"\n"):
                break
            paced = b"loss" in line or b"Traceback" in line or not loss_lines_only_pace
            if paced:
                t += seconds_per_line
                pairs.append([round(t, 4), pos])
        if not pairs or pairs[-1][1] != pos:
            pairs.append([round(t + seconds_per_line, 4), pos])
        files[info.rel] = pairs
    meta = {
        "version": 1,
        "synthetic": True,
        "source": f"synthetic timing over {src.name}",
        "recorded_at": time.time(),
        "files": files,
    }
    write_replacing(dst / TIMING_FILE, json.dumps(meta, indent=1).encode())
    return load_recording(dst)
