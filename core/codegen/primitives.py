"""One design operator as MindSpore primitives: the `self.<name> = ops.X(...).shard(...)` lines and the call.

The one renderer of an operator: `network.render_network` writes these lines into train.py, and the
Designer's code view and `python -m core preview` show `operator_lines` as they are, so the preview is
exactly what the script contains. The `__init__` lines depend on the design only; the call expression
also needs the operator's analysis (input shapes), so a design being edited still shows its lines.

SiLU and RMSNorm have no CPU-runnable primitive, so they are composed from shardable primitives
(SiLU = Sigmoid then Mul; RMSNorm = Square, ReduceMean, Rsqrt, Mul, Mul, as MindFormers' non-fused
path does) that all carry the operator's strategy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.codegen.options import CodegenError
from core.sharding.code import layout_definition, lit, shard_call, strategy_expr, tuple_expr
from core.sharding.design import Design, OperatorSpec, Sharding
from core.sharding.operators import OperatorAnalysis

# Primitive constructors of the single-primitive operators (MindSpore 2.10 names).
PRIMITIVES: dict[str, str] = {
    "Add": "ops.Add()",
    "Sub": "ops.Sub()",
    "Mul": "ops.Mul()",
    "RealDiv": "ops.RealDiv()",
    "Maximum": "ops.Maximum()",
    "Minimum": "ops.Minimum()",
    "ReLU": "ops.ReLU()",
    "GeLU": "ops.GeLU()",
    "Sigmoid": "ops.Sigmoid()",
    "Tanh": "ops.Tanh()",
    "Exp": "ops.Exp()",
    "Neg": "ops.Neg()",
    "Cast": "ops.Cast()",
    "Transpose": "ops.Transpose()",
    "Reshape": "ops.Reshape()",
    "Gather": "ops.Gather()",
}


@dataclass(frozen=True)
class Prim:
    """One primitive attribute: `self.<attr> = <ctor>.shard(<shard>)`."""

    attr: str
    ctor: str
    shard: str = ""  # the whole `.shard(...)` call, "" without a strategy

    def line(self) -> str:
        return f"self.{self.attr} = {self.ctor}{self.shard}"


# ---------------------------------------------------------------------------------------------
# strategies
# ---------------------------------------------------------------------------------------------
def _in_parts(op: OperatorSpec) -> list[str]:
    """Per input, the strategy code; [] when the operator has no strategy."""
    return [strategy_expr(s) for s in op.strategy or ()]


def _shard(op: OperatorSpec, parts: Sequence[str] | None = None, with_out: bool = True) -> str:
    """`.shard(in_strategy=..., out_strategy=...)` of `op` (its own input strategies unless `parts`)."""
    parts = _in_parts(op) if parts is None else list(parts)
    out = strategy_expr(op.out_strategy) if with_out and op.out_strategy is not None else None
    return shard_call(parts, out)


def used_layouts(design: Design, shardings: Sequence[Sharding | None]) -> list[str]:
    """Names of the design layouts the given strategies use, first use first."""
    names: list[str] = []
    for s in shardings:
        if s is not None and s.layout is not None and s.layout in design.layouts and s.layout not in names:
            names.append(s.layout)
    return names


def layout_lines(design: Design, names: Sequence[str]) -> list[str]:
    """`name = Layout(...)` for each named layout, as train.py defines it."""
    lines = []
    for name in names:
        spec = design.layouts[name]
        lines.append(layout_definition(name, spec.device_matrix, spec.alias_name, spec.rank_list))
    return lines


# ---------------------------------------------------------------------------------------------
# operators -> primitives
# ---------------------------------------------------------------------------------------------
def primitives(op: OperatorSpec) -> list[Prim]:
    """The primitive attributes one operator needs in `__init__`. Raises CodegenError for unknown types."""
    name = op.name
    if op.type in {"MatMul", "BatchMatMul"}:
        return [Prim(name, f"ops.{op.type}(transpose_a={op.transpose_a}, transpose_b={op.transpose_b})", _shard(op))]
    if op.type == "SiLU":
        parts = _in_parts(op)
        return [
            Prim(f"{name}_sigmoid", "ops.Sigmoid()", shard_call(parts, None)),
            Prim(f"{name}_mul", "ops.Mul()", shard_call(parts * 2, None)),
        ]
    if op.type == "RMSNorm":
        return _rms_norm(op)
    if op.type == "Softmax":
        return [Prim(name, f"ops.Softmax(axis={op.axis if op.axis is not None else -1})", _shard(op))]
    if op.type == "Reshape":  # MindSpore derives a Reshape's layout from its input: no strategy of its own
        return [Prim(name, PRIMITIVES["Reshape"])]
    if op.type in PRIMITIVES:
        return [Prim(name, PRIMITIVES[op.type], _shard(op))]
    raise CodegenError(f"operator {name}: codegen cannot render operator type {op.type!r}")


def _rms_norm(op: OperatorSpec) -> list[Prim]:
    """x * rsqrt(mean(x^2, -1) + eps) * gamma, each primitive sharded like x (the last dim stays whole)."""
    name, parts = op.name, _in_parts(op)
    sx = parts[:1]
    return [
        Prim(f"{name}_square", "ops.Square()", shard_call(sx, None)),
        Prim(f"{name}_mean", "ops.ReduceMean(keep_dims=True)", shard_call(sx, None)),
        Prim(f"{name}_rsqrt", "ops.Rsqrt()", shard_call(sx, None)),
        Prim(f"{name}_normed", "ops.Mul()", shard_call(sx * 2, None)),
        Prim(f"{name}", "ops.Mul()", shard_call(parts, None)),
    ]


def operator_lines(op: OperatorSpec) -> list[str]:
    """The `self.<attr> = ...` lines of one operator exactly as train.py's `__init__` holds them."""
    return [p.line() for p in primitives(op)]


