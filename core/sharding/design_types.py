"""The design file's data types: what a parsed design is, before any rule looks at it.

Kept apart from the reader (`design_reader.py`) and the writer / checks (`design.py`) so both can
use them without importing each other; `core.sharding.design` re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from core.errors import UserError
from core.sharding.layout import MAX_DEVICES as MAX_DEVICES  # the bound lives with the Layout it protects
from core.sharding.layout import DimEntry, Layout, LayoutError, TensorLayout

FORMAT_KEY = "shardscope_design"
FORMAT_VERSION = 1
MAX_DIMS = 8
MAX_REPEAT = 100_000  # layers a repeat block may stand for
# Bounds on an untrusted design file, each checked before the work it bounds (README "Limits"):
# the largest shipped example is 14 KB with 13 tensors and 31 operators, so these leave ample room
# while a hostile file costs milliseconds and a few MB.
MAX_DESIGN_BYTES = 1 << 20  # file size, checked before parsing
MAX_DEPTH = 16  # JSON nesting (a valid design needs 7), checked before parsing
MAX_NUMBER_CHARS = 32  # characters of one JSON number, refused while parsing
MAX_LAYOUTS = 256
MAX_TENSORS = 4096
MAX_OPERATORS = 4096
MAX_AXES = 16  # device-matrix axes of one layout (and device axes on one tensor dimension)
MAX_STRING = 2000  # characters of any text field (names are shorter still: 64)
MAX_PROBLEMS = 100  # problems listed; the rest are counted in a last "... and N more" line
LOSSES = ("mse", "cross_entropy")
ROLES = ("input", "weight")
FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")


class DesignError(UserError, ValueError):
    """A design file that cannot be used; `problems` lists (json_path, message) for every fault."""

    def __init__(self, problems: list[Problem]) -> None:
        if len(problems) > MAX_PROBLEMS + 1:  # 490k bad tensors must not become 97 MB of text (+1: a reader's
            # own "... and N more" line is kept)
            more = len(problems) - MAX_PROBLEMS
            problems = [*problems[:MAX_PROBLEMS], Problem("$", f"... and {more:,} more problems")]
        self.problems = problems
        lines = [f"{p.path}: {p.message}" for p in problems]
        joined = "\n  ".join(lines)
        super().__init__(f"invalid design:\n  {joined}" if len(lines) > 1 else f"invalid design: {joined}")


@dataclass(frozen=True)
class Problem:
    path: str
    message: str


@dataclass(frozen=True)
class LayoutSpec:
    device_matrix: tuple[int, ...]
    alias_name: tuple[str, ...]
    rank_list: tuple[int, ...] | None = None

    def build(self) -> Layout:
        return Layout(self.device_matrix, self.alias_name, None if self.rank_list is None else list(self.rank_list))


@dataclass(frozen=True)
class Sharding:
    """How one tensor or operator input is split: a Layout strategy or a tuple strategy."""

    layout: str | None = None
    map: tuple[DimEntry, ...] | None = None
    split: tuple[int, ...] | None = None

    @property
    def is_layout(self) -> bool:
        return self.layout is not None


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: str = "float32"
    sharding: Sharding | None = None
    role: str | None = None  # "input" | "weight"; None = the default (see Design.tensor_role)


@dataclass(frozen=True)
class OperatorSpec:
    name: str
    type: str
    inputs: tuple[str, ...]
    strategy: tuple[Sharding, ...] | None = None
    out_strategy: Sharding | None = None  # MindSpore's out_strategy (a Layout): e.g. ReduceScatter output
    transpose_a: bool = False
    transpose_b: bool = False
    perm: tuple[int, ...] | None = None  # Transpose: a permutation of the input's dimensions
    shape: tuple[int, ...] | None = None  # Reshape: the global target shape
    axis: int | None = None  # Softmax: the normalised dimension (None = -1)
    eps: float | None = None  # RMSNorm: added to the mean square (None = 1e-6)


RECOMPUTE_MODES = ("none", "selective", "full")  # core.plan.activations.Recompute's values


@dataclass(frozen=True)
class PlannerRecipe:
    """The Planner's recipe a design was made from ("New design from this recipe"), kept as data so the plan
    of a run of the design (memory per card, step time) is found again without reading its description.

    The design itself holds one pipeline stage (dp x mp cards); pp, micro-batches, optimizer parallel and
    recompute are job settings the Planner chose for it."""

    dp: int
    mp: int
    pp: int
    micro_batches: int
    micro_batch_size: int
    sp: bool = False
    optimizer_shard: bool = False
    recompute: str = "none"  # one of RECOMPUTE_MODES


@dataclass(frozen=True)
class RepeatSpec:
    """Operators `first`..`last` form one layer run `count` times; `carry` is layer i's input.

    In layer i+1 every read of `carry` inside the block reads layer i's `last` output instead;
    operators after the block that read `last` get the final layer's output.
    """

    count: int
    first: str
    last: str
    carry: str


@dataclass(frozen=True)
class Design:
    name: str = "untitled"
    description: str = ""
    device_num: int = 8
    layouts: Mapping[str, LayoutSpec] = field(default_factory=dict)
    tensors: Mapping[str, TensorSpec] = field(default_factory=dict)
    operators: tuple[OperatorSpec, ...] = ()
    loss: str = "mse"  # "mse" | "cross_entropy": how the last operator's output is trained
    repeat: RepeatSpec | None = None
    planner_recipe: PlannerRecipe | None = None  # set by the Planner's "New design from this recipe"

    # -- lookups used by previews, operators and codegen -------------------------------------
    def layout(self, name: str) -> Layout:
        if name not in self.layouts:
            raise LayoutError(f"no layout called {name!r}; define it under 'layouts'")
        return self.layouts[name].build()

    def tensor_layout(self, sharding: Sharding) -> TensorLayout:
        """The TensorLayout of a Layout strategy (tuple strategies have none until an operator places them)."""
        if sharding.layout is None or sharding.map is None:
            raise LayoutError("this strategy is a tuple strategy, not a Layout strategy")
        return self.layout(sharding.layout)(*sharding.map)

    def operator(self, name: str) -> OperatorSpec:
        for op in self.operators:
            if op.name == name:
                return op
        raise KeyError(name)

    def tensor_role(self, name: str) -> str:
        """ "input" (fed by the dataset) or "weight" (a trained Parameter).

        The explicit `role` wins; otherwise integer / bool dtypes are inputs (indices, labels), the
        first tensor listed is the input, and every other tensor is a weight.
        """
        tensor = self.tensors[name]
        if tensor.role is not None:
            return tensor.role
        if tensor.dtype not in FLOAT_DTYPES:
            return "input"
        return "input" if next(iter(self.tensors)) == name else "weight"

    def block_range(self) -> tuple[int, int] | None:
        """Indices (first, last) in `operators` of the repeat block, None without a (resolvable) one."""
        if self.repeat is None:
            return None
        names = [op.name for op in self.operators]
        if self.repeat.first not in names or self.repeat.last not in names:
            return None
        first, last = names.index(self.repeat.first), names.index(self.repeat.last)
        return (first, last) if first <= last else None

    def layers_of(self, op_name: str) -> int:
        """How many times an operator runs in the full model: the repeat count inside the block, else 1."""
        block = self.block_range()
        if block is None or self.repeat is None:
            return 1
        names = [op.name for op in self.operators]
        return self.repeat.count if op_name in names[block[0] : block[1] + 1] else 1

    def with_tensor(self, name: str, spec: TensorSpec) -> Design:
        return replace(self, tensors={**self.tensors, name: spec})

    def with_layout(self, name: str, spec: LayoutSpec) -> Design:
        return replace(self, layouts={**self.layouts, name: spec})
