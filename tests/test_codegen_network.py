"""The design is the model: every generated train.py builds the design's own network.

Read back from the built Cell (MindSpore's own primitives): every design operator is there, and
only those, each with exactly the strategy the design holds; a design codegen cannot render is
refused with the reason, never dropped.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from core.codegen import SCENARIOS, CodegenError, RunOptions, render_job, write_job
from core.codegen.network import CELL_ATTRIBUTES
from core.sharding.design import Design, design_from_dict, load_design
from core.workspace import EXAMPLES_DIR

EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.glob("*.json"))
# Names of the primitives a composite design operator renders to (besides the operator's own name).
COMPOSITE = {"SiLU": ("_sigmoid", "_mul"), "RMSNorm": ("_square", "_mean", "_rsqrt", "_normed", "")}
# The primitive that carries the design operator's own strategy (SiLU's Sigmoid; RMSNorm's final Mul(x, gamma)).
CARRIER = {"SiLU": "_sigmoid"}


def supported(design: Design, scenario: str) -> str | None:
    """Why `scenario` cannot render `design` (None when it can): the reasons codegen must give."""
    if not design.operators:
        return "no operators"
    uses_layout = any(s.is_layout for op in design.operators for s in (op.strategy or ()))
    if scenario == "operator_parallel" and uses_layout:
        return "pick layout_parallel"
    if scenario == "sapp_pipeline" and design.repeat is None:
        return "no repeat block"
    return None


def load_module(path: Path) -> ModuleType:
    """Import a generated train.py without running it (main() only runs under __main__)."""
    spec = importlib.util.spec_from_file_location(f"generated_{abs(hash(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def primitives(net: object) -> dict[str, object]:
    """attribute path -> Primitive for every primitive in the network's cells (first layer of a block)."""
    from mindspore import nn
    from mindspore.ops import Primitive

    found: dict[str, object] = {}
    for cell_name, cell in net.cells_and_names():  # type: ignore[attr-defined]
        if isinstance(cell, nn.CellList) or (cell_name.startswith("layers.") and not cell_name.startswith("layers.0")):
            continue
        for attr, value in vars(cell).items():
            if isinstance(value, Primitive):
                found[attr] = value
        for attr, value in getattr(cell, "_primitives", {}).items():
            if isinstance(value, Primitive):
                found[attr] = value
    return found


def expected_strategy(design: Design, op: object) -> object:
    from mindspore.parallel import Layout

    def one(sharding: object) -> object:
        if sharding.is_layout:  # type: ignore[attr-defined]
            spec = design.layouts[sharding.layout]  # type: ignore[attr-defined]
            ranks = None if spec.rank_list is None else list(spec.rank_list)
            layout = Layout(spec.device_matrix, spec.alias_name, ranks)
            # a primitive keeps device matrix, map and aliases; the rank list lives with the Layout object
            return {k: v for k, v in layout(*sharding.map).to_dict().items() if k != "rank_list"}  # type: ignore[attr-defined]
        return tuple(sharding.split)  # type: ignore[attr-defined]

    return tuple(one(s) for s in op.strategy)  # type: ignore[attr-defined]


def _plain(value: object) -> object:
    return json.loads(json.dumps(value, default=list))


@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("target", ["Ascend", "GPU"])
def test_every_example_renders_or_is_refused_with_the_reason(example: str, scenario: str, target: str) -> None:
    design = load_design(EXAMPLES_DIR / example)
    options = RunOptions(scenario=scenario, device_target=target, device_num=design.device_num)
    why = supported(design, scenario)
    if why is not None:
        with pytest.raises(CodegenError, match=why.split()[-1]):
            render_job(design, options)
        return
    files = render_job(design, options)
    compile(files["train.py"], "train.py", "exec")
    assert "def check(" in files["train.py"] and "--check" in files["train.py"]


@pytest.mark.parametrize("example", [e for e in EXAMPLES if not e.startswith("llama2_70b")])
def test_generated_network_holds_exactly_the_designs_operators_and_strategies(example: str, tmp_path: Path) -> None:
    design = load_design(EXAMPLES_DIR / example)
    if not design.operators:
        pytest.skip("a design without operators has no network (refused above)")
    scenario = "layout_parallel"
    job = write_job(
        design, RunOptions(scenario=scenario, device_target="Ascend", device_num=design.device_num), tmp_path / "job"
    )
    module = load_module(job / "train.py")
    from mindspore.nn.utils import no_init_parameters

    with no_init_parameters():
        net = module.Network()
    prims = primitives(net)
    expected_names = set()
    for op in design.operators:
        names = [op.name + suffix for suffix in COMPOSITE.get(op.type, ("",))]
        expected_names.update(names)
        main = prims[op.name + CARRIER.get(op.type, "")]
        if op.type == "Reshape":
            continue  # MindSpore's Reshape takes its layout from its input: no strategy of its own
        if op.strategy is None:
            assert "in_strategy" not in main.attrs and "in_layout" not in main.attrs  # type: ignore[attr-defined]
            continue
        want = expected_strategy(design, op)
        attrs = main.attrs  # type: ignore[attr-defined]
        got = attrs.get("in_layout") or attrs.get("in_strategy")
        assert _plain(got) == _plain(want), op.name
        if op.out_strategy is not None:
            out_want = expected_strategy(design, type("O", (), {"strategy": (op.out_strategy,)})())
            assert _plain(attrs.get("out_layout")) == _plain(out_want)
    assert set(prims) == expected_names


def test_cell_attribute_names_match_mindspore() -> None:
    from mindspore import nn

    public = {n for n in dir(nn.Cell()) if not n.startswith("_")}
    assert public <= CELL_ATTRIBUTES


def test_a_name_that_shadows_a_cell_attribute_is_refused() -> None:
    data = json.loads((EXAMPLES_DIR / "seed004_dense_matmul.json").read_text())
    data["operators"][0]["name"] = "construct"
    with pytest.raises(CodegenError, match="construct"):
        render_job(design_from_dict(data), RunOptions(scenario="layout_parallel", device_target="Ascend"))


def test_an_invalid_operator_strategy_is_refused_with_the_reason() -> None:
    """x's reduce dimension split differently from w's: MindSpore would refuse it, so codegen does too."""
    data = json.loads((EXAMPLES_DIR / "seed004_dense_matmul.json").read_text())
    data["operators"][0]["strategy"][0]["map"] = [["mp", "dp"], "sp"]
    design = design_from_dict(data)
    with pytest.raises(CodegenError, match=r"matmul1: .*reduce"):
        render_job(design, RunOptions(scenario="layout_parallel", device_target="Ascend"))


def test_a_design_without_operators_or_inputs_is_refused() -> None:
    with pytest.raises(CodegenError, match="no operators"):
        render_job(Design(name="empty"), RunOptions())
    data = json.loads((EXAMPLES_DIR / "seed004_dense_matmul.json").read_text())
    for tensor in data["tensors"].values():
        tensor["role"] = "weight"
    with pytest.raises(CodegenError, match="no data input"):
        render_job(design_from_dict(data), RunOptions(scenario="layout_parallel", device_target="Ascend"))


def test_operator_parallel_refuses_layout_strategies() -> None:
    design = load_design(EXAMPLES_DIR / "seed004_mlp.json")
    with pytest.raises(CodegenError, match="layout_parallel"):
        render_job(design, RunOptions(scenario="operator_parallel", device_target="Ascend"))
