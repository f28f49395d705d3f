"""One train.py per scenario, written the way the MindSpore 2.10 docs (the seeds) write them."""

from __future__ import annotations

from collections.abc import Callable

from core.codegen import common
from core.codegen.options import RunOptions
from core.codegen.strategies import StrategyPlan, plan_strategies
from core.design import Design


def _section(title: str) -> str:
    return f"# -- {title} " + "-" * max(4, 86 - len(title)) + "\n"


def data_parallel(design: Design, options: RunOptions) -> str:
    """Seed 001 with today's API: DATA_PARALLEL, gradients averaged over ranks, Model.train."""
    return "\n".join(
        [
            common.header(design.name, design.description, options),
            common.imports(options, []),
            common.environment(
                options,
                "# Data parallel: every rank holds the whole model; gradients are averaged with AllReduce.\n"
                "ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)",
            ),
            common.dataset(options, shard=True),
            "",
            _section("network"),
            common.dense_mlp("Seed 001's MNIST classifier: 784 -> 512 -> 512 -> 10."),
            "",
            "net = Network()",
            "",
            _section("training"),
            "loss_fn = nn.CrossEntropyLoss()",
            f"optimizer = nn.SGD(net.trainable_params(), learning_rate={options.learning_rate!r})",
            "model = ms.Model(net, loss_fn=loss_fn, optimizer=optimizer)",
            common.callbacks(options),
            f"model.train({options.epochs!r}, data_set, callbacks=callbacks, dataset_sink_mode=False)",
            "",
        ]
    )


def multi_copy(design: Design, options: RunOptions) -> str:
    """Seeds 000/002: the loss cell wrapped in MicroBatchInterleaved, semi-auto via AutoParallel."""
    return "\n".join(
        [
            common.header(design.name, design.description, options),
            common.imports(
                options,
                [
                    "from mindspore.nn.utils import no_init_parameters",
                    "from mindspore.parallel.auto_parallel import AutoParallel",
                    "from mindspore.parallel.nn import MicroBatchInterleaved",
                ],
            ),
            common.environment(options, ""),
            common.dataset(options, shard=False),
            "",
            _section("network"),
            common.dense_mlp("Seeds 000/002's MNIST classifier: 784 -> 512 -> 512 -> 10."),
            "",
            "# Parameters are created later, already sharded, when AutoParallel compiles the graph.",
            "with no_init_parameters():",
            "    net = Network()",
            f"    optimizer = nn.SGD(net.trainable_params(), learning_rate={options.learning_rate!r})",
            "",
            _section("training"),
            "loss_fn = nn.CrossEntropyLoss()",
            f"# Multi-copy: split every batch into {options.interleave_num} copies along dimension 0 so that one",
            "# copy's model-parallel communication overlaps the other copy's computation.",
            "# The printed loss is the sum over the copies.",
            f"net_with_loss = MicroBatchInterleaved(nn.WithLossCell(net, loss_fn), {options.interleave_num!r})",
            'parallel_net = AutoParallel(net_with_loss, parallel_mode="semi_auto")',
            "model = ms.Model(parallel_net, optimizer=optimizer)",
            common.callbacks(options),
            f"model.train({options.epochs!r}, data_set, callbacks=callbacks)",
            "",
        ]
    )


def _pipeline_network(hidden_blocks: int) -> str:
    lines = [
        "class Network(nn.Cell):",
        f'    """Seed 003\'s MLP, {hidden_blocks} Dense+ReLU blocks; named cells so each gets a stage."""',
        "",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.flatten = nn.Flatten()",
    ]
    for i in range(1, hidden_blocks + 1):
        size_in = "28 * 28" if i == 1 else "512"
        lines += [f"        self.layer{i} = nn.Dense({size_in}, 512)", f"        self.relu{i} = nn.ReLU()"]
    lines += [f"        self.layer{hidden_blocks + 1} = nn.Dense(512, 10)", "", "    def construct(self, x):"]
    lines.append("        x = self.flatten(x)")
    for i in range(1, hidden_blocks + 1):
        lines += [f"        x = self.layer{i}(x)", f"        x = self.relu{i}(x)"]
    lines.append(f"        return self.layer{hidden_blocks + 1}(x)")
    return "\n".join(lines) + "\n"


