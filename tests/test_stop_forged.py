"""Issue 31 item 2: a signal goes only to a process proven to be the run's own.

run.json is only a claim: a hand-written record could name any process with its real create time
(world-readable in /proc) and group, and `stop` used to SIGINT it and SIGKILL its whole session. Each
test forges such a record and holds that nothing is signalled and the user is told why, in one line.
Every signal this module's `stop` calls send is watched (`signals`): a protected target (pid 1, the
test itself, its parent) is never really signalled even by a broken `stop`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.run.launch import stop
from core.run.processes import ENV_RUN_DIR, ENV_RUN_ID, RunProcesses, Standing, prove, run_tag
from core.run.registry import RunRecord, RunStatus, read_record, runs_root, write_record
from core.workspace import REPO_ROOT

# a process that notes every catchable signal it gets in the file it is given, then keeps running
RECORDER = """
import signal, sys, time
out = sys.argv[1]
def note(sig, _frame):
    with open(out, "a") as f:
        f.write(f"python:{signal.Signals(sig).name}\\n")
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGQUIT):
    signal.signal(sig, note)
with open(out, "a") as f:
    f.write("ready\\n")
while True:
    time.sleep(0.2)
"""
# the recorder again, with an empty environment (a worker that dropped what it inherited)
CLEARED = f"import os, sys; os.execve(sys.executable, [sys.executable, '-c', {RECORDER!r}, sys.argv[1]], {{}})"
# a foreign `setsid bash` (a user's shell job) that notes a SIGINT and waits for its python child
BASH = 'trap "echo bash:INT >> \\"$1\\"" INT; "$2" -c "$3" "$1" & child=$!; while kill -0 $child; do wait $child; done'

Sent = list[tuple[str, int, int]]


@pytest.fixture
def signals(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Sent, set[int]]]:
    """Every signal sent from this process (os.kill, os.killpg, psutil's sends): noted, and passed on
    only to the pids the test allows (its own foreign processes); probes (signal 0) pass."""
    sent: Sent = []
    allowed: set[int] = set()
    kill, killpg = os.kill, os.killpg

    def guarded(real: Callable[[int, int], None], how: str) -> Callable[[int, int], None]:
        def send(pid: int, sig: int) -> None:
            if sig == 0:
                return real(pid, sig)
            sent.append((how, pid, sig))
            if pid in allowed:
                return real(pid, sig)
            return None

        return send

    monkeypatch.setattr(os, "kill", guarded(kill, "kill"))
    monkeypatch.setattr(os, "killpg", guarded(killpg, "killpg"))
    yield sent, allowed


def _forge(ws: Path, run_id: str, pid: int, started_at: float) -> RunRecord:
    """A hand-written 'running' record naming `pid` with its real create time and group."""
    run_dir = runs_root(ws) / run_id
    run_dir.mkdir(parents=True)
    record = RunRecord(
        run_id=run_id,
        run_dir=run_dir,
        log_dir=run_dir,
        status=RunStatus.RUNNING,
        started_at=started_at,
        pid=pid,
        pgid=os.getpgid(pid) or None,  # pid 1 in a container: group 0, which no record may hold
        pid_create_time=psutil.Process(pid).create_time(),
        argv=["bash", "run.sh"],
    )
    write_record(record)
    return read_record(run_dir)


def _untagged_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in (ENV_RUN_ID, ENV_RUN_DIR)}


def _foreign(notes: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    """The foreign `setsid bash` and the pid of its python child, once the child is ready."""
    bash = subprocess.Popen(
        ["bash", "-c", BASH, "foreign", str(notes), sys.executable, RECORDER], start_new_session=True, env=env
    )
    deadline = time.monotonic() + 30
    while not (notes.exists() and "ready" in notes.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    children = psutil.Process(bash.pid).children()
    assert len(children) == 1, "the foreign bash did not start its python child"
    return bash, children[0].pid


def _end(bash: subprocess.Popen[bytes]) -> None:
    if bash.poll() is None:
        os.killpg(bash.pid, signal.SIGKILL)
    bash.wait(timeout=10)


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_forged_record_naming_a_foreign_setsid_bash_signals_nothing(
    tmp_path: Path, signals: tuple[Sent, set[int]]
) -> None:
    sent, allowed = signals
    ws, notes = tmp_path / "ws", tmp_path / "signals.txt"
    started_at = time.time() - 2  # the foreign processes start after the run "started": no age excuse
    bash, child = _foreign(notes, _untagged_env())
    allowed.update({bash.pid, child})  # a broken stop may really signal them: that is what is tested
    try:
        record = _forge(ws, "forged", bash.pid, started_at)
        assert record.pgid == bash.pid
        assert RunProcesses.of(record).live() == []  # the foreign session lends the run none of its members
        final = stop("forged", ws, grace=1.0)
        # the foreign process does not keep the forged record 'running': it is judged ended, and says why
        assert not final.is_running and final.status == RunStatus.FAILED
        assert "\n" not in final.message
        assert f"pid {bash.pid} named in run.json does not carry the run's tag" in final.message
        assert "SHARDSCOPE_RUN_ID='forged'" in final.message
        assert sent == []
        assert _running(bash.pid) and _running(child)
        assert notes.read_text().split() == ["ready"]  # neither bash nor its child got a signal
        # the CLI says the same in one line (a separate process: not guarded here)
        result = subprocess.run(
            [sys.executable, "-m", "core", "stop", "forged", "--workspace", str(ws), "--grace", "1"],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            timeout=120,
        )
        assert result.returncode == 0 and len(result.stdout.strip().splitlines()) == 1, result
        assert "nothing to stop, no signal sent" in result.stdout
        assert f"pid {bash.pid} named in run.json does not carry the run's tag" in result.stdout
        assert _running(bash.pid) and _running(child) and notes.read_text().split() == ["ready"]
    finally:
        _end(bash)


@pytest.mark.parametrize(
    ("target", "why"),
    [
        (lambda: 1, "is pid 1"),
        (os.getpid, "is this program itself"),
        (os.getppid, "is this program's parent"),
    ],
    ids=["pid-1", "own-pid", "parent"],
)
def test_a_record_naming_pid_1_the_caller_or_its_parent_signals_nothing(
    tmp_path: Path, signals: tuple[Sent, set[int]], target: Callable[[], int], why: str
) -> None:
    sent, _allowed = signals  # nothing allowed: a send is noted, never made
    ws = tmp_path / "ws"
    pid = target()
    _forge(ws, "aimed", pid, time.time() - 2)
    final = stop("aimed", ws, grace=0.5)
    assert not final.is_running and "\n" not in final.message
    assert f"pid {pid} named in run.json {why}" in final.message and "so it is not the run's" in final.message
    assert sent == []


def test_a_process_whose_environment_cannot_be_read_is_not_signalled(
    tmp_path: Path, signals: tuple[Sent, set[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even a process carrying the run's tag is left alone when its environment cannot be read (it
    would be another user's process): nothing unproven is signalled."""
    sent, allowed = signals
    ws, notes = tmp_path / "ws", tmp_path / "signals.txt"
    run_dir = runs_root(ws) / "unread"
    bash, child = _foreign(notes, {**_untagged_env(), **run_tag("unread", run_dir)})
    allowed.update({bash.pid, child})

    def denied(self: psutil.Process) -> dict[str, str]:
        raise psutil.AccessDenied(self.pid)

    monkeypatch.setattr(psutil.Process, "environ", denied)
    try:
        _forge(ws, "unread", bash.pid, time.time() - 2)
        final = stop("unread", ws, grace=0.5)
        assert not final.is_running
        assert f"pid {bash.pid} named in run.json has an environment this program" in final.message
        assert sent == [] and _running(bash.pid) and _running(child)
        assert notes.read_text().split() == ["ready"]
    finally:
        _end(bash)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pid=st.one_of(
        st.integers(min_value=-(2**31), max_value=2**22),
        st.sampled_from(["pid-1", "self", "parent"]),
        st.none(),
        st.booleans(),
        st.text(max_size=5),
    ),
    created=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.just("real")),
)
def test_no_recorded_pid_of_any_value_is_proven_a_runs_own_without_its_tag(
    tmp_path: Path, pid: object, created: object
) -> None:
    """Whatever a record holds for pid and create time (bad types, negative, pid 1, this program, its
    parent, the real create time), prove() answers without raising and never says 'own': none of those
    processes carries this run's tag."""
    named = {"pid-1": 1, "self": os.getpid(), "parent": os.getppid()}.get(pid, pid) if isinstance(pid, str) else pid
    if created == "real":
        real = isinstance(named, int) and not isinstance(named, bool) and named > 0 and _running(named)
        created = psutil.Process(named).create_time() if real else None
    proof = prove(named, created, run_tag("nobody", tmp_path / "nobody"))  # type: ignore[arg-type]
    assert proof.standing != Standing.OWN
    if proof.standing == Standing.REFUSED:
        assert proof.why and "\n" not in proof.why


