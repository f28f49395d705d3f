"""`python -m core model llama|mlp ...`: write a model-library design and print its summary.

The first line of the summary is always `parameters: N` (the full model, counted from the written
design), so scripts can read it; every bad value is one `error: ...` line naming it, exit status 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import NoReturn

from core.cli.common import fail
from core.errors import UserError
from core.models import MODELS, design_parameter_count
from core.models.common import canonical_dtype, dtype_problems
from core.models.llama import LlamaConfig, LlamaRecipe, layer_parameter_count
from core.models.mlp import MlpConfig, MlpRecipe
from core.sharding.design import Design, save_design
from core.sharding.operators import analyze_design
from core.workspace import check_name


class OneLineParser(argparse.ArgumentParser):
    """Argument errors as one `error: ...` line (no usage block), like every other error of the command."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


def positive_int(text: str) -> int:
    """A whole number >= 1 (`1_000` and `1,000` accepted); the error quotes what was given."""
    cleaned = str(text).strip().replace(",", "").replace("_", "")
    # ASCII digits only: '²'.isdigit() is True but int('²') fails, and other scripts' digits are no CLI input
    if not (cleaned.isascii() and cleaned.isdigit()) or int(cleaned) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return int(cleaned)


def dtype_arg(text: str) -> str:
    """bf16 / fp16 / fp32 / fp64 or a full float dtype name; anything else is refused with the choices."""
    problems = dtype_problems(text)
    if problems:
        raise argparse.ArgumentTypeError(problems[0].message)
    return canonical_dtype(text)


def widths_arg(text: str) -> tuple[int, ...]:
    """Comma-separated hidden widths, e.g. `512,512`."""
    parts = [p for p in str(text).replace(" ", "").split(",") if p]
    if not parts:
        raise argparse.ArgumentTypeError(f"{text!r} holds no widths: give e.g. 512,512")
    try:
        return tuple(positive_int(p) for p in parts)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of whole numbers >= 1") from None


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("model", help="write a design from the model library (llama, mlp) and print its summary")
    models = parser.add_subparsers(dest="model", required=True, parser_class=OneLineParser)
    llama = models.add_parser("llama", help=MODELS["llama"].title)
    for flag in ("hidden", "heads", "ffn", "seq", "batch", "layers", "vocab"):
        llama.add_argument(f"--{flag}", type=positive_int, required=True)
    llama.add_argument(
        "--kv-heads", type=positive_int, help="key/value heads for grouped-query attention (default: heads)"
    )
    llama.add_argument("--dtype", type=dtype_arg, default="bfloat16", help="bf16 (default), fp16, fp32, ...")
    _recipe_args(llama)
    llama.add_argument("--sp", action="store_true", help="sequence parallel (norms and residual adds over dp × mp)")
    llama.set_defaults(func=run_llama)
    mlp = models.add_parser("mlp", help=MODELS["mlp"].title)
    mlp.add_argument("--batch", type=positive_int, default=32)
    mlp.add_argument("--features", type=positive_int, default=784)
    mlp.add_argument("--hidden", type=widths_arg, default=(512, 512), help="hidden widths, e.g. 512,512")
    mlp.add_argument("--classes", type=positive_int, default=10)
    mlp.add_argument("--dtype", type=dtype_arg, default="float32")
    _recipe_args(mlp)
    mlp.set_defaults(func=run_mlp)


def _recipe_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dp", type=positive_int, default=1, help="data parallel (default 1)")
    parser.add_argument("--mp", type=positive_int, default=1, help="model (tensor) parallel (default 1)")
    parser.add_argument("--name", help="design name (default: from the shape and recipe)")
    parser.add_argument("--out", help="write the design here (JSON); without it only the summary is printed")


def run_llama(args: argparse.Namespace) -> int:
    config = LlamaConfig(
        hidden=args.hidden,
        heads=args.heads,
        ffn=args.ffn,
        seq=args.seq,
        batch=args.batch,
        layers=args.layers,
        vocab=args.vocab,
        kv_heads=args.kv_heads,
        dtype=args.dtype,
    )
    recipe = LlamaRecipe(dp=args.dp, mp=args.mp, sp=args.sp)
    shape = (
        f"model: llama, hidden {config.hidden}, {config.heads} heads, {config.n_kv} KV heads, ffn {config.ffn}, "
        f"{config.layers} layers, vocab {config.vocab}, seq {config.seq}, batch {config.batch}, {config.dtype}"
    )
    extra = [shape]
    if config.heads and config.hidden % config.heads == 0:
        extra.append(f"per layer: {layer_parameter_count(config):,} parameters")
    return _write("llama", config, recipe, args, extra)


def run_mlp(args: argparse.Namespace) -> int:
    config = MlpConfig(
        batch=args.batch, features=args.features, hidden=tuple(args.hidden), classes=args.classes, dtype=args.dtype
    )
    widths = " -> ".join(str(w) for w in (config.features, *config.hidden, config.classes))
    return _write(
        "mlp", config, MlpRecipe(dp=args.dp, mp=args.mp), args, [f"model: mlp, {widths}, batch {config.batch}"]
    )


def _write(model: str, config: object, recipe: object, args: argparse.Namespace, extra: Sequence[str]) -> int:
    try:
        design = MODELS[model].design(config, recipe, name=args.name)
        name = design.name if args.name is None else args.name  # load_design's check, '' too
        check_name(name if len(name) <= 64 else name[:64] + "...", "design name")
    except UserError as exc:
        return fail(str(exc))
    lines = [f"parameters: {design_parameter_count(design):,}", *extra, *summary_lines(design)]
    if args.out:
        try:
            path = save_design(design, args.out)
        except OSError as exc:
            return fail(f"cannot write {args.out}: {exc.strerror or exc}")
        lines.append(f"wrote {path}")
    else:
        lines.append("not written: pass --out FILE to save the design")
    print("\n".join(lines))
    return 0


def summary_lines(design: Design) -> list[str]:
    """Devices, size of the design, and the collectives the operator analysis finds (per layer in the block)."""
    dp, mp = design.layouts["layout"].device_matrix
    lines = [
        f"devices: {design.device_num} (dp {dp} × mp {mp})",
        f"design: {design.name}, {len(design.tensors)} tensors, {len(design.operators)} operators"
        + (
            f", layer block {design.repeat.first}..{design.repeat.last} × {design.repeat.count}"
            if design.repeat
            else ""
        ),
    ]
    started = time.perf_counter()
    analyses = analyze_design(design)
    seconds = time.perf_counter() - started
    problems = [f"{a.name}: {p}" for a in analyses for p in a.problems]
    kinds = Counter(
        (c.kind, "/".join(c.axes), a.layers > 1) for a in analyses for c in a.communications if c.bytes_per_rank
    )
    parts = [
        f"{kind} over {axes}{' per layer' if per_layer else ''} × {n}" for (kind, axes, per_layer), n in kinds.items()
    ]
    lines.append(f"communication: {', '.join(parts) if parts else 'none'}")
    lines.append(f"analysis: {len(problems)} problem(s) in {seconds * 1000:.0f} ms")
    lines.extend(f"  problem: {p}" for p in problems[:5])
    return lines
