"""The real dashboard server as a user meets it: the Monitor page in headless Chromium, with the
server's CPU, RSS and inotify watches sampled and the websocket bytes the browser receives counted.

Why: issue 12 asks for the server's peak RSS and CPU with `?logdir=/` (and `/tmp`), before and after
the tab is closed (the idle watcher stop is at 2 min); issue 14 asks for the Monitor's first paint
(<= 3 s) and the websocket payload per live tick (<= 300 KB) at 1,024 ranks, and the figures at
8, 64, 256 and 1,024 ranks. Unit benchmarks of core.logs do not see Streamlit, the page or the
browser; this does. A benchmark, not a test: it prints figures and never asserts on time.

    .venv/bin/python benchmarks/bench_monitor_server.py                  # everything (~15 min)
    .venv/bin/python benchmarks/bench_monitor_server.py --skip-root --scale-ranks "" --ranks 1024

    .venv/bin/python benchmarks/bench_monitor_server.py --only-sessions --sessions 20 --steps 2000

Scenarios (one fresh server each, warmed by one Monitor load without a folder, then measured):
  (a) `?logdir=/` for --seconds, the tab closed, --idle-seconds more;  (b) the same with `/tmp`;
  (d) synthetic runs (benchmarks/synth_logs.py) at --scale-ranks, and (c) at --ranks: first paint,
      read to the end, then --seconds of steady state while one step is appended to every rank
      every second; screenshots of the first screen before the appends and at the end
      (/tmp/bench_monitor_N_before_appends.png, /tmp/bench_monitor_N.png);
  (e) --sessions tabs opened at once on one live --sessions-ranks folder: each one's first paint.
Only processes this script started are stopped (by their pid); generated folders are removed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import synth_logs  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RESERVED_PORTS = {8501, 8765}  # the developers' dashboard and the soak benchmark's
SAMPLE_S = 0.5
TAIL_S = 30.0  # "after the idle stop": the last this many seconds of the closed-tab phase
RE_STEP = re.compile(rb"epoch: (\d+) step: (\d+), loss is ")
STEPS_PER_EPOCH = 100  # synth_logs.write_run's default
ICONS = {"cancel", "hourglass_empty", "speed"}  # material icon names the page text carries in the diagnosis line


# ----------------------------------------------------------------------------- server process sampling


def inotify_watches(pid: int) -> int:
    """inotify watches one process holds (lines `inotify wd:` in /proc/PID/fdinfo of its inotify fds)."""
    n = 0
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                    with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                        n += sum(1 for line in info if line.startswith("inotify wd:"))
    return n


@dataclass
class Sample:
    t: float
    cpu: float  # % of one core, summed over the process tree (200 = both cores of this machine)
    rss: int  # bytes, summed over the process tree
    watches: int
    load: float  # the machine's 1-minute load average (other people's jobs share the cores)


class Sampler(threading.Thread):
    """Samples the server's process tree every SAMPLE_S; windows of it are summarised afterwards."""

    def __init__(self, pid: int) -> None:
        super().__init__(name="bench-sampler", daemon=True)
        self.root = psutil.Process(pid)
        self.root.cpu_percent(None)  # prime: the first call has no interval to measure
        self.procs: dict[int, psutil.Process] = {pid: self.root}
        self.samples: list[Sample] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(SAMPLE_S):
            try:
                tree = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                return
            cpu = 0.0
            rss = 0
            watches = 0
            for p in tree:
                known = self.procs.setdefault(p.pid, p)
                with contextlib.suppress(psutil.Error):
                    cpu += known.cpu_percent(None)  # a new child's first call says 0.0 (it primes it)
                    rss += known.memory_info().rss
                    watches += inotify_watches(p.pid)
            self.samples.append(Sample(time.monotonic(), cpu, rss, watches, os.getloadavg()[0]))

    def window(self, t0: float, t1: float) -> list[Sample]:
        return [s for s in list(self.samples) if t0 <= s.t <= t1]

    def last(self) -> Sample | None:
        return self.samples[-1] if self.samples else None


def cpu_mean(samples: list[Sample]) -> float | None:
    return statistics.fmean(s.cpu for s in samples) if samples else None


def cpu_peak(samples: list[Sample]) -> float | None:
    return max(s.cpu for s in samples) if samples else None


def rss_peak_mb(samples: list[Sample]) -> float | None:
    return max(s.rss for s in samples) / 1e6 if samples else None


