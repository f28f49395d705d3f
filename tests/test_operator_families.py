"""The Transformer operator families (core/sharding/operators/{transpose,reshape,softmax,norm,gather}.py)
and the repeat block: valid and invalid strategies, output layouts, communication groups and bytes."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.sharding.design import (
    Design,
    LayoutSpec,
    OperatorSpec,
    RepeatSpec,
    Sharding,
    TensorSpec,
    design_from_dict,
    design_problems,
    load_design,
)
from core.sharding.layout import NONE
from core.sharding.operators import OperatorAnalysis, analyze_design, infer_output_shape, strategy_layouts
from core.sharding.operators.reshape import reshape_groups
from core.sharding.placement import place
from core.workspace import EXAMPLES_DIR, REPO_ROOT

DP_MP = LayoutSpec((2, 4), ("dp", "mp"))
N = NONE


def lay(*entries: Any) -> Sharding:
    return Sharding("layout", tuple(entries))


def split(*counts: int) -> Sharding:
    return Sharding(split=tuple(counts))


def run(
    tensors: dict[str, TensorSpec],
    *ops: OperatorSpec,
    layout: LayoutSpec = DP_MP,
    repeat: RepeatSpec | None = None,
) -> dict[str, OperatorAnalysis]:
    design = Design(
        device_num=layout.build().device_num, layouts={"layout": layout}, tensors=tensors, operators=ops, repeat=repeat
    )
    return {a.name: a for a in analyze_design(design)}


def entries(analysis: OperatorAnalysis) -> tuple:
    assert analysis.output_layout is not None, analysis.problems
    return analysis.output_layout.entries


def kinds(analysis: OperatorAnalysis) -> list[str]:
    return [c.kind for c in analysis.communications]


# ---------------------------------------------------------------------------------------------
# Transpose
# ---------------------------------------------------------------------------------------------
def test_transpose_permutes_shape_and_layout_without_communication() -> None:
    op = OperatorSpec("t", "Transpose", ("x",), (lay("dp", N, "mp"),), perm=(0, 2, 1))
    a = run({"x": TensorSpec((8, 16, 4))}, op)
    assert a["t"].valid and a["t"].output_shape == (8, 4, 16)
    assert entries(a["t"]) == ("dp", "mp", N)
    assert a["t"].communications == []


def test_transpose_tuple_strategy_is_permuted() -> None:
    a = run({"x": TensorSpec((8, 16, 4))}, OperatorSpec("t", "Transpose", ("x",), (split(2, 1, 4),), perm=(2, 0, 1)))
    assert a["t"].output_layout is not None and a["t"].output_layout.split == (4, 2, 1)


def test_transpose_perm_must_fit_the_input() -> None:
    a = run({"x": TensorSpec((8, 16))}, OperatorSpec("t", "Transpose", ("x",), None, perm=(0, 2, 1)))
    assert "does not fit x (8, 16)" in a["t"].problems[0]


def test_transpose_default_splits_the_dim_that_becomes_first() -> None:
    a = run({"x": TensorSpec((3, 16))}, OperatorSpec("t", "Transpose", ("x",), None, perm=(1, 0)))
    assert a["t"].input_layouts[0] is not None and a["t"].input_layouts[0].split == (1, 8)
    assert a["t"].output_layout is not None and a["t"].output_layout.split == (8, 1)


# ---------------------------------------------------------------------------------------------
# Softmax
# ---------------------------------------------------------------------------------------------
def test_softmax_keeps_layout_when_axis_is_unsplit() -> None:
    a = run({"x": TensorSpec((8, 4, 16))}, OperatorSpec("s", "Softmax", ("x",), (lay("dp", "mp", N),)))
    assert a["s"].valid and entries(a["s"]) == ("dp", "mp", N) and a["s"].communications == []


@pytest.mark.parametrize(("axis", "strategy", "dim"), [(None, (1, 1, 8), 2), (1, (2, 4, 1), 1), (-3, (8, 1, 1), 0)])
def test_softmax_split_axis_is_invalid(axis: int | None, strategy: tuple[int, ...], dim: int) -> None:
    a = run({"x": TensorSpec((8, 4, 16))}, OperatorSpec("s", "Softmax", ("x",), (split(*strategy),), axis=axis))
    assert not a["s"].valid
    assert f"normalises dimension {dim}" in a["s"].problems[0] and "axis dimension is not 1" in a["s"].problems[0]


def test_softmax_axis_out_of_range_and_default_on_axis_zero() -> None:
    a = run({"x": TensorSpec((8, 16))}, OperatorSpec("s", "Softmax", ("x",), None, axis=2))
    assert "axis 2 is out of range" in a["s"].problems[0]
    b = run({"x": TensorSpec((8, 16))}, OperatorSpec("s", "Softmax", ("x",), None, axis=0))
    assert b["s"].valid and b["s"].output_layout is not None and b["s"].output_layout.split == (1, 1)
    assert "assumed replicated" in b["s"].notes[0]


# ---------------------------------------------------------------------------------------------
# RMSNorm
# ---------------------------------------------------------------------------------------------
NORM_TENSORS = {"x": TensorSpec((8, 16, 32)), "g": TensorSpec((32,))}


def test_rmsnorm_output_follows_x() -> None:
    a = run(NORM_TENSORS, OperatorSpec("n", "RMSNorm", ("x", "g"), (lay("dp", "mp", N), lay(N)), eps=1e-5))
    assert a["n"].valid and entries(a["n"]) == ("dp", "mp", N) and a["n"].communications == []


def test_rmsnorm_last_dim_and_gamma_must_be_unsplit() -> None:
    a = run(NORM_TENSORS, OperatorSpec("n", "RMSNorm", ("x", "g"), (lay("dp", N, "mp"), lay("mp"))))
    text = " ".join(a["n"].problems)
    assert "normalises the last dimension (2)" in text and "cannot be split" in text


def test_rmsnorm_tuple_gamma_must_match_x_last_entry() -> None:
    a = run(NORM_TENSORS, OperatorSpec("n", "RMSNorm", ("x", "g"), (split(8, 1, 1), split(2))))
    assert "must equal x's last entry" in a["n"].problems[0]
    b = run(NORM_TENSORS, OperatorSpec("n", "RMSNorm", ("x", "g"), (split(2, 4, 1), split(1))))
    assert b["n"].valid and b["n"].output_layout is not None and b["n"].output_layout.split == (2, 4, 1)


def test_rmsnorm_gamma_shape_is_checked() -> None:
    a = run({"x": TensorSpec((8, 32)), "g": TensorSpec((16,))}, OperatorSpec("n", "RMSNorm", ("x", "g"), None))
    assert "must have the shape of x's last dimension, (32,)" in a["n"].problems[0]


# ---------------------------------------------------------------------------------------------
# Gather (embedding lookup)
# ---------------------------------------------------------------------------------------------
EMB = {"table": TensorSpec((1000, 64)), "ids": TensorSpec((8, 16), "int32")}


def gather(*strategy: Sharding, out: Sharding | None = None) -> OperatorSpec:
    return OperatorSpec("e", "Gather", ("table", "ids"), tuple(strategy) or None, out_strategy=out)


def test_gather_unsplit_rows_carry_indices_split_and_columns() -> None:
    a = run(EMB, gather(lay(N, "mp"), lay("dp", N)))["e"]
    assert a.valid and a.output_shape == (8, 16, 64)
    assert entries(a) == ("dp", N, "mp") and a.communications == []


def test_gather_vocab_split_reduce_scatters_by_default() -> None:
    a = run(EMB, gather(lay("mp", N), lay(N, N)))["e"]
    assert a.valid and entries(a) == ("mp", N, N)
    (comm,) = a.communications
    assert comm.kind == "ReduceScatter" and comm.axes == ("mp",)
    assert comm.groups == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert comm.bytes_per_rank == 8 * 16 * 64 * 4  # every rank holds a partial result of the whole output
    assert "vocabulary, 1000" in comm.reason


def test_gather_vocab_split_allreduces_when_indices_do_not_divide() -> None:
    tensors = {"table": TensorSpec((1000, 64)), "ids": TensorSpec((6, 16), "int32")}
    a = run(tensors, gather(lay("mp", N), lay(N, N)))["e"]
    assert kinds(a) == ["AllReduce"] and entries(a) == (N, N, N)
    assert any("does not divide by the row split 4" in n for n in a.notes)


def test_gather_out_strategy_chooses_allreduce() -> None:
    a = run(EMB, gather(lay("mp", N), lay(N, N), out=lay(N, N, N)))["e"]
    assert kinds(a) == ["AllReduce"] and a.communications[0].bytes_per_rank == 8 * 16 * 64 * 4


def test_gather_shard_batch_and_axis_allreduces_over_rows() -> None:
    a = run(EMB, gather(lay("mp", N), lay("dp", N)))["e"]
    assert a.valid and entries(a) == ("dp", N, N)
    (comm,) = a.communications
    assert comm.kind == "AllReduce" and comm.groups == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert comm.bytes_per_rank == 4 * 16 * 64 * 4


def test_gather_tuple_shard_batch_and_axis_matches_mindspore_device_matrix() -> None:
    # MindSpore ShardBatchAndAxisImpl: dev matrix (indices[0], table[0]), table map (0, -1), indices (1, -1)
    table, ids = strategy_layouts("Gather", [(4, 1), (2, 1)], 8)
    assert table.layout.device_matrix == (2, 4)
    assert table.tensor_map == (0, -1) and ids.tensor_map == (1, -1)
    a = run(EMB, gather(split(4, 1), split(2, 1)))["e"]
    assert kinds(a) == ["AllReduce"] and a.communications[0].groups == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_gather_row_split_forbids_other_index_splits() -> None:
    a = run(EMB, gather(lay("mp", N), lay(N, "dp")))["e"]
    assert "index can't be split" in a.problems[0]
    three = LayoutSpec((2, 2, 2), ("dp", "sp", "mp"))
    b = run(EMB, gather(lay("mp", N), lay("dp", N)), layout=three)["e"]  # sp left out: not every device used
    assert "index can't be split" in b.problems[0]


def test_gather_repeated_calculation_with_split_columns_is_invalid() -> None:
    a = run(EMB, gather(split(2, 2), split(1, 1)))["e"]  # 4 of 8 devices: repeated calculation
    assert "param_strategy[1] != 1" in a.problems[0]


def test_gather_needs_integer_indices_and_a_2d_table() -> None:
    a = run({"table": TensorSpec((1000, 64)), "ids": TensorSpec((8, 16))}, gather())["e"]
    assert "must be int32 or int64" in a.problems[0]
    b = run({"table": TensorSpec((1000,)), "ids": TensorSpec((8,), "int32")}, gather())["e"]
    assert "2-D table" in b.problems[0]


def test_gather_default_is_mindspore_batch_strategy() -> None:
    a = run(EMB, gather())["e"]
    assert a.valid and [tl.split for tl in a.input_layouts if tl] == [(1, 1), (8, 1)]


# ---------------------------------------------------------------------------------------------
# Reshape
# ---------------------------------------------------------------------------------------------
def reshape(src: str, shape: tuple[int, ...], strategy: Sharding | None = None, name: str = "r") -> OperatorSpec:
    return OperatorSpec(name, "Reshape", (src,), None if strategy is None else (strategy,), shape=shape)


def test_reshape_keeps_input_layout_and_splits_heads() -> None:
    tensors = {"x": TensorSpec((64, 32), sharding=lay("dp", "mp"))}
    a = run(tensors, reshape("x", (8, 8, 4, 8)))["r"]
    assert a.valid and entries(a) == ("dp", N, "mp", N) and a.communications == []
    assert "keeps the layout its input already has" in a.notes[0]


def test_reshape_merge_after_a_fully_split_dim_keeps_both_axes() -> None:
    tensors = {"x": TensorSpec((2, 8, 4), sharding=lay("dp", "mp", N))}
    a = run(tensors, reshape("x", (16, 4)))["r"]
    assert entries(a) == (("dp", "mp"), N) and a.communications == []


def test_reshape_that_cannot_keep_a_split_redistributes() -> None:
    tensors = {"x": TensorSpec((8, 16, 64), sharding=lay("dp", N, "mp"))}
    a = run(tensors, reshape("x", (8, 1024)))["r"]
    assert a.valid and entries(a) == ("dp", N)
    (comm,) = a.communications
    assert comm.kind == "Redistribution" and comm.axes == ("mp",) and comm.groups == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert comm.bytes_per_rank == (4 * 16 * 64 - 4 * 16 * 16) * 4  # gather the other 3/4 of dim 2
    assert any("cannot be kept" in n for n in a.notes)


def test_reshape_element_count_and_missing_shape() -> None:
    a = run({"x": TensorSpec((8, 16))}, reshape("x", (8, 15)))["r"]
    assert "same number of elements" in a.problems[0]
    with pytest.raises(Exception, match=r"\$\.operators\[0\]\.shape"):
        design_from_dict(
            {"tensors": {"x": {"shape": [4]}}, "operators": [{"name": "r", "type": "Reshape", "inputs": ["x"]}]}
        )


def test_reshape_groups() -> None:
    assert reshape_groups((4, 6), (4, 2, 3)) == [([0], [0]), ([1], [1, 2])]
    assert reshape_groups((2, 3, 4), (6, 4)) == [([0, 1], [0]), ([2], [1])]
    assert reshape_groups((4, 1, 8), (4, 8)) == [([0], [0]), ([1, 2], [1])]
    assert reshape_groups((6, 1), (6,)) == [([0, 1], [0])]


def _pieces(shape: tuple[int, ...], tensor_layout: Any) -> dict[int, set[frozenset[int]]]:
    """rank -> the flat element indices of each piece it holds."""
    placement = place(shape, tensor_layout)
    flat = np.arange(math.prod(shape)).reshape(shape)
    held: dict[int, set[frozenset[int]]] = {}
    for rank, lo, hi in zip(placement.ranks.tolist(), placement.starts.tolist(), placement.stops.tolist(), strict=True):
        block = flat[tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))]
        held.setdefault(rank, set()).add(frozenset(block.ravel().tolist()))
    return {r: {frozenset().union(*pieces)} for r, pieces in held.items()}


@st.composite
def reshapes(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple]:
    factors = draw(st.lists(st.sampled_from([1, 2, 2, 3, 4]), min_size=1, max_size=5))

    def group(fs: list[int]) -> tuple[int, ...]:
        cuts = sorted(draw(st.sets(st.integers(1, max(len(fs) - 1, 1)), max_size=len(fs) - 1))) if len(fs) > 1 else []
        bounds = [0, *cuts, len(fs)]
        return tuple(math.prod(fs[a:b]) for a, b in itertools.pairwise(bounds) if b > a)

    src, dst = group(factors), group(draw(st.permutations(factors)) if draw(st.booleans()) else factors)
    dims = list(range(len(src)))
    axes: dict[int, list[str]] = {d: [] for d in dims}
    for axis in ("dp", "mp"):
        d = draw(st.sampled_from([None, *dims]))
        if d is not None:
            axes[d].append(axis)
    entry = tuple(N if not a else (a[0] if len(a) == 1 else tuple(a)) for a in axes.values())
    return src, dst, entry


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reshapes())
def test_reshape_output_layout_holds_the_same_elements_per_rank(case: tuple) -> None:
    """Whatever the shapes and splits, each rank's output piece is exactly its (possibly gathered) input."""
    src, dst, entry = case
    layout = LayoutSpec((2, 2), ("dp", "mp"))
    tensor_layout = layout.build()(*entry)
    if any(s % p for s, p in zip(src, tensor_layout.split, strict=True)):
        return
    a = run({"x": TensorSpec(src, sharding=lay(*entry))}, reshape("x", dst), layout=layout)["r"]
    if math.prod(src) != math.prod(dst):
        assert not a.valid
        return
    assert a.valid, a.problems
    assert a.output_layout is not None
    computed = tensor_layout
    if a.communications:  # the redistribution target: the input with the axes that cannot carry over gathered
        gathered = set(a.communications[0].axes)
        computed = layout.build()(
            *(
                (lambda kept: N if not kept else (kept[0] if len(kept) == 1 else tuple(kept)))(
                    [x for x in tensor_layout.dim_axes(d) if x not in gathered]
                )
                for d in range(len(src))
            )
        )
    assert _pieces(src, computed) == _pieces(dst, a.output_layout)


