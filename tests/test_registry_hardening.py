"""Issue 31 item 5: one bad run.json, a linked run folder, a forged log folder or a full disk never hides or
breaks the other runs, and every failure is one line.

Each record is read alone (core.run.record_check): a malformed, forged or oversized run.json is one
"not read: runs/NAME/run.json: why" line and a greyed row; run folders that are links are never read or
deleted through; a full disk is simulated by a real tiny tmpfs (root only, unmounted after) or, without
root, by a write that raises ENOSPC.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from core.__main__ import main
from core.codegen import RunOptions, jobfolder
from core.run import launch as launch_mod
from core.run import registry
from core.run.launch import delete_run, launch, stop, wait
from core.run.processes import RunProcesses
from core.run.record_check import (
    FIELDS,
    MAX_JSON_DEPTH,
    MAX_RUN_FILE_BYTES,
    PID_MAX,
    RecordError,
    json_depth,
    parse,
)
from core.run.registry import (
    LaunchError,
    RecordWriteError,
    RunKind,
    RunRecord,
    RunStatus,
    get_run,
    list_runs,
    read_record,
    runs_root,
    scan_runs,
    write_record,
)
from core.workspace import REPO_ROOT, WorkspaceError, check_name
from tests.jobs import fake_job

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
MALFORMED = {
    "a list": "[1,2,3]",
    "a bad node": json.dumps({"run_id": "bad", "status": "running", "nodes": [5]}),
    "deep nesting": "[" * 100_000 + "]" * 100_000,
    "a huge pid": '{"run_id": "bad", "status": "running", "pid": 1e308}',
    "a forged id": json.dumps({"run_id": "good", "status": "running"}),
    "a status list": json.dumps({"run_id": "bad", "status": ["running"]}),
    "a long message": json.dumps({"run_id": "bad", "message": "m" * 100_000}),
    "a NUL path": json.dumps({"run_id": "bad", "workdir": "a\0b"}),
    "a root log folder": json.dumps({"run_id": "bad", "kind": "external", "log_dir": "/"}),
    "a launched run logging outside": json.dumps({"run_id": "bad", "log_dir": "/etc"}),
    "oversized": json.dumps({"run_id": "bad", "options": {"x": "y" * MAX_RUN_FILE_BYTES}}),
}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120
    )


def _record(ws: Path, run_id: str, **fields: object) -> RunRecord:
    """A finished run of the registry, written as the launcher would."""
    run_dir = runs_root(ws) / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    values: dict = {"status": RunStatus.SUCCEEDED, "started_at": time.time() - 5, "ended_at": time.time()}
    values["log_dir"] = run_dir
    record = RunRecord(run_id=run_id, run_dir=run_dir, **{**values, **fields})  # type: ignore[arg-type]
    write_record(record)
    return record


def _bad(ws: Path, text: str, name: str = "bad") -> Path:
    run_dir = runs_root(ws) / name
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_text(text)
    return run_dir


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# --- each record read alone ---------------------------------------------------------------------


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_record_is_one_line_and_the_others_stay_listed(tmp_path: Path, case: str) -> None:
    ws = tmp_path / "ws"
    _record(ws, "good")
    _bad(ws, MALFORMED[case])
    listing = scan_runs(ws)
    assert [r.run_id for r in listing.records] == ["good"]
    assert len(listing.lines) == 1 and listing.lines[0].startswith("not read: runs/bad/run.json: ")
    assert len(listing.lines[0]) < 200  # a forged value is quoted short, never whole
    with pytest.raises(RecordError, match=r"^run bad"):
        get_run("bad", ws)


def test_the_reasons_name_the_field_and_the_value(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for case in ("a list", "a bad node", "deep nesting", "a huge pid", "a root log folder"):
        name = case.replace(" ", "-")
        _bad(ws, MALFORMED[case].replace('"run_id": "bad"', f'"run_id": "{name}"'), name=name)
    lines = "\n".join(scan_runs(ws).lines)
    assert "runs/a-list/run.json: holds a list, not an object of fields" in lines
    assert "has nodes [5], a list whose item 0 is not a node" in lines
    assert "nests 100,000 levels deep, more than the 16 allowed" in lines
    assert "has pid 1e+308, not a process id" in lines
    assert "has log_dir '/', the filesystem root" in lines


def test_cli_runs_and_launch_work_beside_a_list_record(tmp_path: Path) -> None:
    """The issue's case: `[1,2,3]` as a run.json ended `runs` and every `launch` in an AttributeError."""
    ws = tmp_path / "ws"
    _record(ws, "good")
    _bad(ws, "[1,2,3]")
    result = _cli("runs", "--workspace", str(ws))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "good" in result.stdout
    assert "not read: runs/bad/run.json: holds a list, not an object of fields" in result.stdout
    job = fake_job(tmp_path, "exit 0")
    launched = _cli("launch", str(job), "--workspace", str(ws), "--name", "next", "--wait")
    assert launched.returncode == 0, launched.stderr
    assert "run next succeeded" in launched.stdout
    assert _one_line(_cli("runs", "bad", "--workspace", str(ws))).startswith("error: run bad: run.json holds a list")


