"""The repeat block: one layer analysed once, reported as `count` layers, its carry checked.

Layer i+1 reads, wherever the block reads `carry`, the output of the block's `last` operator: its
shape must equal carry's, and when its layout differs from what the reading operator needs, that
is a redistribution in every layer after the first (reported with the reading operator).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from core.sharding.design import Design
from core.sharding.operators.base import Communication, OperatorAnalysis
from core.sharding.operators.communication import redistribution


def with_repeat(design: Design, results: list[OperatorAnalysis]) -> list[OperatorAnalysis]:
    """The analyses with the block's operators marked `layers` = count, a note, and the carry checks."""
    block = design.block_range()
    repeat = design.repeat
    if block is None or repeat is None:
        return results
    first, last = block
    last_out = results[last]
    carry_shape = _carry_shape(design, results, repeat.carry)
    mismatch = (
        last_out.output_shape is not None and carry_shape is not None and tuple(last_out.output_shape) != carry_shape
    )
    note = (
        f"× {repeat.count} layers: this operator is in the repeat block {repeat.first}..{repeat.last}; shapes, "
        "layouts and communication shown are per layer"
    )
    updated = list(results)
    for k in range(first, last + 1):
        analysis = results[k]
        extra: list[Communication] = []
        problems = list(analysis.problems)
        if k == last and mismatch:
            problems.append(
                f"layer i+1 reads this output in place of {repeat.carry!r}, but it has shape "
                f"{tuple(last_out.output_shape or ())} and {repeat.carry!r} has {carry_shape}: the block's last "
                "operator must give back the shape the block starts from"
            )
        elif not mismatch and repeat.count > 1:
            extra = _carry_redistributions(analysis, repeat.carry, repeat.last, last_out)
        updated[k] = replace(
            analysis,
            layers=repeat.count,
            problems=problems,
            notes=[*analysis.notes, note],
            communications=[*analysis.communications, *extra],
        )
    return updated


def _carry_shape(design: Design, results: Sequence[OperatorAnalysis], carry: str) -> tuple[int, ...] | None:
    if carry in design.tensors:
        return tuple(design.tensors[carry].shape)
    for analysis in results:
        if analysis.name == carry and analysis.output_shape is not None:
            return tuple(analysis.output_shape)
    return None


def _carry_redistributions(
    analysis: OperatorAnalysis, carry: str, last: str, last_out: OperatorAnalysis
) -> list[Communication]:
    """From layer 2 on, an input reading `carry` gets `last`'s output: moving it costs what this says."""
    if last_out.output_layout is None or last_out.output_shape is None:
        return []
    comms = []
    for name, required in zip(analysis.input_names, analysis.input_layouts, strict=True):
        if name != carry or required is None:
            continue
        comm = redistribution(
            tuple(last_out.output_shape),
            last_out.output_dtype,
            last_out.output_layout,
            required,
            f"from layer 2 on, the output of {last} (in place of {carry})",
            analysis.name,
        )
        if comm is not None:
            comms.append(comm)
    return comms
