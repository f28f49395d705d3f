"""`python -m core watch DIR --alert TARGET` (issue 34 item 3): the watch keeps running and alerting; a
folder whose ranks stop writing sends ONE hang alert to a real receiver on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def hook() -> Iterator[tuple[str, list[dict], threading.Event]]:
    got: list[dict] = []
    arrived = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            arrived.set()
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/alerts", got, arrived
    server.shutdown()
    server.server_close()


def _env(workspace: Path) -> dict[str, str]:
    return {**os.environ, "SHARDSCOPE_WORKSPACE": str(workspace), "PYTHONPATH": str(REPO)}


def test_ranks_that_stop_writing_send_one_hang_alert(tmp_path: Path, hook) -> None:
    url, got, arrived = hook
    logs = tmp_path / "logs"
    logs.mkdir()
    for rank in range(4):
        (logs / f"worker_{rank}.log").write_text(
            "".join(f"epoch: 1 step: {i}, loss is {2 - i / 100}\n" for i in range(1, 9))
        )
    proc = subprocess.Popen(
        [sys.executable, "-m", "core", "watch", str(logs), "--alert", url, "--hang-after", "2", "--interval", "0.5"],
        cwd=REPO,
        env=_env(tmp_path / "ws"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The hang rule judges a run it has seen live (a line newer than 2 s): the ranks write on until the watch has
    # printed a row written after it started (its start alone can take over 2 s on a loaded machine), then stop.
    printed: list[str] = []
    live = threading.Event()

    def read_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            printed.append(line)
            if " step " in line and line.split()[-3:-2] == ["100"]:
                live.set()

    reader = threading.Thread(target=read_out, daemon=True)
    reader.start()
    try:
        step = 100
        while not live.wait(0.3) and step < 400:  # ~2 minutes at most
            for rank in range(4):
                with (logs / f"worker_{rank}.log").open("a") as log:
                    log.write(f"epoch: 1 step: {step}, loss is 1.5\n")
            step += 1
        assert live.is_set(), "the watch printed no row written after it started"
        assert arrived.wait(60), "no alert reached the receiver"
        # the watch keeps running after the alert: more ticks, no second hang alert
        assert proc.poll() is None
        (logs / "worker_0.log").open("a").write(f"epoch: 1 step: {step}, loss is 1.4\n")  # one rank moves again
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(timeout=10)
    out = "".join(printed)
    hangs = [a for a in got if a["rule"] == "hang"]
    assert len(hangs) == 1 and len(got) == 1
    assert hangs[0]["count"] == 4 and hangs[0]["run"] == "logs" and "no new line for 2 s" in hangs[0]["message"]
    assert "alert hang:" in out and "alerts to json webhook http://127.0.0.1" in out
    records = list((tmp_path / "ws" / "alerts").glob("logs-*.jsonl"))
    assert len(records) == 1
    entries = [json.loads(x) for x in records[0].read_text().splitlines()]
    assert [(e["rule"], e["outcome"]) for e in entries] == [("hang", "sent")]


def test_bad_alert_target_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_text("epoch: 1 step: 1, loss is 2.0\n")
    done = subprocess.run(
        [sys.executable, "-m", "core", "watch", str(tmp_path), "--alert", "mailto:ops@example.com"],
        cwd=REPO,
        env=_env(tmp_path / "ws"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no SMTP server" in done.stderr
    once = subprocess.run(
        [sys.executable, "-m", "core", "watch", str(tmp_path), "--once", "--alert", "http://127.0.0.1:9/x"],
        cwd=REPO,
        env=_env(tmp_path / "ws"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert once.returncode == 2 and "leave out --once" in once.stderr