def watches_peak(samples: list[Sample]) -> int | None:
    return max(s.watches for s in samples) if samples else None


def load_mean(samples: list[Sample]) -> float | None:
    return statistics.fmean(s.load for s in samples) if samples else None


# ----------------------------------------------------------------------------- the dashboard server


def free_port() -> int:
    """A free loopback port that is not one of the ports other people use on this machine."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in RESERVED_PORTS:
            return port


class Server:
    """`streamlit run app/shardscope_server.py` as scripts/dashboard.sh starts it (default settings, headless), on its
    own workspace and a free loopback port. Stopped by its own pid only."""

    def __init__(self, workspace: Path) -> None:
        workspace.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "SHARDSCOPE_WORKSPACE": str(workspace), "PYTHONUNBUFFERED": "1"}
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        argv = [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(REPO / "app" / "shardscope_server.py"),
            "--server.address",
            "127.0.0.1",
            "--server.port",
            str(self.port),
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
        ]
        self.log_path = workspace / "streamlit.log"
        self.log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            argv, cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 90
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise TimeoutError("streamlit did not start within 90 s") from None
                time.sleep(0.3)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()

    def tracebacks(self) -> int:
        return self.log_path.read_text(errors="replace").count("Traceback (most recent call last)")


@contextlib.contextmanager
def measured_server(workspace: Path) -> Iterator[tuple[Server, Sampler]]:
    server = Server(workspace)
    sampler = Sampler(server.proc.pid)
    sampler.start()
    try:
        yield server, sampler
    finally:
        sampler.halt.set()
        sampler.join(timeout=5)
        server.stop()


# ----------------------------------------------------------------------------- the browser side


class WsBytes:
    """Sizes of the websocket frames the page receives from Streamlit (/_stcore/stream), time-stamped."""

    def __init__(self, page: Any) -> None:
        self.frames: list[tuple[float, int]] = []
        page.on("websocket", self._on_ws)

    def _on_ws(self, ws: Any) -> None:
        if "_stcore/stream" in ws.url:
            ws.on("framereceived", self._on_frame)

    def _on_frame(self, payload: str | bytes) -> None:
        size = len(payload.encode()) if isinstance(payload, str) else len(payload)
        self.frames.append((time.monotonic(), size))

    def total(self, t0: float, t1: float) -> int:
        return sum(n for t, n in self.frames if t0 <= t < t1)

    def per_second(self, t0: float, t1: float) -> list[int]:
        bins = [0] * max(int(t1 - t0), 1)
        for t, n in self.frames:
            if t0 <= t < t0 + len(bins):
                bins[int(t - t0)] += n
        return bins


def percentile(values: list[int], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))])


def chart_updates(page: Any) -> dict[Any, int]:
    """Plotly redraws so far in each live-chart iframe that has drawn (app/monitor/chart_assets/index.html counts)."""
    out: dict[Any, int] = {}
    for frame in page.frames:
        if "shardscope_live_chart" not in frame.url:
            continue
        with contextlib.suppress(Exception):  # a frame being replaced
            n = frame.evaluate(
                "() => { const el = document.getElementById('chart');"
                " return el && el.data && el.data.length ? +el.dataset.updates : -1; }"
            )
            if n >= 0:
                out[frame] = int(n)
    return out


def visible(page: Any, selector: str) -> bool:
    with contextlib.suppress(Exception):
        loc = page.locator(selector)
        return loc.count() > 0 and loc.first.is_visible()
    return False


def painted(page: Any) -> bool:
    """The loss chart (or the aggregate chart above 32 ranks) has drawn and a rank table is on the page."""
    return bool(chart_updates(page)) and visible(page, '[data-testid="stDataFrame"]')


def reading(page: Any) -> bool:
    """The page still shows "Reading the logs already written" (the watcher's background catch-up)."""
    with contextlib.suppress(Exception):
        return page.locator('[data-testid="stProgress"]').count() > 0
    return True


def pump(page: Any, seconds: float, step_ms: int = 250) -> None:
    """Wait while Playwright dispatches events (websocket frames are only delivered inside its calls)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        page.wait_for_timeout(min(step_ms, max(int(left * 1000), 1)))


def wait_until(page: Any, cond: Any, timeout: float, step_ms: int = 100) -> float | None:
    """The monotonic time at which `cond(page)` first held, or None after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond(page):
            return time.monotonic()
        page.wait_for_timeout(step_ms)
    return None


def warm_up(context: Any, url: str) -> None:
    """One Monitor load without a folder: Streamlit imports the page's modules and the browser caches the
    static files, as on a dashboard a user already has open. Not measured."""
    page = context.new_page()
    page.goto(f"{url}/monitor", wait_until="domcontentloaded", timeout=120_000)
    page.locator('[data-testid="stAlert"]').first.wait_for(timeout=120_000)
    page.wait_for_timeout(1000)
    page.close()


def alerts_text(page: Any) -> str:
    with contextlib.suppress(Exception):
        boxes = page.locator('[data-testid="stException"]')
        if boxes.count():
            return "EXCEPTION: " + " ".join(boxes.first.inner_text().split())[:110]
        alerts = page.locator('[data-testid="stAlert"]')
        if alerts.count():
            return " ".join(alerts.first.inner_text().split())[:110]
    return "(no message box)"


# ----------------------------------------------------------------------------- the live writer


class Appender(threading.Thread):
    """One new step on every rank every second: `noise` real [WARNING]/[INFO] lines plus a full float repr
    LossMonitor line (and TimeMonitor's line at an epoch's end), the shapes synth_logs.write_run writes.
    Every rank means the hung and the crashed one too (each goes on from its own last step): the page
    then stops calling the hung rank hung, which is why a screenshot is also taken before the appends."""

    def __init__(self, run: synth_logs.SynthRun, noise: int, step_ms: float = 500.0, fmt: str = "lossmonitor") -> None:
        super().__init__(name="bench-appender", daemon=True)
        self.make = synth_logs.LINE_FORMATS[fmt][0]  # the run's own loss line format
        self.fmt = fmt
        self.paths = [run.root / f"worker_{r}.log" for r in range(run.ranks)]
        self.last = [last_step(p, run.steps) for p in self.paths]
        self.straggler = run.straggler
        self.noise_lines = synth_logs.noise_lines()
        self.noise = noise
        self.step_ms = step_ms
        self.rng = random.Random(1)
        self.halt = threading.Event()
        self.ticks = 0
        self.late = 0  # ticks that took longer than their second
        self.lines = 0

    def run(self) -> None:
        start = time.monotonic()
        while not self.halt.is_set():
            self.tick()
            self.ticks += 1
            due = start + self.ticks
            if time.monotonic() > due:
                self.late += 1
            self.halt.wait(max(0.0, due - time.monotonic()))

    def tick(self) -> None:
        for r, path in enumerate(self.paths):
            s = self.last[r] = self.last[r] + 1
            out = [self.noise_lines[self.rng.randrange(len(self.noise_lines))] for _ in range(self.noise)]
            epoch, in_epoch = (s - 1) // STEPS_PER_EPOCH + 1, (s - 1) % STEPS_PER_EPOCH + 1
            per_step = self.step_ms * (1.6 if r == self.straggler else 1.0)
            epochs = max(epoch, 1)
            out.append(
                self.make(epoch, in_epoch, STEPS_PER_EPOCH, epochs, s, s, synth_logs._loss(r, s), per_step, time.time())
            )
            if in_epoch == STEPS_PER_EPOCH and self.fmt == "lossmonitor":
                out.append(
                    b"Train epoch time: %.3f ms, per step time: %.3f ms\n" % (per_step * STEPS_PER_EPOCH, per_step)
                )
            with path.open("ab") as f:
                f.write(b"".join(out))
            self.lines += len(out)


def last_step(path: Path, default: int) -> int:
    """The global step of the last LossMonitor line in a log (its tail is enough: at most a traceback after it)."""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - 65536))
        found = RE_STEP.findall(f.read())
    if not found:
        return default
    epoch, step = found[-1]
    return (int(epoch) - 1) * STEPS_PER_EPOCH + int(step)


