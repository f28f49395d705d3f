"""A row assembled from several lines (core.logs.rows.sidelines): a step's metrics printed on lines of their own
beside its loss line are columns of that step's row, on every read path (tests/helpers.py READ_PATHS), read from
the real lines of the corpus entries each shape was written from (tests/fixtures/real_logs/<entry>/log)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs.rows.reader import RunReader
from core.logs.rows.sidelines import RUN_LINES, side_line
from core.logs.tokens.sidescan import side_candidates
from tests.helpers import READ_PATHS, entry_lines, one_log

# entry, the side line's column, its spelling, {row's loss -> the value its side line gives}
CASES = [
    # `I0425 10:13:04.672341  9167 solver.cpp:208] Iteration 200, lr = 0.01` before its `Iteration 200, loss =` row
    ("caffe-2014-iteration-loss-rows-with-snapshot-lines-nan-at-220_caffe-361", "lr", "lr", {6.55622: 0.01}),
    # `... sgd_solver.cpp:106] Iteration 0, lr = 0.01` after its row and the `Train net output #0: loss =` echo
    ("caffe-train-net-output-duplicates-loss-then-minus-nan-with-test-lines_caffe-4449", "lr", "lr", {2.46876: 0.01}),
    # `INFO:tensorflow:global_step/sec: 2.1272` after the `step: 100 total_loss: nan ...` row
    (
        "tf-step-total-loss-rows-nan-from-step-100-global-step-sec-interleaved_epos-9",
        "global_step_sec",
        "global_step_sec",
        {9.5576973: None},
    ),
    # `|    learning_rate        | 0.001       |` and `|    value_loss | 0.777 |` around `|    loss | 0.482 |`
    ("sb3-logger-table-train-loss-two-dumps_rl-baselines3-zoo-521", "value_loss", "value_loss", {0.482: 0.777}),
    ("sb3-logger-table-train-loss-two-dumps_rl-baselines3-zoo-521", "lr", "learning_rate", {0.482: 0.001}),
    # `| rollout/ |` section of the table before the loss: `|    ep_rew_mean          | -213      |`
    ("sb3-logger-table-train-loss-two-dumps_rl-baselines3-zoo-521", "ep_rew_mean", "ep_rew_mean", {0.482: -213.0}),
    # a table without a loss (the first) gives nothing; `|    exploration_rate | 0.854    |` before `| loss |`
    (
        "sb3-dqn-table-blocks-24-loss-rows-breakout_ml-capstone-joy-0.0005",
        "exploration_rate",
        "exploration_rate",
        {0.000147: 0.854},
    ),
    # `    optim/total_grad_norm=0.0002` before `    train/CrossEntropyLoss=1.78...e-06`, `train/Perplexity=1.000` after
    (
        "olmo-multiline-step-blocks-crossentropy-collapses-to-zero_olmo-692",
        "optim_total_grad_norm",
        "optim_total_grad_norm",
        {12.18: 231.7, 0.0: 7.725906669975302e-08},
    ),
    (
        "olmo-multiline-step-blocks-crossentropy-collapses-to-zero_olmo-692",
        "throughput_total_tokens",
        "throughput_total_tokens",
        {12.18: 1048576.0, 0.0: 3145728.0},
    ),
    # `[... rank=0] [step=75/739328]`, then `    train/CrossEntropyLoss=7.417` and `    train/Perplexity=1,664`
    (
        "olmo-step-75-block-then-critical-uncaught-olmothreaderror_olmo-552",
        "train_perplexity",
        "train_perplexity",
        {7.417: 1664.0},
    ),
    # `    optim/total_grad_norm=1.608` before `    train/CrossEntropyLoss=9.064` (step 10 of 37)
    (
        "olmo-step-block-indented-ce-loss-37-rows-then-sigterm-signalexception_olmo-fork-150m-train-log",
        "optim_total_grad_norm",
        "optim_total_grad_norm",
        {9.064: 1.608},
    ),
    # `     | > decoder_loss: 0.20866  (0.19815)` before `     | > loss: 0.38516`, `     | > lr: 0.00010` after
    (
        "mozilla-tts-step-blocks-one-key-per-line-loss-then-traceback-cut_tts-460",
        "decoder_loss",
        "decoder_loss",
        {0.38516: 0.20866, 0.38027: 0.20624},
    ),
    ("mozilla-tts-step-blocks-one-key-per-line-loss-then-traceback-cut_tts-460", "lr", "lr", {0.38516: 0.0001}),
    # `... dfl: 1.5682, ` wrapped onto `   cur_lr: 0.05046505108475685`
    (
        "mindyolo-wrapped-epoch-step-row-then-segfault-signal-11_mindyolo-242",
        "lr",
        "cur_lr",
        {5.2299: 0.05046505108475685},
    ),
]
REPEAT = 40  # copies of the log: enough for the bulk paths (`block_min`, `shape_min`) to take its lines


@pytest.mark.parametrize("path", list(READ_PATHS))
@pytest.mark.parametrize("repeat", [1, REPEAT])
@pytest.mark.parametrize(("entry", "column", "key", "want"), CASES, ids=[f"{c[0][:24]}-{c[1]}" for c in CASES])
def test_a_side_line_is_a_column_of_its_steps_row(
    tmp_path: Path, entry: str, column: str, key: str, want: dict[float, float | None], repeat: int, path: str
) -> None:
    lines = entry_lines(entry)
    lines = lines[: next((i for i, x in enumerate(lines) if x.startswith(b"Traceback")), len(lines))]  # (its steps)
    reader = RunReader(one_log(tmp_path, lines * repeat), settings=READ_PATHS[path], one_shot=True)
    reader.refresh()
    snap = reader.snapshot()
    assert snap.metric_keys.get(column) == key
    frame = snap.metrics
    for loss, value in want.items():
        rows = frame[frame["loss"] == loss]
        assert len(rows) == repeat, (loss, len(rows))
        got = rows[column].tolist()
        if value is None:  # the first row has no side line: none is borrowed from another step
            assert all(math.isnan(v) for v in got), got
        else:
            assert got == [value] * repeat, (loss, got)


def test_tf_global_step_sec_goes_to_the_row_before_it() -> None:
    """`step: 100 ...` then `INFO:tensorflow:global_step/sec: 2.1272`, then `step: 200 ...`: the row before."""
    lines = entry_lines("tf-step-total-loss-rows-nan-from-step-100-global-step-sec-interleaved_epos-9")
    assert lines[1].startswith(b"step: 100 ") and lines[2] == b"INFO:tensorflow:global_step/sec: 2.1272"
    assert side_line(lines[2]) == ("global_step_sec\0global_step_sec", 2.1272, None)


def test_tf_side_values_follow_their_rows(tmp_path: Path) -> None:
    name = "tf-step-total-loss-rows-nan-from-step-100-global-step-sec-interleaved_epos-9"
    for path in READ_PATHS:
        (tmp_path / path).mkdir()
        reader = RunReader(one_log(tmp_path / path, entry_lines(name)), settings=READ_PATHS[path], one_shot=True)
        reader.refresh()
        frame = reader.snapshot().metrics
        by_step = dict(zip(frame["step"].tolist(), frame["global_step_sec"].tolist(), strict=True))
        assert math.isnan(by_step[0]) and by_step[100] == 2.1272 and by_step[200] == 2.22972, (path, by_step)


@pytest.mark.parametrize(
    ("line", "read"),
    [
        # a step's line names its step: it is placed by it (caffe-361, solver.cpp:208)
        (b"I0425 10:13:04.672341  9167 solver.cpp:208] Iteration 200, lr = 0.01", ("lr\0lr", 0.01, 200)),
        # a record's part holding a loss key (SB3's logger, rl-baselines3-zoo-521)
        (b"|    entropy_loss         | -1.36       |", ("entropy_loss\0entropy_loss", -1.36, None)),
        # a training qualified perplexity, thousands grouped (OLMo, olmo-692)
        (b"    train/Perplexity=195,153", ("train_perplexity\0train_perplexity", 195153.0, None)),
        # no side lines: an eval line, a loss line, prose, a table's section line, the TTS block's header
        (b"    eval/Perplexity=12.5", None),
        (b"I0425 10:12:49.611122  9167 solver.cpp:65] Iteration 180, loss = 6.55607", None),
        (b"I0425 10:13:04.978760  9167 solver.cpp:130] Snapshotting to caffe_dishll_train_iter_200", None),
        (b"| rollout/                |           |", None),
        (b"   --> STEP: 309/390 -- GLOBAL_STEP: 91150", None),
    ],
)
def test_side_line_shapes(line: bytes, read: tuple | None) -> None:
    assert side_line(line) == read


def _kept(text: bytes, at: int) -> bool:
    """Whether the compiled sift (core.logs.tokens.sidescan) keeps the row whose line holds text[at]."""
    starts = np.empty(1, dtype=np.int64)
    a = np.frombuffer(text, dtype=np.uint8)
    return bool(side_candidates(a, np.array([at], dtype=np.int64), 0, len(text), starts)[0])


ROW = b"Iteration 180, loss = 6.55607"  # a row's line (caffe-361), beside the line under test
# noise beside every row of the synthetic logs (benchmarks/synth_noise.py, after Megatron's and MindSpore's): no
# side line, and none the sift keeps
NOT_BESIDE = [
    b"Number of parameters in transformer layers in billions:  0.45",
    b"[WARNING] DISTRIBUTED(20000,144756014165,python):2026-09-21-14:12:51.000.000 [mindspore/ccsrc] Begin.",
    b"WARNING:megatron.core.models: the model is built",
    b" iteration        2/     200 | consumed samples:         2048 | lm loss: 2.291295E+00 | loss scale: 1.0 |x",
]


@pytest.mark.parametrize("entry", sorted({c[0] for c in CASES}))
def test_the_sift_keeps_every_row_a_side_line_of_its_log_is_beside(entry: str) -> None:
    """Every side line and section line of the real logs the rule was written from, after a row and before one."""
    lines = [x for x in entry_lines(entry) if any(p.fullmatch(x) for p in RUN_LINES)]
    assert lines
    for line in lines:
        assert _kept(ROW + b"\n" + line + b"\n", 0), line
        assert _kept(line + b"\n" + ROW + b"\n", len(line) + 1), line


@pytest.mark.parametrize("line", NOT_BESIDE)
def test_the_sift_drops_a_row_beside_noise(line: bytes) -> None:
    assert not any(p.fullmatch(line) for p in RUN_LINES)
    assert not _kept(ROW + b"\n" + line + b"\n", 0)
    assert not _kept(line + b"\n" + ROW + b"\n", len(line) + 1)
    assert not _kept(line + b"\n" + ROW + b"\n" + ROW + b"\n", len(line) + 1)  # (the next line is a row's)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(RUN_LINES).flatmap(lambda p: st.from_regex(p, fullmatch=True)))
@example(b"\t|x= 1.#QNAN |\r")
@example(b"INFO:tensorflow:global_step/sec: Infinity")
@example(b"\tA:NaN")
@example(b" x: nan")
@example(b" x: -inf")
@example(b" x: INF")
@example(b" x: 1.#IND")
def test_the_sift_keeps_a_row_beside_any_line_of_a_run(line: bytes) -> None:
    """The sift's outline holds for every line the rule's patterns take (a superset): it drops no row they fill."""
    assert _kept(ROW + b"\n" + line + b"\n", 0), line
    assert _kept(line + b"\n" + ROW + b"\n", len(line) + 1), line


# a live tick's blocks of a few rows, sifted in one compiled call (sidescan.sift_rows) once a big read loaded the
# compiled passes, read as the Python walk of every row reads them (tests/helpers' paths read whole logs: these are
# the blocks a tick cuts, a batch's bytes of other files before them, a last line without its newline)
_ROW_LINES = [b"Iteration %d, loss = 6.55607", b"I0425 10:12:49.611122  9167 solver.cpp:65] Iteration %d, loss = 2.1"]
_NOISE = st.one_of(
    st.sampled_from(NOT_BESIDE),
    st.binary(max_size=24).filter(lambda b: b"\n" not in b),
)


@st.composite
def _tick_block(draw: st.DrawFn) -> tuple[bytes, int, int, list[tuple[int, float]], bool]:
    """(the buffer, `floor`, `base`, the rows (their file offsets and steps), whether the last line ends)."""
    run = (
        st.sampled_from(RUN_LINES).flatmap(lambda p: st.from_regex(p, fullmatch=True)).filter(lambda b: b"\n" not in b)
    )
    kinds = draw(st.lists(st.sampled_from(["row", "run", "run", "noise"]), min_size=1, max_size=12))
    before = draw(st.binary(max_size=20))  # another file's bytes in the batch
    base = draw(st.integers(-len(before), 10_000))
    text, rows = bytearray(before), []
    for kind in kinds:
        if kind == "row":
            step = draw(st.integers(0, 3))
            rows.append((float(base + len(text) + draw(st.integers(0, 5))), float(step)))
            text += draw(st.sampled_from(_ROW_LINES)) % step
        else:
            text += draw(run if kind == "run" else _NOISE)
        text += b"\n"
    ends = draw(st.booleans())
    if not ends:
        text = text[:-1]
    if draw(st.booleans()):  # a row this block did not read (a batch's earlier block): outside, never walked
        rows.insert(0, (float(base + len(before) - 1), 0.0))
    return bytes(text), len(before), base, rows, ends


def _attached(text: bytes, floor: int, base: int, rows: list[tuple[int, float]], compiled: bool) -> tuple:
    """What `carry_and_attach` fills in for the rows, sifted (`compiled`) or walked row by row."""
    from unittest import mock

    from core.logs.bytes.discover import LogFile
    from core.logs.rows import sidelines
    from core.logs.rows.filestate import FileState
    from core.logs.tokens.bulk import ROW_KEYS

    fs = FileState(LogFile(Path("worker_0.log"), "worker_0.log", "worker", 0, "msrun"))
    for offset, step in rows:
        fs.rows.append(tuple({"loss": 1.0, "step": step, "offset": offset}.get(k, math.nan) for k in ROW_KEYS))
    import core.logs.tokens.linescan  # noqa: F401  (loaded: the sift is taken)

    with mock.patch.dict(sys.modules):
        if not compiled:  # as a small read, which never loaded the compiled passes: every row walked
            del sys.modules["core.logs.tokens.linescan"]
        sidelines.carry_and_attach(fs, bytearray(text), floor, base, len(text), 0)
    block, extras = fs.rows.take_all()
    return (
        block.tobytes(),
        {k: (r.tolist(), v.tobytes()) for k, (r, v) in extras.items()},
        dict(fs.metric_keys),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_tick_block())
@example((b"x\nIteration 1, loss = 6.5\n  lr: 0.1\n", 2, 98, [(100.0, 1.0)], True))  # a row opening the block
@example(
    (b"Iteration 1, loss = 6.5\n  lr: 0.1\nIteration 2, loss = 6.4\n  lr: 0.2", 0, 0, [(0.0, 1.0), (33.0, 2.0)], False)
)
def test_a_ticks_few_rows_sifted_read_as_the_walk_of_every_row(case: tuple) -> None:
    text, floor, base, rows, _ = case
    assert _attached(text, floor, base, rows, True) == _attached(text, floor, base, rows, False)
