"""The design's own network as MindSpore source: every design operator a primitive, in graph order.

    code = render_network(design, analyze_design(design))
    code.source   # Layout definitions + `class Block(nn.Cell)` (the repeat block) + `class Network(nn.Cell)`

Each design tensor is a data input (`construct` argument) or a weight (`ms.Parameter`); each
operator becomes `self.<name> = ops.<Primitive>(...)` with its own `.shard(...)` exactly as the
design holds it (tuple or Layout, in and out strategy), called in `construct` in design order.
SiLU and RMSNorm have no CPU-runnable primitive, so they are composed from shardable primitives
(SiLU = Sigmoid then Mul; RMSNorm = Square, ReduceMean, Rsqrt, Mul, Mul, as MindFormers' non-fused
path does) that all carry the operator's strategy. Nothing is mapped onto another network and
nothing is dropped: a design that cannot be rendered raises `CodegenError` with the reason.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.codegen.options import CodegenError
from core.codegen.primitives import Prim, call_expr, layout_lines, primitives
from core.sharding.code import lit
from core.sharding.design import Design, OperatorSpec
from core.sharding.operators import OperatorAnalysis
from core.workspace import is_identifier

# Attribute names of mindspore.nn.Cell (2.10): a tensor or operator may not shadow them
# (tests/test_codegen_network.py checks this list against MindSpore itself).
CELL_ATTRIBUTES = frozenset(
    [
        "IGNORE_LIST",
        "T_destination",
        "add_flags",
        "add_flags_recursive",
        "apply",
        "arguments_key",
        "bprop_debug",
        "buffers",
        "cast_inputs",
        "cell_init_args",
        "cell_type",
        "cells",
        "cells_and_names",
        "check_names",
        "check_names_and_refresh_name",
        "cls_name",
        "compile",
        "compile_and_run",
        "compile_cache",
        "compile_phase",
        "compiled",
        "construct",
        "create_time",
        "enable_backward_hook",
        "exist_names",
        "exist_objs",
        "extend_repr",
        "generate_scope",
        "get_buffer",
        "get_extra_state",
        "get_flags",
        "get_func_graph_proto",
        "get_inputs",
        "get_mixed_precision_type",
        "get_parameters",
        "get_scope",
        "get_sub_cell",
        "global_cells",
        "grad_ops_label",
        "has_bprop",
        "init_parameters_data",
        "insert_child_to_cell",
        "insert_param_to_cell",
        "is_top_cell",
        "jit_config_dict",
        "load_state_dict",
        "mixed_precision_type",
        "name_cells",
        "named_buffers",
        "offload",
        "parallel_parameter_merge_net_dict",
        "parallel_parameter_name_list",
        "param_prefix",
        "parameter_layout_dict",
        "parameters_and_names",
        "parameters_broadcast_dict",
        "parameters_dict",
        "phase",
        "phase_cache",
        "pipeline_segment",
        "pipeline_stage",
        "recompute",
        "register_backward_hook",
        "register_backward_pre_hook",
        "register_buffer",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_load_state_dict_post_hook",
        "register_load_state_dict_pre_hook",
        "register_parameter_forward_hook",
        "register_saved_tensors_hooks",
        "register_state_dict_post_hook",
        "register_state_dict_pre_hook",
        "remove_redundant_parameters",
        "requires_grad",
        "run_construct",
        "set_boost",
        "set_broadcast_flag",
        "set_comm_fusion",
        "set_data_parallel",
        "set_extra_state",
        "set_grad",
        "set_inputs",
        "set_jit_config",
        "set_mixed_precision_type",
        "set_train",
        "shard",
        "state_dict",
        "to",
        "to_empty",
        "to_float",
        "total_instance_count",
        "trainable_params",
        "training",
        "untrainable_params",
        "update_cell_prefix",
        "update_cell_type",
        "update_parameters_name",
        "layers",
        "head",
    ]
)
# Module-level names of the generated train.py that a design layout name may not shadow.
SCRIPT_NAMES = frozenset(
    [
        "ms",
        "nn",
        "ops",
        "np",
        "sys",
        "time",
        "os",
        "Layout",
        "Block",
        "Network",
        "NetWithLoss",
        "SyntheticData",
        "AutoParallel",
        "Pipeline",
        "MicroBatchInterleaved",
        "initializer",
        "no_init_parameters",
        "init",
        "get_rank",
        "get_group_size",
        "main",
        "check",
        "run",
        "train",
        "create_dataset",
        "dtype",
        "CHECK",
        "argparse",
        "ds",
        "Normal",
        "One",
        "Zero",
        "EPOCHS",
        "LEARNING_RATE",
        "LAYERS",
        "BF16",
        "BATCH",
        "DEFAULT_DATA_PATH",
        "make_train_step",
    ]
)


@dataclass(frozen=True)
class DataInput:
    """A design tensor fed by the dataset: its name, global shape, dtype and value range for ints."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    high: int = 0  # integer inputs draw from [0, high): a Gather table's row count