@pytest.mark.parametrize("case", ["a bad node", "deep nesting", "a huge pid"])
def test_launch_and_stop_work_beside_the_other_malformed_records(tmp_path: Path, case: str) -> None:
    ws = tmp_path / "ws"
    _bad(ws, MALFORMED[case])
    record = launch(fake_job(tmp_path, "sleep 30"), ws, name="live")
    assert record.is_running
    assert [r.run_id for r in list_runs(ws)] == ["live"]
    assert stop("live", ws, grace=5).status == RunStatus.STOPPED
    assert delete_run("live", ws).run_id == "live" and (runs_root(ws) / "bad").is_dir()


def test_launch_page_lists_the_other_runs_and_one_not_read_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    _record(ws, "good", scenario="data_parallel")
    _bad(ws, "[1,2,3]")
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(ws))
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "launch.py"), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    frame = at.dataframe[0].value
    assert list(frame["Run"]) == ["good", "bad"]
    assert "not read" in frame["Status"][1] and "succeeded" in frame["Status"][0]
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert sum("not read: runs/bad/run.json: holds a list" in c for c in captions) == 1
    assert "good" in at.selectbox(key="launch_delete_choice").options  # still deletable


def test_monitor_picker_lists_the_other_runs_and_greys_the_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    _record(ws, "good")
    _bad(ws, MALFORMED["a huge pid"])
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(ws))
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "monitor.py"), default_timeout=60)
    at.query_params["run"] = "good"
    at.run()
    assert not at.exception, at.exception
    picker = at.selectbox(key="mon_run")
    assert (len(picker.options), picker.value) == (1, "good")
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert any("not read: runs/bad/run.json: has pid 1e+308" in c for c in captions)


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(
        st.none() | st.integers() | st.text(alphabet='ab"\\[]{}'),
        lambda kids: st.lists(kids) | st.dictionaries(st.text(alphabet='k"\\[{'), kids),
        max_leaves=30,
    )
)
def test_json_depth_is_the_nesting_of_every_json_value(value: object) -> None:
    def depth(v: object) -> int:
        if isinstance(v, list):
            return 1 + max(map(depth, v), default=0)
        if isinstance(v, dict):
            return 1 + max(map(depth, v.values()), default=0)
        return 0

    assert json_depth(json.dumps(value)) == depth(value)
    assert json_depth(json.dumps(value, ensure_ascii=False, indent=1)) == depth(value)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_bytes_are_a_record_object_or_one_record_error(data: bytes) -> None:
    try:
        found = parse("r", data)
    except RecordError as exc:
        assert "\n" not in str(exc) and exc.line.startswith("not read: runs/r/run.json: ")
    else:
        assert isinstance(found, dict)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
    max_leaves=8,
)
KEYS = st.sampled_from([*FIELDS, "status", "kind"])


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(KEYS, JSON | st.integers(-(2**70), 2**70), max_size=6), st.sampled_from([0, 1, 2]))
def test_every_field_read_is_in_its_bounds_or_the_record_is_one_error(fields: dict, pick: int) -> None:
    """Whatever a run.json holds under its known keys, a record comes back with every bound held, or one
    RecordError names the run; never another exception."""
    run_dir = Path("/nonexistent/ws/runs/r")
    data = {**fields, "run_id": "r"}
    if pick == 1 and "log_dir" in data:
        data["kind"] = "external"
    try:
        record = RunRecord.from_json(run_dir, data)
    except RecordError as exc:
        assert "\n" not in str(exc) and exc.line.startswith("not read: runs/r/run.json: has ")
        return
    for pid in (record.pid, record.pgid, record.supervisor_pid, *(n.get("pid") for n in record.nodes)):
        assert pid is None or (type(pid) is int and 1 <= pid <= PID_MAX)
    for moment in (record.started_at, record.ended_at, record.pid_create_time, record.supervisor_create_time):
        assert moment is None or (type(moment) is float and 0 <= moment <= 2**34)
    assert record.master_port is None or 0 <= record.master_port <= 65535
    assert all(type(w) is str and "\0" not in w for w in [*record.command, *record.argv, record.message])
    assert isinstance(record.options, RunOptions) and record.log_dir.parent != record.log_dir
    if record.kind != RunKind.EXTERNAL:
        assert run_dir in (record.log_dir, *record.log_dir.parents)


