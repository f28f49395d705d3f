"""Issue 34 item 3, launched runs: alerts do not depend on an open tab. A run's supervisor starts a watch
(`python -m core watch ... --alert-targets-of-workspace`) when the workspace has alerts.json, never tagged as
one of the run's processes, and ends it when the run ends (SIGTERM: one last judgment, queues drained).

The integration tests launch a real 8-worker msrun job on CPU (slow: run them alone)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.alerts.channels import AlertTargetError, Kind
from core.alerts.settings import load, parse_targets, save
from core.run.launch import stop, wait
from core.run.processes import ENV_RUN_DIR, ENV_RUN_ID, RunProcesses
from core.run.registry import RunRecord, RunStatus, get_run, list_runs, write_record
from core.run.supervisor import alert_watch_argv, end_alert_watch, start_alert_watch
from core.workspace import ALERTS_FILE, REPO_ROOT
from tests.jobs import LOSS, cli, generate, workers


@dataclass
class Receiver:
    """A webhook on 127.0.0.1 recording each JSON body with its arrival time; `fail_first` answers 500 first."""

    url: str = ""
    got: list[tuple[float, dict]] = field(default_factory=list)
    fail_first: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def bodies(self, rule: str | None = None) -> list[dict]:
        with self.lock:
            return [b for _, b in self.got if rule is None or b.get("rule") == rule]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    rec = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with rec.lock:
                failing = rec.fail_first > 0
                rec.fail_first -= 1
                if not failing:
                    rec.got.append((time.time(), data))
            self.send_response(500 if failing else 200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rec.url = f"http://127.0.0.1:{server.server_port}/alerts"
    yield rec
    server.shutdown()
    server.server_close()


def wait_for(predicate, timeout: float, every: float = 0.2) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return bool(predicate())


def alert_watches(run_id: str) -> list[psutil.Process]:
    """The live alert watches of `run_id` (found by their argv, as a user would with ps)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        argv = proc.info["cmdline"] or []
        if "watch" in argv and "--alert-run" in argv and run_id in argv and proc.info["status"] != "zombie":
            found.append(proc)
    return found


# ----------------------------------------------------------------------------- alerts.json targets


def test_targets_are_parsed_with_their_format_secret_and_smtp(tmp_path: Path) -> None:
    hook = tmp_path / "page.sh"
    hook.write_text("#!/bin/sh\ncat >/dev/null\n")
    hook.chmod(0o700)
    save(
        tmp_path,
        {
            "smtp": {"host": "smtp.example.com", "port": 25},
            "secrets": {"https://open.feishu.cn/hook/abc": "s3cr3t-signing"},
            "targets": [
                {"to": "https://open.feishu.cn/hook/abc", "format": "feishu"},
                {"to": "mailto:oncall@example.com"},
                {"to": f"exec:{hook}"},
            ],
        },
    )
    loaded = load(tmp_path)
    assert [t.kind for t in loaded.targets] == [Kind.WEBHOOK, Kind.EMAIL, Kind.EXEC]
    assert loaded.targets[0].fmt == "feishu" and loaded.targets[0].secret == "s3cr3t-signing"
    assert loaded.targets[1].smtp is not None and loaded.targets[1].smtp.host == "smtp.example.com"
    assert "s3cr3t-signing" not in loaded.describe() and "targets: feishu webhook" in loaded.describe()
    assert load(tmp_path / "none").targets == ()  # no alerts.json: no standing target


@pytest.mark.parametrize(
    ("targets", "says"),
    [
        ({"to": "http://x"}, "targets must be a list"),
        (["http://x"], 'targets[0] must be an object with a "to" string'),
        ([{"to": "http://x", "fmt": "slack"}], "targets[0]: unknown key 'fmt'"),
        ([{"to": "http://x", "format": "teams"}], "targets[0]: format 'teams' is not one of"),
        ([{"to": "http://x", "format": ["slack"]}], "targets[0]: format ['slack'] is not one of"),
        ([{"to": "http://x"}, {"to": "ftp://x/" + "y" * 500}], "targets[1] 'ftp://x/yyy"),
        ([{"to": "mailto:oncall@example.com"}], "targets[0] 'mailto:oncall@example.com': no SMTP server"),
        ([{"to": "exec:/no/such/pager"}], "is not a file"),
        ([{"to": "http://x"}] * 17, "at most 16"),
    ],
)
def test_bad_targets_are_one_line_naming_the_entry(tmp_path: Path, targets: object, says: str) -> None:
    save(tmp_path, {"targets": targets})
    with pytest.raises(AlertTargetError) as exc:
        load(tmp_path)
    message = str(exc.value)
    assert says in message and "\n" not in message and message.startswith(str(tmp_path / ALERTS_FILE))
    assert len(message) < 300  # the value shortened, never echoed whole


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=30),
        lambda c: st.lists(c) | st.dictionaries(st.text(max_size=8), c),
        max_leaves=12,
    )
)
@example(  # nested keys of escaped characters: reprlib bounds each, the message bounds the whole
    [
        [
            -10000,
            {"00\x08\U00010aa0": None, "0000\x1f\x1f\U00018d09": False, "0000\x1f\x1f\U00018cd6\U0002ebe1": -10000000},
            {"0000\x1f\x1f\U00018d09": None, "00\x08\U00010aa0": False, "0000\x1f\x1f\U00018cd6\U0002ebe1": False},
            {
                "00\x08\U00010aa0": -1000000000000,
                "0000\x1f\x1f\U00018d09": False,
                "0000\x1f\x1f\U00018cd6\U0002ebe1": False,
            },
        ]
    ]
)
def test_any_json_targets_value_is_targets_or_one_line(data: object) -> None:
    try:
        targets = parse_targets(data, {}, None)
    except AlertTargetError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 400
    else:
        assert isinstance(targets, tuple) and len(targets) <= 16


