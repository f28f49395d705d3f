"""A log written faster than it can be read (issue 22 item 3): RSS, lag and Ctrl-C of `watch`, of the
watcher, and of one real Monitor tab while a writer appends LossMonitor lines at --rate MB/s.

Why: a writer at ~40 MB/s took `python -m core watch` from 883 MB to 5.25 GB RSS with Ctrl-C ignored
for more than 10 s, and one Monitor tab took the server to 5.8 GB and left 1.6 GB held after it was
closed. The watcher now reads a capped block per lock hold and says how far behind it is; this
prints what that costs and gives back. A benchmark, not a test: it prints figures, never asserts.

    .venv/bin/python benchmarks/bench_fast_writer.py                       # 3 phases, 60 s each
    .venv/bin/python benchmarks/bench_fast_writer.py --phases watcher --seconds 20 --noise 0

Phases (each: a fresh folder, the writer in its own process, RSS sampled every 0.5 s; the folder is
removed afterwards):
  watcher    a RunWatcher in a child process: RSS, bytes behind and the loss table's size over time,
             the time to catch up after the writer stops, RSS then against the table, SIGINT latency;
  watch      `python -m core watch DIR`: RSS over time, what it printed, SIGINT latency while the
             writer is still at full rate (the case that was ignored for > 10 s);
  dashboard  the real dashboard (`streamlit run`, as benchmarks/bench_monitor_server.py starts it) and
             one headless Chromium tab on `/monitor?logdir=DIR`: server RSS, the page's "behind"
             caption, then the tab closed and RSS after the registry reaped its watcher (idle 120 s).
The stream: each step one LossMonitor line (`epoch: E step: S, loss is X`) and --noise real
`[WARNING]`/`[INFO]` lines of the test fixtures (0: LossMonitor lines only, the issue's reproduction;
at 40 MB/s for 60 s that is ~63 M rows, a 7 GB table, more than this shared machine should hold).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

SAMPLE_S = 0.5


def sigint_default() -> None:
    """In a child: SIGINT's default action back (a shell's `cmd &` starts us with it ignored, and
    the children would inherit that: Python then never raises KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


RE_BEHIND = re.compile(r"([\d,.]+) MiB (?:written and )?not read yet")


def row_bytes() -> int:
    """Bytes per row of the loss table for this stream's rows watched live (core/logs/rows/table.py stores each
    column at its own width: measured on a small sample of the stream's LossMonitor lines)."""
    from core.logs.rows.reader import RunReader

    with tempfile.TemporaryDirectory() as d:
        reader = RunReader(d)
        reader.refresh()  # rows written after the first look get their observation time, as live
        Path(d, "worker_0.log").write_text("".join(f"epoch: 1 step: {s}, loss is {1 / s!r}\n" for s in range(1, 1001)))
        reader.refresh()
        return -(-reader.table.nbytes // len(reader.table))


# ----------------------------------------------------------------------------- the writer (child process)


def write(folder: Path, rate_mb: float, seconds: float, noise: int, out: Path) -> None:
    """Append steps to worker_0.log at `rate_mb` MB/s for `seconds`; the totals go to `out` (JSON)."""
    import synth_logs

    noise_lines = synth_logs.noise_lines()[: max(noise, 0) * 7 + 1]
    steps = []
    for s in range(1, 1001):  # one block: 1,000 steps of epoch EEEEEEEE (a fixed-width placeholder)
        steps.extend(noise_lines[(s * 7 + k) % len(noise_lines)] for k in range(noise))
        steps.append(b"epoch: EEEEEEEE step: %d, loss is %.6f\n" % (s, 2.3 - s * 1e-4))
    block = b"".join(steps)
    per_block = 1000
    written = lines = blocks = 0
    t0 = time.monotonic()
    with open(folder / "worker_0.log", "ab", buffering=0) as f:
        while (now := time.monotonic()) < t0 + seconds:
            due = t0 + written / (rate_mb * 1e6)
            if now < due:
                time.sleep(min(due - now, 0.05))
                continue
            blocks += 1
            f.write(block.replace(b"EEEEEEEE", b"%8d" % blocks))
            written += len(block)
            lines += per_block
    out.write_text(json.dumps({"bytes": written, "loss_lines": lines, "seconds": time.monotonic() - t0}))


class Writer:
    def __init__(self, folder: Path, args: argparse.Namespace) -> None:
        self.out = folder.parent / f"{folder.name}.writer.json"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--write",
                str(folder),
                str(args.rate),
                str(args.seconds),
                str(args.noise),
                str(self.out),
            ]
        )

    def join(self) -> dict:
        self.proc.wait()
        return json.loads(self.out.read_text())