def test_deep_nesting_is_refused_before_it_is_decoded() -> None:
    with pytest.raises(RecordError, match="nests 17 levels deep"):
        parse("r", ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)).encode())
    assert parse("r", ('{"a":' * (MAX_JSON_DEPTH - 1) + "1" + "}" * (MAX_JSON_DEPTH - 1)).encode())


# --- run folders that are links, or another user's --------------------------------------------


def test_a_linked_run_folder_is_never_listed_read_or_deleted_through(tmp_path: Path) -> None:
    ws, other = tmp_path / "ws", tmp_path / "other"
    _record(ws, "good")
    victim = _record(other, "victim")
    (runs_root(ws) / "inside").symlink_to(runs_root(ws) / "good")
    (runs_root(ws) / "outside").symlink_to(victim.run_dir)
    listing = scan_runs(ws)
    assert [r.run_id for r in listing.records] == ["good"]
    assert [e.name for e in listing.unread] == ["inside", "outside"]
    assert all("is a symbolic link: never read or deleted through" in line for line in listing.lines)
    for name in ("inside", "outside"):
        with pytest.raises(LaunchError, match="symbolic link"):
            delete_run(name, ws)
        assert "symbolic link" in _one_line(_cli("delete", name, "--workspace", str(ws)))
    assert (runs_root(ws) / "good" / "run.json").is_file() and (victim.run_dir / "run.json").is_file()


def test_a_linked_run_json_is_not_read(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    good = _record(ws, "good")
    (runs_root(ws) / "copy").mkdir()
    (runs_root(ws) / "copy" / "run.json").symlink_to(good.run_dir / "run.json")
    assert scan_runs(ws).lines == ["not read: runs/copy/run.json: is a symbolic link: never read"]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_run_folder_of_another_user_is_not_trusted(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _record(ws, "good")
    planted = _record(ws, "planted")
    os.chown(planted.run_dir, 4242, 4242)
    listing = scan_runs(ws)
    assert [r.run_id for r in listing.records] == ["good"]
    assert listing.lines == [
        "not read: runs/planted/run.json: is untrusted: its folder belongs to uid 4242, not to the workspace's user"
    ]


# --- a record's log folder ---------------------------------------------------------------------


def test_a_watched_folder_record_pointing_at_a_file_is_refused_by_the_monitor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record's log folder passes the checks of a folder the user names (validate_log_dir)."""
    ws = tmp_path / "ws"
    target = tmp_path / "not-a-folder"
    target.write_text("x")
    _record(ws, "watched", kind=RunKind.EXTERNAL, log_dir=target, status=RunStatus.RUNNING)
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(ws))
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "monitor.py"), default_timeout=60)
    at.query_params["run"] = "watched"
    at.run()
    assert not at.exception, at.exception
    assert any("its log folder is refused, not watched" in w.value and "is not a folder" in w.value for w in at.warning)


