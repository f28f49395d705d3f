"""The per-file series rules (core.logs.rows.perfile `set_aside`) decide each file alone: the table's asking files
given together (their rows interleaved as ticks add them, as `MetricTable.set_aside` hands them over) get, file by
file, what each file's rows get given alone. Holds which file each rule applies to (`epoch_codes`, `only_sides`,
`estimate_codes`, `side_codes`: looked up per file, not per row, since round 17) to the rows of that file."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs.rows.perfile import set_aside

_NAN = float("nan")
_ROW = st.tuples(
    st.integers(0, 2),  # the file's code
    st.integers(0, 1),  # the rank
    st.sampled_from([_NAN, 1.0, 2.0]),  # step
    st.sampled_from([_NAN, 1.0]),  # epoch
    st.sampled_from([0.5, 0.7, _NAN]),  # loss
    st.sampled_from([_NAN, 0.1]),  # lr: another value named (a row's shape)
    st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.integers(0, 2)),  # est/avg/part/trained/n
)
_FILES = st.lists(st.integers(0, 2), max_size=3, unique=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(_ROW, min_size=1, max_size=40),
    epoch_codes=_FILES,
    estimate_codes=_FILES,
    side_codes=_FILES,
    only_sides=_FILES,
)
def test_files_given_together_are_decided_as_each_alone(
    rows: list[tuple], epoch_codes: list[int], estimate_codes: list[int], side_codes: list[int], only_sides: list[int]
) -> None:
    code = np.array([r[0] for r in rows], dtype=np.int16)
    rank = np.array([r[1] for r in rows], dtype=np.int64)
    cols = {
        "step": np.array([r[2] for r in rows]),
        "epoch": np.array([r[3] for r in rows]),
        "loss": np.array([r[4] for r in rows]),
        "lr": np.array([r[5] for r in rows]),
    }
    flags = np.array([r[6][:4] for r in rows], dtype=bool).T
    named = np.array([r[6][4] for r in rows], dtype=np.int64)
    asked = sorted(set(code.tolist()))

    def decide(at: np.ndarray, files: list[int]) -> np.ndarray:
        def only(codes: list[int]) -> list[int]:
            return [c for c in codes if c in files]

        return set_aside(
            code[at],
            rank[at],
            {k: v[at] for k, v in cols.items()},
            files,
            only(epoch_codes),
            flags[0][at],
            only(estimate_codes),
            only(side_codes),
            only(only_sides),
            named[at],
            flags[1][at],
            flags[2][at],
            flags[3][at],
        )

    whole = decide(np.arange(len(rows)), asked)
    for f in asked:
        at = np.flatnonzero(code == f)
        assert whole[at].tolist() == decide(at, [f]).tolist(), f