# ----------------------------------------------------------------------------- scenarios


@dataclass
class Row:
    """One scenario's figures (None: not measured in this scenario)."""

    name: str
    detail: str
    load: float | None = None
    paint_s: float | None = None
    read_s: float | None = None
    second_s: float | None = None
    paint_kb: float | None = None
    cpu_mean: float | None = None
    cpu_peak: float | None = None
    rss_peak_mb: float | None = None
    watches_peak: int | None = None
    ws_med_kb: float | None = None
    ws_p95_kb: float | None = None
    ws_max_kb: float | None = None
    updates: int | None = None
    kb_per_update: float | None = None
    closed_cpu: float | None = None
    closed_cpu_tail: float | None = None
    closed_rss_mb: float | None = None
    closed_watches: int | None = None
    released_s: float | None = None
    notes: list[str] = field(default_factory=list)


COLUMNS = [  # (header, attribute, format)
    ("scenario", "name", "{}"),
    ("run", "detail", "{}"),
    ("load", "load", "{:.1f}"),
    ("paint s", "paint_s", "{:.1f}"),
    ("read s", "read_s", "{:.1f}"),
    ("2nd tab s", "second_s", "{:.1f}"),
    ("paint kB", "paint_kb", "{:,.0f}"),
    ("CPU% mean", "cpu_mean", "{:.0f}"),
    ("CPU% peak", "cpu_peak", "{:.0f}"),
    ("RSS MB peak", "rss_peak_mb", "{:,.0f}"),
    ("inotify peak", "watches_peak", "{:,}"),
    ("ws kB/s med", "ws_med_kb", "{:,.1f}"),
    ("ws kB/s p95", "ws_p95_kb", "{:,.1f}"),
    ("ws kB/s max", "ws_max_kb", "{:,.1f}"),
    ("redraws", "updates", "{}"),
    ("kB/redraw", "kb_per_update", "{:,.0f}"),
    ("closed CPU%", "closed_cpu", "{:.1f}"),
    ("CPU% last 30 s", "closed_cpu_tail", "{:.1f}"),
    ("closed RSS MB", "closed_rss_mb", "{:,.0f}"),
    ("closed inotify", "closed_watches", "{:,}"),
    ("released s", "released_s", "{:.0f}"),
]


