"""What every model generator shares: the error type, value checks and a small design builder.

Generators check their configuration up front and report every bad value with the field it came
from (`ModelProblem`), so the CLI can print one line and the Designer's form can show the message
next to the field; a configuration that passes always builds a design `design_from_dict` accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict, Unpack

from core.errors import UserError
from core.sharding.design import (
    FLOAT_DTYPES,
    MAX_DEVICES,
    MAX_REPEAT,
    Design,
    LayoutSpec,
    OperatorSpec,
    RepeatSpec,
    Sharding,
    TensorSpec,
)
from core.sharding.layout import NONE, DimEntry

LAYOUT = "layout"  # the one Layout every generated design uses
MAX_SIZE = 1 << 40  # any single dimension beyond this is a typo, not a model
DTYPE_ALIASES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "half": "float16",
    "fp32": "float32",
    "float": "float32",
    "fp64": "float64",
    "double": "float64",
}


@dataclass(frozen=True)
class ModelProblem:
    """One bad value: `field` is the parameter (as the CLI / form names it), `message` says why and what to do."""

    field: str
    message: str


class ModelError(UserError, ValueError):
    """A model configuration that cannot become a design; `problems` lists every bad value."""

    def __init__(self, problems: list[ModelProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(p.message for p in problems))


def canonical_dtype(dtype: str) -> str:
    """`bf16` -> `bfloat16`; the design file only knows MindSpore's full float dtype names."""
    text = str(dtype).strip().lower()
    return DTYPE_ALIASES.get(text, text)


def dtype_problems(dtype: str) -> list[ModelProblem]:
    if canonical_dtype(dtype) in FLOAT_DTYPES:
        return []
    choices = ", ".join([*FLOAT_DTYPES, *DTYPE_ALIASES])
    return [ModelProblem("dtype", f"dtype {dtype!r} is not a float type: use one of {choices}")]


def positive_problems(values: dict[str, int], maximum: dict[str, int] | None = None) -> list[ModelProblem]:
    """Each value must be a whole number >= 1 (and at most its maximum, default MAX_SIZE)."""
    problems = []
    for name, value in values.items():
        top = (maximum or {}).get(name, MAX_SIZE)
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(ModelProblem(name, f"{name} must be a whole number, got {value!r}"))
        elif not 1 <= value <= top:
            problems.append(ModelProblem(name, f"{name} must be between 1 and {top:,}, got {value}"))
    return problems


def divides_problem(part: str, part_value: int, whole: str, whole_value: int, why: str) -> list[ModelProblem]:
    """`part_value` must divide `whole_value`; the message names both values and the reason."""
    if whole_value % part_value == 0:
        return []
    return [
        ModelProblem(
            part,
            f"{part} {part_value} does not divide {whole} {whole_value}: {why}",
        )
    ]


def recipe_problems(dp: int, mp: int) -> list[ModelProblem]:
    problems = positive_problems({"dp": dp, "mp": mp}, {"dp": MAX_DEVICES, "mp": MAX_DEVICES})
    if not problems and dp * mp > MAX_DEVICES:
        problems.append(
            ModelProblem("mp", f"dp × mp = {dp * mp} devices is more than the {MAX_DEVICES} a design holds")
        )
    return problems


def layers_problems(layers: int) -> list[ModelProblem]:
    return positive_problems({"layers": layers}, {"layers": MAX_REPEAT})


def lay(*entries: DimEntry) -> Sharding:
    """A Layout strategy on the design's one layout: `lay("dp", NONE)`."""
    return Sharding(layout=LAYOUT, map=tuple(entries))


class OperatorAttrs(TypedDict, total=False):
    """The OperatorSpec fields an operator may set besides its name, type, inputs and strategy."""

    out_strategy: Sharding | None
    transpose_a: bool
    transpose_b: bool
    perm: tuple[int, ...] | None
    shape: tuple[int, ...] | None
    axis: int | None
    eps: float | None


@dataclass
class DesignBuilder:
    """Collects tensors and operators in order; `build` makes the frozen Design."""

    dp: int
    mp: int
    tensors: dict[str, TensorSpec] = field(default_factory=dict)
    operators: list[OperatorSpec] = field(default_factory=list)

    def tensor(self, name: str, shape: tuple[int, ...], dtype: str, role: str, *entries: DimEntry) -> str:
        """A design tensor stored with the Layout map `entries` (one per dimension)."""
        self.tensors[name] = TensorSpec(tuple(shape), dtype, lay(*entries), role)
        return name

    def op(
        self,
        name: str,
        op_type: str,
        inputs: tuple[str, ...],
        strategy: tuple[Sharding, ...] | None = None,
        **attrs: Unpack[OperatorAttrs],
    ) -> str:
        """Append an operator; `attrs` are OperatorSpec fields (transpose_b, perm, shape, axis, eps, out_strategy)."""
        self.operators.append(OperatorSpec(name=name, type=op_type, inputs=tuple(inputs), strategy=strategy, **attrs))
        return name

    def build(self, name: str, description: str, loss: str, repeat: RepeatSpec | None = None) -> Design:
        return Design(
            name=name,
            description=description,
            device_num=self.dp * self.mp,
            layouts={LAYOUT: LayoutSpec((self.dp, self.mp), ("dp", "mp"))},
            tensors=dict(self.tensors),
            operators=tuple(self.operators),
            loss=loss,
            repeat=repeat,
        )


__all__ = [
    "LAYOUT",
    "NONE",
    "DesignBuilder",
    "ModelError",
    "ModelProblem",
    "canonical_dtype",
    "divides_problem",
    "dtype_problems",
    "lay",
    "layers_problems",
    "positive_problems",
    "recipe_problems",
]