# ----------------------------------------------------------------------------- the watcher (child process)


def watch_child(folder: Path) -> None:
    """A RunWatcher on `folder`; every SAMPLE_S one JSON line: rss, behind, rows, table bytes, peak read."""
    from core.logs.live.watcher import RunWatcher

    proc = psutil.Process()
    w = RunWatcher(folder).start()
    t0 = time.monotonic()
    try:
        while True:
            snap = w.snapshot()
            table = w.table_nbytes  # the table's columns (the frame is a view of them)
            print(
                json.dumps(
                    {
                        "t": time.monotonic() - t0,
                        "rss": proc.memory_info().rss,
                        "behind": snap.behind_bytes,
                        "rows": len(snap.metrics),
                        "table": table,
                        "peak_read": w.peak_read,
                    }
                ),
                flush=True,
            )
            time.sleep(SAMPLE_S)
    except KeyboardInterrupt:
        w.stop()


# ----------------------------------------------------------------------------- sampling


class RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.samples: list[tuple[float, int]] = []
        self.halt = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.halt.wait(SAMPLE_S):
            try:
                rss = sum(p.memory_info().rss for p in [self.proc, *self.proc.children(recursive=True)])
            except psutil.Error:
                return
            self.samples.append((time.monotonic() - self.t0, rss))

    def peak(self, t0: float = 0.0, t1: float = 1e9) -> int:
        return max((r for t, r in self.samples if t0 <= t <= t1), default=0)

    def at(self, t: float) -> int:
        return min(self.samples, key=lambda s: abs(s[0] - t))[1] if self.samples else 0


