"""The seeds' MNIST MLP (seed 004) as a parametric design: MatMul + ReLU pairs, then a classifier MatMul.

Why: seed 004's network (x [32, 784] -> 512 -> 512 -> 10, cross-entropy; examples/seed004_mlp.json)
is the smallest model the docs shard; generating it for any widths and dp × mp recipe gives the
Designer and the CLI a second, tiny model beside the decoder. Names follow the seed: tensors `x`,
`fc{i}_weight`, operators `matmul{i}` and `relu{i}`.

Strategies (Layout((dp, mp), ("dp", "mp"))), Megatron's pairing as in the seed's matmul1/matmul2:
odd layers split their output columns over mp (`(dp, None) x (None, mp)`, no communication), even
layers split their reduce dimension over mp (`(dp, mp) x (mp, None)`, an AllReduce over mp), so
every column-split layer feeds a row-split one without moving data. A column-split classifier whose
class count mp does not divide keeps its weight whole (like MindFormers' lm_head when vocab % mp != 0).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from core.models.common import (
    NONE,
    DesignBuilder,
    ModelError,
    ModelProblem,
    canonical_dtype,
    divides_problem,
    dtype_problems,
    lay,
    positive_problems,
    recipe_problems,
)
from core.sharding.design import Design, Sharding

MAX_HIDDEN_LAYERS = 64


@dataclass(frozen=True)
class MlpConfig:
    """Seed 004's defaults: batch 32 of 784 features, two hidden layers of 512, 10 classes."""

    batch: int = 32
    features: int = 784
    hidden: tuple[int, ...] = field(default=(512, 512))
    classes: int = 10
    dtype: str = "float32"


@dataclass(frozen=True)
class MlpRecipe:
    dp: int = 1
    mp: int = 1


def mlp_parameter_count(config: MlpConfig) -> int:
    """Σ fan_in × fan_out over the bias-free layers: 784·512 + 512·512 + 512·10 = 668,672 for the seed."""
    widths = [config.features, *config.hidden, config.classes]
    return sum(a * b for a, b in itertools.pairwise(widths))


def mlp_problems(config: MlpConfig, recipe: MlpRecipe) -> list[ModelProblem]:
    """Every reason (config, recipe) cannot be built, each naming the offending value."""
    hidden = tuple(config.hidden)
    problems = positive_problems({"batch": config.batch, "features": config.features, "classes": config.classes})
    problems += dtype_problems(config.dtype) + recipe_problems(recipe.dp, recipe.mp)
    if not 1 <= len(hidden) <= MAX_HIDDEN_LAYERS:
        problems.append(ModelProblem("hidden", f"give 1 to {MAX_HIDDEN_LAYERS} hidden widths, got {len(hidden)}"))
    for i, width in enumerate(hidden):
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            problems.append(ModelProblem("hidden", f"hidden width {i + 1} must be a whole number >= 1, got {width!r}"))
    if problems:
        return problems
    problems += divides_problem("dp", recipe.dp, "batch", config.batch, "the batch is split over dp")
    for i, width in enumerate(hidden):
        problems += divides_problem(
            "mp", recipe.mp, f"hidden width {i + 1}", width, "hidden layers are split over mp (Megatron column/row)"
        )
    return problems


def mlp_design(config: MlpConfig, recipe: MlpRecipe, name: str | None = None) -> Design:
    """The MLP as a design; raises ModelError listing every bad value."""
    problems = mlp_problems(config, recipe)
    if problems:
        raise ModelError(problems)
    dtype = canonical_dtype(config.dtype)
    widths = [config.features, *config.hidden, config.classes]
    build = DesignBuilder(recipe.dp, recipe.mp)
    build.tensor("x", (config.batch, config.features), dtype, "input", "dp", NONE)
    source = "x"
    layers = len(widths) - 1
    for i in range(1, layers + 1):
        fan_in, fan_out = widths[i - 1], widths[i]
        strategy = _strategy(i, fan_out, recipe.mp)
        weight = build.tensor(f"fc{i}_weight", (fan_in, fan_out), dtype, "weight", *strategy[1].map or ())
        source = build.op(f"matmul{i}", "MatMul", (source, weight), strategy)
        if i < layers:
            out = (lay("dp", "mp") if i % 2 else lay("dp", NONE),)
            source = build.op(f"relu{i}", "ReLU", (source,), out)
    return build.build(name or _name(config, recipe), _description(config, recipe), "cross_entropy")


def _strategy(index: int, fan_out: int, mp: int) -> tuple[Sharding, Sharding]:
    """Odd layers column split (output over mp), even layers row split (reduce dimension over mp)."""
    if index % 2 == 0:
        return lay("dp", "mp"), lay("mp", NONE)
    return lay("dp", NONE), lay(NONE, "mp" if fan_out % mp == 0 else NONE)


def _name(config: MlpConfig, recipe: MlpRecipe) -> str:
    return f"mlp_{'x'.join(str(w) for w in config.hidden)}_dp{recipe.dp}_mp{recipe.mp}"


def _description(config: MlpConfig, recipe: MlpRecipe) -> str:
    widths = " -> ".join(str(w) for w in (config.features, *config.hidden, config.classes))
    return (
        f"Seed 004's MLP from the model library: {widths} (ReLU), batch {config.batch}, "
        f"{canonical_dtype(config.dtype)}, "
        f"cross-entropy; {mlp_parameter_count(config):,} parameters. Recipe dp {recipe.dp} × mp {recipe.mp}: "
        "odd layers split columns over mp, even layers split the reduce dimension over mp (AllReduce)."
    )


__all__ = ["MlpConfig", "MlpRecipe", "mlp_design", "mlp_parameter_count", "mlp_problems"]
