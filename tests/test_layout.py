"""core.sharding.layout against mindspore.parallel.Layout: identical to_dict, identical rejections."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from mindspore.parallel import Layout as MsLayout

from core.sharding.layout import INTERLEAVED, Layout, LayoutError
from tests.strategies import layouts_and_maps


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(layouts_and_maps())
def test_to_dict_matches_mindspore(case: tuple) -> None:
    sizes, aliases, rank_list, entries = case
    ours = Layout(sizes, aliases, rank_list)(*entries).to_dict()
    theirs = MsLayout(sizes, aliases, rank_list)(*entries).to_dict()
    assert ours == theirs


def test_seed_004_tensor_map() -> None:
    layout = Layout((2, 2, 2), ("dp", "sp", "mp"))
    assert layout("mp", ("sp", "dp")).tensor_map == (0, (1, 2))
    assert layout("dp", "mp").tensor_map == (2, 0)
    assert layout("mp", ("sp", "dp")).split == (2, 4)


def _ms_rejects(*args: object, call: tuple | None = None) -> bool:
    try:
        layout = MsLayout(*args)
        if call is not None:
            layout(*call)
    except (TypeError, ValueError):
        return True
    return False


# (constructor args, call entries, a phrase our message must contain)
REJECTED = [
    (([2, 2], ("a", "b")), None, "tuple"),
    (((2, 2), ["a", "b"]), None, "tuple"),
    (((2, 2), ("a",)), None, "one name per axis"),
    (((2, 2.0), ("a", "b")), None, "whole number"),
    (((2, "2"), ("a", "b")), None, "whole number"),
    (((2, 2), ("a", 3)), None, "string"),
    (((2, 2), ("a", "")), None, "empty name"),
    (((2, 2), ("a", "None")), None, "'None'"),
    (((2, 2), ("a", "a")), None, "unique"),
    (((2, 2, 2), ("interleaved_parallel", "a", "b")), None, "last axis"),
    (((2, 2), ("a", "b"), (0, 1, 2, 3)), None, "list of ranks"),
    (((2, 2), ("a", "b"), [0, 1, 2]), None, "one rank per position"),
    (((2, 2), ("a", "b"), [0, 1, 2, "3"]), None, "whole numbers"),
    (((2, 2), ("a", "b"), [[0, 1], [2, 3]]), None, "whole numbers"),
    (((2, 2), ("a", "b")), ("c",), "not an axis"),
    (((2, 2), ("a", "b")), ("a", "a"), "already used"),
    (((2, 2), ("a", "b")), (("a", "b"), "a"), "already used"),
    (((2, 2), ("a", "b")), (("a", "c"),), "not an axis"),
    (((2, 2), ("a", "b")), (0,), "not an axis"),
]


@pytest.mark.parametrize(("args", "call", "phrase"), REJECTED)
def test_rejections_match_mindspore(args: tuple, call: tuple | None, phrase: str) -> None:
    assert _ms_rejects(*args, call=call), "MindSpore accepts this input: the case is wrong"
    with pytest.raises(LayoutError, match=phrase) as info:
        layout = Layout(*args)
        if call is not None:
            layout(*call)
    assert isinstance(info.value, ValueError)


# Accepted by MindSpore's constructor but refused at graph compile time; we refuse them up front.
COMPILE_TIME = [
    (((0, 2), ("a", "b")), "sizes must be >= 1"),
    (((True, 2), ("a", "b")), "whole number"),
    (((2, 2), ("a", "b"), [0, 1, 1, 3]), "more than once"),
    (((2, 2), ("a", "b"), [0, 1, -2, 3]), "negative"),
]


@pytest.mark.parametrize(("args", "phrase"), COMPILE_TIME)
def test_compile_time_rejections(args: tuple, phrase: str) -> None:
    with pytest.raises(LayoutError, match=phrase):
        Layout(*args)


def test_empty_tuple_entry_is_refused_with_a_hint() -> None:
    with pytest.raises(LayoutError, match="write 'None'"):
        Layout((2,), ("dp",))(())


def test_device_count_check_names_the_axes() -> None:
    layout = Layout((2, 3), ("dp", "mp"))
    layout.check_device_num(6)
    with pytest.raises(LayoutError, match=r"dp=2 x mp=3\) spans 6 devices but the job has 8"):
        layout.check_device_num(8)


def test_interleaved_axis_adds_no_devices() -> None:
    layout = Layout((2, 2, 2), ("dp", "mp", INTERLEAVED))
    assert layout.device_num == 4
    assert layout.interleave_num == 2
    layout.check_device_num(4)


def test_shape_checks() -> None:
    tensor_layout = Layout((2, 4), ("dp", "mp"))("dp", "mp")
    tensor_layout.check_shape((4, 8))
    with pytest.raises(LayoutError, match="has 3 dimensions"):
        tensor_layout.check_shape((4, 8, 2), "x")
    with pytest.raises(LayoutError, match=r"dimension 1 has size 6, which is not divisible by its split 4 \(mp\(4\)\)"):
        tensor_layout.check_shape((4, 6), "x")


def test_code_round_trips_through_mindspore() -> None:
    layout = Layout((2, 2, 2), ("dp", "sp", "mp"), [7, 6, 5, 4, 3, 2, 1, 0])
    tensor_layout = layout("mp", ("sp", "dp"))
    namespace: dict = {"Layout": MsLayout}
    exec(f"layout = {layout.to_code()}\nresult = {tensor_layout.to_code()}", namespace)
    assert namespace["result"].to_dict() == tensor_layout.to_dict()


def test_replica_axes() -> None:
    layout = Layout((2, 2, 2), ("dp", "sp", "mp"))
    assert layout("mp", "None").replica_axes == ("dp", "sp")
    assert layout(("sp", "dp"), "mp").replica_axes == ()
