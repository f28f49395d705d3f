"""`python -m core ARGS` for the corpus test, each run a fresh process forked from one that imported the CLI once.

The corpus test asks ~1,400 commands. As `python -m core` subprocesses each paid the interpreter's start and the
imports (numpy, pandas, numba, the log reader): about 1 s of CPU of a ~1.2 s run. A fork server
(`multiprocessing`'s "forkserver" context) imports them once; every run is still its own process, so it starts
from a clean state, and its exit status, stdout and stderr are captured as a subprocess's would be. The server
itself is forked before any test thread runs in it, so a child never inherits a lock held by another thread.
`run_cli(..., fresh=True)` runs a real `python -m core` subprocess instead (the tests compare the two).
"""

from __future__ import annotations

import locale
import multiprocessing
import multiprocessing.connection
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_CONTEXT = multiprocessing.get_context("forkserver")
# The modules every corpus run imports; the server imports them once, before its first fork.
# (pytest too: a child re-imports the parent's main module, `pytest.__main__` under `python -m pytest`.)
_CONTEXT.set_forkserver_preload(["tests.corpus_cli", "core.__main__", "core.cli.watch", "core.cli.diagnose", "pytest"])


# A process's exit status is read once off its sentinel, and `Process.start` polls every other running child's: two
# threads reading one sentinel at once leave one of them at EOF (multiprocessing then says 255). Starts and status
# reads take turns; the waits themselves do not.
_STATUS_READS = threading.Lock()


def _child(argv: list[str], out_path: str, err_path: str) -> None:
    """In the forked process: stdout and stderr go to the files as a pipe's would, then the CLI's own exit."""
    os.chdir(REPO)
    for fd, path in ((1, out_path), (2, err_path)):
        target = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    # as Python opens a pipe: the locale's encoding, strict on stdout, backslashreplace on stderr
    encoding = locale.getencoding()
    sys.stdout = open(1, "w", encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False)  # noqa: SIM115
    from core.__main__ import main

    try:
        code = main(argv)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    sys.exit(code)


def run_cli(*args: str, timeout_s: float, fresh: bool = False) -> subprocess.CompletedProcess[str]:
    """The outcome of `python -m core ARGS`: a forked run (or, `fresh`, a real subprocess); killed after timeout_s."""
    argv = list(args)
    if fresh:
        return subprocess.run(
            [sys.executable, "-m", "core", *argv],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    with tempfile.TemporaryDirectory(prefix="corpus-cli-") as tmp:
        out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        for path in (out_path, err_path):
            Path(path).touch()
        proc = _CONTEXT.Process(target=_child, args=(argv, out_path, err_path), daemon=True)
        with _STATUS_READS:
            proc.start()
        ended = multiprocessing.connection.wait([proc.sentinel], timeout_s)
        with _STATUS_READS:
            if not ended:
                proc.kill()
            proc.join()
        if not ended:
            raise subprocess.TimeoutExpired(["python", "-m", "core", *argv], timeout_s)
        stdout = Path(out_path).read_text(encoding="utf-8", errors="replace")
        stderr = Path(err_path).read_text(encoding="utf-8", errors="replace")
    code = proc.exitcode if proc.exitcode is not None else -1
    return subprocess.CompletedProcess(["python", "-m", "core", *argv], code, stdout, stderr)