# ---------------------------------------------------------------------------------------------
# repeat blocks
# ---------------------------------------------------------------------------------------------
def block_design(last_shape_ok: bool = True) -> Design:
    width = 32 if last_shape_ok else 16
    tensors = {
        "x": TensorSpec((8, 32), sharding=lay("dp", N)),
        "w1": TensorSpec((32, 64)),
        "w2": TensorSpec((64, width)),
        "head": TensorSpec((width, 4)),
    }
    ops = (
        OperatorSpec("up", "MatMul", ("x", "w1"), (lay("dp", N), lay(N, "mp"))),
        OperatorSpec("act", "ReLU", ("up",), (lay("dp", "mp"),)),
        OperatorSpec("down", "MatMul", ("act", "w2"), (lay("dp", "mp"), lay("mp", N))),
        OperatorSpec("out", "MatMul", ("down", "head"), (lay("dp", N), lay(N, N))),
    )
    return Design(
        device_num=8, layouts={"layout": DP_MP}, tensors=tensors, operators=ops, repeat=RepeatSpec(4, "up", "down", "x")
    )


def test_repeat_block_is_analysed_once_with_its_layer_count() -> None:
    a = {x.name: x for x in analyze_design(block_design())}
    assert [a[n].layers for n in ("up", "act", "down", "out")] == [4, 4, 4, 1]
    assert any("× 4 layers" in n for n in a["down"].notes) and not any("layers" in n for n in a["out"].notes)
    assert kinds(a["down"]) == ["AllReduce"]  # per layer: one AllReduce of the row-split MatMul
    assert all(x.valid for x in a.values())


