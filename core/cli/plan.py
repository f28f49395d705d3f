"""`python -m core plan --hidden H --heads A ... --devices N --card-memory GB`: every parallel recipe for
N cards with its memory per card and communication per step; the best one that fits."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence

from core.cli.common import fail
from core.plan.explore import MAX_CARD_MEMORY_GB, Evaluation, Plan, explore, plan_rows
from core.plan.recipes import DTYPE_ALIASES, DTYPES, PlanError, PlanModel

TABLE_ROWS = 15


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "plan",
        help="memory per card and communication per step of every dp/mp/pp/sp/optimizer/recompute recipe",
        description="Enumerate every parallel recipe for a LLaMA-style decoder on N cards and propose one that fits.",
    )
    model = parser.add_argument_group("model (the model library's LLaMA-style decoder)")
    model.add_argument("--hidden", type=int, required=True, help="hidden size h")
    model.add_argument("--heads", type=int, required=True, help="attention heads a")
    model.add_argument("--kv-heads", type=int, default=None, help="key/value heads (GQA); default: heads")
    model.add_argument("--ffn", type=int, required=True, help="SwiGLU intermediate size")
    model.add_argument("--layers", type=int, required=True, help="decoder layers L")
    model.add_argument("--vocab", type=int, required=True, help="vocabulary size")
    model.add_argument("--seq", type=int, required=True, help="sequence length s")
    model.add_argument("--dtype", default="bf16", help="bf16 (default), fp16 or fp32")
    parser.add_argument("--global-batch", type=int, required=True, help="sequences per optimizer step")
    parser.add_argument("--devices", type=int, required=True, help="cards N")
    parser.add_argument("--card-memory", type=float, required=True, help="memory per card in GB (GiB), e.g. 32 or 64")
    parser.add_argument("--json", action="store_true", help="print the valid recipes as a JSON list")
    parser.add_argument("--all", action="store_true", help="also list invalid recipes (valid: false, reason)")
    parser.set_defaults(func=run)


def model_from_args(args: argparse.Namespace) -> PlanModel:
    dtype = DTYPE_ALIASES.get(args.dtype, args.dtype)
    if dtype not in DTYPES:
        raise PlanError(f"--dtype {args.dtype!r} is not supported: use bf16, fp16 or fp32")
    return PlanModel(
        hidden=args.hidden, heads=args.heads, ffn=args.ffn, layers=args.layers, vocab=args.vocab,
        seq=args.seq, kv_heads=args.kv_heads, dtype=dtype,
    )


def gib(n: float) -> str:
    """Human-readable bytes (binary units, like MindSpore's "GB")."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def format_rows(evaluations: Sequence[Evaluation]) -> str:
    header = ("recipe", "memory/card", "states", "activations", "comm/step", "bubble", "fits")
    rows = [
        (e.recipe.label(), gib(e.memory_bytes), gib(e.model_state_bytes), gib(e.activation_bytes),
         gib(e.comm_bytes), f"{e.bubble:.0%}", "yes" if e.fits else "no")
        for e in evaluations
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def text_report(plan: Plan, show_invalid: bool) -> str:
    valid, fitting = plan.valid, plan.fitting
    lines = [
        f"{len(plan.evaluations)} recipes for {plan.devices} cards: {len(valid)} valid, {len(fitting)} fit in "
        f"{gib(plan.card_memory_bytes)} ({plan.seconds * 1000:.0f} ms)",
        "",
        "Pareto front (no other recipe needs both less memory and less communication):",
        format_rows(plan.pareto[:TABLE_ROWS]),
    ]
    proposal = plan.proposal
    if proposal is not None:
        lines += ["", "Proposed (fits; least recompute and bubble, then least communication):", format_rows([proposal])]
    elif valid:
        least = min(valid, key=lambda e: e.memory_bytes)
        lines += ["", f"No recipe fits: the least memory per card is {gib(least.memory_bytes)} "
                  f"({least.recipe.label()})."]
    else:
        lines += ["", "No valid recipe for this model on this many cards."]
    if show_invalid:
        reasons = Counter(e.reason for e in plan.invalid)
        lines += ["", "Invalid recipes (count, reason):"]
        lines += [f"  {count:6d}  {reason}" for reason, count in reasons.most_common()]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        model = model_from_args(args)
        if not 0 < args.card_memory <= MAX_CARD_MEMORY_GB:
            bound = f"> 0 and at most {MAX_CARD_MEMORY_GB:g} GB"
            raise PlanError(f"--card-memory must be {bound}, got {args.card_memory:g}")
        plan = explore(model, args.global_batch, args.devices, args.card_memory)
    except PlanError as exc:
        return fail(str(exc))
    if args.json:
        chosen = plan.evaluations if args.all else plan.valid
        print(json.dumps(plan_rows(chosen), indent=None))
    else:
        print(text_report(plan, args.all))
    return 0
