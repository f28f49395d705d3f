"""Record a live run's logs with their timing, and replay them so the Monitor sees a genuinely live run.

A recording is a folder with the final log files (same relative paths as the run's log folder) and
`timing.json`:

    {"version": 1, "synthetic": false, "source": "...", "recorded_at": 1700000000.0,
     "files": {"worker_0.log": [[0.0, 5594], [1.53, 5639], ...], ...}}

Each file maps to (seconds since the recording started, byte offset the file had reached) pairs,
captured at line boundaries. `replay` rewrites the files into an output folder at that pace, so a
RunWatcher on the output folder behaves as on a real run (used when there is no hardware).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from core.files import FileCheckError, open_checked, read_checked
from core.logs.discover import discover_logs

__all__ = ["TIMING_FILE", "Recording", "load_recording", "record", "replay", "synthetic_recording"]

TIMING_FILE = "timing.json"
MAX_TIMING_BYTES = 64 << 20  # timing.json: a few pairs per line of every file
MAX_RECORDED_BYTES = 1 << 30  # one recorded log (replay holds the recorded files in memory)


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
        if root.resolve() not in target.parents or not target.is_file():
            raise ValueError(f"recording {root}: {rel!r} is missing or outside the recording")
        size = target.stat().st_size
        pairs = [(float(t), int(o)) for t, o in events]
        if any(b[1] < a[1] or b[0] < a[0] for a, b in itertools.pairwise(pairs)) or any(o > size for _, o in pairs):
            raise ValueError(f"recording {root}: timing of {rel!r} is not monotonic or exceeds the file")
        files[rel] = pairs
    duration = max((p[-1][0] for p in files.values() if p), default=0.0)
    return Recording(root, files, bool(meta.get("synthetic", False)), str(meta.get("source", "")), duration)


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
    out.mkdir(parents=True, exist_ok=True)
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
    for rel in rec.files:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(b"")
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
            with open(out / rel, "ab") as f:
                f.write(sources[rel][written[rel] : off])
            written[rel] = off
    for rel, data in sources.items():  # anything after the last timed offset (e.g. no final newline)
        if len(data) > written[rel]:
            with open(out / rel, "ab") as f:
                f.write(data[written[rel] :])
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
        target.write_bytes(data)
    meta = {
        "version": 1,
        "synthetic": False,
        "source": source or str(src),
        "recorded_at": time.time(),
        "files": {rel: [list(p) for p in pairs] for rel, pairs in schedules.items()},
    }
    (dst / TIMING_FILE).write_text(json.dumps(meta, indent=1))
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
        target.write_bytes(data)  # what was checked and read, not a second open of the path
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
    (dst / TIMING_FILE).write_text(json.dumps(meta, indent=1))
    return load_recording(dst)