def test_repeat_carry_needs_the_shape_the_block_starts_from() -> None:
    a = {x.name: x for x in analyze_design(block_design(last_shape_ok=False))}
    assert "layer i+1 reads this output in place of 'x'" in a["down"].problems[0]


def test_repeat_carry_redistribution_from_layer_two() -> None:
    design = block_design()
    ops = list(design.operators)
    ops[2] = OperatorSpec(
        "down", "MatMul", ("act", "w2"), (lay("dp", "mp"), lay("mp", N)), out_strategy=lay(N, "mp")
    )  # output stored (None, mp), but `up` needs x as (dp, None)
    a = {x.name: x for x in analyze_design(Design(**{**design.__dict__, "operators": tuple(ops)}))}
    moved = [c for c in a["up"].communications if c.kind == "Redistribution"]
    assert moved and "From layer 2 on, the output of down (in place of x)" in moved[0].reason
    assert moved[0].bytes_per_rank > 0


def test_repeat_references_are_checked_with_paths() -> None:
    design = block_design()
    bad = Design(**{**design.__dict__, "repeat": RepeatSpec(2, "down", "up", "x")})
    assert [p.path for p in design_problems(bad)] == ["$.repeat.last"]
    bad = Design(**{**design.__dict__, "repeat": RepeatSpec(2, "up", "nope", "x")})
    assert [p.path for p in design_problems(bad)] == ["$.repeat.last"]
    bad = Design(**{**design.__dict__, "repeat": RepeatSpec(2, "up", "down", "act")})
    assert [p.path for p in design_problems(bad)] == ["$.repeat.carry"]


