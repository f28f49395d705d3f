"""Issue 30 item 5: `RunReader` reads through an injected byte source (core.logs.bytes.source), so a test
makes a file refuse its open or watches what was read by injecting one, never by patching `os.open` or the
reader's private methods. Every read path goes through it: one file at a time, small files batched, and the
next file's first block read ahead on the helper thread."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import BinaryIO

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.files import FileCheckError
from core.logs import ReaderSettings, rank_status, read_run
from core.logs.bytes.source import CheckedFiles, why_not
from core.logs.rows.reader import RunReader

LM = "epoch: 1 step: {s}, loss is {v}\n"


class Recording(CheckedFiles):
    """The real files, with every open and read written down (and on which thread it ran)."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.reads: list[tuple[str, int, int, bool]] = []  # (file, offset, bytes, on the main thread)

    def open(self, path: Path) -> BinaryIO:
        self.opened.append(path.name)
        return super().open(path)

    def read_at(self, f: BinaryIO, buf: bytearray | memoryview, n: int, pos: int) -> int:
        got = super().read_at(f, buf, n, pos)
        name = Path(os.readlink(f"/proc/self/fd/{f.fileno()}")).name
        self.reads.append((name, pos, got, threading.current_thread() is threading.main_thread()))
        return got


def _logs(folder: Path, ranks: int, steps: int) -> None:
    for rank in range(ranks):
        (folder / f"worker_{rank}.log").write_text("".join(LM.format(s=s, v=rank + s / 100) for s in range(steps)))


@pytest.mark.parametrize(
    "reader_settings",
    [
        ReaderSettings(),  # small files batched
        ReaderSettings(prefetch_min=1, read_block=4096),  # one file at a time, blocks and read-ahead
    ],
    ids=["batched", "alone"],
)
def test_every_byte_read_comes_through_the_source(tmp_path: Path, reader_settings: ReaderSettings) -> None:
    _logs(tmp_path, 3, 400)
    source = Recording()
    snap = read_run(tmp_path, settings=reader_settings, source=source)
    assert snap.metrics.equals(read_run(tmp_path, settings=reader_settings).metrics)
    assert len(snap.metrics) == 3 * 400
    for rank in range(3):
        name = f"worker_{rank}.log"
        assert name in source.opened
        got = sum(n for f, _, n, _ in source.reads if f == name)
        assert got >= (tmp_path / name).stat().st_size, name  # the whole file, through the source


def test_the_read_ahead_reads_through_the_source_on_the_helper_thread(tmp_path: Path) -> None:
    _logs(tmp_path, 4, 3000)
    source = Recording()
    read_run(tmp_path, settings=ReaderSettings(prefetch_min=1), source=source)
    helper = {f for f, pos, _, main in source.reads if not main and pos == 0}
    assert helper >= {"worker_1.log", "worker_2.log", "worker_3.log"}  # each next file's first block


class Refusing(CheckedFiles):
    """A source whose open of one file fails as core.files would refuse it, or as the kernel would."""

    def __init__(self, name: str, error: OSError) -> None:
        self.name, self.error = name, error

    def open(self, path: Path) -> BinaryIO:
        if path.name == self.name:
            raise self.error
        return super().open(path)


@pytest.mark.parametrize(
    ("error", "detail"),
    [
        (PermissionError(13, "Permission denied"), "permission denied"),
        (FileCheckError("log file x is a FIFO", Path("x"), "a FIFO (named pipe), not a regular file"), "a FIFO"),
        (OSError(5, "Input/output error"), "input/output error"),
    ],
)
def test_a_file_the_source_refuses_is_unreadable_with_its_reason(tmp_path: Path, error: OSError, detail: str) -> None:
    _logs(tmp_path, 3, 5)
    states = rank_status(read_run(tmp_path, source=Refusing("worker_1.log", error))).set_index("rank")
    assert states.at[1, "state"] == "unreadable" and detail in states.at[1, "detail"]
    assert states.at[0, "state"] != "unreadable" and states.at[2, "state"] != "unreadable"


def test_a_watcher_reads_on_once_the_source_lets_it(tmp_path: Path) -> None:
    """A refusal is no verdict for ever: the next refresh that can open the file reads it."""
    _logs(tmp_path, 2, 5)
    source = Refusing("worker_1.log", PermissionError(13, "Permission denied"))
    reader = RunReader(tmp_path, source=source)
    reader.refresh()
    assert reader.snapshot().metrics["rank"].unique().tolist() == [0]
    source.name = ""  # the permission is given back
    reader.refresh()
    assert reader.snapshot().metrics.groupby("rank").size().tolist() == [5, 5]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(errno=st.integers(0, 200), text=st.text(max_size=30))
def test_why_not_is_always_a_few_words(errno: int, text: str) -> None:
    why = why_not(OSError(errno, text) if text else OSError(errno))
    assert isinstance(why, str) and "\n" not in why.strip() and why == why.lower()


def test_a_watcher_reads_through_its_source_before_and_after_release(tmp_path: Path) -> None:
    """The live watcher hands its source to the reader it starts, and to the fresh one after `release`."""
    from core.logs import RunWatcher

    _logs(tmp_path, 2, 5)
    source = Recording()
    watcher = RunWatcher(tmp_path, source=source)
    assert len(watcher.snapshot(refresh=True).metrics) == 10
    assert sorted(set(source.opened)) == ["worker_0.log", "worker_1.log"]
    watcher.release()
    source.opened.clear()
    assert len(watcher.snapshot(refresh=True).metrics) == 10 and source.opened
