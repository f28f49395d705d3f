"""The model library: parametric generators that write designs for real architectures.

`MODELS` is a plain registry (name -> `ModelEntry`) so the CLI, the Designer's form and the planner
list the same models; `design_parameter_count` counts any design's parameters the way the full
model has them (weights inside the repeat block once per layer), so a generator's closed form can
be checked against the design it wrote.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.models.common import ModelError, ModelProblem
from core.models.llama import LlamaConfig, LlamaRecipe, llama_design, llama_parameter_count, llama_problems
from core.models.mlp import MlpConfig, MlpRecipe, mlp_design, mlp_parameter_count, mlp_problems
from core.sharding.design import Design


@dataclass(frozen=True)
class ModelEntry:
    """One generator: its config / recipe types, design builder, closed-form count and checks."""

    name: str
    title: str
    config_type: type
    recipe_type: type
    design: Callable[..., Design]  # (config, recipe, name=None) -> Design; raises ModelError
    parameter_count: Callable[[Any], int]  # (config) -> int
    problems: Callable[[Any, Any], list[ModelProblem]]  # (config, recipe) -> every bad value


MODELS: dict[str, ModelEntry] = {
    "llama": ModelEntry(
        "llama",
        "LLaMA-style decoder (GQA, SwiGLU, RMSNorm)",
        LlamaConfig,
        LlamaRecipe,
        llama_design,
        llama_parameter_count,
        llama_problems,
    ),
    "mlp": ModelEntry(
        "mlp", "MLP (seed 004's MNIST network)", MlpConfig, MlpRecipe, mlp_design, mlp_parameter_count, mlp_problems
    ),
}


def weight_layers(design: Design, name: str) -> int:
    """How many copies of weight `name` the full model has: the repeat count when every operator that
    reads it is inside the repeat block (one weight per layer), else 1 (shared, or outside)."""
    readers = [op.name for op in design.operators if name in op.inputs]
    if not readers:
        return 1
    counts = {design.layers_of(reader) for reader in readers}
    return counts.pop() if len(counts) == 1 else 1


def design_parameter_count(design: Design) -> int:
    """Σ over weight tensors of their element count × `weight_layers` (the full model, not one layer)."""
    return sum(
        math.prod(tensor.shape) * weight_layers(design, name)
        for name, tensor in design.tensors.items()
        if design.tensor_role(name) == "weight"
    )


__all__ = [
    "MODELS",
    "ModelEntry",
    "ModelError",
    "ModelProblem",
    "design_parameter_count",
    "weight_layers",
]
