"""The CPU rehearsal trains the design's own network: the model library's small LLaMA-style decoder
runs for real through msrun with 8 workers, and every rank logs losses that go down."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.run.launch import stop, wait
from core.run.rehearsal import rehearsal_options, start_rehearsal
from core.sharding.design import load_design
from core.workspace import EXAMPLES_DIR

pytestmark = pytest.mark.integration
TINY = EXAMPLES_DIR / "llama_tiny_cpu.json"


def test_small_decoder_rehearsal_every_rank_loss_goes_down(tmp_path: Path) -> None:
    design = load_design(TINY)
    assert design.repeat is not None and design.loss == "cross_entropy"
    options = rehearsal_options(master_port=8131)
    record = start_rehearsal(tmp_path / "ws", design, options)
    try:
        final = wait(record.run_id, tmp_path / "ws", timeout=900)
    finally:
        if wait(record.run_id, tmp_path / "ws", timeout=0).is_running:
            stop(record.run_id, tmp_path / "ws", grace=5)
    assert final.status == "succeeded", final.message
    train_py = (final.run_dir / "train.py").read_text()
    assert "class Block(nn.Cell)" in train_py and "self.layers = nn.CellList" in train_py  # the decoder itself
    snap = read_run(final.log_dir)
    losses = snap.metrics.dropna(subset=["loss"])
    assert sorted(losses["rank"].unique()) == list(range(8))
    for rank, rows in losses.groupby("rank"):
        values = rows.sort_values(["epoch", "step"])["loss"].tolist()
        assert len(values) >= 10, rank
        head, tail = sum(values[:3]) / 3, sum(values[-3:]) / 3
        assert tail < head * 0.9, f"rank {rank}: loss {head:.3f} -> {tail:.3f} did not go down"
