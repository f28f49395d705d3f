"""`python -m core plan --hidden H --heads A ... --devices N --card-memory GB`: every parallel recipe for
N cards with its memory per card and communication per step; the best one that fits.
`python -m core plan --mindformers-config FILE [--devices N] [--card-memory GB] [--json]`: the same for the
model of a MindFormers training YAML, with the recipe that YAML runs marked (and whether it fits)."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.cli.common import fail
from core.plan.choices import (
    ATTENTION_SCORES,
    EMBEDDING,
    OPTIMIZER_PARALLEL,
    SP_STORED_INPUTS,
    Choices,
    default_choices,
    with_changes,
)
from core.plan.explore import MAX_CARD_MEMORY_GB, Evaluation, Plan, explore, find_recipe, plan_rows
from core.plan.hardware import DEFAULT_HARDWARE, PRESETS, Hardware, resolve_hardware
from core.plan.megatron import second_opinion
from core.plan.mfconfig import MindFormersConfig, read_config
from core.plan.recipes import CP_ALGOS, DTYPE_ALIASES, DTYPES, PlanError, PlanModel
from core.plan.steptime import ATTENTION_FLOPS, TimeChoices
from core.units import format_bytes

MODEL_FLAGS = ("hidden", "heads", "ffn", "layers", "vocab", "seq")

TABLE_ROWS = 15


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "plan",
        help="memory per card and communication per step of every dp/mp/pp/sp/optimizer/recompute recipe",
        description="Enumerate every parallel recipe for a LLaMA-style decoder on N cards and propose one that fits.",
    )
    parser.add_argument(
        "--mindformers-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="a MindFormers training YAML: its model, its recipe (marked) and its modelling choices",
    )
    model = parser.add_argument_group("model (the model library's LLaMA-style decoder; not with --mindformers-config)")
    model.add_argument("--hidden", type=int, default=None, help="hidden size h")
    model.add_argument("--heads", type=int, default=None, help="attention heads a")
    model.add_argument("--kv-heads", type=int, default=None, help="key/value heads (GQA); default: heads")
    model.add_argument("--ffn", type=int, default=None, help="SwiGLU intermediate size")
    model.add_argument("--layers", type=int, default=None, help="decoder layers L")
    model.add_argument("--vocab", type=int, default=None, help="vocabulary size")
    model.add_argument("--seq", type=int, default=None, help="sequence length s")
    model.add_argument("--dtype", default="bf16", help="bf16 (default), fp16 or fp32")
    parser.add_argument(
        "--global-batch", type=int, default=None, help="sequences per optimizer step (default: the YAML's)"
    )
    parser.add_argument("--devices", type=int, default=None, help="cards N (default: the YAML's dp x mp x pp)")
    parser.add_argument(
        "--card-memory",
        type=float,
        default=None,
        help="memory per card in GB (GiB), e.g. 32 or 64 (default: the YAML's max_device_memory, else --hardware's)",
    )
    choices = parser.add_argument_group("modelling choices (default: the planner's, or the YAML's)")
    choices.add_argument("--param-bytes", type=int, default=None, help="bytes per stored weight element")
    choices.add_argument("--grad-bytes", type=int, default=None, help="bytes per gradient element")
    choices.add_argument("--optimizer-bytes", type=int, default=None, help="optimizer bytes per parameter")
    choices.add_argument("--embedding", choices=EMBEDDING, default=None, help="embedding whole or split over mp")
    choices.add_argument(
        "--sp-stored-inputs",
        choices=SP_STORED_INPUTS,
        default=None,
        help="with sequence parallel, the matmul inputs stored as the slice or gathered",
    )
    choices.add_argument(
        "--attention-scores",
        choices=ATTENTION_SCORES,
        default=None,
        help="softmax output stored, or not (flash attention)",
    )
    choices.add_argument(
        "--optimizer-parallel", choices=OPTIMIZER_PARALLEL, default=None, help="what optimizer parallel splits over dp"
    )
    timing = parser.add_argument_group("step time (see README: Step time)")
    timing.add_argument(
        "--hardware",
        default=None,
        metavar="NAME|FILE.json",
        help=f"the card: {', '.join(PRESETS)} (default {DEFAULT_HARDWARE}) or a JSON file with the same keys",
    )
    timing.add_argument("--efficiency", type=float, default=None, help="achieved fraction of peak (default 0.55)")
    timing.add_argument("--overlap", type=float, default=None, help="fraction of communication hidden (default 0.5)")
    timing.add_argument("--attention-flops", choices=ATTENTION_FLOPS, default=None, help="causal (default) or full")
    parser.add_argument(
        "--context-parallel",
        choices=CP_ALGOS,
        default=None,
        metavar="ALGO",
        help=f"also split the sequence over cp cards with this algorithm ({', '.join(CP_ALGOS)}); "
        "default: the YAML's when it uses context parallel",
    )
    parser.add_argument("--json", action="store_true", help="print the valid recipes as a JSON list")
    parser.add_argument("--all", action="store_true", help="also list invalid recipes (valid: false, reason)")
    parser.set_defaults(func=run)


def model_from_args(args: argparse.Namespace) -> PlanModel:
    missing = [f"--{name}" for name in MODEL_FLAGS if getattr(args, name) is None]
    if missing:
        raise PlanError(f"{', '.join(missing)} needed (or --mindformers-config FILE)")
    dtype = DTYPE_ALIASES.get(args.dtype, args.dtype)
    if dtype not in DTYPES:
        raise PlanError(f"--dtype {args.dtype!r} is not supported: use bf16, fp16 or fp32")
    return PlanModel(
        hidden=args.hidden,
        heads=args.heads,
        ffn=args.ffn,
        layers=args.layers,
        vocab=args.vocab,
        seq=args.seq,
        kv_heads=args.kv_heads,
        dtype=dtype,
    )


def timing_from_args(args: argparse.Namespace) -> TimeChoices:
    """The step-time assumptions: the defaults with the flags given."""
    hardware = resolve_hardware(args.hardware) if args.hardware is not None else None
    return TimeChoices().with_changes(
        hardware=hardware, efficiency=args.efficiency, overlap=args.overlap, attention_flops=args.attention_flops
    )


def format_rows(evaluations: Sequence[Evaluation]) -> str:
    header: tuple[str, ...] = (
        "recipe",
        "memory/card",
        "states",
        "activations",
        "comm/step",
        "bubble",
        "step",
        "tok/s/card",
        "MFU",
    )
    header += ("fits",)
    rows = [
        (
            e.recipe.label(),
            format_bytes(e.memory_bytes),
            format_bytes(e.model_state_bytes),
            format_bytes(e.activation_bytes),
            format_bytes(e.comm_bytes),
            f"{e.bubble:.0%}",
            f"{e.time.step_s:.3g} s" if e.time else "-",
            f"{e.time.tokens_per_s_per_card:,.0f}" if e.time else "-",
            f"{e.time.mfu:.0%}" if e.time else "-",
            "yes" if e.fits else "no",
        )
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
        f"{format_bytes(plan.card_memory_bytes)} ({plan.seconds * 1000:.0f} ms)",
        "",
        "Pareto front (no other recipe needs both less memory and a shorter step):",
        format_rows(plan.time_pareto[:TABLE_ROWS]),
    ]
    proposal = plan.proposal
    if proposal is not None:
        t = plan.timing
        lines += [
            "",
            f"Proposed (fits; the shortest step on {t.hardware.name}, efficiency {t.efficiency:g}, "
            f"overlap {t.overlap:g}):",
            format_rows([proposal]),
        ]
    elif valid:
        least = min(valid, key=lambda e: e.memory_bytes)
        lines += [
            "",
            f"No recipe fits: the least memory per card is {format_bytes(least.memory_bytes)} "
            f"({least.recipe.label()}).",
        ]
    else:
        lines += ["", "No valid recipe for this model on this many cards."]
    if show_invalid:
        reasons = Counter(e.reason for e in plan.invalid)
        lines += ["", "Invalid recipes (count, reason):"]
        lines += [f"  {count:6d}  {reason}" for reason, count in reasons.most_common()]
    return "\n".join(lines)


def choices_from_args(args: argparse.Namespace, base: Choices) -> Choices:
    names = (
        "param_bytes",
        "grad_bytes",
        "optimizer_bytes",
        "embedding",
        "sp_stored_inputs",
        "attention_scores",
        "optimizer_parallel",
    )
    return with_changes(base, {n: getattr(args, n) for n in names if getattr(args, n) is not None})


def card_memory(args: argparse.Namespace, config: MindFormersConfig | None, named: Hardware | None = None) -> float:
    """--card-memory, else the YAML's max_device_memory, else the memory of the card --hardware names."""
    value = args.card_memory
    if value is None and config is not None:
        value = config.max_device_memory_gb
    if value is None and named is not None:
        value = named.memory_gb
    if value is None:
        raise PlanError(
            "--card-memory GB needed (the YAML has no context.max_device_memory)"
            if config
            else "--card-memory GB (or --hardware NAME) needed"
        )
    if not 0 < value <= MAX_CARD_MEMORY_GB:
        raise PlanError(f"--card-memory must be > 0 and at most {MAX_CARD_MEMORY_GB:g} GB, got {value:g}")
    return value


