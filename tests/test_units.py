"""core.units.format_bytes: one formatter for every byte count the product shows."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from core.units import format_bytes

_SHAPE = re.compile(r"(-?\d+) B|(-?\d+\.\d) (KiB|MiB|GiB|TiB)")
_UNIT = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


@given(st.integers(min_value=-(2**62), max_value=2**62) | st.floats(min_value=-1e18, max_value=1e18))
@example(n=11008)  # 10.75 KiB shown as "10.8 KiB": exactly half a decimal off, 51.2000000000007 B in floats
@example(n=1048575)  # 1 MiB - 1 B was shown as "1024.0 KiB": a unit is chosen on the number shown
@example(n=1023.5)  # was "1024 B"
@example(n=2**40 * 1024 - 1)  # the last unit keeps any number: "1024.0 TiB"
def test_any_size_reads_back_within_rounding(n: float) -> None:
    text = format_bytes(n)
    match = _SHAPE.fullmatch(text)
    assert match, text
    if match.group(1) is not None:
        assert abs(n) < 1024 and abs(int(match.group(1)) - n) <= 0.5
    else:
        unit = _UNIT[match.group(3)]
        assert abs(n) >= 1024 * 0.9995
        # one decimal of the unit: half of 0.1 at most, with room for the float error of that half
        assert abs(float(match.group(2)) * unit - n) <= 0.05 * unit * (1 + 1e-9)
        assert match.group(3) == "TiB" or abs(float(match.group(2))) < 1024


def test_a_number_rounded_up_to_1024_moves_to_the_next_unit() -> None:
    assert [format_bytes(n) for n in (1023.5, 1048575, 2**30 - 1, 2**40 - 1)] == [
        "1.0 KiB",
        "1.0 MiB",
        "1.0 GiB",
        "1.0 TiB",
    ]
    assert format_bytes(-1048575) == "-1.0 MiB" and format_bytes(1023.4) == "1023 B"


def test_sizes_users_see() -> None:
    assert [format_bytes(n) for n in (0, 512, 1536, 28 * 2**30, 2**41)] == [
        "0 B",
        "512 B",
        "1.5 KiB",
        "28.0 GiB",
        "2.0 TiB",
    ]
