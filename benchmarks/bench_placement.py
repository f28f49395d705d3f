"""Placement speed: ShardScope's vectorised `place`/`rank_slices` vs MindSpore's per-rank helpers.

Prints figures; not a test. Run: .venv/bin/python benchmarks/bench_placement.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mindspore.parallel._tensor import _get_tensor_slice_index, _get_tensor_strategy

from core.sharding.layout import Layout
from core.sharding.placement import place, rank_slices

CASES = [
    ("8 ranks (2,2,2), 2-D", (2, 2, 2), ("dp", "sp", "mp"), ("mp", ("sp", "dp")), (1024, 4096)),
    ("128 ranks (8,4,4), 3-D", (8, 4, 4), ("dp", "sp", "mp"), ("dp", "sp", "mp"), (64, 2048, 4096)),
    (
        "4096 ranks (16,16,16), 4-D",
        (16, 16, 16),
        ("dp", "sp", "mp"),
        ("dp", ("sp", "mp"), "None", "None"),
        (256, 1024, 32, 128),
    ),
    ("4096 ranks (8,8,8,8), 4-D", (8, 8, 8, 8), ("dp", "sp", "mp", "ep"), ("dp", "sp", "mp", "ep"), (64, 64, 64, 64)),
]


def best_ms(fn: Callable[[], object], repeat: int = 7) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return min(times), statistics.median(times)


def replica_groups(shape: tuple[int, ...], tensor_layout) -> list[list[int]]:
    return place(shape, tensor_layout).replica_groups()


def mindspore_per_rank(tensor_layout) -> list[int]:
    """Baseline: MindSpore's own helpers, one Python call per rank (the slice index of every rank)."""
    info = tensor_layout.to_dict()
    dev_mat, tensor_map = list(info["device_matrix"]), list(info["tensor_map"])
    strategy = _get_tensor_strategy(dev_mat, tensor_map)
    return [_get_tensor_slice_index(dev_mat, strategy, tensor_map, r) for r in range(len(info["rank_list"]))]


def main() -> None:
    print(f"{'case':32} {'place()':>12} {'rank_slices()':>15} {'+replica_groups':>16} {'MindSpore per-rank':>20}")
    for label, matrix, aliases, entries, shape in CASES:
        tensor_layout = Layout(matrix, aliases)(*entries)
        p_best, _ = best_ms(partial(place, shape, tensor_layout))
        s_best, _ = best_ms(partial(rank_slices, shape, tensor_layout))
        g_best, _ = best_ms(partial(replica_groups, shape, tensor_layout))
        nested = any(isinstance(e, tuple) for e in entries)
        if nested:
            baseline = "n/a (nested map)"
        else:
            m_best, _ = best_ms(partial(mindspore_per_rank, tensor_layout), repeat=3)
            baseline = f"{m_best:9.2f} ms"
        print(f"{label:32} {p_best:9.2f} ms {s_best:12.2f} ms {g_best:13.2f} ms {baseline:>20}")
    print("\nbudget: a 4096-rank device matrix and a 4-D tensor in <= 50 ms (rank_slices column)")


if __name__ == "__main__":
    main()
