"""Planner speed: enumerate and evaluate every recipe for a 70B-shaped model on 1,024 cards (target ≤ 1 s).

Cold = a fresh process's first plan (designs built, every weight placed); warm = the same plan again with
the placement cache filled. Prints figures; not a test. Run: .venv/bin/python benchmarks/bench_plan.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.plan import states
from core.plan.explore import explore
from core.plan.recipes import PlanModel

MODEL_70B = PlanModel(hidden=8192, heads=64, ffn=28672, layers=80, vocab=32000, seq=4096, kv_heads=8)
CASES = [
    ("70B, 1,024 cards, global batch 1,024", MODEL_70B, 1024, 1024),
    ("70B, 1,024 cards, global batch 4,096", MODEL_70B, 4096, 1024),
    ("70B, 64 cards, global batch 512", MODEL_70B, 512, 64),
]


def run(model: PlanModel, batch: int, devices: int, repeat: int = 5) -> None:
    states._placed.cache_clear()
    start = time.perf_counter()
    plan = explore(model, batch, devices, 64)
    cold = time.perf_counter() - start
    warm = []
    for _ in range(repeat):
        start = time.perf_counter()
        explore(model, batch, devices, 64)
        warm.append(time.perf_counter() - start)
    print(
        f"  {len(plan.evaluations):6d} recipes ({len(plan.valid)} valid, {len(plan.fitting)} fit in 64 GiB): "
        f"cold {cold * 1000:7.1f} ms, warm median {statistics.median(warm) * 1000:7.1f} ms "
        f"(best {min(warm) * 1000:.1f} ms)"
    )
    if plan.proposal is not None:
        p = plan.proposal
        print(f"  proposal: {p.recipe.label()}  {p.memory_bytes / (1 << 30):.1f} GiB/card, "
              f"{p.comm_bytes / (1 << 30):.2f} GiB comm/step, bubble {p.bubble:.1%}")


def main() -> None:
    print("Planner: enumerate + evaluate every recipe (dp×mp×pp = N, sp, optimizer parallel, recompute, micro-batches)")
    for title, model, batch, devices in CASES:
        print(title)
        run(model, batch, devices)


if __name__ == "__main__":
    main()
