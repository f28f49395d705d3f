"""Every file ShardScope opens is checked first (issue 22, item 2): a regular file, bounded, never a
blocking open. A FIFO, /dev/zero, a socket and a folder in each role give a one-line error (or, in a
log folder, a skip that names the file), never a hang: anything that could hang runs in a
subprocess with a timeout, so a regression fails instead of freezing the suite.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import files
from core.files import FileCheckError, open_checked, read_checked

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 60  # seconds; the checked code answers in well under one, a blocking open never does
LOSS = "epoch: 1 step: {s}, loss is {v}\n"


# ----------------------------------------------------------------------------- the special files


def _fifo(folder: Path, name: str) -> Path:
    path = folder / name
    os.mkfifo(path)
    return path


def _folder(folder: Path, name: str) -> Path:
    path = folder / name
    path.mkdir()
    return path


def _zero(folder: Path, name: str) -> Path:
    path = folder / name
    path.symlink_to("/dev/zero")  # a character device that never ends; stat says 0 bytes
    return path


@pytest.fixture
def bound_socket() -> Iterator[Callable[[Path, str], Path]]:
    """Makes a listening unix socket at folder/name (closed after the test)."""
    held: list[socket.socket] = []

    def make(folder: Path, name: str) -> Path:
        path = folder / name
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        sock.listen()
        held.append(sock)
        return path

    yield make
    for sock in held:
        sock.close()


KINDS = {"fifo": "a FIFO (named pipe)", "zero": "a character device", "socket": "a socket", "folder": "a folder"}


def _special(kind: str, folder: Path, name: str, make_socket: Callable[[Path, str], Path]) -> Path:
    return {"fifo": _fifo, "zero": _zero, "folder": _folder, "socket": make_socket}[kind](folder, name)


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter (a hang becomes a TimeoutExpired, i.e. a failure)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# ----------------------------------------------------------------------------- core.files itself


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_special_file_is_refused_by_name_and_kind(kind: str, tmp_path: Path, bound_socket) -> None:
    path = _special(kind, tmp_path, "thing", bound_socket)
    result = _python(
        """
        import sys
        from core.files import FileCheckError, read_checked, open_checked
        for call in (lambda: read_checked(sys.argv[1], 1000, "design file"),
                     lambda: open_checked(sys.argv[1], None, "design file")):
            try:
                call()
            except FileCheckError as exc:
                print(exc)
                print(exc.reason)
            else:
                print("read it")
        """,
        str(path),
    )
    assert result.returncode == 0, result.stderr
    message, reason = result.stdout.splitlines()[:2]
    assert message == f"design file {path} is {KINDS[kind]}, not a regular file"
    assert reason == f"{KINDS[kind]}, not a regular file"
    assert result.stdout.splitlines()[2:] == [message, reason]


def test_a_fifo_swapped_in_after_the_stat_does_not_block_the_open(tmp_path: Path) -> None:
    """The race the stat alone cannot close: the path is a regular file when stat'ed, a FIFO when opened."""
    path = tmp_path / "x.log"
    path.write_text("x\n")
    result = _python(
        """
        import os, sys
        from core import files
        from core.files import FileCheckError, open_checked
        real_stat = os.stat
        def stat_then_swap(p, *a, **k):
            info = real_stat(p, *a, **k)
            os.unlink(p)
            os.mkfifo(p)
            return info
        files.os.stat = stat_then_swap
        try:
            open_checked(sys.argv[1], None, "log file")
        except FileCheckError as exc:
            print(exc)
        """,
        str(path),
    )
    assert result.stdout.strip() == f"log file {path} is a FIFO (named pipe), not a regular file"


def test_missing_and_too_big_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(FileCheckError) as caught:
        read_checked(tmp_path / "nope.json", 10, "job file")
    assert str(caught.value) == f"cannot open job file {tmp_path / 'nope.json'}: No such file or directory"
    assert caught.value.reason == "no such file or directory"
    big = tmp_path / "big.yaml"
    with big.open("wb") as f:
        f.truncate(50 << 30)  # sparse 50 GB: refused from its size, never read
    with pytest.raises(FileCheckError) as caught:
        read_checked(big, 2_000_000, "MindFormers config")
    assert str(caught.value) == f"MindFormers config {big} is 53,687,091,200 bytes, more than the 2,000,000 allowed"
    with pytest.raises(FileCheckError):
        open_checked(big, 2_000_000, "MindFormers config")
    assert open_checked(big, None, "log file").read(3) == b"\0\0\0"  # a reader that bounds its own reads


