"""Issue 12 items 5-7 (logs side): each test reproduces a reported failure and checks the fix."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import BinaryIO

import pytest

from core.logs.bytes.guard import LogDirError, validate_log_dir
from core.logs.live.watcher import RunWatcher, WatcherRegistry

REPO = Path(__file__).resolve().parent.parent
LINE = "epoch: 1 step: {s}, loss is {v}\n"


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=REPO, capture_output=True, text=True, timeout=120)


# ----------------------------------------------------------------------------- item 5: logdir + watchers


@pytest.mark.parametrize(
    "bad, words",
    [
        ("/", "root"),
        ("x" * 10_000, "too long"),
        ("/no/such/folder/anywhere", "does not exist"),
    ],
)
def test_validate_log_dir_refuses_hostile_folders(bad: str, words: str) -> None:
    with pytest.raises(LogDirError, match=words):
        validate_log_dir(bad)


def test_validate_log_dir_refuses_files_and_crowded_folders(tmp_path: Path) -> None:
    f = tmp_path / "file.log"
    f.write_text("x")
    with pytest.raises(LogDirError, match="not a folder"):
        validate_log_dir(f)
    for i in range(30):
        (tmp_path / f"e{i}").touch()
    with pytest.raises(LogDirError, match="more than 20 entries"):
        validate_log_dir(tmp_path, max_entries=20)
    assert validate_log_dir(tmp_path) == tmp_path.resolve()


@pytest.mark.parametrize("command", ["watch", "diagnose"])
@pytest.mark.parametrize("bad", ["/", "x" * 10_000])
def test_cli_bad_logdir_is_one_line_exit_2(command: str, bad: str) -> None:
    args = [command, bad] + (["--once"] if command == "watch" else [])
    res = _run_cli(*args)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith("error:")


def test_watcher_watches_only_log_folders_not_the_tree(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for r in range(3):
        d = out / "1" / f"rank.{r}"
        d.mkdir(parents=True)
        (d / "stdout").write_text(LINE.format(s=1, v=1.0))
    junk = out / "junk"
    for i in range(50):  # an unrelated tree: recursive=True used to watch every one of these
        (junk / f"d{i}" / "deeper").mkdir(parents=True)
    w = RunWatcher(out).start()
    try:
        folders = set(w.watched_folders())
        assert out in folders and out / "1" in folders
        assert {out / "1" / f"rank.{r}" for r in range(3)} <= folders
        assert not any(junk in f.parents or f == junk for f in folders)
        assert w.watching == folders
    finally:
        w.stop()


def test_registry_stops_idle_watchers(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_text(LINE.format(s=1, v=1.0))
    reg = WatcherRegistry(idle_s=1000.0)
    try:
        w = reg.get(("a",), lambda: RunWatcher(tmp_path))
        assert w.running and reg.get(("a",), lambda: RunWatcher(tmp_path)) is w
        assert reg.reap(now=time.monotonic() + 10) == []
        assert reg.reap(now=time.monotonic() + 2000) == [("a",)]
        assert not w.running and reg.active() == []
        w2 = reg.get(("a",), lambda: RunWatcher(tmp_path))  # the next page visit gets a fresh one
        assert w2 is not w and w2.running
    finally:
        reg.close()
    assert not w2.running


def test_registry_caps_watchers(tmp_path: Path) -> None:
    reg = WatcherRegistry(idle_s=1000.0, max_watchers=2)
    try:
        ws = [reg.get((i,), lambda: RunWatcher(tmp_path)) for i in range(3)]
        assert len(reg.active()) == 2 and not ws[0].running and ws[2].running
    finally:
        reg.close()


# ----------------------------------------------------------------------------- item 6: unreadable, pipes


def test_watch_once_into_closed_pipe_has_no_traceback(tmp_path: Path) -> None:
    for r in range(1500):  # more than a pipe buffer of status lines
        (tmp_path / f"worker_{r}.log").write_text(LINE.format(s=1, v=1.0))
    cmd = f"{sys.executable} -m core watch --once {tmp_path} | head -3"
    res = subprocess.run(
        ["bash", "-c", cmd],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert len(res.stdout.splitlines()) == 3
    assert "BrokenPipeError" not in res.stderr and "Traceback" not in res.stderr


def _state_of(log_dir: Path, rank: int) -> tuple[str, str]:
    from core.logs import rank_status, read_run

    st = rank_status(read_run(log_dir))
    row = st[st["rank"] == rank].iloc[0]
    return row["state"], row["detail"]


def test_unreadable_log_says_so_not_waiting(tmp_path: Path) -> None:
    from core.logs import rank_status, read_run
    from core.logs.bytes.source import CheckedFiles

    (tmp_path / "worker_0.log").write_text(LINE.format(s=1, v=1.0))
    (tmp_path / "worker_3.log").write_text(LINE.format(s=1, v=1.0))

    class Denied(CheckedFiles):
        """chmod 000 does not stop root: the source refuses the open like the kernel would."""

        def open(self, path: Path) -> BinaryIO:
            if path.name == "worker_3.log":
                raise PermissionError(13, "Permission denied", str(path))
            return super().open(path)

    st = rank_status(read_run(tmp_path, source=Denied())).set_index("rank")
    assert st.at[3, "state"] == "unreadable" and "permission denied" in st.at[3, "detail"]
    assert st.at[0, "state"] != "unreadable"


def test_fifo_and_folder_named_like_a_log_are_unreadable(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "worker_1.log")  # opening it would block the reader forever
    (tmp_path / "worker_2.log").mkdir()
    assert _state_of(tmp_path, 1) == ("unreadable", "worker_1.log: a FIFO (named pipe), not a regular file")
    assert _state_of(tmp_path, 2) == ("unreadable", "worker_2.log: a folder, not a regular file")


# ----------------------------------------------------------------------------- item 7: parser honesty

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from core.logs import ReaderSettings, parse_loss_line, read_run  # noqa: E402
from core.logs.rows.reader import RunReader  # noqa: E402


@pytest.mark.parametrize("text", ["0x1p3", "1_000", "4.5e", "1.5.2", "2e+", "7abc"])
def test_values_that_are_not_whole_numbers_give_no_row(text: str) -> None:
    assert parse_loss_line(f"epoch: 1 step: 1, loss is {text}") is None
    assert parse_loss_line(f"loss: {text}") is None


@pytest.mark.parametrize(
    "text, value", [("1.5", 1.5), ("-2.5e-3", -0.0025), ("[2.5]", 2.5), ("3,", 3.0), ("Infinity", float("inf"))]
)
def test_whole_numbers_still_parse(text: str, value: float) -> None:
    r = parse_loss_line(f"epoch: 1 step: 1, loss is {text}")
    assert r is not None and r["loss"] == value


_GOOD = st.sampled_from([b"1.5", b"2", b"0.25", b"3e-2", b"nan"])
_BAD = st.sampled_from([b"0x1p3", b"1_000", b"4.5e", b"1.5.2", b"9z"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(st.tuples(st.booleans(), _GOOD, _BAD), min_size=1, max_size=30),
    cuts=st.lists(st.integers(0, 2000), max_size=6),
    block_min=st.sampled_from([1, 64]),
)
def test_bad_numbers_are_rejected_by_both_paths_any_chunking(
    tmp_path_factory: pytest.TempPathFactory, values: list, cuts: list[int], block_min: int
) -> None:
    lines = [
        b"epoch: 1 step: %d, loss is %s\n" % (i + 1, good if ok else bad) for i, (ok, good, bad) in enumerate(values)
    ]
    data = b"".join(lines)
    expected = [i + 1 for i, (ok, _, _) in enumerate(values) if ok]
    one = tmp_path_factory.mktemp("one")
    (one / "worker_0.log").write_bytes(data)
    compiled = ReaderSettings(block_min=block_min, compiled_min=0)
    assert read_run(one, settings=compiled).metrics["step"].tolist() == expected
    root = tmp_path_factory.mktemp("chunks")
    path = root / "worker_0.log"
    path.write_bytes(b"")
    state = RunReader(root, settings=ReaderSettings(block_min=block_min, compiled_min=0))
    prev = 0
    for p in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        with open(path, "ab") as f:
            f.write(data[prev:p])
        prev = p
        state.refresh()
    assert state.snapshot().metrics["step"].tolist() == expected


def test_rotated_log_keeps_its_rows_and_is_read_to_its_end(tmp_path: Path) -> None:
    log = tmp_path / "worker_0.log"
    log.write_text("".join(LINE.format(s=s, v=1.0) for s in range(1, 4)))
    state = RunReader(tmp_path)
    state.refresh()
    with open(log, "a") as f:  # written after our last read, just before the rotation
        f.write(LINE.format(s=4, v=1.0))
    log.rename(tmp_path / "worker_0.log.1")
    log.write_text(LINE.format(s=5, v=2.0))
    state.refresh()
    snap = state.snapshot()
    assert snap.metrics["step"].tolist() == [1, 2, 3, 4, 5]
    assert snap.ranks.iloc[0]["last_step"] == 5 and snap.ranks.iloc[0]["last_loss"] == 2.0
    with open(log, "a") as f:
        f.write(LINE.format(s=6, v=3.0))
    state.refresh()
    assert state.snapshot().metrics["step"].tolist() == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("newline", [b"\r", b"\r\n", b"\n"])
def test_cr_only_and_crlf_lines_are_read_whole_and_live(tmp_path: Path, newline: bytes) -> None:
    data = b"".join(
        b"[WARNING] noise %d%sepoch: 1 step: %d, loss is 2.3139476776123047%s" % (s, newline, s, newline)
        for s in range(1, 7)
    )
    (tmp_path / "whole").mkdir()
    (tmp_path / "whole" / "worker_0.log").write_bytes(data)
    whole = read_run(tmp_path / "whole").metrics
    assert whole["step"].tolist() == [1, 2, 3, 4, 5, 6]
    assert whole["loss"].tolist() == [2.3139476776123047] * 6
    live = tmp_path / "live"
    live.mkdir()
    path = live / "worker_0.log"
    path.write_bytes(b"")
    state = RunReader(live)
    for cut in range(0, len(data), 7):  # cuts fall between CR and LF too
        with open(path, "ab") as f:
            f.write(data[cut : cut + 7])
        state.refresh()
    assert state.snapshot().metrics["step"].tolist() == [1, 2, 3, 4, 5, 6]
