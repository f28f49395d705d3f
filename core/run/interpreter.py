"""The user's own Python for a run: their training environment (MindFormers, MindCV, pins such as numpy<2),
kept apart from the dashboard's.

msrun starts its workers with the bare `python` found on PATH (DESIGN.md), and a run's scheduler and
workers must all use the same interpreter. So a run with its own interpreter gets a `bin/` folder of
small wrappers (`python`, `python3`, `msrun`) that exec that interpreter, first on the job's PATH. A
wrapper rather than a symlink: a virtualenv's `bin/python` is itself a symlink, and Python finds its
virtualenv from the path it was started by, so a link to it would lose the environment.
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

from core.files import expand_home
from core.run.states import LaunchError

BIN_DIR = "bin"
_MSRUN = "import sys; from mindspore.parallel.cluster.run import main; sys.argv[0] = 'msrun'; sys.exit(main())"


def check_python(value: object) -> str:
    """An absolute path to an executable regular file, or LaunchError saying what is wrong.

    The path is made absolute but not resolved: `venv/bin/python` must stay the venv's (see above).
    """
    if not isinstance(value, str) or not value.strip() or not value.isprintable() or len(value) > 1024:
        raise LaunchError(f"Python interpreter {value!r} must be a printable path")
    path = expand_home(value).absolute()
    try:
        info = path.stat()
    except OSError as exc:
        raise LaunchError(f"Python interpreter {path} does not exist ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise LaunchError(f"Python interpreter {path} is not a file")
    if not os.access(path, os.X_OK):
        raise LaunchError(f"Python interpreter {path} is not executable")
    return str(path)


def wrappers(python: str) -> dict[str, str]:
    """name -> shell script: `python`/`python3` exec the interpreter, `msrun` runs MindSpore's msrun with it."""
    exe = shlex.quote(python)
    run_python = f'#!/bin/sh\nexec {exe} "$@"\n'
    return {
        "python": run_python,
        "python3": run_python,
        "msrun": f'#!/bin/sh\nexec {exe} -c {shlex.quote(_MSRUN)} "$@"\n',
    }


def write_bin_dir(run_dir: Path, python: str) -> Path:
    """Write the wrappers into RUN_DIR/bin (executable) and return that folder, for the front of PATH."""
    bin_dir = run_dir / BIN_DIR
    bin_dir.mkdir(exist_ok=True)
    for name, text in wrappers(python).items():
        path = bin_dir / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)
    return bin_dir