def table(rows: list[Row]) -> str:
    cells = [[h for h, _, _ in COLUMNS]]
    for row in rows:
        cells.append([("–" if getattr(row, a) is None else f.format(getattr(row, a))) for _, a, f in COLUMNS])
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    lines = [
        " | ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cell, widths, strict=True)))
        for cell in cells
    ]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def ws_figures(row: Row, ws: WsBytes, t0: float, t1: float) -> None:
    per_s = ws.per_second(t0, t1)
    row.ws_med_kb = statistics.median(per_s) / 1e3
    row.ws_p95_kb = (percentile(per_s, 95) or 0.0) / 1e3
    row.ws_max_kb = max(per_s) / 1e3


def progress(text: str) -> None:
    """Progress to stderr (the figures go to stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f}"


def server_baseline(sampler: Sampler, baseline: list[Row], seconds: float = 5.0) -> int:
    """The warmed server with no tab open for a few seconds: its inotify watches are Streamlit's own source
    watch (the floor "released" compares with); the first server's figures become the baseline row."""
    t0 = time.monotonic()
    time.sleep(seconds)
    idle = sampler.window(t0, time.monotonic())
    if not baseline:
        row = Row("(0)", "warmed server, no tab")
        row.cpu_mean, row.cpu_peak = cpu_mean(idle), cpu_peak(idle)
        row.rss_peak_mb, row.watches_peak = rss_peak_mb(idle), watches_peak(idle)
        row.load = load_mean(idle)
        baseline.append(row)
    return watches_peak(idle) or 0