def config_report(config: MindFormersConfig, chosen: Evaluation, plan: Plan, path: Path) -> str:
    lines = [f"{path.name}: {config.recipe.label()} on {config.devices} cards (the YAML's recipe)"]
    if chosen.valid:
        lines.append(
            f"  {format_bytes(chosen.memory_bytes)} per card ({format_bytes(chosen.model_state_bytes)} states + "
            f"{format_bytes(chosen.activation_bytes)} activations) of {format_bytes(plan.card_memory_bytes)}: "
            f"{'fits' if chosen.fits else 'does NOT fit'}; comm {format_bytes(chosen.comm_bytes)}/step"
        )
        if chosen.time is not None:
            t = chosen.time
            lines.append(
                f"  step {t.step_s:.3g} s on {plan.timing.hardware.name} (compute {t.compute_s:.3g} s, exposed comm "
                f"{t.exposed_comm_s:.3g} s, bubble {t.bubble_s:.3g} s): {t.tokens_per_s_per_card:,.0f} tokens/s "
                f"per card, MFU {t.mfu:.0%}"
            )
    else:
        lines.append(f"  cannot run as planned: {chosen.reason}")
    lines.append("  choices: " + ", ".join(f"{k} {v}" for k, v in plan.choices.to_dict().items()))
    for issue in config.unsupported:
        lines.append(f"  not modelled: {issue.key} = {issue.value}: {issue.reason}")
    return "\n".join(lines)


