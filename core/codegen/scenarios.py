"""One train.py per scenario, each training the design's own network the way the seeds do.

* data_parallel (seed 001): DATA_PARALLEL, each rank reads its own shard, gradients averaged, Model.train.
* operator_parallel / layout_parallel (seed 004): semi_auto, the design's tuple / Layout strategies,
  full-batch data, a functional training loop wrapped in AutoParallel.
* multi_copy (seeds 000/002): the loss cell in MicroBatchInterleaved, semi_auto.
* sapp_pipeline (seed 003): recursive-programming search, the repeat block's layers spread over
  pipeline stages (the head on the last), recompute, optimizer parallel (hsdp).

All share the skeleton of `core.codegen.trainpy`, so `python train.py --check` runs the same network.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.codegen import common, trainpy
from core.codegen.launchers import job_launcher
from core.codegen.network import NetworkCode, layout_definitions, render_network
from core.codegen.options import SCENARIOS, CodegenError, RunOptions, check_int
from core.sharding.design import Design
from core.sharding.operators import analyze_design


def _section(title: str) -> str:
    return f"# -- {title} " + "-" * max(4, 86 - len(title)) + "\n"


def _imports(scenario: Scenario) -> str:
    stdlib = ["import argparse", "import os", "import sys", "import time"]
    third = [
        "import numpy as np",
        "import mindspore as ms",
        "import mindspore.dataset as ds",
        "from mindspore import nn, ops, train",
        "from mindspore.common.initializer import Normal, One, Zero, initializer",
        "from mindspore.communication import get_group_size, get_rank, init",
        "from mindspore.nn.utils import no_init_parameters",
        "from mindspore.parallel import Layout",
        *scenario.imports,
    ]
    return "\n".join(stdlib) + "\n\n" + "\n".join(third) + "\n"


def _distributed(options: RunOptions) -> list[str]:
    """Lines of setup_distributed(): graph mode, the device, communication init."""
    out = ["    ms.set_context(mode=ms.GRAPH_MODE)  # parallel training needs graph mode"]
    out += job_launcher(options).device_lines(options)
    if options.device_target == "Ascend":
        out.append('    ms.runtime.set_memory(max_size="28GB")  # leave device memory for HCCL buffers')
    backend = {"Ascend": "HCCL", "GPU": "NCCL", "CPU": "MindSpore's CPU collectives"}[options.device_target]
    out.append(f"    init()  # {backend}; rank and group size come from the launcher")
    out.append("    ms.set_seed(1)")
    return out


def _train_data_parallel(options: RunOptions) -> list[str]:
    return [
        "def run():",
        '    """Data parallel: every rank holds the whole network and reads its own shard of the data."""',
        *_distributed(options),
        "    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)",
        "    net = Network()",
        "    optimizer = nn.Adam(net.trainable_params(), learning_rate=LEARNING_RATE)",
        "    model = ms.Model(NetWithLoss(net), optimizer=optimizer)",
        "    data = create_dataset(num_shards=get_group_size(), shard_id=get_rank())",
        f"    model.train(EPOCHS, data, callbacks={_callbacks(options)}, dataset_sink_mode=False)",
    ]


def _callbacks(options: RunOptions) -> str:
    items = [f"train.LossMonitor({options.loss_interval!r})"]
    if options.time_monitor:
        items.append("train.TimeMonitor()")
    return "[" + ", ".join(items) + "]"


def _train_semi_auto(options: RunOptions, kind: str) -> list[str]:
    loop = [
        "    for epoch in range(1, EPOCHS + 1):",
        "        start, steps = time.time(), 0",
        "        for step, batch in enumerate(data.create_tuple_iterator(), start=1):",
        "            loss = parallel_step(*batch)",
        "            steps = step",
        f"            if step % {options.loss_interval!r} == 0:",
        '                print("epoch: %s step: %s, loss is %s" % (epoch, step, loss), flush=True)',
    ]
    if options.time_monitor:  # the line TimeMonitor prints, so the Monitor reads both alike
        loop += [
            "        elapsed_ms = (time.time() - start) * 1000",
            "        per_step = elapsed_ms / max(steps, 1)",
            '        print("Train epoch time: %.3f ms, per step time: %.3f ms" % (elapsed_ms, per_step), flush=True)',
        ]
    return [
        "def run():",
        f'    """semi_auto: MindSpore applies the design\'s {kind} strategies and inserts their communication."""',
        *_distributed(options),
        "    with no_init_parameters():  # parameters are created already sharded when the graph compiles",
        "        net = Network()",
        "        optimizer = nn.Adam(net.trainable_params(), learning_rate=LEARNING_RATE)",
        '    parallel_step = AutoParallel(make_train_step(NetWithLoss(net), optimizer), parallel_mode="semi_auto")',
        '    parallel_step.dataset_strategy("full_batch")  # every rank reads the global batch the design describes',
        "    data = create_dataset()",
        *loop,
    ]


