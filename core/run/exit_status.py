"""Run a launcher and leave its exit status in a file: `python -I exit_status.py STATUS_FILE ARGV...`.

Why: the supervisor is the launcher's parent, so only it can collect the launcher's exit status;
if the supervisor is killed, the status goes to init and the run's end was unknown (recorded
failed). The supervisor starts the launcher through this wrapper instead: the wrapper outlives the
supervisor (its own session), waits for the launcher and writes its status (the returncode: -N for
signal N) atomically to STATUS_FILE, which the registry reads whoever judges the run's end.

The wrapper leads the run's session and is the pid the record holds: the stop signals it gets are
passed on to the launcher. Standard library only, run with `-I` (isolated: nothing of the
workspace or PYTHONPATH is imported into it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from types import FrameType

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
CANNOT_START = 127  # what a shell returns for a command it cannot run


def write_status(path: str, code: int) -> None:
    """Temp file + rename: a reader sees the whole number or no file. A write that fails (a full disk)
    leaves no file: the wrapper still exits with the status, which the supervisor collects."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # a leftover (or a planted link) at this name: created anew below, never followed
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        with open(os.open(tmp, flags, 0o644), "w", encoding="utf-8") as out:
            out.write(f"{code}\n")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        with contextlib.suppress(OSError):  # unbuffered: nothing is left to fail again at exit (status 120)
            os.write(2, f"cannot write the exit status file {path}: {exc.strerror or exc}\n".encode())


def run(status_file: str, argv: list[str]) -> int:
    """Start argv (no shell), pass the stop signals on to it, wait, record its status; returns it."""
    child: subprocess.Popen[bytes] | None = None
    pending: list[int] = []

    def forward(sig: int, _frame: FrameType | None) -> None:
        if child is None:
            pending.append(sig)  # arrived before the launcher existed: passed on once it does
        elif child.returncode is None:
            child.send_signal(sig)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    try:
        child = subprocess.Popen(argv)
    except OSError as exc:
        print(f"cannot start {argv[0]}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        code = CANNOT_START
    else:
        for early in pending:
            child.send_signal(early)
        code = child.wait()
    write_status(status_file, code)
    return code


def main(args: list[str]) -> int:
    if len(args) < 2:
        print("usage: python -I exit_status.py STATUS_FILE ARGV... (internal)", file=sys.stderr)
        return 2
    code = run(args[0], args[1:])
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