def stage_config(stages: int) -> tuple[int, dict[str, int]]:
    """(hidden blocks, cell -> stage): blocks spread evenly over the stages, the head on the last one."""
    blocks = max(2, stages)
    config: dict[str, int] = {}
    for i in range(1, blocks + 1):
        stage = (i - 1) * stages // blocks
        config[f"_backbone.layer{i}"] = stage
        config[f"_backbone.relu{i}"] = stage
    config[f"_backbone.layer{blocks + 1}"] = stages - 1
    return blocks, config


def sapp_pipeline(design: Design, options: RunOptions) -> str:
    """Seed 003: recursive-programming search + pipeline stages + recompute + optimizer parallel (hsdp)."""
    blocks, config = stage_config(options.pipeline_stages)
    config_lines = ["stage_config = {"] + [f"    {common.lit(k)}: {v!r}," for k, v in config.items()] + ["}"]
    recompute = [f"net.relu{i}.recompute()" for i in range(1, blocks + 1)]
    body = [
        common.header(design.name, design.description, options),
        common.imports(
            options,
            [
                "from mindspore.nn.utils import no_init_parameters",
                "from mindspore.parallel.auto_parallel import AutoParallel",
                "from mindspore.parallel.nn import Pipeline",
            ],
        ),
        common.environment(options, ""),
        common.dataset(options, shard=False),
        "",
        _section("network"),
        _pipeline_network(blocks),
        "",
        "with no_init_parameters():",
        "    net = Network()",
        f"    optimizer = nn.SGD(net.trainable_params(), learning_rate={options.learning_rate!r})",
    ]
    if options.recompute:
        body += ["# Recompute the ReLUs in the backward pass instead of keeping their activations.", *recompute]
    body += [
        "",
        _section("parallel configuration"),
        "loss_fn = nn.CrossEntropyLoss()",
        "# Which pipeline stage every cell runs on (the loss cell wraps the network as `_backbone`).",
        *config_lines,
        f"# {options.micro_batches} micro-batches per step keep the {options.pipeline_stages} stages busy;"
        " the printed loss is their sum.",
        "net_with_loss = Pipeline(",
        f"    nn.WithLossCell(net, loss_fn), {options.micro_batches!r}, stage_config=stage_config",
        ")",
        "# SAPP (double recursive search) picks the operator strategies inside every stage.",
        'parallel_net = AutoParallel(net_with_loss, parallel_mode="recursive_programming")',
    ]
    if options.hsdp:
        body.append("parallel_net.hsdp()  # optimizer parallel: shard optimizer state over data-parallel ranks")
    body += [
        'parallel_net.dataset_strategy("full_batch")  # every rank reads the whole batch',
        f'parallel_net.pipeline(stages={options.pipeline_stages!r}, scheduler="1f1b")',
        "# Model.train builds the pipeline training step itself. In a hand-written loop reduce the",
        "# gradients with mindspore.nn.PipelineGradReducer(optimizer.parameters) (or the",
        "# mindspore.parallel.nn one with opt_shard=True: opt_shard=False fails to compile in 2.10).",
        "model = ms.Model(parallel_net, optimizer=optimizer)",
        common.callbacks(options),
        f"model.train({options.epochs!r}, data_set, callbacks=callbacks, dataset_sink_mode=True)",
        "",
    ]
    return "\n".join(body)


def _shard_function(plan: StrategyPlan, options: RunOptions) -> str:
    kind = "Layout" if options.scenario == "layout_parallel" else "tuple"
    lines = [
        "def shard_network(net):",
        f'    """Operator strategies ({kind}) taken from the design file."""',
    ]
    if plan.layouts:
        lines.append("    # Device matrices: axes are named so tensor dimensions can be mapped onto them.")
        lines += [f"    {name} = {code}" for name, code in plan.layouts]
    for slot, code, note in plan.lines:
        lines.append(f"    net.{slot}.shard({code})  # {common.one_line(note, 120)}")
    if not plan.lines:
        lines.append("    # No design strategy fits this network: MindSpore uses its default strategies.")
    lines.append("    return net")
    return "\n".join(lines) + "\n"