def _train_multi_copy(options: RunOptions) -> list[str]:
    return [
        "def run():",
        f'    """Multi-copy: each batch split into {options.interleave_num} copies along dimension 0 so one copy\'s',
        '    communication overlaps the other\'s computation; the printed loss is the sum over the copies."""',
        *_distributed(options),
        "    with no_init_parameters():",
        "        net = Network()",
        "        optimizer = nn.Adam(net.trainable_params(), learning_rate=LEARNING_RATE)",
        f"    net_with_loss = MicroBatchInterleaved(NetWithLoss(net), {options.interleave_num!r})",
        '    parallel_net = AutoParallel(net_with_loss, parallel_mode="semi_auto")',
        '    parallel_net.dataset_strategy("full_batch")',
        "    model = ms.Model(parallel_net, optimizer=optimizer)",
        f"    model.train(EPOCHS, create_dataset(), callbacks={_callbacks(options)})",
    ]


def stage_config(layers: int, stages: int) -> dict[str, int]:
    """cell -> stage: the repeat block's layers spread evenly, the embedding on 0 and the head on the last."""
    config = {f"network.layers.{i}": i * stages // layers for i in range(layers)}
    config["network.head"] = stages - 1
    return config


def _train_pipeline(options: RunOptions, code: NetworkCode) -> list[str]:
    if not code.has_block:
        raise CodegenError(
            "sapp_pipeline spreads the design's repeat block (its layers) over pipeline stages: this design "
            "has no repeat block; add one (`repeat` in the design file) or pick another scenario"
        )
    if code.layers < options.pipeline_stages:
        raise CodegenError(
            f"{code.layers} layer(s) cannot fill {options.pipeline_stages} pipeline stages: use at most "
            f"{code.layers} stages"
        )
    config = stage_config(code.layers, options.pipeline_stages)
    body = [
        "def run():",
        '    """SAPP picks operator strategies inside each stage; the layers run as a 1F1B pipeline."""',
        *_distributed(options),
        "    with no_init_parameters():",
        "        net = Network()",
        "        optimizer = nn.Adam(net.trainable_params(), learning_rate=LEARNING_RATE)",
    ]
    if options.recompute:
        body += [
            "    for layer in net.layers:  # keep only each layer's input; recompute the rest in the backward pass",
            "        layer.recompute()",
        ]
    body += [
        "    # Which pipeline stage every cell runs on (NetWithLoss holds the network as `network`).",
        "    stage_config = {" + ", ".join(f"{common.lit(k)}: {v}" for k, v in config.items()) + "}",
        f"    # {options.micro_batches} micro-batches keep the {options.pipeline_stages} stages busy; the printed "
        "loss is their sum.",
        f"    net_with_loss = Pipeline(NetWithLoss(net), {options.micro_batches!r}, stage_config=stage_config)",
        '    parallel_net = AutoParallel(net_with_loss, parallel_mode="recursive_programming")',
    ]
    if options.hsdp:
        body.append("    parallel_net.hsdp()  # optimizer parallel: shard optimizer state over data-parallel ranks")
    body += [
        '    parallel_net.dataset_strategy("full_batch")',
        f'    parallel_net.pipeline(stages={options.pipeline_stages!r}, scheduler="1f1b")',
        "    # Model.train builds the pipeline step itself; in a hand-written loop reduce gradients with",
        "    # mindspore.nn.PipelineGradReducer (parallel.nn's needs opt_shard=True: False fails to compile in 2.10).",
        "    model = ms.Model(parallel_net, optimizer=optimizer)",
        f"    model.train(EPOCHS, create_dataset(), callbacks={_callbacks(options)}, dataset_sink_mode=True)",
    ]
    return body


# ---------------------------------------------------------------------------------------------
# the scenarios: one object each
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scenario:
    """One way to train the design: its label, imports, the options only it reads, its checks and run()."""

    name: str
    imports: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()  # RunOptions fields only this scenario reads (the Launch page asks for them)
    runs_on_cpu: bool = False  # MindSpore's CPU collectives support data parallel only

    @property
    def label(self) -> str:
        return SCENARIOS[self.name]

    def check(self, options: RunOptions) -> None:
        """Options this scenario cannot use (the fields every job has are checked by validate_fields)."""
        if options.device_target == "CPU" and not self.runs_on_cpu:
            raise CodegenError(
                f"the {self.name} scenario cannot target CPU: MindSpore runs distributed CPU jobs in "
                "data-parallel mode only (semi_auto/auto parallel fail with 'Invalid communication backend: CPU'). "
                "Pick data_parallel for CPU, or target Ascend/GPU."
            )

    def check_strategies(self, design: Design) -> None:
        """The design's strategies this scenario cannot apply."""

    def check_batch(self, batch: int, options: RunOptions) -> None:
        """The design's batch (every data input's first dimension) this scenario cannot split."""

    def train(self, options: RunOptions, code: NetworkCode) -> list[str]:
        """The lines of train.py's run(): every scenario writes its own."""
        raise NotImplementedError(self.name)

    def notes(self, code: NetworkCode) -> list[str]:  # noqa: ARG002
        return []


class DataParallel(Scenario):
    def train(self, options: RunOptions, code: NetworkCode) -> list[str]:  # noqa: ARG002
        return _train_data_parallel(options)

    def notes(self, code: NetworkCode) -> list[str]:
        return [
            "Data parallel: the design's strategies are not applied (every rank holds the whole network and "
            f"reads batches of {code.inputs[0].shape[0]} samples, its own shard of the data)."
        ]


_AUTO = "from mindspore.parallel.auto_parallel import AutoParallel"


@dataclass(frozen=True)
class SemiAuto(Scenario):
    strategy_kind: str = "tuple"  # or "Layout"

    def check_strategies(self, design: Design) -> None:
        uses_layout = any(s.is_layout for op in design.operators for s in (op.strategy or ()))
        if self.strategy_kind == "tuple" and uses_layout:
            raise CodegenError(
                f"this design gives Layout strategies, which {self.name} (tuple strategies) cannot express: "
                "pick layout_parallel"
            )

    def train(self, options: RunOptions, code: NetworkCode) -> list[str]:  # noqa: ARG002
        return _train_semi_auto(options, self.strategy_kind)


class MultiCopy(Scenario):
    def check(self, options: RunOptions) -> None:
        super().check(options)
        check_int(options.interleave_num, "interleave_num", 1, 64)  # the design's batch: check_batch

    def check_batch(self, batch: int, options: RunOptions) -> None:
        if batch % options.interleave_num:
            raise CodegenError(
                f"the design's batch {batch} must be divisible by interleave_num {options.interleave_num}"
            )

    def train(self, options: RunOptions, code: NetworkCode) -> list[str]:  # noqa: ARG002
        return _train_multi_copy(options)


class SappPipeline(Scenario):
    def check(self, options: RunOptions) -> None:
        super().check(options)
        stages = check_int(options.pipeline_stages, "pipeline stages", 1, 64)
        if options.device_num % stages:
            raise CodegenError(
                f"{options.device_num} devices cannot be split into {stages} pipeline stages: "
                "the stage count must divide the device count"
            )
        micro = check_int(options.micro_batches, "micro-batches", 1, 4096)
        if micro < stages:
            raise CodegenError(f"use at least as many micro-batches ({micro}) as pipeline stages ({stages})")

    def check_batch(self, batch: int, options: RunOptions) -> None:
        if batch % options.micro_batches:
            raise CodegenError(
                f"the design's batch {batch} must be divisible by the {options.micro_batches} micro-batches"
            )

    def train(self, options: RunOptions, code: NetworkCode) -> list[str]:
        return _train_pipeline(options, code)


SCENARIO_OBJECTS: dict[str, Scenario] = {
    s.name: s
    for s in (
        DataParallel("data_parallel", runs_on_cpu=True),
        SemiAuto("operator_parallel", (_AUTO,), strategy_kind="tuple"),
        SemiAuto("layout_parallel", (_AUTO,), strategy_kind="Layout"),
        MultiCopy(
            "multi_copy", (_AUTO, "from mindspore.parallel.nn import MicroBatchInterleaved"), ("interleave_num",)
        ),
        SappPipeline(
            "sapp_pipeline",
            (_AUTO, "from mindspore.parallel.nn import Pipeline"),
            ("pipeline_stages", "micro_batches", "recompute", "hsdp"),
        ),
    )
}


def scenario_of(options: RunOptions) -> Scenario:
    """The scenario object of checked options (validate_fields refuses an unknown name first)."""
    try:
        return SCENARIO_OBJECTS[options.scenario]
    except (KeyError, TypeError):
        raise CodegenError(f"unknown scenario {options.scenario!r}: use one of {', '.join(SCENARIOS)}") from None


def _check_layout_devices(design: Design, options: RunOptions) -> None:
    for name, spec in design.layouts.items():
        if spec.build().device_num != options.device_num and any(
            s.layout == name for op in design.operators for s in [*(op.strategy or ()), op.out_strategy] if s
        ):
            raise CodegenError(
                f"layout {name} spans {spec.build().device_num} devices but the job has {options.device_num}: "
                "generate the job for the design's device count"
            )


def render_train_py(design: Design, options: RunOptions) -> tuple[str, NetworkCode]:
    """The job's train.py for `options.scenario`, and the rendered network (for notes and the README)."""
    scenario = scenario_of(options)
    code = render_network(design, analyze_design(design))
    scenario.check_strategies(design)
    _check_layout_devices(design, options)
    scenario.check_batch(code.inputs[0].shape[0], options)
    uses_bf16 = any(t.dtype == "bfloat16" for t in design.tensors.values())
    layouts = layout_definitions(design)
    constants = [
        f"EPOCHS = {options.epochs!r}",
        f"LEARNING_RATE = {options.learning_rate!r}",
        f"LAYERS = {code.layers!r}  # layers of the repeat block" if code.has_block else "",
        f"BF16 = {uses_bf16!r}  # the design computes in bfloat16",
    ]
    if options.dataset == "mnist":
        constants.append(f"DEFAULT_DATA_PATH = {common.lit(options.data_path)}")
    parts = [
        common.header(design.name, design.description, options),
        _imports(scenario),
        trainpy.check_switch(),
        "\n".join(c for c in constants if c) + "\n",
        _section("device matrices (the design's layouts)")
        + ("\n".join(layouts) if layouts else "# none: tuple strategies only"),
        "",
        _section(f"network: the design's {len(design.operators)} operators, {code.parameters:,} parameters"),
        code.source,
        "",
        trainpy.net_with_loss(code),
        "",
        _section("data"),
        trainpy.dataset(code, options),
        "",
        _section("training"),
        trainpy.train_step(),
        "",
        trainpy.check_function(design.name, code),
        "",
        "\n".join(scenario.train(options, code)) + "\n",
        "",
        trainpy.main_block(code.has_block),
    ]
    return "\n".join(parts), code
