"""The parts of every generated train.py around the design's network: data, loss, check mode, main.

Every scenario's script has the same skeleton, so check mode (`python train.py --check`) runs the
same network, data, loss and optimizer as the real job:

    header; imports; CHECK switch; LAYERS; layouts; Block/Network (core.codegen.network);
    NetWithLoss; SyntheticData + create_dataset; make_train_step; check(); train() (per scenario); main

Values from users reach the code only as validated identifiers or literals (`lit`).
"""

from __future__ import annotations

import math

from core.codegen.common import lit
from core.codegen.network import DataInput, NetworkCode
from core.codegen.options import CodegenError, RunOptions

CHECK_STEPS = 2
_FLOAT = {"float16", "float32", "float64", "bfloat16"}
# Bounds on the synthetic target's projection so the data stays small for any design.
_FEATURES = 64
_MAX_PROJECTION = 1 << 21


def check_switch() -> str:
    return """# Check mode: `python train.py --check` trains 2 real steps stand-alone on this machine's CPU.
# MindSpore accepts every .shard() strategy below and ignores it there (no parallel mode), so the
# network, its shapes, the loss and the optimizer are exercised for real before a card is spent.
# bfloat16 has no CPU MatMul kernel: check mode computes bfloat16 tensors in float32 and says so.
CHECK = "--check" in sys.argv[1:]


def dtype(name):
    \"\"\"The MindSpore dtype of a design dtype name (bfloat16 -> float32 in check mode).\"\"\"
    if CHECK and name == "bfloat16":
        return ms.float32
    return getattr(ms, name)
"""


def _per_sample(shape: tuple[int, ...], batch: int, what: str) -> int:
    total = math.prod(shape)
    if total % batch:
        raise CodegenError(f"{what} has shape {shape}, whose size is not a multiple of the batch {batch}")
    return total // batch


def net_with_loss(code: NetworkCode) -> str:
    """The loss cell: casts inputs to their design dtypes, runs the network, computes the design's loss."""
    names = [i.name for i in code.inputs]
    casts = [
        f"        {i.name} = ops.cast({i.name}, dtype({lit(i.dtype)}))"
        for i in code.inputs
        if i.dtype in _FLOAT and i.dtype != "float32"
    ]
    if code.loss == "cross_entropy":
        classes = code.output_shape[-1]
        loss_ctor = "nn.CrossEntropyLoss()"
        loss_line = f"        return self.loss(ops.reshape(out, (-1, {classes})), ops.reshape(target, (-1,)))"
        doc = f"Cross-entropy over the last dimension ({classes} classes) of the network's output."
    else:
        loss_ctor = "nn.MSELoss()"
        loss_line = "        return self.loss(ops.reshape(out, target.shape), target)"
        doc = "Mean squared error between the network's output and a target of its shape."
    return (
        "\n".join(
            [
                "class NetWithLoss(nn.Cell):",
                f'    """{doc}"""',
                "",
                "    def __init__(self, network):",
                "        super().__init__()",
                "        self.network = network",
                f"        self.loss = {loss_ctor}",
                "",
                f"    def construct(self, {', '.join(names)}, target):",
                *casts,
                f"        out = ops.cast(self.network({', '.join(names)}), ms.float32)",
                loss_line,
            ]
        )
        + "\n"
    )


