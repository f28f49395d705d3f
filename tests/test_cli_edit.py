"""`python -m core edit`: the Designer's edits (core.sharding.edits) on a design file, from a terminal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core.__main__ import main
from core.sharding.design import load_design
from core.workspace import EXAMPLES_DIR, REPO_ROOT

SEED = EXAMPLES_DIR / "seed004_dense_matmul.json"


def test_edit_writes_the_edited_design(tmp_path: Path, capsys) -> None:
    out = tmp_path / "my.json"
    argv = ["edit", "--design", str(SEED), "--out", str(out), "--tensor-shape", "x=16,4"]
    argv += ["--tensor-split", "weight=1,4"]  # renames come first: the new name
    assert main([*argv, "--rename-tensor", "w=weight", "--name", "mine"]) == 0
    design = load_design(out, strict=False)
    assert design.name == "mine" and design.tensors["x"].shape == (16, 4)
    assert "w" not in design.tensors and design.tensors["weight"].sharding.split == (1, 4)
    assert design.operators[0].inputs == ("x", "weight")  # the rename reached the operator
    assert f"wrote {out}: 4 edit(s) applied to mine" in capsys.readouterr().out


def test_edit_reports_what_is_left_to_fix(tmp_path: Path, capsys) -> None:
    out = tmp_path / "bad.json"
    assert main(["edit", "--design", str(SEED), "--out", str(out), "--tensor-shape", "x=3,4"]) == 0
    err = capsys.readouterr().err
    assert "problem: $.tensors.x" in err and "not divisible" in err and "problem(s) left" in err


def test_refused_edits_write_nothing(tmp_path: Path) -> None:
    out = tmp_path / "never.json"
    for bad in (["--tensor-shape", "x=eight"], ["--tensor-shape", "nope=2"], ["--rename-tensor", "x"], []):
        result = subprocess.run(
            [sys.executable, "-m", "core", "edit", "--design", str(SEED), "--out", str(out), *bad],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, bad
        assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
        assert not out.exists()
    assert (
        "'eight' is not a whole number"
        in subprocess.run(
            [
                sys.executable,
                "-m",
                "core",
                "edit",
                "--design",
                str(SEED),
                "--out",
                str(out),
                "--tensor-shape",
                "x=eight",
            ],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        ).stderr
    )
