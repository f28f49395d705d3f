"""The operator TYPE catalogue: every operator a design may use, its arity, family and attributes.

Kept apart from the rules (`core.sharding.operators`) so the design file reader can validate
operator types without importing the rule code: the catalogue imports nothing from this package.
A family name here is the key `core.sharding.operators.registry.family_of` dispatches on.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpType:
    """One operator type: `arity` inputs, the rule `family` it follows, the JSON `attributes` it accepts."""

    name: str
    arity: int
    family: str
    attributes: tuple[str, ...] = ()
    primitive: str = ""  # the mindspore.ops primitive codegen renders (informative)
    required: tuple[str, ...] = ()  # attributes the design file must give


def _types(*specs: OpType) -> dict[str, OpType]:
    return {spec.name: spec for spec in specs}


OP_TYPES: dict[str, OpType] = _types(
    OpType("MatMul", 2, "matmul", ("transpose_a", "transpose_b"), "ops.MatMul"),
    OpType("BatchMatMul", 2, "matmul", ("transpose_a", "transpose_b"), "ops.BatchMatMul"),
    # numpy-broadcasting binary ops
    OpType("Add", 2, "elementwise", (), "ops.Add"),
    OpType("Sub", 2, "elementwise", (), "ops.Sub"),
    OpType("Mul", 2, "elementwise", (), "ops.Mul"),
    OpType("RealDiv", 2, "elementwise", (), "ops.RealDiv"),
    OpType("Maximum", 2, "elementwise", (), "ops.Maximum"),
    OpType("Minimum", 2, "elementwise", (), "ops.Minimum"),
    # unary ops (shape and layout pass through)
    OpType("ReLU", 1, "elementwise", (), "ops.ReLU"),
    OpType("GeLU", 1, "elementwise", (), "ops.GeLU"),
    OpType("SiLU", 1, "elementwise", (), "ops.Sigmoid + ops.Mul"),
    OpType("Sigmoid", 1, "elementwise", (), "ops.Sigmoid"),
    OpType("Tanh", 1, "elementwise", (), "ops.Tanh"),
    OpType("Exp", 1, "elementwise", (), "ops.Exp"),
    OpType("Neg", 1, "elementwise", (), "ops.Neg"),
    OpType("Cast", 1, "elementwise", (), "ops.Cast"),
    # the operators a Transformer needs
    OpType("Transpose", 1, "transpose", ("perm",), "ops.Transpose", ("perm",)),
    OpType("Reshape", 1, "reshape", ("shape",), "ops.Reshape", ("shape",)),
    OpType("Softmax", 1, "softmax", ("axis",), "ops.Softmax"),
    OpType("RMSNorm", 2, "norm", ("eps",), "Square, ReduceMean, Add, Rsqrt, Mul"),
    OpType("Gather", 2, "gather", (), "ops.Gather (axis 0)"),
)

# Operator type -> number of inputs (what the editor and the reader need most often).
OP_ARITY: dict[str, int] = {name: spec.arity for name, spec in OP_TYPES.items()}

# Every attribute any operator may carry in the design file (besides name/type/inputs/strategies).
ALL_ATTRIBUTES: tuple[str, ...] = tuple(dict.fromkeys(a for spec in OP_TYPES.values() for a in spec.attributes))


def op_type(name: str) -> OpType | None:
    """The catalogue entry of an operator type, None if the type is unknown."""
    return OP_TYPES.get(name)