def _target_lines(code: NetworkCode, batch: int) -> list[str]:
    """numpy lines that set self.target: a fixed function of the inputs, so the loss can fall."""
    ints = [i for i in code.inputs if i.high]
    floats = [i for i in code.inputs if not i.high]
    if code.loss == "cross_entropy":
        classes = code.output_shape[-1]
        labels = _per_sample(code.output_shape, batch, "the output") // classes
        for i in ints:
            if math.prod(i.shape) // batch == labels:
                return [
                    "        # labels: a fixed map of the token at the same position (learnable through the network)",
                    f"        self.target = ((self.{i.name}.reshape(size, -1) * 7 + 3) % {classes}).astype(np.int32)",
                ]
        if floats and _FEATURES * labels * classes <= _MAX_PROJECTION:
            x = floats[0].name
            return [
                f"        features = self.{x}.reshape(size, -1)[:, :{_FEATURES}]",
                f"        projection = rng.standard_normal((features.shape[1], {labels * classes})).astype(np.float32)",
                f"        scores = (features @ projection).reshape(size, {labels}, {classes})",
                "        self.target = np.argmax(scores, axis=-1).astype(np.int32)",
            ]
        return [f"        self.target = rng.integers(0, {classes}, (size, {labels})).astype(np.int32)"]
    elements = _per_sample(code.output_shape, batch, "the output")
    if floats and _FEATURES * elements <= _MAX_PROJECTION:
        x = floats[0].name
        return [
            f"        features = self.{x}.reshape(size, -1)[:, :{_FEATURES}]",
            f"        projection = rng.standard_normal((features.shape[1], {elements})).astype(np.float32)",
            "        self.target = np.tanh(features @ projection / np.sqrt(features.shape[1])).astype(np.float32)",
        ]
    return [f"        self.target = rng.standard_normal((size, {elements})).astype(np.float32)"]


def _input_line(item: DataInput) -> str:
    rest = lit(tuple(item.shape[1:]))
    if item.high:
        return f"        self.{item.name} = rng.integers(0, {item.high}, (size, *{rest})).astype(np.int32)"
    return f"        self.{item.name} = rng.standard_normal((size, *{rest})).astype(np.float32)"


def dataset(code: NetworkCode, options: RunOptions) -> str:
    """SyntheticData with the design's input shapes (or MNIST for an MNIST-shaped design)."""
    batch = code.inputs[0].shape[0]
    names = [i.name for i in code.inputs]
    columns = lit([*names, "target"])
    lines = [
        "class SyntheticData:",
        '    """Random inputs with the design\'s shapes and a target that is a fixed function of them."""',
        "",
        f"    def __init__(self, size={options.synthetic_samples!r}):",
        "        rng = np.random.default_rng(0)",
        *(_input_line(i) for i in code.inputs),
        *_target_lines(code, batch),
        "",
        "    def __getitem__(self, index):",
        "        # numpy 2: return arrays, not numpy scalars, or MindSpore fails with 'Unable to avoid copy'",
        "        return " + ", ".join(f"self.{n}[index]" for n in [*names, "target"]),
        "",
        "    def __len__(self):",
        "        return len(self.target)",
        "",
        "",
        f"BATCH = {batch!r}  # the design's batch: every input's first dimension",
        "",
        "",
        "def create_dataset(batch_size=BATCH, num_shards=None, shard_id=None):",
    ]
    if options.dataset == "mnist":
        lines += _mnist_dataset(code)
    else:
        lines += [
            "    dataset = ds.GeneratorDataset(",
            f"        SyntheticData(), {columns}, shuffle=False, num_shards=num_shards, shard_id=shard_id",
            "    )",
            "    return dataset.batch(batch_size, drop_remainder=True)",
        ]
    return "\n".join(lines) + "\n"


def _mnist_dataset(code: NetworkCode) -> list[str]:
    (image,) = code.inputs if len(code.inputs) == 1 else (None,)
    if (
        image is None
        or image.high
        or math.prod(image.shape[1:]) != 784
        or code.loss != "cross_entropy"
        or (code.output_shape[-1] != 10)
    ):
        raise CodegenError(
            "the MNIST dataset needs a design with one float input of 784 features per sample and a "
            "cross-entropy output of 10 classes: use the synthetic dataset for this design"
        )
    return [
        "    if CHECK:  # check mode needs no download",
        "        dataset = ds.GeneratorDataset(SyntheticData(), " + lit([image.name, "target"]) + ", shuffle=False)",
        "        return dataset.batch(batch_size, drop_remainder=True)",
        '    dataset_path = os.getenv("DATA_PATH", DEFAULT_DATA_PATH)',
        "    dataset = ds.MnistDataset(dataset_path, num_shards=num_shards, shard_id=shard_id)",
        "    image_transforms = [",
        "        ds.vision.Rescale(1.0 / 255.0, 0),",
        "        ds.vision.Normalize(mean=(0.1307,), std=(0.3081,)),",
        "        ds.vision.HWC2CHW(),",
        "    ]",
        f'    dataset = dataset.map(image_transforms + [lambda img: img.reshape({lit(image.shape[1:])})], "image")',
        '    dataset = dataset.map(ds.transforms.TypeCast(ms.int32), "label")',
        "    return dataset.batch(batch_size, drop_remainder=True)",
    ]


