"""One Monitor tab on one big log (issue 31 item 6): the dashboard server's RSS before the tab, once the
tab has read the whole log, and after the tab is closed (the watcher released when its last session ends).

    .venv/bin/python benchmarks/bench_monitor_tab_memory.py LOG_DIR [--repo REPO] [--after-s 20]

Uses bench_monitor_server.py's server (`streamlit run app/shardscope_server.py`, its own workspace, a free
loopback port, stopped by its pid) and headless Chromium (Debian's /usr/bin/chromium). `--repo` runs another
checkout's dashboard (the figures before a change). A benchmark, not a test: it prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("log_dir", type=Path)
    p.add_argument("--repo", type=Path, default=REPO, help="the checkout whose dashboard is measured")
    p.add_argument("--after-s", type=float, default=20.0, help="seconds watched after the tab closes")
    p.add_argument("--read-timeout", type=float, default=600.0)
    args = p.parse_args(argv)
    sys.path.insert(0, str(args.repo / "benchmarks"))
    import bench_monitor_server as bms  # the measured checkout's
    from playwright.sync_api import sync_playwright

    log_bytes = sum(f.stat().st_size for f in args.log_dir.rglob("*") if f.is_file())
    mb = 1e6

    def rss(sampler: bms.Sampler) -> float:
        time.sleep(2 * bms.SAMPLE_S)
        last = sampler.last()
        return last.rss / mb if last else float("nan")

    with tempfile.TemporaryDirectory() as ws, bms.measured_server(Path(ws)) as (server, sampler):
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=bms.CHROMIUM, args=bms.CHROMIUM_ARGS)
            context = browser.new_context()
            bms.warm_up(context, server.url)
            idle = rss(sampler)
            t0 = time.monotonic()
            page = context.new_page()
            page.goto(f"{server.url}/monitor?logdir={args.log_dir}", wait_until="domcontentloaded", timeout=120_000)
            shown = bms.wait_until(page, lambda pg: bms.painted(pg) and not bms.reading(pg), args.read_timeout)
            bms.pump(page, 5.0)  # a few live reruns on the whole table
            read_s = None if shown is None else shown - t0
            open_rss = rss(sampler)
            peak = bms.rss_peak_mb(sampler.window(t0, time.monotonic()))
            page.close()
            t_closed = time.monotonic()
            time.sleep(args.after_s)
            closed = rss(sampler)
            context.close()
            browser.close()
        tracebacks = server.tracebacks()
    print(f"{args.log_dir}: {log_bytes / mb:.0f} MB of logs; dashboard {args.repo}")
    print(f"  server RSS idle {idle:.0f} MB; tab open (read in {read_s if read_s is None else round(read_s, 1)} s)")
    print(f"  {open_rss:.0f} MB = idle + {(open_rss - idle) / (log_bytes / mb):.2f}x the log; peak {peak:.0f} MB")
    print(f"  {args.after_s:.0f} s after the tab closed: {closed:.0f} MB (idle + {closed - idle:.0f} MB)")
    print(f"  tracebacks in the server log: {tracebacks}; closed at t={t_closed - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
