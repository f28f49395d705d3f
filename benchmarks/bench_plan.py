"""Planner speed, and the second opinion: ShardScope against Megatron-LM's formulas.

Speed: enumerate and evaluate every recipe for a 70B-shaped model on 1,024 cards (target ≤ 1 s). Cold = a
fresh process's first plan (designs built, every weight placed); warm = the same plan again with the placement
cache filled.
Comparison (`--compare`): LLaMA-2 7B / 13B / 70B on 8 / 16 / 64 / 256 cards, global batch 512, every valid
recipe Megatron-LM's formulas cover (sequence parallel + selective recompute), with the planner's default
choices: the per-card total on stage 0 side by side, the range of differences, how often "fits in 64 GiB"
differs, and each part's difference with its cause. Prints figures; not a test.
Throughput (`--throughput`): each of the 14 MindFormers configs with published tokens/s per card
(tests/fixtures/mindformers/throughput.json, copied from MindFormers' READMEs) planned on its documented
hardware with the planner's ONE global set of step-time assumptions (`core.plan.steptime` defaults), predicted
next to published; the goal is ±30 % for at least 10 of 14 (README "Step time").
Run: .venv/bin/python benchmarks/bench_plan.py [--compare | --throughput]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import json

from core.plan import states
from core.plan.explore import GIB, StructureCache, evaluate, explore
from core.plan.hardware import PRESETS
from core.plan.megatron import covered, second_opinion
from core.plan.mfconfig import read_config
from core.plan.recipes import PlanError, PlanModel, recipe_candidate
from core.plan.steptime import TimeChoices

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
        print(
            f"  proposal: {p.recipe.label()}  {p.memory_bytes / (1 << 30):.1f} GiB/card, "
            f"{p.comm_bytes / (1 << 30):.2f} GiB comm/step, bubble {p.bubble:.1%}"
        )


LLAMA2 = {
    "7B": PlanModel(hidden=4096, heads=32, ffn=11008, layers=32, vocab=32000, seq=4096),
    "13B": PlanModel(hidden=5120, heads=40, ffn=13824, layers=40, vocab=32000, seq=4096),
    "70B": MODEL_70B,
}


def compare(name: str, model: PlanModel, devices: int, batch: int = 512, card_gib: float = 64) -> None:
    """One model on one card count: ShardScope vs Megatron-LM over every covered recipe."""
    plan = explore(model, batch, devices, card_gib)
    cache = StructureCache(model)
    rows = []
    for e in plan.valid:
        if covered(e.recipe):
            rows.append((e, second_opinion(model, e, cache)))
    if not rows:
        print(f"  LLaMA-2 {name:>3} {devices:4d} cards: no valid sp + selective recipe")
        return
    totals = [(diffs[-1].relative, e, diffs) for e, diffs in rows]
    fits_differ = sum((d[-1].shardscope <= card_gib * GIB) != (d[-1].megatron <= card_gib * GIB) for _, _, d in totals)
    low, high = min(totals, key=lambda r: r[0]), max(totals, key=lambda r: r[0])
    print(
        f"  LLaMA-2 {name:>3} {devices:4d} cards: {len(rows):4d} recipes, total {low[0]:+6.1%} .. {high[0]:+6.1%}, "
        f"fits-64-GiB differs on {fits_differ}"
    )
    for tag, (rel, e, diffs) in (("lowest", low), ("highest", high)):
        print(
            f"      {tag:7s} {e.recipe.label():36s} ShardScope {diffs[-1].shardscope / GIB:7.1f} GiB, "
            f"Megatron {diffs[-1].megatron / GIB:7.1f} GiB ({rel:+.1%})"
        )
        for d in diffs[:-1]:
            if d.megatron and abs(d.shardscope - d.megatron) > 0.05 * diffs[-1].megatron:
                share = (d.shardscope - d.megatron) / diffs[-1].megatron
                print(f"          {d.part:42s} {share:+6.1%} of the total: {d.cause[:110]}")


FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mindformers"
HARDWARE = {"Atlas 800T A2": "atlas-800t-a2", "Atlas 900 A2 PoDc": "atlas-900-a2-podc"}
BAND = 0.30


def predicted(file: str, hardware: str) -> tuple[str, float, float]:
    """(recipe label, predicted tokens/s per card, MFU) of a config's own recipe on a preset, default factors."""
    config = read_config(FIXTURES / file)
    model = config.model
    timing = TimeChoices(hardware=PRESETS[hardware])
    e = evaluate(recipe_candidate(model, config.recipe), model, StructureCache(model), 1 << 50, config.choices, timing)
    if e.time is None:
        raise PlanError(f"{file}: {e.reason}")
    return e.recipe.label(), e.time.tokens_per_s_per_card, e.time.mfu


def throughput() -> None:
    """Predicted vs published tokens/s per card, every published row; the goal counts each config's first row."""
    data = json.loads((FIXTURES / "throughput.json").read_text(encoding="utf-8"))
    t = TimeChoices()
    print(
        f"Step-time assumptions (global, never per config): efficiency {t.efficiency}, overlap {t.overlap}, "
        f"attention FLOPs {t.attention_flops}"
    )
    header = f"{'config':42s} {'recipe':38s} {'hardware':18s} {'published':>9s} {'predicted':>9s} {'pred/pub':>8s} MFU"
    print(header)
    print("-" * len(header))
    inside = counted = 0
    for entry in data["configs"]:
        name = entry["file"].split("__")[-1].removesuffix(".yaml")
        for i, row in enumerate(entry["throughput"]):
            label, tokens, mfu = predicted(entry["file"], HARDWARE[row["hardware"]])
            ratio = tokens / row["tokens_per_s_per_card"]
            ok = abs(ratio - 1) <= BAND
            if i == 0:
                counted += 1
                inside += ok
            mark = ("" if ok else "  outside ±30 %") + ("" if i == 0 else "  (second hardware, not counted)")
            print(
                f"{name:42s} {label:38s} {row['hardware']:18s} {row['tokens_per_s_per_card']:9.0f} {tokens:9.0f} "
                f"{ratio:8.2f} {mfu:4.0%}{mark}"
            )
    print(f"\nwithin ±30 % of published: {inside} of {counted} configs (first documented hardware of each)")


def main() -> None:
    if "--throughput" in sys.argv:
        throughput()
        return
    if "--compare" in sys.argv:
        print("ShardScope vs Megatron-LM theoretical_memory_usage (stage 0, default choices, global batch 512)")
        for name, model in LLAMA2.items():
            for devices in (8, 16, 64, 256):
                compare(name, model, devices)
        return
    print("Planner: enumerate + evaluate every recipe (dp×mp×pp = N, sp, optimizer parallel, recompute, micro-batches)")
    for title, model, batch, devices in CASES:
        print(title)
        run(model, batch, devices)


if __name__ == "__main__":
    main()
