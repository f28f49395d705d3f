"""Issue 22, run side: a run's processes are identified exactly (never by a path substring), its end
is its job's real exit even if the supervisor died, and watch-only runs are checked, forgotten, deleted.

Real processes throughout (tiny fake jobs whose run.sh is a few shell lines); psutil is not mocked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from core.logs.bytes.guard import validate_log_dir
from core.run.launch import delete_run, launch, start_supervisor, stop, wait
from core.run.own import watch_folder
from core.run.processes import RunProcesses
from core.run.registry import LaunchError, RunRecord, RunStatus, get_run, list_runs, runs_root, write_record
from core.workspace import REPO_ROOT
from tests.jobs import fake_job

# A job like msrun --join=True: a `tail -f` of its own log (the run folder's path in its command line,
# as msrun's --log_dir is), and it ends by itself, with code $CODE, once the file `finish` appears.
FOLLOWER = """mkdir -p log_output
echo 'epoch: 1 step: 1, loss is 2.5' > log_output/worker_0.log
tail -f "$PWD/log_output/worker_0.log" > /dev/null &
while [ ! -e finish ]; do sleep 0.1; done
kill %1
exit ${CODE:-0}"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, text=True, cwd=REPO_ROOT)


def _wait_for(check, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def _live(pids: list[int]) -> list[int]:
    """The pids of `pids` that still run (a zombie counts as dead)."""
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def _name(proc: psutil.Process) -> str:
    try:
        return proc.name()
    except psutil.NoSuchProcess:
        return ""


def _start(tmp_path: Path, ws: Path, name: str, code: int = 0) -> tuple[RunRecord, list[int]]:
    """Launch a FOLLOWER run and return it with its lasting pids (wrapper, bash, tail) once its tail -f runs."""
    record = launch(fake_job(tmp_path, f"CODE={code}\n{FOLLOWER}", f"job-{name}"), ws, name=name)
    assert record.is_running, record.message

    def tail_up() -> bool:
        return any(_name(p) == "tail" for p in RunProcesses.of(record).live())

    assert _wait_for(tail_up), [p.cmdline() for p in RunProcesses.of(record).live()]

    def lasting() -> set[int]:
        out = set()
        for proc in RunProcesses.of(record).live():
            try:
                if proc.name() != "sleep" and time.time() - proc.create_time() > 0.5:
                    out.add(proc.pid)
            except psutil.NoSuchProcess:
                continue  # one of the loop's sleeps, gone meanwhile
        return out

    # The loop's `sleep 0.1` come and go; one forked but not yet exec'd is still named `bash`, and on a loaded
    # machine it may be older than 0.5 s: only what two looks 0.6 s apart both find has lasted (wrapper, bash, tail).
    time.sleep(0.6)
    first = lasting()
    time.sleep(0.6)
    return record, sorted(first & lasting())


@pytest.fixture(autouse=True)
def no_leftover_runs(tmp_path: Path) -> Iterator[None]:
    """Whatever a test asserts, every run it started in any of its workspaces is stopped afterwards."""
    yield
    for ws in {p.parents[2] for p in tmp_path.glob("*/runs/*/run.json")}:
        for record in list_runs(ws):
            if record.is_running:
                stop(record.run_id, ws, grace=1.0)


@pytest.fixture
def users_tails() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The user's own `tail -f` of a run's log, started from inside the run folder: never the run's."""
    tails: list[subprocess.Popen[bytes]] = []
    yield tails
    for tail in tails:
        tail.kill()
        tail.wait()


def _users_tail(record: RunRecord) -> subprocess.Popen[bytes]:
    log = record.run_dir / "log_output" / "worker_0.log"
    return subprocess.Popen(["tail", "-f", str(log)], cwd=record.log_dir, stdout=subprocess.DEVNULL)


def _end(record: RunRecord, ws: Path, how: str) -> RunRecord:
    if how == "stop":
        final = stop(record.run_id, ws, grace=1.0)
        assert final.status == "stopped", final.message
        return final
    (record.run_dir / "finish").write_text("")
    final = wait(record.run_id, ws, timeout=60)
    assert final.status == "succeeded", final.message
    return final


@pytest.mark.parametrize("names", [("xa", "xab"), ("own-train", "own-train-2")])
@pytest.mark.parametrize("first", ["short", "long"])
@pytest.mark.parametrize("how", ["stop", "natural"])
def test_ending_one_run_never_touches_another_or_the_users_tail(
    tmp_path: Path, users_tails: list[subprocess.Popen[bytes]], names: tuple[str, str], first: str, how: str
) -> None:
    """Two runs whose names share a prefix, each ended (stopped, or by itself), in both orders, while the
    user follows both logs with tail -f: ending one leaves the other run and the user's tails alive."""
    ws = tmp_path / "ws"
    short, short_pids = _start(tmp_path, ws, names[0])
    long, long_pids = _start(tmp_path, ws, names[1])
    users_tails += [_users_tail(short), _users_tail(long)]
    one, other, other_pids = (short, long, long_pids) if first == "short" else (long, short, short_pids)

    ended = _end(one, ws, how)
    assert not RunProcesses.of(ended).live()
    assert _live(other_pids) == other_pids, f"{how} of {one.run_id} killed processes of {other.run_id}"
    assert get_run(other.run_id, ws).status == "running"
    assert [t.poll() for t in users_tails] == [None, None], "the user's tail -f was killed"

    last = _end(other, ws, how)
    assert not RunProcesses.of(last).live() and _live(other_pids) == []
    assert [t.poll() for t in users_tails] == [None, None], "the user's tail -f was killed"


def test_the_same_run_name_in_another_workspace_is_another_run(tmp_path: Path) -> None:
    """Run ids are unique per workspace only: the tag carries the run folder too."""
    _first, first_pids = _start(tmp_path, tmp_path / "ws1", "same")
    second, second_pids = _start(tmp_path, tmp_path / "ws2", "same")
    assert not set(first_pids) & {p.pid for p in RunProcesses.of(second).live()}
    assert stop("same", tmp_path / "ws1", grace=1.0).status == "stopped"
    assert _live(second_pids) == second_pids
    assert stop("same", tmp_path / "ws2", grace=1.0).status == "stopped"


# --- the end of a run whose supervisor died ------------------------------------------------------


@pytest.mark.parametrize(("code", "status"), [(0, "succeeded"), (3, "failed")])
def test_a_dead_supervisors_run_ends_with_the_jobs_real_exit(tmp_path: Path, code: int, status: str) -> None:
    ws = tmp_path / "ws"
    record, _pids = _start(tmp_path, ws, f"orphan{code}", code=code)
    psutil.Process(record.supervisor_pid).kill()  # kill -9 the supervisor while the job runs
    assert _wait_for(
        lambda: (
            not psutil.pid_exists(record.supervisor_pid)
            or psutil.Process(record.supervisor_pid).status() == psutil.STATUS_ZOMBIE
        )
    )
    assert get_run(record.run_id, ws).status == "running"
    (record.run_dir / "finish").write_text("")
    final = wait(record.run_id, ws, timeout=60)
    assert (final.status, final.exit_code) == (status, code), final.message
    if code:
        assert final.message == f"the launcher exited with code {code}"


def test_the_stop_signal_reaches_the_launcher_through_the_wrapper(tmp_path: Path) -> None:
    """msrun stops its workers on SIGINT: the exit-status wrapper in front of it must pass SIGINT on."""
    ws = tmp_path / "ws"
    body = "trap 'echo got-int; exit 5' INT\nwhile true; do sleep 0.1; done"
    record = launch(fake_job(tmp_path, body), ws, name="polite")
    assert _wait_for(lambda: len(RunProcesses.of(record).live()) >= 2)
    final = stop("polite", ws, grace=30.0)
    assert final.status == "stopped"
    assert "got-int" in (final.run_dir / "launcher.log").read_text()
    assert (final.run_dir / "launcher_exit_code").read_text().strip() == "5"


def test_a_launcher_that_cannot_start_is_said_plainly(tmp_path: Path) -> None:
    """Behind the exit-status wrapper, a missing launcher is still one sentence, not 'exit code 127'."""
    run_dir = runs_root(tmp_path / "ws") / "nobin"
    run_dir.mkdir(parents=True)
    (run_dir / "env.json").write_text("{}")
    write_record(
        RunRecord(
            run_id="nobin",
            run_dir=run_dir,
            log_dir=run_dir,
            status=RunStatus.STARTING,
            started_at=time.time(),
            argv=["no-such-launcher-xyz", "--flag"],
        )
    )
    final = start_supervisor(run_dir, wait_started=30)
    assert final.status == "failed" and "could not start no-such-launcher-xyz --flag" in final.message


# --- watch-only runs: watch's checks, stop = forget, delete ---------------------------------------


def test_watch_folder_refuses_the_root_like_watch(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with pytest.raises(LaunchError, match="cannot watch '/': / is the filesystem root"):
        watch_folder("/", ws, validate_log_dir)
    result = _cli("watch-folder", "/", "--workspace", str(ws))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "filesystem root" in result.stderr
    assert list_runs(ws) == []


@pytest.mark.parametrize("kind", ["/proc", "/dev/null", "missing", "file", "logs"])
def test_watch_folder_gives_watchs_verdict(tmp_path: Path, kind: str) -> None:
    """The one check: whatever `watch` refuses (today or after the guard changes), watch-folder refuses
    with the same sentence; whatever it accepts, watch-folder registers."""
    (tmp_path / "file").write_text("x")
    (tmp_path / "logs").mkdir()
    folder = kind if kind.startswith("/") else str(tmp_path / kind)
    ws = tmp_path / "ws"
    try:
        expected = validate_log_dir(folder)
    except ValueError as exc:
        with pytest.raises(LaunchError) as info:
            watch_folder(folder, ws, validate_log_dir)
        assert str(exc) in str(info.value)
        assert list_runs(ws) == []
    else:
        assert watch_folder(folder, ws, validate_log_dir).log_dir == expected


def test_watch_folder_refuses_a_folder_of_too_many_files(tmp_path: Path) -> None:
    crowd = tmp_path / "crowd"
    crowd.mkdir()
    for i in range(60):
        (crowd / f"f{i}").touch()
    with pytest.raises(LaunchError, match="more than 50 entries"):
        watch_folder(crowd, tmp_path / "ws", lambda text: validate_log_dir(text, max_entries=50))
    result = _cli("watch-folder", str(tmp_path / "missing"), "--workspace", str(tmp_path / "ws"))
    assert result.returncode != 0 and "does not exist" in result.stderr
    assert list_runs(tmp_path / "ws") == []


def test_a_watch_only_run_is_forgotten_then_deleted_and_the_folder_stays(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    logs = tmp_path / "their logs"
    logs.mkdir()
    (logs / "worker_0.log").write_text("epoch: 1 step: 1, loss is 2.5\n", encoding="utf-8")
    sleeper = subprocess.Popen(["sleep", "60"], cwd=logs)  # the user's job, writing there
    try:
        record = watch_folder(logs, ws, validate_log_dir, name="theirs")
        assert get_run("theirs", ws).is_running
        result = _cli("stop", "theirs", "--workspace", str(ws))
        assert result.returncode == 0, result.stderr
        assert "forgotten" in result.stdout and "nothing was signalled" in result.stdout
        final = get_run("theirs", ws)
        assert final.status == "stopped" and final.ended_at is not None
        assert sleeper.poll() is None  # nothing of the user's was signalled
        result = _cli("delete", "theirs", "--workspace", str(ws))
        assert result.returncode == 0, result.stderr
        assert "record only" in result.stdout
        assert not record.run_dir.exists() and list_runs(ws) == []
        assert (logs / "worker_0.log").read_text(encoding="utf-8").startswith("epoch: 1")
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_running_watch_only_run_can_be_deleted_without_touching_the_folder(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "worker_0.log").write_text("x\n")
    watch_folder(logs, ws, validate_log_dir, name="live")
    delete_run("live", ws)
    assert list_runs(ws) == [] and (logs / "worker_0.log").read_text() == "x\n"
    assert sorted(os.listdir(runs_root(ws))) == [".launch.lock"]


def test_delete_of_a_running_run_is_refused_and_a_finished_one_goes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    record, _pids = _start(tmp_path, ws, "busy")
    try:
        result = _cli("delete", "busy", "--workspace", str(ws))
        assert result.returncode != 0 and "stop it first" in result.stderr and "Traceback" not in result.stderr
        assert record.run_dir.is_dir()
    finally:
        stop("busy", ws, grace=1.0)
    result = _cli("delete", "busy", "--workspace", str(ws))
    assert result.returncode == 0 and not record.run_dir.exists()
    result = _cli("delete", "busy", "--workspace", str(ws))
    assert result.returncode != 0 and "no run called 'busy'" in result.stderr
    result = _cli("delete", "../etc", "--workspace", str(ws))
    assert result.returncode != 0 and "Traceback" not in result.stderr


def test_each_nodes_real_exit_is_kept_when_the_supervisor_died(tmp_path: Path) -> None:
    """Two nodes of a multi-node job started here (node 1 behind an `env` prefix), supervisor killed:
    each node's launcher leaves its own status file and the run says how each node ended."""
    from core.codegen import RunOptions, write_job
    from tests.browser import free_port
    from tests.jobs import DP

    job = write_job(DP, RunOptions(master_port=free_port(), local_worker_num=4), tmp_path / "two-nodes")
    (job / "run.sh").write_text("#!/usr/bin/env bash\nwhile [ ! -e finish ]; do sleep 0.1; done\nexit $((3 * $1))\n")
    ws = tmp_path / "ws"
    record = launch(job, ws, name="nodes", node_exec={1: ["env", "NODE_PREFIX=1"]})
    assert record.is_running and len(record.nodes) == 2, record.message
    psutil.Process(record.supervisor_pid).kill()
    assert get_run("nodes", ws).status == "running"
    (record.run_dir / "finish").write_text("")
    final = wait("nodes", ws, timeout=60)
    assert (final.status, final.exit_code) == ("failed", 3), final.message
    assert final.message == "node 0 exited with code 0, node 1 exited with code 3"
    assert [n["exit_code"] for n in final.nodes] == [0, 3]