@dataclass(frozen=True)
class NetworkCode:
    """The rendered network and what the rest of train.py needs to know about it."""

    source: str
    inputs: tuple[DataInput, ...]
    output_shape: tuple[int, ...]
    loss: str  # "mse" | "cross_entropy"
    layers: int  # repeat count of the block (1 when the design has no repeat block)
    has_block: bool
    parameters: int  # trainable elements of the full model (every layer)
    layer_parameters: int = 0  # trainable elements of one layer of the repeat block


# ---------------------------------------------------------------------------------------------
# the whole network
# ---------------------------------------------------------------------------------------------
def _weight_init(design: Design, name: str) -> str:
    """Normal(1/sqrt(fan_in)) keeps activations O(1) through MatMul chains; norm gains start at 1."""
    shape = design.tensors[name].shape
    for op in design.operators:
        if op.type == "RMSNorm" and len(op.inputs) > 1 and op.inputs[1] == name:
            return "One()"
        if op.type == "Gather" and op.inputs and op.inputs[0] == name:
            return "Normal(0.02)"
    if len(shape) >= 2:
        return f"Normal({1 / math.sqrt(shape[-2]):.6g})"
    return "Zero()"


def _parameter_line(design: Design, name: str) -> str:
    spec = design.tensors[name]
    init = _weight_init(design, name)
    value = f"initializer({init}, {lit(tuple(spec.shape))}, dtype({lit(spec.dtype)}))"
    return f"self.{name} = ms.Parameter({value}, name={lit(name)})"


def _check_names(design: Design) -> None:
    """Names become Python identifiers in the script: anything else is refused, never rendered."""
    for name in [*design.tensors, *(op.name for op in design.operators), *design.layouts]:
        if not is_identifier(name):
            raise CodegenError(f"the name {name!r} is not a Python identifier (letters, digits, '_'): rename it")
    for name in [*design.tensors, *(op.name for op in design.operators)]:
        if name in CELL_ATTRIBUTES or name.startswith("_"):
            raise CodegenError(
                f"the name {name!r} clashes with an attribute of mindspore.nn.Cell (or is private): rename it"
            )
    for name in design.layouts:
        if name in SCRIPT_NAMES or name in design.tensors:
            raise CodegenError(f"layout name {name!r} clashes with a name the generated script uses: rename it")


def _check_valid(analyses: Sequence[OperatorAnalysis]) -> None:
    bad = [f"{a.name}: {a.problems[0]}" for a in analyses if a.problems]
    if bad:
        raise CodegenError("the design has invalid operators, fix them first: " + "; ".join(bad))


def _int_high(design: Design, name: str) -> int:
    """Integer inputs index something: a Gather table's rows; otherwise small class ids."""
    for op in design.operators:
        if op.type == "Gather" and len(op.inputs) > 1 and op.inputs[1] == name:
            source = op.inputs[0]
            if source in design.tensors:
                return design.tensors[source].shape[0]
    return 16


_INT = re.compile(r"^u?int\d+$")


