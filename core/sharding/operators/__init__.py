"""Operator strategy rules: is a shard strategy valid, what does the operator output, what must it communicate.

Every strategy is first turned into one `TensorLayout` per input on a common device matrix (Layout
strategies as written, tuple strategies the way MindSpore builds its device matrix: `convert`), then
the rule of the operator's family (`registry.FAMILIES`, one module each) checks the layouts, derives
the output layout and the partial-sum axes; `communication` turns those, and inputs stored
differently from what the operator needs, into collectives with rank groups and bytes.

Operators without a strategy: MindSpore's semi-auto default is assumed (data parallel: the first
output dimension is split over all devices when it divides, otherwise the operator runs
replicated); the assumption is written into `OperatorAnalysis.notes`.

User mistakes never raise: they come back as `OperatorAnalysis.problems`, each saying what is wrong
and how to fix it. Only `strategy_layouts` (a helper for code that builds strategies itself)
raises `LayoutError`.
"""

from core.sharding.operators.analyze import analyze_design, analyze_operator
from core.sharding.operators.base import (
    COMMUNICATION_KINDS,
    REPEAT_AXIS,
    Communication,
    OperatorAnalysis,
)
from core.sharding.operators.communication import rank_groups, redistribution_bytes
from core.sharding.operators.convert import default_strategy, infer_output_shape, strategy_layouts

__all__ = [
    "COMMUNICATION_KINDS",
    "REPEAT_AXIS",
    "Communication",
    "OperatorAnalysis",
    "analyze_design",
    "analyze_operator",
    "default_strategy",
    "infer_output_shape",
    "rank_groups",
    "redistribution_bytes",
    "strategy_layouts",
]
