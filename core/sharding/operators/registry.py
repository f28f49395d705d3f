"""The operator families in a plain list, and the lookup from an operator type to its family.

Adding an operator: its rules in a new module implementing `base.OperatorFamily`, its `FAMILY`
in `FAMILIES` below, and its type (arity, family name, attributes) in `core/sharding/catalog.py`.
"""

from __future__ import annotations

from core.sharding.catalog import OP_TYPES
from core.sharding.operators import elementwise, gather, matmul, norm, reshape, softmax, transpose
from core.sharding.operators.base import OperatorFamily

FAMILIES: list[OperatorFamily] = [
    matmul.FAMILY,
    elementwise.FAMILY,
    transpose.FAMILY,
    reshape.FAMILY,
    softmax.FAMILY,
    norm.FAMILY,
    gather.FAMILY,
]

_BY_NAME: dict[str, OperatorFamily] = {family.name: family for family in FAMILIES}


def family_of(op_type: str) -> OperatorFamily | None:
    """The family whose rules govern `op_type`, None for a type the catalogue does not know."""
    spec = OP_TYPES.get(op_type)
    return None if spec is None else _BY_NAME.get(spec.family)