def render_network(design: Design, analyses: Sequence[OperatorAnalysis]) -> NetworkCode:
    """The design as `Network(nn.Cell)` (and `Block` for its repeat block). Raises CodegenError."""
    if not design.operators:
        raise CodegenError("the design has no operators: add at least one (it is the network that trains)")
    _check_valid(analyses)
    _check_names(design)
    by_name = {a.name: a for a in analyses}
    roles = {name: design.tensor_role(name) for name in design.tensors}
    inputs = [n for n, r in roles.items() if r == "input"]
    weights = [n for n, r in roles.items() if r == "weight"]
    if not inputs:
        raise CodegenError("the design has no data input: give at least one tensor the role 'input'")
    batch = {design.tensors[n].shape[0] if design.tensors[n].shape else None for n in inputs}
    if len(batch) != 1 or None in batch:
        raise CodegenError(
            "every data input must share its first (batch) dimension, got "
            + ", ".join(f"{n} {design.tensors[n].shape}" for n in inputs)
        )
    span = design.block_range()
    layers = design.repeat.count if design.repeat is not None else 1
    parts = _parts(design, weights, span)
    lines = _render_all(design, by_name, parts, inputs)
    last = analyses[-1]
    if last.output_shape is None:  # pragma: no cover - _check_valid refuses invalid operators
        raise CodegenError(f"the output shape of {last.name} is unknown")
    per_layer = sum(math.prod(design.tensors[w].shape) for w in parts.block_weights)
    params = sum(math.prod(design.tensors[w].shape) for w in weights) + (layers - 1) * per_layer
    data = tuple(
        DataInput(
            n,
            tuple(design.tensors[n].shape),
            design.tensors[n].dtype,
            _int_high(design, n) if _INT.match(design.tensors[n].dtype) else 0,
        )
        for n in inputs
    )
    return NetworkCode(
        source="\n".join(lines) + "\n",
        inputs=data,
        output_shape=tuple(last.output_shape),
        loss=design.loss,
        layers=layers,
        has_block=span is not None,
        parameters=params,
        layer_parameters=per_layer,
    )


def _construct(
    ops: Sequence[OperatorSpec], by_name: dict[str, OperatorAnalysis], names: dict[str, str]
) -> tuple[list[Prim], list[str]]:
    """Primitives and construct lines for `ops`; `names` maps design names to Python expressions."""
    prims: list[Prim] = []
    body: list[str] = []
    for op in ops:
        args = [names[i] for i in op.inputs]
        prims += primitives(op)
        expr = call_expr(op, by_name[op.name], args)
        body.append(f"{op.name} = {expr}")
        names[op.name] = op.name
    return prims, body


def _outside_inputs(design: Design, ops: Sequence[OperatorSpec], own: set[str]) -> list[str]:
    """Names `ops` read that they do not define or own, in design order (they become arguments)."""
    order = [*design.tensors, *(o.name for o in design.operators)]
    names = {op.name for op in ops}
    return sorted({i for op in ops for i in op.inputs if i not in names and i not in own}, key=order.index)


def _render_cell(
    design: Design,
    cls: str,
    doc: str,
    ops: Sequence[OperatorSpec],
    by_name: dict[str, OperatorAnalysis],
    weights: Sequence[str],
    first_arg: str,
) -> tuple[list[str], list[str]]:
    """`class <cls>(nn.Cell)` running `ops`; returns (source lines, extra argument names after first_arg)."""
    extra = _outside_inputs(design, ops, {*weights, first_arg})
    names = {w: f"self.{w}" for w in weights}
    names.update({n: n for n in [first_arg, *extra]})
    prims, body = _construct(ops, by_name, names)
    lines = [
        f"class {cls}(nn.Cell):",
        f'    """{doc}"""',
        "",
        "    def __init__(self):",
        "        super().__init__()",
        *(f"        {_parameter_line(design, w)}" for w in weights),
        *(f"        {p.line()}" for p in prims),
        "",
        f"    def construct(self, {', '.join([first_arg, *extra])}):",
        *(f"        {line}" for line in body),
        f"        return {ops[-1].name}",
        "",
        "",
    ]
    return lines, extra