# ----------------------------------------------------------------------------- the supervisor's child


def _run(tmp_path: Path, status: RunStatus = RunStatus.RUNNING) -> RunRecord:
    run_dir = tmp_path / "ws" / "runs" / "r1"
    logs = run_dir / "log_output"
    logs.mkdir(parents=True)
    for rank in range(2):
        (logs / f"worker_{rank}.log").write_text(
            "".join(f"epoch: 1 step: {i}, loss is {2 - i / 100}\n" for i in range(1, 6))
        )
    record = RunRecord(run_id="r1", run_dir=run_dir, log_dir=logs, status=status, command=["true"])
    write_record(record)
    return record


def test_no_alerts_json_no_watch(tmp_path: Path) -> None:
    assert start_alert_watch(_run(tmp_path)) is None


def test_the_watch_child_is_not_tagged_as_the_runs_and_ends_with_sigterm(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = _run(tmp_path)
    save(tmp_path / "ws", {"targets": [{"to": receiver.url}]})
    argv = alert_watch_argv(record, tmp_path / "ws")
    assert argv[:5] == [sys.executable, "-m", "core", "watch", str(record.log_dir)]
    assert argv[argv.index("--alert-run") + 1] == "r1" and argv[argv.index("--with-parent") + 1] == str(os.getpid())
    assert argv[argv.index("--alert-log") + 1] == str(record.run_dir / "alerts.jsonl")
    # the supervisor itself carries the run's tag (the launcher inherits it); its watch must not
    monkeypatch.setenv(ENV_RUN_ID, "r1")
    monkeypatch.setenv(ENV_RUN_DIR, str(record.run_dir.resolve()))
    watch = start_alert_watch(record)
    assert watch is not None
    try:
        env = psutil.Process(watch.pid).environ()
        assert ENV_RUN_ID not in env and ENV_RUN_DIR not in env
        assert watch.pid not in [p.pid for p in RunProcesses.of(record).live(include_supervisor=True)]
        assert wait_for(lambda: "watching" in (record.run_dir / "alerts.log").read_text(), 60)
    finally:
        end_alert_watch(watch)
    assert watch.returncode == 0  # SIGTERM: a last judgment, then a clean exit
    assert "ended (SIGTERM)" in (record.run_dir / "alerts.log").read_text()


def test_sigterm_judges_the_end_and_drains_a_retry(tmp_path: Path, receiver: Receiver) -> None:
    """The run is over (run.json says stopped): SIGTERM makes the watch judge once more (`run_ended`: stopped,
    which only the record can say) and deliver it even through a retry (the receiver answers 500 first)."""
    record = _run(tmp_path)
    save(tmp_path / "ws", {"targets": [{"to": receiver.url}]})
    receiver.fail_first = 1
    out = open(tmp_path / "watch.log", "wb")  # noqa: SIM115
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(alert_watch_argv(record, tmp_path / "ws"), cwd=REPO_ROOT, env=env, stdout=out, stderr=out)
    try:
        assert wait_for(lambda: b"watching" in (tmp_path / "watch.log").read_bytes(), 60)
        time.sleep(1.5)  # a few ticks: nothing to alert while the run runs
        assert receiver.bodies() == []
        record.status = RunStatus.STOPPED
        write_record(record)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        out.close()
    ended = receiver.bodies("run_ended")
    assert len(ended) == 1 and ended[0]["message"] == "run stopped (2 ranks)" and ended[0]["run"] == "r1"
    attempts = [json.loads(x) for x in (record.run_dir / "alerts.jsonl").read_text().splitlines()]
    assert [(a["rule"], a["outcome"]) for a in attempts] == [("run_ended", "retry"), ("run_ended", "sent")]


def test_workspace_without_targets_sends_nothing_and_says_so(tmp_path: Path) -> None:
    """alerts.json kept for `watch --alert` settings only (no targets): the run's watch says so and ends, 0."""
    record = _run(tmp_path)
    save(tmp_path / "ws", {"rules": {"hang_s": 60}})
    done = subprocess.run(
        alert_watch_argv(record, tmp_path / "ws"), cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("names no targets: this run sends no alert")
    assert "error" not in done.stdout + done.stderr


# ----------------------------------------------------------------------------- real launched runs


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    """The workspace of a real launch; whatever happens, every run it started is stopped."""
    yield tmp_path / "ws"
    for record in list_runs(tmp_path / "ws"):
        if record.is_running:
            stop(record.run_id, tmp_path / "ws", grace=2)


@pytest.mark.integration
def test_killed_rank_3_sends_one_rank_failed_alert_with_no_tab(
    tmp_path: Path, ws: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    save(ws, {"targets": [{"to": receiver.url}]})
    job = tmp_path / "job"
    generate(job, samples=64_000, epochs=50)
    assert cli("launch", str(job), "--name", "crash", "--workspace", str(ws)).returncode == 0
    record = get_run("crash", ws)
    assert wait_for(lambda: len(workers(record.run_dir)) >= 9, 90)
    assert wait_for(lambda: len(alert_watches("crash")) == 1, 30)
    log3 = record.log_dir / "worker_3.log"
    assert wait_for(lambda: log3.exists() and LOSS.search(log3.read_text(errors="replace")) is not None, 120)
    victim = next(p for p in workers(record.run_dir) if f"DISTRIBUTED({p.pid}," in log3.read_text(errors="replace"))
    killed = time.time()
    os.kill(victim.pid, signal.SIGKILL)
    assert wait_for(lambda: receiver.bodies("rank_failed"), 60), (record.run_dir / "alerts.log").read_text()
    delay = next(t for t, b in receiver.got if b["rule"] == "rank_failed") - killed
    final = wait("crash", ws, timeout=180)
    assert final.status == "failed"
    assert wait_for(lambda: not alert_watches("crash"), 30)  # ended with the run
    failed = receiver.bodies("rank_failed")
    assert len(failed) == 1  # exactly one, however many ranks msrun then took down
    assert failed[0]["ranks"][0] == 3 and failed[0]["run"] == "crash" and "rank 3 failed first" in failed[0]["message"]
    assert [b["message"] for b in receiver.bodies("run_ended")] == ["run failed (8 ranks)"]
    attempts = [json.loads(x) for x in (record.run_dir / "alerts.jsonl").read_text().splitlines()]
    assert ("rank_failed", "sent") in [(a["rule"], a["outcome"]) for a in attempts]
    with capsys.disabled():
        print(f"\nrank_failed alert arrived {delay:.1f} s after rank 3 was killed")


@pytest.mark.integration
def test_stop_leaves_no_watch_child(tmp_path: Path, ws: Path, receiver: Receiver) -> None:
    save(ws, {"targets": [{"to": receiver.url}]})
    job = tmp_path / "job"
    generate(job, samples=64_000, epochs=50)
    assert cli("launch", str(job), "--name", "long", "--workspace", str(ws)).returncode == 0
    record = get_run("long", ws)
    assert wait_for(lambda: len(alert_watches("long")) == 1, 60)
    watch = alert_watches("long")[0]
    assert watch not in RunProcesses.of(record).live(include_supervisor=True)  # not the run's: stop never counts it
    assert wait_for(lambda: len(workers(record.run_dir)) >= 9, 90)
    result = cli("stop", "long", "--workspace", str(ws), "--grace", "10")
    assert result.returncode == 0, result.stderr
    assert get_run("long", ws).status == "stopped"
    assert wait_for(lambda: not alert_watches("long"), 30)
    assert [b["message"] for b in receiver.bodies("run_ended")] == ["run stopped (8 ranks)"]


# ----------------------------------------------------------------------------- the run's page


PAGE = str(REPO_ROOT / "pages" / "monitor.py")


def _attempt(t: float, rule: str, outcome: str, attempt: int, detail: str = "") -> str:
    target = "json webhook http://127.0.0.1:9/…TOKN"
    return json.dumps(
        {
            "time": t,
            "rule": rule,
            "run": "r1",
            "target": target,
            "attempt": attempt,
            "outcome": outcome,
            "detail": detail,
        }
    )


@pytest.mark.parametrize("launched", [True, False])
def test_monitor_shows_the_attempts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launched: bool) -> None:
    """A launched run's alerts.jsonl (next to run.json), or a watched folder's record in the workspace, shows
    on the Monitor: newest first, time, rule, masked target, outcome, tries; a cut line is skipped."""
    from streamlit.testing.v1 import AppTest

    from core.cli.watch import alert_record_path
    from core.logs.bytes.guard import validate_log_dir

    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    if launched:
        folder = _run(tmp_path).log_dir
    else:
        folder = tmp_path / "plain"
        folder.mkdir()
        (folder / "worker_0.log").write_text("epoch: 1 step: 1, loss is 2.0\n")
    record = alert_record_path(validate_log_dir(str(folder)), (tmp_path / "ws").resolve())
    assert (record == folder.parent / "alerts.jsonl") is launched
    record.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        _attempt(1_700_000_000, "rank_failed", "retry", 1, "HTTP 500"),
        _attempt(1_700_000_002, "rank_failed", "sent", 2, "HTTP 200"),
        '{"time": 1700000003, "rule": "ha',  # cut by a full disk
        _attempt(1_700_000_009, "run_ended", "failed", 4, "cannot reach the webhook: refused"),
    ]
    record.write_text("\n".join(lines) + "\n")
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["logdir"] = str(folder)
    at.run()
    assert not at.exception, at.exception
    tables = [
        d.value
        for d in at.dataframe
        if list(d.value.columns) == ["time", "rule", "target", "outcome", "tries", "detail"]
    ]
    assert len(tables) == 1
    table = tables[0]
    assert table["rule"].tolist() == ["run_ended", "rank_failed", "rank_failed"]
    assert table["outcome"].tolist() == ["failed", "sent", "retry"] and table["tries"].tolist() == [4, 2, 1]
    assert table["target"].iat[0].endswith("/…TOKN")
    assert any("3 delivery attempt(s), 1 not delivered" in e.label for e in at.expander)


def test_no_record_no_alerts_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["logdir"] = str(_run(tmp_path).log_dir)
    at.run()
    assert not at.exception and not any("delivery attempt" in e.label for e in at.expander)


def test_notification_texts_cannot_close_the_script() -> None:
    from app.monitor.alerts import Notice, notify_script

    html = notify_script(
        [Notice("rank_failed", "ShardScope: rank 3 failed", "</script><img src=x onerror=alert(1)>")], "/x"
    )
    assert html.count("</script>") == 1 and html.endswith("</script>") and "<img" not in html


def test_monitor_says_when_the_runs_alert_watch_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    record = _run(tmp_path)
    save(tmp_path / "ws", {"targets": [{"to": "ftp://x"}]})
    with open(record.run_dir / "alerts.log", "wb") as out:  # as the supervisor starts it
        argv = alert_watch_argv(record, tmp_path / "ws")
        assert subprocess.run(argv, cwd=REPO_ROOT, stdout=out, stderr=out, timeout=120).returncode == 2
    why = f"{tmp_path}/ws/alerts.json: targets[0] 'ftp://x': give an http(s):// URL, mailto:ADDR or exec:PATH"
    assert (record.run_dir / "alerts.log").read_text() == f"error: {why}\n"  # one line
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["logdir"] = str(record.log_dir)
    at.run()
    assert not at.exception
    assert [w.value for w in at.warning if "alert watch" in w.value] == [
        f"This run's alert watch stopped, so it sends no alert: {why}"
    ]


def test_a_shared_filesystem_run_is_polled(tmp_path: Path) -> None:
    record = _run(tmp_path)
    assert "--polling" not in alert_watch_argv(record, tmp_path / "ws")
    record.launcher = "slurm"
    assert alert_watch_argv(record, tmp_path / "ws")[-1] == "--polling"


PARENT = """
import subprocess, sys, os, time
argv = sys.argv[1:]
argv[argv.index("--with-parent") + 1] = str(os.getpid())
watch = subprocess.Popen(argv, stdout=open(os.environ["WATCH_LOG"], "wb"), stderr=subprocess.STDOUT)
print(watch.pid, flush=True)
time.sleep(600)
"""


def test_a_watch_whose_supervisor_is_killed_ends(tmp_path: Path, receiver: Receiver) -> None:
    """SIGKILL to the supervisor: its watch is reparented, sees it, judges once more and exits (no leftover)."""
    record = _run(tmp_path)
    save(tmp_path / "ws", {"targets": [{"to": receiver.url}]})
    log = tmp_path / "watch.log"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "WATCH_LOG": str(log)}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, *alert_watch_argv(record, tmp_path / "ws")],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    watch = psutil.Process(int(parent.stdout.readline()))  # type: ignore[union-attr]
    try:
        assert wait_for(lambda: log.exists() and b"watching" in log.read_bytes(), 60)
        parent.kill()
        parent.wait()
        assert wait_for(lambda: not watch.is_running() or watch.status() == psutil.STATUS_ZOMBIE, 30)
    finally:
        if watch.is_running() and watch.status() != psutil.STATUS_ZOMBIE:
            watch.kill()
    assert b"ended (its parent " in log.read_bytes() and b" is gone)" in log.read_bytes()
