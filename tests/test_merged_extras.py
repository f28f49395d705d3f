"""The batch's other-metric columns joined along its templates' parts (`templated.merged_extras`) and the cached
evaluation-loss name check (`perfile.estimate_name`), each held to the code it replaced."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.rows.perfile import estimate_name
from core.logs.rows.templated import merged_extras

_NAMES = ["eval_loss", "lr", "grad_norm", "acc", "val_top1_loss"]
_DTYPES = [np.float64, np.int64, np.float32, np.bool_]


def _old(lengths: list[int], part_extras: list[dict[str, np.ndarray]], names: list[str], order: np.ndarray) -> dict:
    """template_block's join before merged_extras: one NaN block per part that does not name a column."""
    out = {}
    for name in names:
        col = np.concatenate([p.get(name, np.full(n, np.nan)) for n, p in zip(lengths, part_extras, strict=True)])
        out[name] = col[order]
    return out


@st.composite
def _parts(draw: st.DrawFn) -> tuple[list[int], list[dict[str, np.ndarray]], list[str], np.ndarray]:
    lengths = draw(st.lists(st.integers(0, 6), min_size=1, max_size=6))
    part_extras = []
    for n in lengths:
        named = draw(st.lists(st.sampled_from(_NAMES), unique=True, max_size=len(_NAMES)))
        extras = {}
        for name in named:
            dtype = draw(st.sampled_from(_DTYPES))
            numbers = st.integers(-(2**40), 2**40) if dtype is np.int64 else st.floats(width=32)
            extras[name] = np.array(draw(st.lists(numbers, min_size=n, max_size=n)), dtype=np.float64).astype(dtype)
        part_extras.append(extras)
    names = list(dict.fromkeys(n for p in part_extras for n in p))
    order = np.array(draw(st.permutations(range(sum(lengths)))), dtype=np.int64)
    return lengths, part_extras, names, order


@settings(max_examples=300, deadline=None)
@given(_parts())
@example(([3], [{}], [], np.array([2, 0, 1])))  # no other metric at all
@example(([2, 1], [{"lr": np.array([1, 2])}, {"lr": np.array([3])}], ["lr"], np.array([2, 1, 0])))  # ints, every part
@example(([2, 0, 1], [{"lr": np.array([1.5, -0.0])}, {}, {}], ["lr"], np.array([0, 2, 1])))  # an empty part between
def test_merged_extras_is_the_old_join(case: tuple) -> None:
    lengths, part_extras, names, order = case
    got, want = merged_extras(lengths, part_extras, names, order), _old(lengths, part_extras, names, order)
    assert list(got) == list(want) == names
    for name in names:
        assert got[name].dtype == want[name].dtype
        assert got[name].tobytes() == want[name].tobytes()  # bit for bit (NaN, -0.0)


_EVAL_LOSS = re.compile(r"(?:val|valid|validation|eval|evaluation|test|dev)_(?:\w+_)?loss")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=20) | st.sampled_from(["val_loss", "eval_mlm_loss", "loss", "dev_loss_", "test_"])))
@example(["eval_loss", "eval_loss", "train_loss", "eval_loss"])
def test_estimate_name_cached_is_the_regex(names: list[str]) -> None:
    # asked twice in any order, a name gets the regex's answer (the cache keeps no answer of another name)
    for name in [*names, *reversed(names)]:
        assert estimate_name(name) is (_EVAL_LOSS.fullmatch(name) is not None)
