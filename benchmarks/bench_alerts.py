"""Does a bad alert receiver slow the live tick? The watch's tick (refresh + snapshot + the alert rules +
queueing what is new) at N ranks, side by side: no alerts; a receiver that answers at once; one that
returns 500 (retried with backoff); one that holds every request past the client's time-out.

    .venv/bin/python benchmarks/bench_alerts.py [--ranks 256] [--steps 200] [--ticks 20]

Each tick appends one step (9 noise lines + a loss line) to every rank, as `bench_logs_scale.py` does,
and also queues one extra alert (a distinct key), so every tick has delivery work waiting behind a bad
receiver. Receivers are local `http.server`s on 127.0.0.1 started and stopped here; the figures are
p50 / p95 of the tick in ms, and how many delivery attempts each receiver saw and the attempt log holds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.synth_logs import noise_lines, write_run  # noqa: E402
from core.alerts import Alert, Alerter, AlertRule, Dispatcher, parse_target  # noqa: E402
from core.alerts.delivery import DeliveryPolicy  # noqa: E402
from core.logs.rows.reader import RunReader  # noqa: E402


class Receiver:
    """A local webhook receiver: `mode` ok (200 at once), error (500) or hold (answers after `hold_s`)."""

    def __init__(self, mode: str, hold_s: float = 30.0) -> None:
        self.hits = 0
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.hits += 1
                if mode == "hold":
                    outer.release.wait(hold_s)
                self.send_response(500 if mode == "error" else 200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def ticks(root: Path, ranks: int, n_ticks: int, dispatcher: Dispatcher | None) -> list[float]:
    """Tick times (s): append a step to every rank, then refresh, snapshot, judge and queue."""
    state = RunReader(root)
    state.refresh()
    alerter = Alerter(root.name)
    if dispatcher is not None:
        for alert in alerter.check(state.snapshot()):
            dispatcher.enqueue(alert)
    noise = b"".join(noise_lines()[:9])
    out = []
    for i in range(n_ticks):
        for r in range(ranks):
            with open(root / f"worker_{r}.log", "ab") as f:
                f.write(noise + f"epoch: 9 step: {1000 + i}, loss is {2.0 - i / 1000:.6f}\n".encode())
        t0 = time.perf_counter()
        state.refresh()
        snap = state.snapshot()
        if dispatcher is not None:
            for alert in alerter.check(snap):
                dispatcher.enqueue(alert)
            extra = Alert(AlertRule.LOSS_SPIKE, root.name, (i % ranks,), 1, 1000.0 + i, "bench", key=f"bench-{i}")
            dispatcher.enqueue(extra)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--ticks", type=int, default=20)
    args = ap.parse_args()
    print(f"{args.ranks} ranks x {args.steps} steps (one rank crashed: a rank_failed alert), {args.ticks} ticks")
    print(f"{'receiver':<34} {'tick p50 ms':>11} {'tick p95 ms':>11} {'requests':>9} {'attempts logged':>16}")
    for mode in ("none", "rules", "ok", "error", "hold"):
        with tempfile.TemporaryDirectory(prefix="bench-alerts-", ignore_cleanup_errors=True) as tmp:
            root = Path(tmp) / "run"
            write_run(root, args.ranks, args.steps, crashed=[3], first_crashed=3)
            receiver = None if mode in ("none", "rules") else Receiver(mode)
            record = Path(tmp) / "alerts.jsonl"
            dispatcher = None if mode == "none" else Dispatcher([], record)  # rules: judged, sent nowhere
            if receiver is not None:
                target = parse_target(receiver.url, "json", timeout_s=2.0)
                dispatcher = Dispatcher([target], record, DeliveryPolicy(backoff_s=0.5))
            times = sorted(ticks(root, args.ranks, args.ticks, dispatcher))
            hits = receiver.hits if receiver else 0
            if receiver is not None:
                receiver.close()
            if dispatcher is not None:
                dispatcher.close(wait_s=1.0)
            logged = len(record.read_text().splitlines()) if record.exists() else 0
            label = {
                "none": "no alerts (no rules)",
                "rules": "rules judged, no target",
                "ok": "200 at once",
                "error": "500 (retried, backoff 0.5 s)",
                "hold": "holds past the 2 s time-out",
            }[mode]
            p50, p95 = statistics.median(times) * 1e3, times[int(0.95 * (len(times) - 1))] * 1e3
            print(f"{label:<34} {p50:11.1f} {p95:11.1f} {hits:9d} {logged:16d}", flush=True)
    print(json.dumps({"note": "tick = refresh + snapshot + alert rules + enqueue; delivery runs on its own threads"}))


if __name__ == "__main__":
    main()
