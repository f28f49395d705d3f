"""`python -m core preview`: the per-rank table in a terminal, clear errors on bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core.__main__ import main

REPO = Path(__file__).resolve().parent.parent


def test_preview_prints_seed_004_row_0_ranks(capsys) -> None:
    assert main(["preview", "--design", str(REPO / "examples/seed004_dense_matmul.json"), "--tensor", "x"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    row0 = {r[5]: int(r[0]) for r in rows if r[4].startswith("[0:")}  # column slice -> rank, first row block
    assert row0 == {"0:1]": 0, "1:2]": 4, "2:3]": 2, "3:4]": 6}
    assert "tensor_map=(0, (1, 2))" in out


def test_preview_every_tensor_of_the_mlp(capsys) -> None:
    assert main(["preview", "--design", str(REPO / "examples/seed004_mlp.json")]) == 0
    out = capsys.readouterr().out
    assert "fc2_weight (512, 512) float32 -> layout2(tp, None)" in out
    assert "fc3_weight (512, 10) float32: not sharded" in out


def test_preview_errors_are_messages_not_tracebacks(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"tensors": {"x": {"shape": [3], "layout": "l", "map": ["dp"]}}, '
                   '"layouts": {"l": {"device_matrix": [2], "alias_name": ["dp"]}}, "device_num": 2}')
    result = subprocess.run(
        [sys.executable, "-m", "core", "preview", "--design", str(bad)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "$.tensors.x: x dimension 0 has size 3, which is not divisible by its split 2" in result.stderr
    assert "Traceback" not in result.stderr