@dataclass(frozen=True)
class _Parts:
    """The design cut at its repeat block, and which weights each part owns (shared ones stay in Network)."""

    prologue: list[OperatorSpec]
    block: list[OperatorSpec]
    epilogue: list[OperatorSpec]
    net_weights: list[str]
    block_weights: list[str]
    head_weights: list[str]


def _parts(design: Design, weights: Sequence[str], span: tuple[int, int] | None) -> _Parts:
    ops = list(design.operators)
    if span is None:
        return _Parts(ops, [], [], list(weights), [], [])
    groups = {"prologue": ops[: span[0]], "block": ops[span[0] : span[1] + 1], "epilogue": ops[span[1] + 1 :]}
    reads = {g: {i for op in group for i in op.inputs} for g, group in groups.items()}

    def owned(group: str) -> list[str]:
        return [w for w in weights if w in reads[group] and all(w not in r for g, r in reads.items() if g != group)]

    block_w, head_w = owned("block"), owned("epilogue")
    net_w = [w for w in weights if w not in block_w and w not in head_w]
    return _Parts(groups["prologue"], groups["block"], groups["epilogue"], net_w, block_w, head_w)


def _render_all(
    design: Design, by_name: dict[str, OperatorAnalysis], parts: _Parts, inputs: Sequence[str]
) -> list[str]:
    """Block (the repeat block) and Head (what follows it) as cells of their own, so pipeline stages and
    recompute can address them; everything before the block runs in Network itself."""
    prologue, block, epilogue = parts.prologue, parts.block, parts.epilogue
    block_w, head_w, net_w = parts.block_weights, parts.head_weights, parts.net_weights
    lines: list[str] = []
    names = {w: f"self.{w}" for w in net_w}
    names.update({n: n for n in inputs})
    prims, body = _construct(prologue, by_name, names)
    init_extra: list[str] = []
    result = design.operators[-1].name
    if block:
        repeat = design.repeat
        assert repeat is not None
        block_src, block_args = _render_cell(
            design,
            "Block",
            f"One layer: operators {repeat.first} .. {repeat.last}, repeated {repeat.count} times.",
            block,
            by_name,
            block_w,
            repeat.carry,
        )
        lines += block_src
        init_extra.append(f"self.layers = nn.CellList([Block() for _ in range(LAYERS)])  # {repeat.count} layers")
        extra = "".join(f", {names[n]}" for n in block_args)
        body += [
            f"{repeat.last} = {names[repeat.carry]}",
            "for layer in self.layers:",
            f"    {repeat.last} = layer({repeat.last}{extra})",
        ]
        names[repeat.last] = repeat.last
        if epilogue:
            head_src, head_args = _render_cell(
                design,
                "Head",
                "What follows the repeated layers (the pipeline's last stage).",
                epilogue,
                by_name,
                head_w,
                repeat.last,
            )
            lines += head_src
            init_extra.append("self.head = Head()")
            body.append(f"{result} = self.head({repeat.last}" + "".join(f", {names[n]}" for n in head_args) + ")")
    lines += [
        "class Network(nn.Cell):",
        f'    """The design {design.name!r} as a network: {len(design.operators)} operators in graph order."""',
        "",
        "    def __init__(self):",
        "        super().__init__()",
        *(f"        {_parameter_line(design, w)}" for w in net_w),
        *(f"        {line}" for line in init_extra),
        *(f"        {p.line()}" for p in prims),
        "",
        f"    def construct(self, {', '.join(inputs)}):",
        *(f"        {line}" for line in body),
        f"        return {result}",
    ]
    return lines


def layout_definitions(design: Design) -> list[str]:
    """`name = Layout(...)` for every layout a strategy of the design uses."""
    used = {
        s.layout
        for op in design.operators
        for s in [*(op.strategy or ()), *((op.out_strategy,) if op.out_strategy else ())]
        if s.layout
    }
    return layout_lines(design, [name for name in design.layouts if name in used])