# ---------------------------------------------------------------------------------------------
# the example and MindSpore as oracle
# ---------------------------------------------------------------------------------------------
def test_attention_block_example_is_valid_and_megatron_shaped() -> None:
    design = load_design(EXAMPLES_DIR / "attention_block.json")
    a = {x.name: x for x in analyze_design(design)}
    assert all(x.valid for x in a.values()), {n: x.problems for n, x in a.items() if x.problems}
    comms = {n: kinds(x) for n, x in a.items() if x.communications}
    assert comms == {"attn": ["AllReduce"]}  # column-split Q/K/V, row-split output projection
    assert a["probs"].layers == 2 and a["logits"].layers == 1
    assert entries(a["qt"]) == ("dp", "mp", N, N)


SHAPE_CASES = [
    ("Transpose", [(2, 3, 4)], {"perm": (1, 0, 2)}),
    ("Transpose", [(2, 3, 4, 5)], {"perm": (0, 2, 3, 1)}),
    ("Reshape", [(2, 3, 4)], {"shape": (6, 4)}),
    ("Reshape", [(6, 4)], {"shape": (2, 3, 2, 2)}),
    ("Softmax", [(2, 3, 4)], {"axis": 1}),
    ("Gather", [(10, 4), (2, 3)], {}),
    ("Gather", [(10, 4), (5,)], {}),
]