def test_a_proven_launchers_session_is_still_the_runs_even_where_a_member_lost_the_tag(
    tmp_path: Path, signals: tuple[Sent, set[int]]
) -> None:
    """The other side: a launcher carrying the run's tag is the run's, and so is every member of the
    session it leads (a worker started with a cleared environment too): stop ends them all."""
    sent, allowed = signals
    ws, notes = tmp_path / "ws", tmp_path / "signals.txt"
    run_dir = runs_root(ws) / "mine"
    started_at = time.time() - 2
    env = {**_untagged_env(), **run_tag("mine", run_dir)}
    bash = subprocess.Popen(
        ["bash", "-c", BASH, "launcher", str(notes), sys.executable, CLEARED],
        start_new_session=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while not (notes.exists() and "ready" in notes.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        (child,) = psutil.Process(bash.pid).children()
        assert ENV_RUN_ID not in child.environ()  # untagged: the run's only through its session
        allowed.update({bash.pid, child.pid})
        record = _forge(ws, "mine", bash.pid, started_at)
        assert sorted(p.pid for p in RunProcesses.of(record).live()) == sorted([bash.pid, child.pid])
        final = stop("mine", ws, grace=0.5)
        assert final.status == RunStatus.STOPPED
        assert ("kill", bash.pid, signal.SIGINT) in sent and ("killpg", bash.pid, signal.SIGKILL) in sent
        bash.wait(timeout=10)
        assert not _running(child.pid) and "bash:INT" in notes.read_text().split()  # it got the stop signal
    finally:
        _end(bash)