def test_the_error_is_both_an_oserror_and_a_valueerror(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p")
    for kind in (OSError, ValueError):
        with pytest.raises(kind):
            read_checked(tmp_path / "p", 10)
    try:
        read_checked(tmp_path / "p", 10)
    except OSError as exc:
        assert (exc.strerror or str(exc)) == "a FIFO (named pipe), not a regular file"


def test_the_returned_handle_is_blocking_and_closed_on_exec(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / "f"
    path.write_bytes(b"abc")
    with open_checked(path, 10, "file") as f:
        flags = fcntl.fcntl(f.fileno(), fcntl.F_GETFL)
        assert not flags & os.O_NONBLOCK
        assert fcntl.fcntl(f.fileno(), fcntl.F_GETFD) & fcntl.FD_CLOEXEC
        assert f.read() == b"abc"


def test_a_file_that_grows_past_the_limit_while_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fstat said small, the file is bigger by the time it is read (a writer appends): at most
    max_bytes + 1 bytes are read and the file is refused."""
    path = tmp_path / "growing.json"
    path.write_bytes(b"x" * 5000)
    real_fstat = os.fstat

    def stale(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, *info[1:6], 10, *info[7:]))  # st_size as it was: 10 bytes

    monkeypatch.setattr(files.os, "fstat", stale)
    reads: list[int] = []
    real_fdopen = os.fdopen

    def counting(fd: int, *a, **k):
        f = real_fdopen(fd, *a, **k)
        raw_read = f.read

        class Counting:
            def __enter__(self):
                return self

            def __exit__(self, *exc: object) -> None:
                f.close()

            def read(self, n: int) -> bytes:
                data = raw_read(n)
                reads.append(len(data))
                return data

        return Counting()

    monkeypatch.setattr(files.os, "fdopen", counting)
    with pytest.raises(FileCheckError, match="it grew while being read"):
        read_checked(path, 100, "design file")
    assert sum(reads) == 101


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=3000), limit=st.integers(0, 2500))
def test_read_checked_returns_the_bytes_iff_they_fit(tmp_path: Path, data: bytes, limit: int) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    if len(data) <= limit:
        assert read_checked(path, limit, "file") == data
    else:
        with pytest.raises(FileCheckError, match=f"is {len(data):,} bytes, more than the {limit:,} allowed"):
            read_checked(path, limit, "file")


@settings(max_examples=40, deadline=None)
@given(mode=st.sampled_from([0o010000, 0o020000, 0o060000, 0o140000, 0o040000, 0o120000]))
def test_every_non_regular_kind_has_a_name(mode: int) -> None:
    name = files.kind_of(mode | 0o644)
    assert name.startswith("a ") and name != "a regular file"


# ----------------------------------------------------------------------------- a log folder


def _log_folder(folder: Path) -> Path:
    """Two normal rank logs, long enough that the reader reads the next file ahead."""
    folder.mkdir()
    for rank in (0, 1):
        (folder / f"worker_{rank}.log").write_text("".join(LOSS.format(s=s, v=2.5 - s / 1e4) for s in range(1, 3001)))
    return folder


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("command", ["watch", "diagnose"])
def test_a_special_file_among_the_logs_is_skipped_and_named(
    command: str, kind: str, tmp_path: Path, bound_socket
) -> None:
    """`mkfifo d/worker_6.log` beside normal logs hung `watch --once` and `diagnose` forever (the
    read-ahead opened it before looking at its type)."""
    folder = _log_folder(tmp_path / "logs")
    _special(kind, folder, "worker_6.log", bound_socket)
    args = [command, *(["--once"] if command == "watch" else [])]
    if kind == "zero":  # a link to /dev/zero: outside the folder, not followed unless asked
        refused = _cli(*args, str(folder))
        assert "worker_6.log: a link to /dev/zero, outside the chosen folder" in refused.stdout, refused
        args.append("--follow-links")  # followed: the opener refuses the device itself
    result = _cli(*args, str(folder))
    assert "Traceback" not in result.stderr, result.stderr
    assert f"worker_6.log: {KINDS[kind]}, not a regular file" in result.stdout
    if command == "watch":
        assert "loss rows=6000" in result.stdout
    else:
        assert result.stdout.startswith("ranks: 3")


@pytest.mark.parametrize("name", ["scheduler.log", "msrun.log"])
def test_a_fifo_in_a_non_rank_role_is_named_too(name: str, tmp_path: Path) -> None:
    folder = _log_folder(tmp_path / "logs")
    _fifo(folder, name)
    for args in (["watch", "--once"], ["diagnose"]):
        result = _cli(*args, str(folder))
        assert f"skipped {name}: a FIFO (named pipe), not a regular file" in result.stdout, (args, result)


# ----------------------------------------------------------------------------- terminal-safe output

HOSTILE = "ValueError: bad \x1b[31mred\x1b[0m \x1b]0;owned\x07 \x1b[2J\x1b[H \x9b1;1H end\r\x08\x7f\u202e"


@pytest.mark.parametrize("command", ["watch", "diagnose"])
def test_log_text_reaches_the_terminal_without_control_sequences(command: str, tmp_path: Path) -> None:
    """A crashed rank's exception line held escape sequences (recolour, retitle, clear screen):
    `diagnose` printed them raw, so did `watch`."""
    folder = _log_folder(tmp_path / "logs")
    with (folder / "worker_1.log").open("a", encoding="utf-8") as f:
        f.write(f'Traceback (most recent call last):\n  File "train.py", line 1, in <module>\n{HOSTILE}\n')
    result = _cli(command, *(["--once"] if command == "watch" else []), str(folder))
    assert result.returncode == 1, result.stderr
    assert "ValueError: bad red    end" in result.stdout
    assert all(ch.isprintable() for line in result.stdout.splitlines() for ch in line), result.stdout


def test_diagnose_json_keeps_the_text_escaped(tmp_path: Path) -> None:
    folder = _log_folder(tmp_path / "logs")
    with (folder / "worker_1.log").open("a", encoding="utf-8") as f:
        f.write(f"Traceback (most recent call last):\n{HOSTILE}\n")
    _fifo(folder, "worker_6.log")
    result = _cli("diagnose", "--json", str(folder))
    assert "\x1b" not in result.stdout and "\\u001b[31m" in result.stdout
    import json

    assert json.loads(result.stdout)["skipped"] == {"worker_6.log": "a FIFO (named pipe), not a regular file"}


_SEQUENCES = st.sampled_from(
    [
        "\x1b[31m",
        "\x1b[2J",
        "\x1b[?25l",
        "\x1b]0;title\x07",
        "\x1b]8;;http://x\x1b\\",
        "\x9b2K",
        "\x1bc",
        "\x1b(B",
        "\x07",
        "\x00",
        "\x7f",
        "\x85",
        "\u202e",
        "\u200b",
    ]
)
_PLAIN = st.text(st.characters(codec="utf-8", categories=["L", "N", "P", "S"]).filter(str.isprintable), max_size=20)


@settings(deadline=None)
@given(parts=st.lists(st.one_of(_PLAIN, _SEQUENCES), max_size=12))
def test_terminal_safe_keeps_the_words_and_drops_every_sequence(parts: list[str]) -> None:
    from core.cli.common import terminal_safe

    out = terminal_safe("".join(parts))
    assert out.isprintable() or out == ""
    assert "".join(p for p in parts if p.isprintable()) == out  # plain text kept as it was, in order
    assert terminal_safe(out) == out


@settings(deadline=None)
@given(text=st.text(max_size=200))
def test_terminal_safe_output_is_always_one_printable_line(text: str) -> None:
    from core.cli.common import terminal_safe

    out = terminal_safe(text)
    assert out.isprintable() or out == ""
    assert "\n" not in out and "\x1b" not in out


# ----------------------------------------------------------------------------- designs, configs, job.json


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_special_design_file_is_a_one_line_error(kind: str, tmp_path: Path, bound_socket) -> None:
    path = _special(kind, tmp_path, "design.json", bound_socket)
    line = _one_line_error(_cli("preview", "--design", str(path)))
    assert line.startswith("error: ") and line.endswith(f"cannot read {path}: {KINDS[kind]}, not a regular file")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_special_mindformers_config_is_a_one_line_error(kind: str, tmp_path: Path, bound_socket) -> None:
    """`--mindformers-config /dev/zero` read 2.5 GB, then a MemoryError traceback; a FIFO hung."""
    (tmp_path / "run_mindformer.py").write_text("print('never started')\n")
    config = _special(kind, tmp_path, "llama.yaml", bound_socket)
    result = _cli(
        "launch",
        "--script",
        str(tmp_path / "run_mindformer.py"),
        "--devices",
        "8",
        "--mindformers-config",
        str(config),
        "--workspace",
        str(tmp_path / "ws"),
    )
    assert result.returncode == 2
    line = _one_line_error(result)
    assert line == f"error: cannot read the MindFormers config {config.resolve()}: {KINDS[kind]}, not a regular file"
    assert not (tmp_path / "ws" / "runs").exists() or not any((tmp_path / "ws" / "runs").iterdir())


def test_the_real_dev_zero_as_mindformers_config(tmp_path: Path) -> None:
    (tmp_path / "run_mindformer.py").write_text("print('never started')\n")
    result = _cli(
        "launch",
        "--script",
        str(tmp_path / "run_mindformer.py"),
        "--devices",
        "8",
        "--mindformers-config",
        "/dev/zero",
        "--workspace",
        str(tmp_path / "ws"),
    )
    assert _one_line_error(result) == (
        "error: cannot read the MindFormers config /dev/zero: a character device, not a regular file"
    )


def test_an_oversized_mindformers_config_names_its_size(tmp_path: Path) -> None:
    from core.run.mindformers import MAX_BYTES, read_parallel_config

    path = tmp_path / "big.yaml"
    path.write_text("parallel_config:\n  data_parallel: 8\n" + "#" * MAX_BYTES)
    with pytest.raises(ValueError, match=f"bytes, more than the {MAX_BYTES:,} allowed"):
        read_parallel_config(path)


def test_the_mindformers_config_is_read_once_per_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Launch page asks for the parallel_config twice per rerun (check, then the view), and reruns
    every few seconds: the file is read again only when it changed."""
    from core.run import mindformers

    path = tmp_path / "llama.yaml"
    path.write_text("parallel_config:\n  data_parallel: 2\n  model_parallel: 4\n")
    reads: list[str] = []
    real = mindformers.read_checked

    def counting(p, *a, **k):
        reads.append(str(p))
        return real(p, *a, **k)

    monkeypatch.setattr(mindformers, "read_checked", counting)
    for _ in range(5):
        assert mindformers.read_parallel_config(path)["model_parallel"] == 4
    assert len(reads) == 1
    path.write_text("parallel_config:\n  data_parallel: 2\n  model_parallel: 2\n  pipeline_stage: 2\n")
    os.utime(path, ns=(1, 10**18))  # a new mtime even on a coarse clock
    assert mindformers.read_parallel_config(path)["pipeline_stage"] == 2
    mindformers.read_parallel_config(path)["pipeline_stage"] = 99  # a caller's dict is its own copy
    assert mindformers.read_parallel_config(path)["pipeline_stage"] == 2
    assert len(reads) == 2


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_special_job_json_is_a_one_line_error(kind: str, tmp_path: Path, bound_socket) -> None:
    job = tmp_path / "job"
    assert _cli("generate", "--out", str(job)).returncode == 0
    (job / "job.json").unlink()
    path = _special(kind, job, "job.json", bound_socket)
    result = _cli("launch", str(job), "--workspace", str(tmp_path / "ws"))
    assert result.returncode == 2
    line = _one_line_error(result)
    assert line.endswith(f"(job.json missing or unreadable: job file {path} is {KINDS[kind]}, not a regular file)")


def test_the_launch_page_reads_the_config_once_and_refuses_a_fifo(tmp_path: Path) -> None:
    """The Launch page read the --mindformers-config path twice on every rerun, and a FIFO there froze it."""
    (tmp_path / "run_mindformer.py").write_text("print('never started')\n")
    (tmp_path / "llama.yaml").write_text("parallel_config:\n  data_parallel: 2\n  model_parallel: 4\n")
    _fifo(tmp_path, "pipe.yaml")
    result = _python(
        """
        import os, sys
        from pathlib import Path
        from streamlit.testing.v1 import AppTest
        from core.run import mindformers

        folder = Path(sys.argv[1])
        os.environ["SHARDSCOPE_WORKSPACE"] = str(folder / "ws")
        reads = []
        real = mindformers.read_checked
        mindformers.read_checked = lambda p, *a, **k: reads.append(p) or real(p, *a, **k)
        at = AppTest.from_file("pages/launch.py", default_timeout=50)
        at.run()
        at.text_input(key="own_script").set_value(str(folder / "run_mindformer.py"))
        at.toggle(key="own_mf").set_value(True).run()
        at.text_input(key="own_mf_config").set_value(str(folder / "llama.yaml")).run()
        for _ in range(3):
            at.run()
        assert not at.exception, at.exception
        print("views", sum("= **8** devices" in m.value for m in at.markdown))
        print("reads", len(reads))
        at.text_input(key="own_mf_config").set_value(str(folder / "pipe.yaml")).run()
        assert not at.exception, at.exception
        print("errors", [e.value for e in at.error])
        """,
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "views 1" and lines[1] == "reads 1"
    assert "a FIFO (named pipe), not a regular file" in lines[2] and "pipe.yaml" in lines[2]


def test_run_files_and_log_tails_that_are_fifos_never_block(tmp_path: Path) -> None:
    """The Monitor's raw log tail, a run's run.json, the Slurm exit file and output, a recording's
    timing.json: each read a FIFO with a blocking open before."""
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    for name in ("run.json", "slurm_exit_code", "slurm-7.out", "worker_0.log"):
        _fifo(run, name)
    rec = tmp_path / "rec"
    rec.mkdir()
    _fifo(rec, "timing.json")
    result = _python(
        """
        import sys
        from pathlib import Path
        from core.logs.live.replay import load_recording
        from core.logs.judgement.status import tail_lines
        from core.run import slurm
        from core.run.registry import read_record
        from core.run.states import LaunchError

        run, rec = Path(sys.argv[1]), Path(sys.argv[2])
        print("tail", tail_lines(run / "worker_0.log"))
        print("exit", slurm.read_exit_file(run / "slurm_exit_code"))
        print("tasks", repr(slurm.task_errors(run / "slurm-7.out")))
        try:
            read_record(run)
        except LaunchError as exc:
            print("record", exc)
        try:
            load_recording(rec)
        except ValueError as exc:
            print("recording", exc)
        """,
        str(run),
        str(rec),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "tail []",
        "exit None",
        "tasks ''",
        f"record run r1 has no readable run.json: run file {run / 'run.json'} is a FIFO (named pipe), "
        "not a regular file",
        f"recording recording timing file {rec / 'timing.json'} is a FIFO (named pipe), not a regular file",
    ]


def test_many_skipped_files_are_counted_not_listed_one_by_one(tmp_path: Path) -> None:
    folder = _log_folder(tmp_path / "logs")
    for rank in range(10, 40):
        (folder / f"worker_{rank}.log").mkdir()
    result = _cli("diagnose", str(folder))
    skipped = [line for line in result.stdout.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 21 and skipped[-1] == "skipped 10 more files"
    assert skipped[0] == "skipped worker_10.log: a folder, not a regular file"


def test_a_home_of_no_user_is_a_path_not_a_crash() -> None:
    """`~0` names no user: Path.expanduser raises RuntimeError; the product says the path does not exist
    (hypothesis found it through the own-script check)."""
    from core.files import expand_home
    from core.logs.bytes.guard import LogDirError, validate_log_dir
    from core.run.own import OwnJob, check_own
    from core.run.registry import LaunchError

    assert expand_home("~0/x.py") == Path("~0/x.py")
    assert expand_home("~") == Path.home()
    with pytest.raises(LaunchError):
        check_own(OwnJob(script="~0", device_num=1))
    with pytest.raises(LogDirError):
        validate_log_dir("~0")