def root_scenario(
    name: str, logdir: str, args: argparse.Namespace, browser: Any, tmp: Path, baseline: list[Row]
) -> Row:
    """`?logdir=DIR`: open for --seconds, tab closed, --idle-seconds more (the watcher stop is at 2 min)."""
    row = Row(name, f"?logdir={logdir}")
    with measured_server(tmp / f"ws_{name.strip('()')}") as (server, sampler):
        context = browser.new_context(viewport=args.viewport)
        try:
            warm_up(context, server.url)
            idle_watches = server_baseline(sampler, baseline)
            page = context.new_page()
            ws = WsBytes(page)
            t0 = time.monotonic()
            page.goto(f"{server.url}/monitor?logdir={logdir}", wait_until="domcontentloaded", timeout=120_000)
            outcome = '[data-testid="stAlert"], [data-testid="stMetric"], [data-testid="stException"]'
            t_paint = wait_until(page, lambda p: visible(p, outcome), 120.0) or time.monotonic()
            row.paint_s = t_paint - t0
            row.paint_kb = ws.total(t0, t_paint) / 1e3
            progress(
                f"{name} ?logdir={logdir}: the page shows its outcome after {row.paint_s:.1f} s; "
                f"open for {args.seconds:.0f} s"
            )
            pump(page, args.seconds)
            t_open = time.monotonic()
            row.notes.append(f"{name} ?logdir={logdir} shows: {alerts_text(page)}")
            page.close()
        finally:
            context.close()
        t_closed = time.monotonic()
        progress(f"{name}: tab closed; watching the server for {args.idle_seconds:.0f} s")
        time.sleep(args.idle_seconds)
        t_end = time.monotonic()
        open_w = sampler.window(t_paint, t_open)
        row.cpu_mean, row.cpu_peak = cpu_mean(open_w), cpu_peak(open_w)
        row.rss_peak_mb = rss_peak_mb(sampler.window(t0, t_end))
        row.watches_peak = watches_peak(sampler.window(t0, t_end))
        row.load = load_mean(sampler.window(t0, t_end))
        ws_figures(row, ws, t_paint, t_open)
        closed = sampler.window(t_closed, t_end)
        row.closed_cpu = cpu_mean(closed)
        row.closed_cpu_tail = cpu_mean(sampler.window(t_end - TAIL_S, t_end))
        end = sampler.last()
        if end is not None:
            row.closed_rss_mb = end.rss / 1e6
            row.closed_watches = end.watches
        back = next((s.t for s in closed if s.watches <= idle_watches), None)
        row.released_s = None if back is None else max(0.0, back - t_closed)
        if server.tracebacks():
            row.notes.append(f"{name}: {server.tracebacks()} traceback(s) in the server log")
    return row


def redraws(before: dict[Any, int], after: dict[Any, int]) -> int:
    """Redraws of the chart redrawn most between two counts (a remounted frame counts from 0)."""
    return max((n - before.get(frame, 0) for frame, n in after.items()), default=0)


def first_screen(page: Any, name: str, height: int) -> list[str]:
    """What a person sees without scrolling: the diagnosis line and the first table, are they on screen?"""
    notes: list[str] = []
    with contextlib.suppress(Exception):
        strip = page.locator('[data-testid="stMarkdown"]').filter(has_text="failed first").first
        if strip.count():
            box = strip.bounding_box()
            on = box is not None and box["y"] + box["height"] <= height
            notes.append(
                f"{name} diagnosis line ({'on the first screen' if on else 'below the first screen'}): "
                + " ".join(w for w in strip.inner_text().split() if w not in ICONS)
            )
        else:
            notes.append(f"{name} no diagnosis line naming the rank that failed first")
    with contextlib.suppress(Exception):
        grid = page.locator('[data-testid="stDataFrame"]').first
        box = grid.bounding_box()
        if box is not None:
            label = "'Ranks to look at' table" if page.get_by_text("Ranks to look at").count() else "rank table"
            notes.append(
                f"{name} {label}: y {box['y']:.0f}-{box['y'] + box['height']:.0f} px of a {height} px "
                f"screen ({'fully on' if box['y'] + box['height'] <= height else 'not fully on'} "
                "the first screen)"
            )
    return notes


def second_tab(context: Any, url: str, timeout: float) -> float | None:
    """Seconds to paint the same run in a new tab while the first stays open: the watcher has read the
    logs and the browser has plotly.min.js, so this is the page's own cost (the first paint minus reading)."""
    page = context.new_page()
    try:
        t0 = time.monotonic()
        page.goto(url, wait_until="domcontentloaded", timeout=120_000)
        t = wait_until(page, painted, timeout)
        return None if t is None else t - t0
    finally:
        page.close()


