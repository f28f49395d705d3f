"""Operator analysis speed on Transformer-sized designs: the attention_block example scaled to a
LLaMA-2-70B-shaped layer (h 8192, 64 heads, seq 4096, vocab 32000) on 64 cards (dp 8 x mp 8), 80 layers.

Prints figures; not a test. Run: .venv/bin/python benchmarks/bench_analysis.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.sharding.design import Design, design_from_dict, design_to_dict, load_design
from core.sharding.operators import analyze_design
from core.workspace import EXAMPLES_DIR


def scaled(batch: int, seq: int, hidden: int, heads: int, vocab: int, dp: int, mp: int, layers: int) -> Design:
    """The example's operator graph with every size replaced (strategies unchanged: dp / mp axes)."""
    data = design_to_dict(load_design(EXAMPLES_DIR / "attention_block.json"))
    data["device_num"] = dp * mp
    data["layouts"]["layout"]["device_matrix"] = [dp, mp]
    shapes = {
        "tokens": [batch, seq],
        "embedding": [vocab, hidden],
        "attention_norm": [hidden],
        "final_norm": [hidden],
        "lm_head": [hidden, vocab],
    }
    shapes.update({w: [hidden, hidden] for w in ("wq", "wk", "wv", "wo")})
    for name, shape in shapes.items():
        data["tensors"][name]["shape"] = shape
    targets = {2: [batch * seq, hidden], 3: [batch, seq, hidden], 4: [batch, seq, heads, hidden // heads]}
    for op in data["operators"]:
        if op["type"] == "Reshape":
            op["shape"] = targets[len(op["shape"])]
    data["repeat"]["count"] = layers
    return design_from_dict(data)


def main() -> None:
    cases = [
        ("example (8 cards)", load_design(EXAMPLES_DIR / "attention_block.json")),
        ("7B-shaped, 8 cards (dp 2 x mp 4)", scaled(8, 2048, 4096, 32, 32000, 2, 4, 32)),
        ("70B-shaped, 64 cards (dp 8 x mp 8)", scaled(8, 4096, 8192, 64, 32000, 8, 8, 80)),
    ]
    for label, design in cases:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            analyses = analyze_design(design)
            times.append(time.perf_counter() - start)
        bad = [a.name for a in analyses if not a.valid]
        print(
            f"{label:40s} {len(analyses):3d} operators  median {statistics.median(times) * 1000:7.1f} ms"
            + (f"  INVALID: {bad}" if bad else "")
        )


if __name__ == "__main__":
    main()