def config_json(config: MindFormersConfig, chosen: Evaluation, rows: list[dict[str, Any]]) -> dict[str, Any]:
    recipe = chosen.to_dict()
    if chosen.valid:  # Megatron-LM's formulas next to ours, part by part, with the cause of each difference
        recipe["second_opinion"] = [
            {
                "part": d.part,
                "shardscope_bytes": round(d.shardscope),
                "megatron_bytes": round(d.megatron),
                "cause": d.cause,
            }
            for d in second_opinion(config.model, chosen)
        ]
    return {
        "model": config.model.__dict__ | {"kv_heads": config.model.kv},
        "config_recipe": recipe | {"cp": chosen.recipe.cp},
        "recipes": rows,
        "unsupported_keys": [i.to_dict() for i in config.unsupported],
        "sources": config.sources,
    }


def run(args: argparse.Namespace) -> int:
    try:
        config = read_config(args.mindformers_config) if args.mindformers_config is not None else None
        if config is not None:
            given = [f"--{n}" for n in (*MODEL_FLAGS, "kv_heads") if getattr(args, n) is not None]
            if given:
                raise PlanError(f"{given[0]} and --mindformers-config: the model comes from the YAML")
            model, base = config.model, config.choices
        else:
            model = model_from_args(args)
            base = default_choices(model.dtype)
        timing = timing_from_args(args)
        card = card_memory(args, config, timing.hardware if args.hardware is not None else None)
        devices = args.devices if args.devices is not None else (config.devices if config else None)
        batch = args.global_batch if args.global_batch is not None else (config.global_batch if config else None)
        if devices is None or batch is None:
            raise PlanError("--devices N and --global-batch B needed (or --mindformers-config FILE)")
        cp_algo = args.context_parallel
        if cp_algo is None and config is not None and config.recipe.cp > 1:
            cp_algo = config.recipe.cp_algo
        plan = explore(model, batch, devices, card, choices_from_args(args, base), timing, cp_algo)
        chosen = find_recipe(plan, config.recipe) if config is not None else None
    except PlanError as exc:
        return fail(str(exc))
    rows = plan_rows(plan.evaluations if args.all else plan.valid)
    if config is not None and chosen is not None:
        if args.json:
            print(json.dumps(config_json(config, chosen, rows), indent=None))
        else:
            print(config_report(config, chosen, plan, args.mindformers_config) + "\n")
            print(text_report(plan, args.all))
        return 0
    if args.json:
        print(json.dumps(rows, indent=None))
    else:
        print(text_report(plan, args.all))
    return 0
