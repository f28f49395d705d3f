"""The end of a read block, per file (issue 30, carry12): a batch's chatter anchors searched once for all its files
(`failures.chatter_by_file`), and `settle`'s steps skipped when they have nothing to do (no errors; no error read
in the block). A live reader's snapshot, its ticks cut at any bytes, is one read's: rows, errors and failed ranks."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import CHATTER_SEARCH, CHATTER_WINDOW, chatter_by_file
from core.logs.rows.reader import RunReader
from core.logs.rows.snapshot import RunSnapshot
from tests.helpers import REAL_LOGS, bits, same_reading

# real corpus logs (tests/fixtures/real_logs/<entry>/SOURCE.md) whose ends exercise the end-of-block steps: a
# chatter-level KeyboardInterrupt report, DeepSpeed's `Killing subprocess` chatter, a SIGINT after rows, a torchrun
# ChildFailedError report block, rows then a launch failure, error lines that training follows
ENTRIES = (
    "ascend-warnings-then-keyboardinterrupt-no-rows_models-lpcnet-timers",
    "deepspeed-zero2-init-then-sigkill-handler-killing-subprocess_openrlhf-977",
    "deepspeed-random-ltd-perplexity-nan-then-sigint_deepspeedexamples",
    "childfailederror-report-flattened-rank2-sigkill-no-rows_amvur-2",
    "deit-style-metric-logger-rows-then-launch-failed-exitcode-1-local-rank-2_repvit-65",
    "lossmonitor-after-error-lines-trains-on_models-lpcnet-si-lk",
)


def _log(entry: str) -> bytes:
    """The entry's largest log file, its last 24 KB from a line's start (a live tick's files are small)."""
    path = max((p for p in (REAL_LOGS / entry / "log").rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    data = path.read_bytes()
    if len(data) > 24 << 10:
        data = data[data.index(b"\n", len(data) - (24 << 10)) + 1 :]
    return data


LOGS = [_log(e) for e in ENTRIES]


def _errors(snap: RunSnapshot) -> list[tuple]:
    """The errors frame but the observation time (a live read stamps when it saw a line). (A torchrun report's
    `ChildFailedError:` header's rank was left out here until cutreport: a tick cut between it and its `Root Cause`
    block's rank left it its file's; tests/test_issue30_cutreport.py cuts it at every byte.)"""
    return bits(snap.errors.drop(columns=["time"]))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=len(LOGS), max_size=len(LOGS)))
def test_live_ticks_cut_anywhere_read_the_end_of_blocks_as_one_read(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[tuple[float, float]]
) -> None:
    """Six real logs as six ranks, each cut at two bytes: read, then two live ticks of their new bytes (a batch
    of files read before), give the rows, errors and failed ranks of one read of the whole files."""
    root = tmp_path_factory.mktemp("carry12")
    (root / "live").mkdir()
    (root / "once").mkdir()
    parts = []
    for rank, (data, (a, b)) in enumerate(zip(LOGS, cuts, strict=True)):
        one, two = sorted((int(a * len(data)), int(b * len(data))))
        parts.append((data[:one], data[one:two], data[two:]))
        (root / "once" / f"worker_{rank}.log").write_bytes(data)
        (root / "live" / f"worker_{rank}.log").write_bytes(data[:one])
    live = RunReader(root / "live")
    live.refresh()
    live.snapshot()
    for tick in (1, 2):
        for rank, part in enumerate(parts):
            with (root / "live" / f"worker_{rank}.log").open("ab") as f:
                f.write(part[tick])
        live.refresh()
    got = live.snapshot()
    once = RunReader(root / "once", one_shot=True)
    once.refresh()
    want = once.snapshot()
    same_reading(got, want)
    assert _errors(got) == _errors(want)
    assert failed_ranks(got) == failed_ranks(want)


def test_the_logs_hold_what_the_steps_act_on() -> None:
    """The tests here are no empty ones: the logs hold chatter anchors, a torchrun report and a traceback."""
    whole = b"\n".join(LOGS)
    assert CHATTER_SEARCH.starts(whole, 0, len(whole), compiled=False)  # a chatter anchor in them
    assert b"ChildFailedError" in whole and b"Traceback" in whole


@pytest.mark.parametrize("compiled", [False, True])
@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.floats(0, 1), min_size=len(LOGS), max_size=len(LOGS)), window=st.integers(0, 64))
def test_one_search_for_a_batch_finds_each_files_anchors(compiled: bool, cuts: list[float], window: int) -> None:
    """A batch's files (b"\\n" then each file's bytes, as `Parser.feed_many` reads them), each the end of a real log
    cut anywhere: the one search's starts in each file's chatter window are each file's own search's there."""
    buf, spans = bytearray(b"\n"), []
    for data, c in zip(LOGS, cuts, strict=True):
        piece = data[int(c * len(data)) :]
        if piece and not piece.endswith(b"\n"):
            piece += b"\n"
        spans.append((len(buf), len(buf) + len(piece)))
        buf += piece
    spans = [s for s in spans if s[1] > s[0]]
    found = chatter_by_file(buf, spans)
    assert len(found) == len(spans)
    for (lo, hi), hits in zip(spans, found, strict=True):
        assert hits is not None  # (every file within its window: searched once)
        le = max(lo, hi - CHATTER_WINDOW, hi - window * 512)
        assert [h for h in hits if h >= le] == CHATTER_SEARCH.starts(buf, le, hi, compiled=compiled)


def test_a_file_past_its_window_is_searched_alone() -> None:
    """A batch holding a file longer than the chatter window gets no batch search (each file searches its own
    window, as before)."""
    data = LOGS[0] * (CHATTER_WINDOW // len(LOGS[0]) + 2)
    buf = bytearray(b"\n") + data
    assert chatter_by_file(buf, [(1, len(buf))]) == [None]
