"""Issue 32 item 4: mypy over core, app and pages at 0 errors, `type: ignore` only with its error code,
and DataFrame cells read as typed numbers (core/logs/rows/cells.py)."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import tomllib

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.logs.rows.cells import as_float, as_int
from core.workspace import REPO_ROOT

_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<code>\[[a-z-]+(?:,\s*[a-z-]+)*\])?")


def _mypy_config() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def test_mypy_reports_no_error_over_core_app_and_pages() -> None:
    """The README's test command runs this check (scripts/test.sh); the configuration is pyproject's."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--show-error-codes"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert errors == []
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_mypy_checks_the_product_packages_with_stale_ignores_reported() -> None:
    config = _mypy_config()
    assert config["files"] == ["core", "app", "pages"]
    assert config["python_version"] == "3.11"
    assert config["warn_unused_ignores"] is True
    assert "ignore_missing_imports" not in config  # only per untyped library, in the overrides
    overrides = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]["overrides"]
    assert all(o.get("ignore_missing_imports") is True and o["module"] for o in overrides)


def test_the_test_command_runs_mypy_and_the_dev_requirements_pin_it() -> None:
    script = (REPO_ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert re.search(r"^\.venv/bin/mypy\b", script, re.MULTILINE)
    assert script.index(".venv/bin/mypy") < script.index("-m pytest")
    pins = (REPO_ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    for name in ("mypy", "pandas-stubs", "types-PyYAML", "types-psutil"):
        assert any(re.fullmatch(rf"{re.escape(name)}==[\w.]+", line.strip()) for line in pins), name


def test_every_type_ignore_names_its_error_code() -> None:
    """A bare `# type: ignore` would hide every error on its line, not only the library's gap."""
    bare = []
    for package in ("core", "app", "pages"):
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                m = _IGNORE.search(line)
                if m and not m.group("code"):
                    bare.append(f"{path.relative_to(REPO_ROOT)}:{n}")
    assert bare == []


def test_a_bare_ignore_is_what_the_check_finds() -> None:
    """The pattern above tells a bare ignore from one with its code."""
    assert _IGNORE.search("x = f()  # type: ignore") and not _IGNORE.search("x = f()  # type: ignore").group("code")
    assert _IGNORE.search("x = f()  # type: ignore[arg-type, misc]").group("code") == "[arg-type, misc]"


@given(st.integers(min_value=-(2**62), max_value=2**62))
def test_a_whole_number_cell_reads_as_int_whatever_pandas_holds_it_as(n: int) -> None:
    frame = pd.DataFrame({"rank": [n]})
    assert as_int(frame["rank"].iat[0]) == n
    assert as_int(np.int64(n)) == n
    assert type(as_int(frame["rank"].iat[0])) is int


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_float_cell_reads_as_the_same_float(x: float) -> None:
    got = as_float(pd.Series([x], dtype=np.float64).iat[0])
    assert type(got) is float
    assert (math.isnan(got) and math.isnan(x)) or got == x
    assert as_float(str(x)) == x or math.isnan(x)


@pytest.mark.parametrize("bad", [None, object(), [1], {"a": 1}, pd.NaT, b"\xff"])
def test_anything_else_in_a_cell_is_a_type_error_not_a_number(bad: object) -> None:
    with pytest.raises(TypeError, match="not a number"):
        as_int(bad)
    with pytest.raises(TypeError, match="not a number"):
        as_float(bad)


@pytest.mark.parametrize("text", ["", "abc", "1.5.2"])
def test_text_that_is_not_a_number_fails_as_int_and_float_fail(text: str) -> None:
    with pytest.raises(ValueError):
        as_float(text)
    with pytest.raises(ValueError):
        as_int(text)


def test_a_nan_cell_cannot_be_a_whole_number() -> None:
    with pytest.raises(ValueError):
        as_int(float("nan"))
