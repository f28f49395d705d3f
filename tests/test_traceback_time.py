"""A traceback's time (the last stamped line before it, which says which rank failed first) does not depend on
how its bytes were read: in one block, in blocks cut anywhere, or in live ticks that cut between the stamp, the
header and the exception line. Before, a traceback whose header came in an earlier read got no time (NaN), so
the root cause fell back to file times."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from core.logs import ReaderSettings, read_run
from core.logs.rows.reader import RunReader

STAMP = b"[WARNING] ME(9:1,MainProcess):2026-11-22-07:09:00.372.000 [a.py:1] before\n"
HEADER = b"Traceback (most recent call last):\n"
FRAME = b'  File "train.py", line 3, in <module>\n'
EXC = b"RuntimeError: boom\n"
WHEN = datetime(2026, 11, 22, 7, 9, 0).timestamp() + 0.372  # local time, as MindSpore prints it


def _times(errors: object) -> list[float]:
    return [float(t) for t in errors["log_time"]]  # type: ignore[index]


def _live(tmp_path: Path, parts: list[bytes]) -> list[float]:
    log = tmp_path / "worker_0.log"
    log.write_bytes(parts[0])
    reader = RunReader(tmp_path)
    reader.refresh()
    for part in parts[1:]:
        with log.open("ab") as f:
            f.write(part)
        reader.refresh()
    return _times(reader.snapshot().errors)


def test_a_traceback_whose_header_came_in_an_earlier_tick_keeps_its_time(tmp_path: Path) -> None:
    one = read_run_times(tmp_path / "one", [STAMP + HEADER + FRAME + EXC])
    assert len(one) == 1 and math.isclose(one[0], WHEN, abs_tol=1e-3)
    (tmp_path / "a").mkdir()
    assert _live(tmp_path / "a", [STAMP + HEADER, FRAME + EXC]) == one
    (tmp_path / "b").mkdir()
    assert _live(tmp_path / "b", [STAMP, HEADER, FRAME, EXC]) == one


def read_run_times(folder: Path, parts: list[bytes], block: int | None = None) -> list[float]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "worker_0.log").write_bytes(b"".join(parts))
    settings_ = ReaderSettings(read_block=block, compiled_min=0) if block else ReaderSettings(prefetch_min=1)
    return _times(read_run(folder, settings=settings_).errors)


@settings(max_examples=40, deadline=None)
@given(pad=st.integers(0, 3000), gap=st.integers(0, 40), block=st.sampled_from([2048, 4096]))
def test_the_time_is_the_same_however_the_blocks_cut_the_log(tmp_path_factory, pad: int, gap: int, block: int) -> None:
    """Padding moves the stamp, the header and the exception across block edges; `gap` unstamped lines sit
    between the stamp and the traceback."""
    filler = b"".join(b"padding line %d\n" % i for i in range(pad // 16))
    between = b"".join(b"plain line %d\n" % i for i in range(gap))
    parts = [filler, STAMP, between, HEADER, FRAME, EXC]
    root = tmp_path_factory.mktemp("cut")
    whole = read_run_times(root / "whole", parts)
    assert len(whole) == 1 and math.isclose(whole[0], WHEN, abs_tol=1e-3)
    assert read_run_times(root / "blocks", parts, block) == whole
