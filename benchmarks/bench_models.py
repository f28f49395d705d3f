"""Model library speed: build + strict round trip + operator analysis of the LLaMA-style designs, and
the Designer's per-tensor preview data (placement, owner grid, rank table) of every tensor.

Why: the Designer analyses the whole design on every rerun and previews any tensor the user picks;
a 70B / 64-card design must stay interactive. Prints figures (median of several runs); not a test.
Run: .venv/bin/python benchmarks/bench_models.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.models import design_parameter_count
from core.models.llama import LlamaConfig, LlamaRecipe, llama_design
from core.sharding.design import Design, design_from_dict, design_to_dict
from core.sharding.operators import analyze_design
from core.sharding.placement import place, rank_table_rows

CASES = {
    "tiny CPU decoder, dp2 mp4": (
        LlamaConfig(64, 8, 128, 16, 8, 2, 128, kv_heads=4, dtype="float32"),
        LlamaRecipe(2, 4),
    ),
    "LLaMA-7B, 8 cards dp2 mp4": (LlamaConfig(4096, 32, 11008, 2048, 8, 32, 32000), LlamaRecipe(2, 4)),
    "LLaMA-2-70B, 64 cards dp8 mp8 sp": (
        LlamaConfig(8192, 64, 28672, 4096, 8, 80, 32000, kv_heads=8),
        LlamaRecipe(8, 8, sp=True),
    ),
}


def median_ms(fn: Callable[[], object], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def previews(design: Design) -> None:
    """What the Designer computes to preview every tensor: placement, a 2-D owner grid, the rank table."""
    for tensor in design.tensors.values():
        if tensor.sharding is None:
            continue
        placement = place(tensor.shape, design.tensor_layout(tensor.sharding))
        if len(tensor.shape) >= 2:
            placement.owner_grid(0, 1)
        rank_table_rows(placement, tensor.dtype)


def main() -> None:
    print(f"{'design':36} {'params':>16} {'build':>8} {'round trip':>11} {'analyze':>8} {'previews':>9}")
    for label, (config, recipe) in CASES.items():
        design = llama_design(config, recipe)
        build = median_ms(lambda c=config, r=recipe: llama_design(c, r))
        trip = median_ms(lambda d=design: design_from_dict(design_to_dict(d)))
        analyze = median_ms(lambda d=design: analyze_design(d))
        preview = median_ms(lambda d=design: previews(d), runs=3)
        print(
            f"{label:36} {design_parameter_count(design):>16,} {build:>6.1f}ms {trip:>9.1f}ms {analyze:>6.1f}ms "
            f"{preview:>7.1f}ms"
        )
    config, recipe = CASES["LLaMA-2-70B, 64 cards dp8 mp8 sp"]
    total = median_ms(lambda: analyze_design(llama_design(config, recipe)))
    print(f"\n70B / 64-card design: build + analyze {total:.1f} ms (median of 7)")


if __name__ == "__main__":
    main()
