"""`python -m core preview`: the per-rank table in a terminal, clear errors on bad input."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.__main__ import main
from core.cli.preview import code_report, operator_blocks
from core.codegen import RunOptions, render_job
from core.sharding.design import load_design

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
    bad.write_text(
        '{"tensors": {"x": {"shape": [3], "layout": "l", "map": ["dp"]}}, '
        '"layouts": {"l": {"device_matrix": [2], "alias_name": ["dp"]}}, "device_num": 2}'
    )
    result = subprocess.run(
        [sys.executable, "-m", "core", "preview", "--design", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "$.tensors.x: x dimension 0 has size 3, which is not divisible by its split 2" in result.stderr
    assert "Traceback" not in result.stderr


EXAMPLES = sorted((REPO / "examples").glob("*.json"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_preview_code_is_what_train_py_contains(path: Path) -> None:
    """Issue 20: the preview's code of every operator is, as is, in the generated train.py's __init__."""
    design = load_design(path)
    blocks = operator_blocks(design)
    if not blocks:
        assert "no operator is in the design" in code_report(design)
        return
    train_py = render_job(design, RunOptions(device_num=design.device_num))["train.py"]
    for name, block in blocks.items():
        assert textwrap.indent(block, " " * 8) in train_py, name
        assert block in code_report(design)
    for line in code_report(design).splitlines()[1:]:
        if line.startswith(tuple(design.layouts)):
            assert line in train_py  # the layout definitions too


def test_preview_prints_the_operator_code(capsys) -> None:
    assert main(["preview", "--design", str(REPO / "examples/seed004_dense_matmul.json"), "--tensor", "x"]) == 0
    out = capsys.readouterr().out
    assert "MindSpore code (the lines train.py contains):" in out
    assert 'layout = Layout((2, 2, 2), ("dp", "sp", "mp"))' in out
    assert "self.matmul1 = ops.MatMul(transpose_a=False, transpose_b=False).shard(in_strategy=(" in out
    assert "ops.RmsNorm" not in out and ".shard((" not in out


def test_preview_rms_norm_is_the_composed_one() -> None:
    design = load_design(REPO / "examples/attention_block.json")
    block = operator_blocks(design)["attn_norm"]
    assert "ops.RmsNorm" not in block
    assert block.splitlines()[0].startswith("self.attn_norm_square = ops.Square().shard(in_strategy=(")