# ---------------------------------------------------------------------------------------------
# operators -> calls in construct
# ---------------------------------------------------------------------------------------------
def call_expr(op: OperatorSpec, analysis: OperatorAnalysis, args: list[str]) -> str:
    """The expression computing `op` from the Python expressions `args` (inside `construct`)."""
    name = op.name
    if op.type == "BatchMatMul":
        args = _check_mode_broadcast(args, analysis)
    if op.type == "SiLU":
        return f"self.{name}_mul({args[0]}, self.{name}_sigmoid({args[0]}))"
    if op.type == "RMSNorm":
        eps = op.eps if op.eps is not None else 1e-6
        x, gamma = args
        mean = f"self.{name}_mean(self.{name}_square({x}), -1)"
        # `+ eps` adds a Python scalar: MindSpore gives that Add its default strategy.
        return f"self.{name}(self.{name}_normed({x}, self.{name}_rsqrt({mean} + {float(eps)!r})), {gamma})"
    if op.type == "Transpose":
        return f"self.{name}({args[0]}, {lit(tuple(op.perm or ()))})"
    if op.type == "Reshape":
        return f"self.{name}({args[0]}, {_reshape_target(args[0], tuple(analysis.input_shapes[0]), op.shape or ())})"
    if op.type == "Gather":
        return f"self.{name}({args[0]}, {args[1]}, 0)"
    if op.type == "Cast":  # the design keeps the input's dtype; the generated network computes in float32
        return f"self.{name}({args[0]}, ms.float32)"
    return f"self.{name}({', '.join(args)})"


def _reshape_target(src: str, in_shape: tuple[int, ...], target: tuple[int, ...]) -> str:
    """The target shape with its first dimension relative to the input's, so micro-batching still fits.

    `(B, S, H) -> (B*S, H)` renders `(x.shape[0] * S, H)`: MicroBatchInterleaved, pipeline micro-batches
    and data-parallel slices feed fewer rows than the design's global batch, as MindFormers' own
    `reshape(x, (bs, seq, heads, dim))` with `bs` read from the input does.
    """
    first, rest = target[0], [str(d) for d in target[1:]]
    if in_shape and first % in_shape[0] == 0:
        factor = first // in_shape[0]
        head = f"{src}.shape[0]" + (f" * {factor}" if factor != 1 else "")
    elif in_shape and in_shape[0] % first == 0:
        head = f"{src}.shape[0] // {in_shape[0] // first}"
    else:
        head = str(first)
    return tuple_expr([head, *rest])


def _check_mode_broadcast(args: list[str], analysis: OperatorAnalysis) -> list[str]:
    """BatchMatMul with broadcast batch dims runs on Ascend, but MindSpore's CPU kernel needs equal batch
    shapes ("inputs shape cannot be broadcast on CPU/GPU"): check mode broadcasts the smaller input first."""
    a, b = (tuple(s) for s in analysis.input_shapes)
    out_batch = tuple(analysis.output_shape or ())[:-2]
    if a[:-2] == b[:-2] or out_batch not in (a[:-2], b[:-2]):
        return args
    big, small = (0, 1) if a[:-2] == out_batch else (1, 0)
    target = f"{args[big]}.shape[:-2] + {args[small]}.shape[-2:]"
    fixed = list(args)
    fixed[small] = f"(ops.broadcast_to({args[small]}, {target}) if CHECK else {args[small]})"
    return fixed