def train_step() -> str:
    return '''def make_train_step(loss_net, optimizer):
    """One training step: forward, gradients of every trainable parameter, optimizer update."""
    grad_fn = ms.value_and_grad(loss_net, None, optimizer.parameters)

    def train_step(*batch):
        loss, grads = grad_fn(*batch)
        optimizer(grads)
        return loss

    return train_step
'''


def check_function(design_name: str, code: NetworkCode) -> str:
    layers = "LAYERS" if code.has_block else "1"
    return f'''def check(batch_size=BATCH):
    """{CHECK_STEPS} real training steps stand-alone on CPU; strategies are accepted and ignored."""
    layers = {layers}
    parameters = {code.parameters - code.layers * code.layer_parameters} + layers * {code.layer_parameters}
    # Measured: the LLaMA-7B shape at one layer and batch 1 (0.46 billion parameters) peaked at 17.5 GB,
    # ~38 bytes per parameter (float32 weights, gradients, Adam's moments and MindSpore's graph buffers).
    need = parameters * 38
    have = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if need > 0.8 * have:
        print(
            "CHECK REFUSED: %d layer(s) hold %.2f billion parameters, which need about %.1f GB in check mode "
            "(float32 weights, gradients, Adam state, graph buffers); this machine has %.1f GB. Check fewer "
            "layers and a smaller batch: python train.py --check --layers 1 --batch 1"
            % (layers, parameters / 1e9, need / 1e9, have / 1e9),
            flush=True,
        )
        sys.exit(2)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")
    ms.set_seed(1)
    with no_init_parameters():
        net = Network()
        optimizer = nn.Adam(net.trainable_params(), learning_rate=LEARNING_RATE)
    # Stand-alone, no parallel compile materialises the deferred parameters: do it as AutoParallel would.
    net.init_parameters_data()
    optimizer.init_parameters_data()
    step = make_train_step(NetWithLoss(net), optimizer)
    start = time.time()
    losses = []
    for index, batch in enumerate(create_dataset(batch_size).create_tuple_iterator(), start=1):
        losses.append(float(step(*batch).asnumpy()))
        print("check step %d: loss is %s" % (index, losses[-1]), flush=True)
        if index == {CHECK_STEPS}:
            break
    if len(losses) < {CHECK_STEPS} or not all(np.isfinite(losses)):
        print("CHECK FAILED: losses %s" % losses, flush=True)
        sys.exit(1)
    bf16 = " (bfloat16 computed in float32)" if BF16 else ""
    print(
        "CHECK PASSED: %d training steps of %s on CPU in %.1f s, %d layer(s), batch %d%s"
        % ({CHECK_STEPS}, {lit(design_name)}, time.time() - start, layers, batch_size, bf16),
        flush=True,
    )
'''


def main_block(has_block: bool) -> str:
    layers = (
        [
            '    parser.add_argument("--layers", type=int, help="check mode: repeat-block layers (default all)")',
        ]
        if has_block
        else []
    )
    set_layers = (
        [
            "    if args.layers is not None:",
            "        global LAYERS",
            "        LAYERS = args.layers",
        ]
        if has_block
        else []
    )
    lines = [
        "def main():",
        "    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])",
        '    parser.add_argument("--check", action="store_true", help="2 real training steps on this CPU")',
        *layers,
        '    parser.add_argument("--batch", type=int, help="check mode: samples per step (default the design\'s)")',
        "    args = parser.parse_args()",
        "    if args.check:",
        *(f"    {line}" for line in set_layers),
        "        check(args.batch or BATCH)",
        "    else:",
        "        run()",
        "",
        "",
        'if __name__ == "__main__":',
        "    main()",
    ]
    return "\n".join(lines) + "\n"