def run_scenario(
    name: str,
    ranks: int,
    steps: int,
    args: argparse.Namespace,
    browser: Any,
    tmp: Path,
    baseline: list[Row],
    shot: Path | None,
) -> Row:
    """A synthetic run folder: first paint, read to the end, then --seconds of appends on every rank."""
    folder = tmp / f"run_{ranks}"
    progress(f"{name}: writing {ranks} ranks x {steps} steps with benchmarks/synth_logs.py")
    t = time.monotonic()
    run = synth_logs.write_run(
        folder,
        ranks,
        steps,
        straggler=ranks // 3,
        hung=ranks // 2,
        crashed=[2 * ranks // 3],
        noise_per_step=args.noise,
        fmt=args.format,
    )
    row = Row(name, f"{ranks} ranks x {steps:,} steps ({args.format}), {run.bytes / 1e6:,.0f} MB")
    row.notes.append(
        f"{name} {ranks} ranks: written in {time.monotonic() - t:.0f} s, {run.loss_lines:,} loss lines; "
        f"straggler {run.straggler}, hung {run.hung}, crashed {run.crashed}"
    )
    appender: Appender | None = None
    try:
        with measured_server(tmp / f"ws_{ranks}") as (server, sampler):
            context = browser.new_context(viewport=args.viewport)
            try:
                warm_up(context, server.url)
                server_baseline(sampler, baseline)
                page = context.new_page()
                ws = WsBytes(page)
                t0 = time.monotonic()
                page.goto(f"{server.url}/monitor?logdir={folder}", wait_until="domcontentloaded", timeout=120_000)
                t_paint = wait_until(page, painted, args.paint_timeout)
                if t_paint is None:
                    row.notes.append(f"{name}: no chart + rank table within {args.paint_timeout:.0f} s")
                    t_paint = time.monotonic()
                else:
                    row.paint_s = t_paint - t0
                row.paint_kb = ws.total(t0, t_paint) / 1e3
                progress(f"{name}: first paint {fmt(row.paint_s)} s; reading to the end")
                t_read = wait_until(page, lambda p: painted(p) and not reading(p), args.read_timeout)
                if t_read is None:
                    row.notes.append(f"{name}: still reading after {args.read_timeout:.0f} s")
                else:
                    row.read_s = t_read - t0
                progress(f"{name}: read to the end at {fmt(row.read_s)} s; {args.seconds:.0f} s of live appends")
                pump(page, 2.0)
                if shot is not None:  # the state as read, before the appends revive the hung and crashed ranks
                    before_shot = shot.with_name(shot.stem + "_before_appends.png")
                    page.screenshot(path=str(before_shot))
                    row.notes.append(f"{name} screenshot before the appends: {before_shot}")
                row.notes.extend(
                    note.replace(f"{name} ", f"{name} before the appends: ", 1)
                    for note in first_screen(page, name, args.viewport["height"])[:1]
                )
                appender = Appender(run, args.noise, fmt=args.format)
                before = chart_updates(page)
                t_s0 = time.monotonic()
                appender.start()
                pump(page, args.seconds)
                t_s1 = time.monotonic()
                after = chart_updates(page)
                appender.halt.set()
                appender.join()
                row.updates = redraws(before, after)
                if row.updates:
                    row.kb_per_update = ws.total(t_s0, t_s1) / 1e3 / row.updates
                steady = sampler.window(t_s0, t_s1)
                row.cpu_mean, row.cpu_peak = cpu_mean(steady), cpu_peak(steady)
                row.rss_peak_mb = rss_peak_mb(sampler.window(t0, t_s1))
                row.watches_peak = watches_peak(sampler.window(t0, t_s1))
                row.load = load_mean(sampler.window(t0, t_s1))
                ws_figures(row, ws, t_s0, t_s1)
                row.notes.append(
                    f"{name}: appender wrote {appender.ticks} steps x {ranks} ranks "
                    f"({appender.lines:,} lines), {appender.late} tick(s) late"
                )
                if shot is not None:
                    page.wait_for_timeout(1000)
                    page.screenshot(path=str(shot))
                    row.notes.append(
                        f"{name} screenshot of the first screen ({args.viewport['width']}x"
                        f"{args.viewport['height']}): {shot}"
                    )
                row.notes.extend(first_screen(page, name, args.viewport["height"]))
                if page.locator('[data-testid="stException"]').count():
                    row.notes.append(f"{name}: {alerts_text(page)}")
                row.second_s = second_tab(context, page.url, args.paint_timeout)
                page.close()
            finally:
                if appender is not None:
                    appender.halt.set()
                context.close()
            if server.tracebacks():
                row.notes.append(f"{name}: {server.tracebacks()} traceback(s) in the server log")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return row


def sessions_scenario(args: argparse.Namespace, browser: Any, tmp: Path, baseline: list[Row]) -> Row:
    """(e) --sessions Monitor sessions opened at once on one live --sessions-ranks folder (issue 22: 20
    sessions took the first paint from 3.8 s to 80 s, and one never painted): each session's first
    paint, then --seconds with all open (does every session keep redrawing?), server RSS and CPU."""
    n, ranks = args.sessions, args.sessions_ranks
    folder = tmp / f"sessions_{ranks}"
    run = synth_logs.write_run(
        folder,
        ranks,
        args.steps,
        straggler=ranks // 3,
        hung=ranks // 2,
        crashed=[2 * ranks // 3],
        noise_per_step=args.noise,
    )
    row = Row("(e)", f"{n} sessions, {ranks} ranks x {args.steps:,} steps live, {run.bytes / 1e6:,.0f} MB")
    appender: Appender | None = None
    try:
        with measured_server(tmp / "ws_sessions") as (server, sampler):
            context = browser.new_context(viewport=args.viewport)
            try:
                warm_up(context, server.url)
                server_baseline(sampler, baseline)
                appender = Appender(run, args.noise, fmt=args.format)
                appender.start()
                pump_page = context.new_page()  # events are delivered while some page waits
                url = f"{server.url}/monitor?logdir={folder}"
                pages, start, paint = [], [], []
                t0 = time.monotonic()
                for _ in range(n):  # all at once: each goto returns when the page's HTML is there
                    page = context.new_page()
                    start.append(time.monotonic())
                    page.goto(url, wait_until="commit", timeout=120_000)
                    pages.append(page)
                    paint.append(None)
                progress(f"(e): {n} sessions opened in {time.monotonic() - t0:.1f} s; waiting for their first paint")
                deadline = t0 + args.paint_timeout
                while any(p is None for p in paint) and time.monotonic() < deadline:
                    for i, page in enumerate(pages):
                        if paint[i] is None and painted(page):
                            paint[i] = time.monotonic() - start[i]
                    pump_page.wait_for_timeout(100)
                done = sorted(p for p in paint if p is not None)
                never = n - len(done)
                if done:
                    row.paint_s = statistics.median(done)
                    row.read_s = done[-1]
                row.notes.append(
                    "(e) first paint per session (s, in opening order): "
                    + ", ".join("never" if p is None else f"{p:.1f}" for p in paint)
                )
                row.notes.append(
                    f"(e) first paint: min {fmt(done[0] if done else None)} s, median "
                    f"{fmt(row.paint_s)} s, max {fmt(row.read_s)} s; never painted within "
                    f"{args.paint_timeout:.0f} s: {never}  (table: 'paint s' = median, 'read s' = max)"
                )
                before = [chart_updates(p) for p in pages]
                t_s0 = time.monotonic()
                pump(pump_page, args.seconds)
                t_s1 = time.monotonic()
                moved = sum(1 for p, b in zip(pages, before, strict=True) if redraws(b, chart_updates(p)) > 0)
                row.notes.append(
                    f"(e) redrew during the {args.seconds:.0f} s with all {n} open: {moved} of {n} sessions"
                )
                window = sampler.window(t0, t_s1)
                row.cpu_mean, row.cpu_peak = cpu_mean(sampler.window(t_s0, t_s1)), cpu_peak(window)
                row.rss_peak_mb, row.watches_peak = rss_peak_mb(window), watches_peak(window)
                row.load = load_mean(window)
                errors = sum(1 for p in pages if p.locator('[data-testid="stException"]').count())
                if errors:
                    row.notes.append(f"(e): {errors} session(s) show an exception box")
                for page in pages:
                    page.close()
            finally:
                if appender is not None:
                    appender.halt.set()
                context.close()
            if server.tracebacks():
                row.notes.append(f"(e): {server.tracebacks()} traceback(s) in the server log")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return row


# ----------------------------------------------------------------------------- main


def environment() -> list[str]:
    """Where the figures come from: the code (HEAD plus anyone's uncommitted edits) and the machine's load."""

    def out(*argv: str) -> str:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=30).stdout.strip()
        return "?"

    status = out("git", "status", "--porcelain", "--untracked-files=no")
    dirty = [line.split(maxsplit=1)[-1] for line in status.splitlines() if line.strip()]
    return [
        f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        f"code: {out('git', 'rev-parse', '--short', 'HEAD')}"
        + (f" + uncommitted edits in {', '.join(dirty)}" if dirty else " (clean)"),
        f"machine: {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; uptime: {out('uptime')}",
        f"browser: {out(CHROMIUM, '--version')} (headless, Playwright)",
    ]


def viewport(text: str) -> dict[str, int]:
    w, h = text.lower().split("x")
    return {"width": int(w), "height": int(h)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=1024, help="ranks of the big run (scenario c)")
    p.add_argument("--steps", type=int, default=2000, help="steps per rank of the big run")
    p.add_argument("--scale-ranks", default="8,64,256", help="scenario d's rank counts ('' to skip)")
    p.add_argument("--scale-steps", type=int, default=None, help="steps per rank in scenario d (default --steps)")
    p.add_argument("--seconds", type=float, default=60.0, help="tab open (a, b) / live appends (c, d)")
    p.add_argument("--idle-seconds", type=float, default=150.0, help="after the tab is closed (a, b)")
    p.add_argument("--skip-root", action="store_true", help="skip (a) ?logdir=/ and (b) ?logdir=/tmp")
    p.add_argument(
        "--format",
        default="lossmonitor",
        choices=sorted(synth_logs.LINE_FORMATS),
        help="the loss line format of the synthetic runs (c, d) and of their live appends",
    )
    p.add_argument("--noise", type=int, default=9, help="noise lines per step (synth_logs' default: 9)")
    p.add_argument("--paint-timeout", type=float, default=300.0)
    p.add_argument("--read-timeout", type=float, default=900.0)
    p.add_argument("--viewport", type=viewport, default="1280x900", help="WxH (tests/browser.py's VIEWPORT)")
    p.add_argument("--shot-dir", type=Path, default=Path("/tmp"), help="bench_monitor_N.png goes here")
    p.add_argument("--workdir", type=Path, default=None, help="where run folders are written (default: TMPDIR)")
    p.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    p.add_argument("--sessions", type=int, default=0, help="(e): this many Monitor sessions at once (0: skip)")
    p.add_argument("--sessions-ranks", type=int, default=64, help="ranks of (e)'s live folder")
    p.add_argument("--only-sessions", action="store_true", help="run (e) only")
    return p.parse_args(argv)


def interrupted(signum: int, _frame: object) -> None:
    """SIGTERM / SIGINT (even when the shell started us with SIGINT ignored, as `cmd &` does): unwind, so
    the server is stopped, the browser closed and the run folders removed."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    if not Path(CHROMIUM).exists():
        print(f"needs Debian chromium at {CHROMIUM}", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    scale = sorted({int(n) for n in args.scale_ranks.split(",") if n.strip()} - {args.ranks})
    scale_steps = args.scale_steps or args.steps
    env = environment()
    tmp = Path(tempfile.mkdtemp(prefix="bench_monitor_server_", dir=args.workdir))
    baseline: list[Row] = []
    rows: list[Row] = []
    jobs: list[tuple[str, Any]] = []
    if not args.skip_root:
        jobs += [
            ("(a)", lambda b: root_scenario("(a)", "/", args, b, tmp, baseline)),
            ("(b)", lambda b: root_scenario("(b)", "/tmp", args, b, tmp, baseline)),
        ]
    jobs += [("(d)", lambda b, n=n: run_scenario("(d)", n, scale_steps, args, b, tmp, baseline, None)) for n in scale]
    shot = args.shot_dir / f"bench_monitor_{args.ranks}.png"
    jobs.append(("(c)", lambda b: run_scenario("(c)", args.ranks, args.steps, args, b, tmp, baseline, shot)))
    if args.only_sessions:
        jobs = []
    if args.sessions:
        jobs.append(("(e)", lambda b: sessions_scenario(args, b, tmp, baseline)))
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                for name, job in jobs:
                    try:
                        rows.append(job(browser))
                    except Exception as exc:  # one broken scenario must not lose the others' figures
                        rows.append(Row(name, "failed", notes=[f"{name}: {type(exc).__name__}: {exc}"[:400]]))
                    progress(f"{rows[-1].name} {rows[-1].detail}: done")
            finally:
                browser.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n".join(env))
    print(f"uptime at the end: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print()
    print(table(baseline + rows))
    print()
    for row in baseline + rows:
        for note in row.notes:
            print(note)
    print(
        f"\nCPU% is of one core (this machine has {os.cpu_count()}), summed over the server's process tree, "
        f"sampled every {SAMPLE_S} s; kB = 1,000 bytes. See benchmarks/README_monitor_server.md."
    )
    if args.json:
        args.json.write_text(json.dumps({"environment": env, "rows": [asdict(r) for r in baseline + rows]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