SHARDED_MLP = '''class Network(nn.Cell):
    """Seed 004's MLP written with ops primitives, so each MatMul/ReLU can be given a strategy."""

    def __init__(self):
        super().__init__()
        self.flatten = ops.Flatten()
        self.fc1_weight = ms.Parameter(initializer("normal", [28 * 28, 512], ms.float32))
        self.fc2_weight = ms.Parameter(initializer("normal", [512, 512], ms.float32))
        self.fc3_weight = ms.Parameter(initializer("normal", [512, 10], ms.float32))
        self.matmul1 = ops.MatMul()
        self.relu1 = ops.ReLU()
        self.matmul2 = ops.MatMul()
        self.relu2 = ops.ReLU()
        self.matmul3 = ops.MatMul()

    def construct(self, x):
        x = self.flatten(x)
        x = self.matmul1(x, self.fc1_weight)
        x = self.relu1(x)
        x = self.matmul2(x, self.fc2_weight)
        x = self.relu2(x)
        return self.matmul3(x, self.fc3_weight)
'''


def sharded_mlp(design: Design, options: RunOptions) -> str:
    """operator_parallel / layout_parallel: seed 004's network, shard() per operator, functional loop."""
    plan = plan_strategies(design, options)
    extra = [
        "from mindspore.common.initializer import initializer",
        "from mindspore.nn.utils import no_init_parameters",
        "from mindspore.parallel.auto_parallel import AutoParallel",
    ]
    if options.scenario == "layout_parallel":
        extra.insert(2, "from mindspore.parallel import Layout")
    notes = [f"# NOTE: {common.one_line(n, 150)}" for n in plan.notes]
    return "\n".join(
        [
            common.header(design.name, design.description, options),
            common.imports(options, extra, ms_names="nn, ops"),
            common.environment(options, ""),
            common.dataset(options, shard=False),
            "",
            _section("network"),
            SHARDED_MLP,
            "",
            _shard_function(plan, options),
            *(notes and ["", *notes]),
            "",
            "with no_init_parameters():  # parameters are created sharded when the graph compiles",
            "    net = shard_network(Network())",
            f"    optimizer = nn.SGD(net.trainable_params(), learning_rate={options.learning_rate!r})",
            "",
            _section("training"),
            "loss_fn = nn.CrossEntropyLoss()",
            "",
            "",
            "def forward_fn(data, target):",
            "    logits = net(data)",
            "    return loss_fn(logits, target), logits",
            "",
            "",
            "grad_fn = ms.value_and_grad(forward_fn, None, net.trainable_params(), has_aux=True)",
            "",
            "",
            "def train_step(inputs, targets):",
            "    (loss_value, _), grads = grad_fn(inputs, targets)",
            "    optimizer(grads)",
            "    return loss_value",
            "",
            "",
            "# semi_auto: MindSpore applies the strategies above and inserts the communication they need.",
            'parallel_step = AutoParallel(train_step, parallel_mode="semi_auto")',
            f"for epoch in range(1, {options.epochs!r} + 1):",
            "    start = time.time()",
            "    steps = 0",
            "    for step, (image, label) in enumerate(data_set.create_tuple_iterator(), start=1):",
            "        loss_output = parallel_step(image, label)",
            "        steps = step",
            f"        if step % {options.loss_interval!r} == 0:",
            '            print("epoch: %s, step: %s, loss is %s" % (epoch, step, loss_output), flush=True)',
            *(_EPOCH_TIME if options.time_monitor else []),
            "",
        ]
    )


# The same line TimeMonitor prints under Model.train, so the Monitor page reads both alike.
_EPOCH_TIME = [
    "    elapsed_ms = (time.time() - start) * 1000",
    "    print(",
    '        "Train epoch time: %.3f ms, per step time: %.3f ms" % (elapsed_ms, elapsed_ms / max(steps, 1)),',
    "        flush=True,",
    "    )",
]


RENDERERS: dict[str, Callable[[Design, RunOptions], str]] = {
    "data_parallel": data_parallel,
    "operator_parallel": sharded_mlp,
    "layout_parallel": sharded_mlp,
    "multi_copy": multi_copy,
    "sapp_pipeline": sapp_pipeline,
}