def test_a_root_log_folder_is_refused_for_every_kind(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for kind in ("external", "generated", "own"):
        _bad(ws, json.dumps({"run_id": kind, "kind": kind, "log_dir": "/"}), name=kind)
    assert all("has log_dir '/'" in line for line in scan_runs(ws).lines) and len(scan_runs(ws).lines) == 3


# --- long names and NUL -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a" * 5000, "ab\0cd", "x" * 65])
def test_long_names_and_nul_are_refused_in_one_short_line(tmp_path: Path, name: str) -> None:
    with pytest.raises(WorkspaceError) as info:
        check_name(name, "run id")
    assert len(str(info.value)) < 250 and "\n" not in str(info.value) and "\0" not in str(info.value)
    ws = tmp_path / "ws"
    for command in ("runs", "stop", "delete"):
        code, err = _main_err([command, name, "--workspace", str(ws)])
        assert code == 2 and len(err) < 250 and "run id '" in err


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=6000) | st.text(alphabet="a\0\n/.", max_size=200))
@example("a" * 5000)
@example("\0" * 300)
def test_a_refused_name_is_quoted_in_one_short_line(name: str) -> None:
    try:
        assert check_name(name, "run id") == name and len(name) <= 64
    except WorkspaceError as exc:
        message = str(exc)
        assert len(message) < 260 and "\n" not in message and "\0" not in message


def _main_err(argv: list[str]) -> tuple[int, str]:
    import io
    from contextlib import redirect_stderr

    buffer = io.StringIO()
    with redirect_stderr(buffer):
        code = main(argv)
    lines = buffer.getvalue().strip().splitlines()
    assert len(lines) == 1, lines
    return code, lines[0]


def test_generate_out_with_a_nul_is_one_line(tmp_path: Path) -> None:
    code, err = _main_err(["generate", "--out", str(tmp_path / "a\0b")])
    assert code == 2 and "contains a NUL character" in err and "\0" not in err


# --- a full disk, without root: a write that raises ENOSPC -------------------------------------


def test_a_failed_record_write_leaves_no_temp_file_and_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = _record(tmp_path / "ws", "r")

    def full(*_args: object) -> None:
        raise ENOSPC

    monkeypatch.setattr(os, "replace", full)  # the temp file is written, its rename fails
    with pytest.raises(RecordWriteError, match=r"^cannot save runs/r/run.json: No space left on device: free"):
        write_record(record)
    assert sorted(p.name for p in record.run_dir.iterdir()) == ["run.json"]


def test_a_status_judged_while_writes_fail_is_kept_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    record = _record(ws, "orphan", status=RunStatus.RUNNING, ended_at=None, pid=None)
    before = (record.run_dir / "run.json").read_text()

    def full(_record: RunRecord) -> None:
        raise RecordWriteError("orphan", ENOSPC)

    monkeypatch.setattr(registry, "write_record", full)
    judged = get_run("orphan", ws)
    assert judged.status == RunStatus.FAILED and "(not saved: No space left on device)" in judged.message
    assert wait("orphan", ws, timeout=5).status == RunStatus.FAILED
    assert (record.run_dir / "run.json").read_text() == before


def test_a_launch_whose_failure_cannot_be_recorded_leaves_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A supervisor that died before starting the job on a full disk: the run folder goes, so no 'starting'
    record holds the master port, and the launch fails in one line."""
    ws = tmp_path / "ws"

    def dead_supervisor(*_args: object, **_kwargs: object) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])

    def full(*_args: object, **_kwargs: object) -> RunRecord:
        raise RecordWriteError("half", ENOSPC)

    monkeypatch.setattr(launch_mod, "start_detached", dead_supervisor)
    monkeypatch.setattr(launch_mod, "update_record", full)
    with pytest.raises(LaunchError) as info:
        launch(fake_job(tmp_path, "exit 0"), ws, name="half")
    assert "No space left on device" in str(info.value) and "\n" not in str(info.value)
    assert not (runs_root(ws) / "half").exists() and scan_runs(ws).records == []


def test_generate_out_that_cannot_be_written_removes_the_folder_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*_args: object) -> None:
        raise ENOSPC

    monkeypatch.setattr(jobfolder.os, "replace", full)
    code, err = _main_err(["generate", "--out", str(tmp_path / "new" / "job")])
    assert code == 2 and "No space left on device" in err
    assert not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()
    _main_err(["generate", "--out", str(tmp_path / "mine")])
    assert (tmp_path / "mine").is_dir()  # a folder the user had is never removed


# --- a real full disk: a tiny tmpfs (root only; unmounted after) -------------------------------


@pytest.fixture()
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "tiny"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    """Fill the disk to the last byte; the filler file is removed to free it again."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 4096)
    with open(filler, "ab", buffering=0) as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0")
    return filler