def test_output_shapes_match_mindspore(tmp_path: Any) -> None:
    """Compile the primitives in a MindSpore GRAPH-mode cell (PyNative needs numpy < 2) and compare shapes."""
    pytest.importorskip("mindspore")
    from core.sharding.operators.base import OpAttrs

    ours, params, inputs, calls = [], [], [], []
    for op_type, shapes, attrs in SHAPE_CASES:
        out, problems = infer_output_shape(op_type, shapes, attrs=OpAttrs(**attrs))
        assert not problems
        ours.append(list(out or ()))
        names = []
        for shape in shapes:
            dtype = "int32" if op_type == "Gather" and names else "float32"
            names.append(f"a{len(params)}")
            params.append(names[-1])
            inputs.append(f"Tensor(np.ones({shape}, np.{dtype}))")
        args = ", ".join(names)
        calls.append(
            {
                "Transpose": f"ops.Transpose()({args}, {attrs.get('perm')})",
                "Reshape": f"ops.Reshape()({args}, {attrs.get('shape')})",
                "Softmax": f"ops.Softmax(axis={attrs.get('axis', -1)})({args})",
                "Gather": f"ops.Gather()({args}, 0)",
            }[op_type]
        )
    script = tmp_path / "oracle.py"
    script.write_text(
        "import json\nimport numpy as np\nimport mindspore as ms\nfrom mindspore import Tensor, nn, ops\n"
        'ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")\n\n\n'
        "class Net(nn.Cell):\n"
        f"    def construct(self, {', '.join(params)}):\n"
        f"        return ({', '.join(calls)},)\n\n\n"
        f"outs = Net()({', '.join(inputs)})\n"
        'print("SHAPES" + json.dumps([list(o.shape) for o in outs]))\n'
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    line = next((x for x in done.stdout.splitlines() if x.startswith("SHAPES")), None)
    assert line is not None, done.stderr[-2000:]
    assert json.loads(line[len("SHAPES") :]) == ours


def test_every_family_is_registered_for_every_catalogue_type() -> None:
    from core.sharding.catalog import OP_TYPES
    from core.sharding.operators.registry import FAMILIES, family_of

    assert {f.name for f in FAMILIES} == {t.family for t in OP_TYPES.values()}
    assert all(family_of(name) is not None for name in OP_TYPES)
    assert list(itertools.chain(*(f.input_names(t.arity) for t in OP_TYPES.values() for f in [family_of(t.name)])))


def test_every_family_rule_takes_one_op_context() -> None:
    """Issue 32: the families took 5-6 parallel arguments; now one `OpContext` carries what every rule gets."""
    from core.sharding.layout import Layout
    from core.sharding.operators.base import OpAttrs, OpContext
    from core.sharding.operators.registry import FAMILIES, family_of

    softmax = family_of("Softmax")
    assert softmax is not None and softmax in FAMILIES
    ctx = OpContext("Softmax", ("x",), ((8, 16),), OpAttrs(axis=-1))
    assert softmax.infer_shape(ctx) == ((8, 16), [])
    layout = Layout((2, 4), ("dp", "mp"))
    ok = softmax.rule(ctx, [layout("dp", N)])
    assert ok.output == layout("dp", N) and ok.problems == []
    bad = softmax.rule(ctx, [layout("dp", "mp")])
    assert bad.output is None and "Softmax normalises dimension 1 of x" in bad.problems[0]
    assert softmax.default_strategy(ctx, 8) == [[8, 1]]
    assert OpContext("MatMul", ("x", "w"), shapes_known=False).known_shapes is None
    assert ctx.known_shapes == ((8, 16),)


def test_a_crashing_rule_is_that_operator_s_problem_and_the_others_are_analysed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one crash guard (analyze_design): every caller gets analyses, never the exception."""
    from core.sharding.operators import softmax

    def boom(*_args: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(softmax.SoftmaxFamily, "rule", boom)
    design = design_from_dict(
        {
            "name": "crash",
            "layouts": {"L": {"device_matrix": [2, 4], "alias_name": ["dp", "mp"]}},
            "tensors": {"x": {"shape": [8, 16]}},
            "operators": [
                {"name": "t", "type": "Transpose", "inputs": ["x"], "perm": [1, 0]},
                {"name": "s", "type": "Softmax", "inputs": ["t"]},
            ],
        },
        strict=False,
    )
    by_name = {a.name: a for a in analyze_design(design)}
    assert by_name["t"].valid, by_name["t"].problems
    assert by_name["s"].problems == [
        "internal error while analysing this operator (RuntimeError: kaboom); please report it"
    ]
