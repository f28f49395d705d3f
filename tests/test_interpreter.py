"""The user's own Python: checked, and the run's `bin/` wrappers start that interpreter (venv kept)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from core.run.interpreter import check_python, write_bin_dir
from core.run.states import LaunchError
from tests.helpers import other_venv


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return other_venv(tmp_path_factory.mktemp("uservenv") / "venv")


def test_bad_interpreters_get_one_line(tmp_path: Path) -> None:
    (tmp_path / "notexec").write_text("#!/bin/sh\n")
    cases = {
        str(tmp_path / "missing"): "does not exist",
        str(tmp_path): "is not a file",
        str(tmp_path / "notexec"): "is not executable",
        "": "must be a printable path",
        "py\nthon": "must be a printable path",
    }
    for value, why in cases.items():
        with pytest.raises(LaunchError, match=why):
            check_python(value)


def test_a_venv_python_is_kept_as_given_not_resolved(venv_python: Path) -> None:
    assert venv_python.is_symlink()  # venv/bin/python -> the base interpreter
    assert check_python(str(venv_python)) == str(venv_python)


def test_wrappers_run_the_users_venv(tmp_path: Path, venv_python: Path) -> None:
    bin_dir = write_bin_dir(tmp_path, str(venv_python))
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    for name in ("python", "python3"):
        out = subprocess.run(
            [name, "-c", "import sys; print(sys.executable, sys.prefix)"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.split()
        assert out == [str(venv_python), str(venv_python.parent.parent)]
    usage = subprocess.run(["msrun", "--help"], env=env, capture_output=True, text=True, timeout=120)
    assert usage.returncode == 0 and "--worker_num" in usage.stdout


def test_a_path_with_spaces_and_quotes_stays_one_argument(tmp_path: Path, venv_python: Path) -> None:
    odd = tmp_path / "it's a venv"
    odd.mkdir()
    (odd / "python").symlink_to(venv_python)
    bin_dir = write_bin_dir(tmp_path, str(odd / "python"))
    out = subprocess.run([str(bin_dir / "python"), "-c", "print(42)"], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "42", out.stderr