def _until(check: object, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while not check() and time.time() < deadline:  # type: ignore[operator]
        time.sleep(0.2)
    assert check(), "not reached in time"  # type: ignore[operator]


def test_on_a_full_disk_every_command_is_one_line(tiny_disk: Path, tmp_path: Path) -> None:
    ws = tiny_disk / "ws"
    live = launch(fake_job(tmp_path, "sleep 60", name="live"), ws, name="live")
    _record(ws, "done")
    orphan = _record(ws, "orphan", status=RunStatus.RUNNING, ended_at=None)  # nobody watches it: judged when read
    job = fake_job(tmp_path, "exit 0")
    filler = _fill(tiny_disk)
    launched = _cli("launch", str(job), "--workspace", str(ws), "--name", "nospace", "--wait")
    assert "No space left on device" in _one_line(launched) and launched.returncode == 2
    assert not (runs_root(ws) / "nospace").exists()
    listed = _cli("runs", "--workspace", str(ws))
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert "orphan" in listed.stdout and "(not saved: No space left on device)" in listed.stdout
    stopped = _cli("stop", "live", "--workspace", str(ws), "--grace", "5")
    assert stopped.returncode == 0 and "run live stopped; no process of it is left" in stopped.stdout, stopped.stderr
    assert RunProcesses.of(read_record(live.run_dir)).live(include_supervisor=False) == []
    assert _cli("delete", "done", "--workspace", str(ws)).returncode == 0
    generated = _cli("generate", "--out", str(tiny_disk / "job"))
    assert "No space left on device" in _one_line(generated)
    assert not (tiny_disk / "job").exists() and not list(runs_root(ws).rglob("*.tmp"))
    filler.unlink()
    assert read_record(orphan.run_dir).status == RunStatus.RUNNING  # judged in memory, never half-saved
    _until(lambda: read_record(live.run_dir).status == RunStatus.STOPPED)  # its supervisor saved it at last


def test_the_supervisor_survives_a_full_disk_and_saves_the_real_end_later(tiny_disk: Path, tmp_path: Path) -> None:
    """A disk filling mid-run: the supervisor keeps the end in memory (the run stays running for every reader,
    `launch --wait` keeps waiting), saves it once space is freed, and `--wait` ends in one line."""
    ws, go = tiny_disk / "ws", tmp_path / "go"
    job = fake_job(tmp_path, f"while [ ! -e {go} ]; do sleep 0.1; done; exit 3")
    waiting = subprocess.Popen(
        [sys.executable, "-m", "core", "launch", str(job), "--workspace", str(ws), "--name", "full", "--wait"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run_dir = runs_root(ws) / "full"
    _until(lambda: (run_dir / "run.json").is_file() and read_record(run_dir).pid is not None)
    launcher = read_record(run_dir)
    filler = _fill(tiny_disk)
    go.write_text("")
    _until(lambda: not psutil.pid_exists(launcher.pid) or psutil.Process(launcher.pid).status() == "zombie")
    time.sleep(2.0)  # the supervisor has tried to save the end, and failed
    assert psutil.pid_exists(launcher.supervisor_pid) and waiting.poll() is None
    assert get_run("full", ws).status == RunStatus.RUNNING  # its supervisor holds the end: nobody guesses it
    filler.unlink()
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 3 and "Traceback" not in err, err
    assert "run full failed (exit code 3)" in out and "the disk was full" in out
    final = get_run("full", ws)
    assert (final.status, final.exit_code) == (RunStatus.FAILED, 3) and "exit code unknown" not in final.message