def mb(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def series(points: list[tuple[float, str]], every: float = 5.0) -> str:
    """`t=0s a, t=5s b, ...`: one point every `every` seconds."""
    out, next_t = [], 0.0
    for t, text in points:
        if t >= next_t:
            out.append(f"t={t:.0f}s {text}")
            next_t = t + every
    return "; ".join(out)


def sigint_latency(proc: subprocess.Popen, timeout: float = 60.0) -> float | None:
    t = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return time.monotonic() - t


# ----------------------------------------------------------------------------- phases


def phase_watcher(folder: Path, args: argparse.Namespace) -> list[str]:
    child = subprocess.Popen(
        [sys.executable, __file__, "--watch-child", str(folder)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        preexec_fn=sigint_default,
    )
    samples: list[dict] = []
    reader = threading.Thread(target=lambda: samples.extend(json.loads(line) for line in child.stdout), daemon=True)
    reader.start()
    time.sleep(3)  # imports
    base = samples[-1]["rss"] if samples else 0
    writer = Writer(folder, args)
    totals = writer.join()
    t_end = samples[-1]["t"] if samples else 0.0
    deadline = time.monotonic() + args.catch_up_timeout
    while time.monotonic() < deadline and not (
        samples and samples[-1]["rows"] >= totals["loss_lines"] and samples[-1]["behind"] == 0
    ):
        time.sleep(SAMPLE_S)
    last = samples[-1]
    caught = last["rows"] >= totals["loss_lines"] and last["behind"] == 0
    latency = sigint_latency(child)
    if latency is None:
        child.kill()
        child.wait()
    peak_rss = max(s["rss"] for s in samples)
    peak_behind = max(s["behind"] for s in samples)
    return [
        f"writer: {totals['bytes'] / 1e6:,.0f} MB in {totals['seconds']:.1f} s "
        f"({totals['bytes'] / 1e6 / totals['seconds']:.1f} MB/s), {totals['loss_lines']:,} loss lines",
        "watcher over time (RSS / behind / rows / table): "
        + series([(s["t"], f"{mb(s['rss'])} / {mb(s['behind'])} / {s['rows']:,} / {mb(s['table'])}") for s in samples]),
        f"watcher: peak RSS {mb(peak_rss)}, peak behind {mb(peak_behind)}, largest read per lock hold "
        f"{mb(last['peak_read'])}",
        (
            f"watcher: caught up {last['t'] - t_end:.1f} s after the writer stopped"
            if caught
            else f"watcher: NOT caught up {args.catch_up_timeout:.0f} s after the writer stopped "
            f"({last['rows']:,} of {totals['loss_lines']:,} rows, {mb(last['behind'])} behind)"
        ),
        f"watcher: rows {last['rows']:,} of {totals['loss_lines']:,} written; loss table {mb(last['table'])}; "
        f"RSS then {mb(last['rss'])} = {last['rss'] / max(last['table'], 1):.2f}x the table "
        f"(peak {peak_rss / max(last['table'], 1):.2f}x); above the idle watcher's {mb(base)}: "
        f"{(last['rss'] - base) / max(last['table'], 1):.2f}x (peak {(peak_rss - base) / max(last['table'], 1):.2f}x)",
        f"watcher: SIGINT -> exit {'did not exit in 60 s' if latency is None else f'{latency:.2f} s'}",
    ]


def phase_watch(folder: Path, args: argparse.Namespace) -> list[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "core", "watch", str(folder), "--interval", "2"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=sigint_default,
    )
    out: list[tuple[float, str]] = []
    t0 = time.monotonic()
    reader = threading.Thread(
        target=lambda: out.extend((time.monotonic() - t0, line) for line in proc.stdout), daemon=True
    )
    reader.start()
    sampler = RssSampler(proc.pid)
    sampler.start()
    time.sleep(2)
    writer = Writer(folder, args)
    time.sleep(max(args.seconds - 2, 1))  # SIGINT near the end, the writer still at full rate
    latency = sigint_latency(proc)
    if latency is None:
        proc.kill()
        proc.wait()
    totals = writer.join()
    sampler.halt.set()
    reader.join(5)
    err = proc.stderr.read() if proc.stderr else ""
    behind = [(t, m.group(1)) for t, line in out if (m := RE_BEHIND.search(line))]
    rows = sum(1 for _, line in out if line.startswith("rank "))
    floods = [line for _, line in out if line.startswith("... ")]
    return [
        f"writer: {totals['bytes'] / 1e6:,.0f} MB in {totals['seconds']:.1f} s, {totals['loss_lines']:,} loss lines",
        "watch RSS over time: " + series([(t, mb(r)) for t, r in sampler.samples]),
        f"watch: peak RSS {mb(sampler.peak())}; printed {len(out):,} lines ({rows:,} row lines, {len(floods)} "
        f"flood summaries, last: {floods[-1].strip() if floods else '-'})",
        "watch: said behind: " + (", ".join(f"t={t:.0f}s {v} MiB" for t, v in behind[:8]) or "never"),
        f"watch: SIGINT while the writer runs -> exit "
        f"{'did not exit in 60 s' if latency is None else f'{latency:.2f} s'}, exit code {proc.returncode}, "
        f"stderr {err.strip()[:80]!r}",
        f"loss table if every written row were read: {mb(totals['loss_lines'] * row_bytes())} "
        f"({row_bytes()} bytes a row)",
    ]


def phase_dashboard(folder: Path, args: argparse.Namespace) -> list[str]:
    import bench_monitor_server as bms
    from playwright.sync_api import sync_playwright

    lines: list[str] = []
    with bms.measured_server(folder.parent / "ws") as (server, sampler), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=bms.CHROMIUM, args=bms.CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            bms.warm_up(context, server.url)
            time.sleep(3)
            base = sampler.last().rss if sampler.last() else 0
            page = context.new_page()
            t0 = time.monotonic()
            page.goto(f"{server.url}/monitor?logdir={folder}", wait_until="domcontentloaded", timeout=120_000)
            writer = Writer(folder, args)
            captions: list[tuple[float, str]] = []
            while writer.proc.poll() is None:
                bms.pump(page, 2.0)
                text = page.inner_text("body") if page.locator("body").count() else ""
                m = RE_BEHIND.search(text)
                captions.append((time.monotonic() - t0, m.group(1) + " MiB behind" if m else "not behind"))
            totals = writer.join()
            t_w = time.monotonic()
            caught = None
            while time.monotonic() < t_w + args.catch_up_timeout:
                bms.pump(page, 2.0)
                if not RE_BEHIND.search(page.inner_text("body")):
                    caught = time.monotonic() - t_w
                    break
            bms.pump(page, 3.0)
            open_rss = sampler.last().rss
            body = page.inner_text("body")
            points = re.search(r"Loss points\s*([\d,]+)", body)
            open_peak = bms.rss_peak_mb(sampler.window(t0, time.monotonic())) or 0
            page.close()
            context.close()
            t_c = time.monotonic()
            time.sleep(args.idle_seconds)
            closed = sampler.window(t_c + args.idle_seconds - 10, time.monotonic())
            closed_rss = min((s.rss for s in closed), default=0)
            table = totals["loss_lines"] * row_bytes()
            lines += [
                f"writer: {totals['bytes'] / 1e6:,.0f} MB in {totals['seconds']:.1f} s, "
                f"{totals['loss_lines']:,} loss lines; loss table {mb(table)}",
                "server RSS over time: " + series([(s.t - t0, mb(s.rss)) for s in sampler.window(t0, 1e18)], 10.0),
                "page caption: " + series(captions, 6.0),
                ("page: still behind" if caught is None else f"page: caught up {caught:.0f} s after the writer stopped")
                + f"; 'Loss points' {points.group(1) if points else '?'} of {totals['loss_lines']:,} written",
                f"server: RSS before the tab {mb(base)}, peak with the tab {open_peak:,.0f} MB, at the end "
                f"{mb(open_rss)} = {(open_rss - base) / max(table, 1):.2f}x the table above the idle server",
                f"server: {args.idle_seconds:.0f} s after the tab closed {mb(closed_rss)} "
                f"({mb(closed_rss - base)} above the idle server); tracebacks in its log: {server.tracebacks()}",
            ]
        finally:
            browser.close()
    return lines


PHASES = {"watcher": phase_watcher, "watch": phase_watch, "dashboard": phase_dashboard}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=float, default=40.0, help="MB/s the writer appends")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--noise", type=int, default=1, help="real [WARNING]/[INFO] lines per loss line (0: none)")
    p.add_argument("--phases", default="watcher,watch,dashboard")
    p.add_argument("--catch-up-timeout", type=float, default=240.0)
    p.add_argument("--idle-seconds", type=float, default=165.0, help="after the tab closes (idle 120 s + reaper 30 s)")
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--write", nargs=5, help=argparse.SUPPRESS)
    p.add_argument("--watch-child", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.write:
        folder, rate, seconds, noise, out = args.write
        write(Path(folder), float(rate), float(seconds), int(noise), Path(out))
        return 0
    if args.watch_child:
        watch_child(args.watch_child)
        return 0
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout
    print(
        f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; code: {head.strip()}"
        f"; {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; load {os.getloadavg()[0]:.1f}"
    )
    print(f"stream: {args.rate:g} MB/s for {args.seconds:g} s, {args.noise} noise line(s) per loss line")
    for name in args.phases.split(","):
        tmp = Path(tempfile.mkdtemp(prefix=f"bench_fast_writer_{name}_", dir=args.workdir))
        folder = tmp / "log_output"
        folder.mkdir()
        (folder / "worker_0.log").write_bytes(b"")
        print(f"\n[{name}] (load {os.getloadavg()[0]:.1f})", flush=True)
        try:
            for line in PHASES[name](folder, args):
                print(f"  {line}", flush=True)
        except Exception as exc:  # one broken phase must not lose the others' figures
            print(f"  failed: {type(exc).__name__}: {exc}"[:400], flush=True)
        finally:
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
