"""Issue 30 item 6, round 6's build set (rules6b's part): the general rule its misread log asked for, on the real
lines of its corpus entry (tests/fixtures/real_logs/<entry>/SOURCE.md says where they come from), read on every path
the parser has, with the bad input beside it (what the rule must not take).

- mozilla-tts-step-blocks-one-key-per-line-loss-then-traceback-cut_tts-460: a record printed a key a line behind
  `| > ` (Mozilla / Coqui TTS): only its whole `loss` is a row, its parts (`decoder_loss`, ...) none
  (core.logs.rows.keylines, the family of Stable-Baselines3's key/value table).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.logs import ReaderSettings, read_run
from core.logs.rows.general import read_line
from core.logs.rows.keylines import record_part
from tests.helpers import READ_PATHS, REAL_LOGS, one_log

TTS = "mozilla-tts-step-blocks-one-key-per-line-loss-then-traceback-cut_tts-460"
TTS_LOG = (REAL_LOGS / TTS / "log" / "train.log").read_bytes()


def _losses(tmp_path: Path, data: bytes, how: ReaderSettings) -> list[float]:
    """The training losses, in file order, of `data` as a run's one log read on the path `how`."""
    m = read_run(one_log(tmp_path, data.splitlines()), settings=how).metrics
    return m.sort_values("offset", kind="stable")["loss"].tolist()


def test_a_record_line_is_a_row_only_for_its_whole_loss() -> None:
    """The real block's lines: the bare `loss` is the step's row, the parts before it are none."""
    whole = read_line(b"     | > loss: 0.38516")
    assert whole is not None and not whole.eval and whole.fields["loss"] == 0.38516
    for part in (
        b"     | > decoder_loss: 0.20866  (0.19815)",
        b"     | > postnet_loss: 0.17622  (0.16908)",
        b"     | > stopnet_loss: 0.01802  (0.02207)",
        b"     | > ga_loss: 0.00028  (0.00108)",
    ):
        assert read_line(part) is None, part
        assert record_part(part)


def test_an_evaluation_blocks_average_loss_stays_evaluation_and_its_parts_none() -> None:
    """Coqui TTS's `--> EVAL PERFORMANCE` block: `| > avg_loss: X  (+D)` is the evaluation's loss; its parts none."""
    read = read_line(b"     | > avg_loss: 0.41230  (+0.01200)")
    assert read is not None and read.eval and read.fields["loss"] == 0.4123
    assert read_line(b"     | > avg_decoder_loss: 0.21001  (-0.00300)") is None


def test_what_is_no_record_line_keeps_its_reading() -> None:
    """Only a line ending in one key and its value (and its average) behind `| > ` is a record's line: a pipe row
    with more cells, a `>` of another kind, a loss line without the frame read as before; a NaN part is still a
    part."""
    for line, loss in (
        (b"| > decoder_loss: 0.3 | lr: 0.1", 0.3),
        (b"step 5 => decoder_loss: 0.3, lr: 0.1", 0.3),
        (b"decoder_loss: 0.20866  (0.19815)", 0.20866),
        (b">> Train Epoch: [0] [   0/4003] eta: 7:57:37 ArcFace loss: 17.7435", 17.7435),
    ):
        read = read_line(line)
        assert read is not None and read.fields["loss"] == loss, line
    assert read_line(b"     | > decoder_loss: nan  (nan)") is None
    nan = read_line(b"     | > loss: nan")
    assert nan is not None and nan.fields["loss"] != nan.fields["loss"]


@given(
    key=st.from_regex(r"[a-z][a-z_]{0,20}", fullmatch=True),
    value=st.floats(-1e6, 1e6, allow_nan=False),
    avg=st.none() | st.floats(-1e6, 1e6, allow_nan=False),
)
@example(key="decoder_loss", value=0.20866, avg=0.19815)
@example(key="loss", value=0.38516, avg=None)
@example(key="train_loss", value=0.5, avg=0.6)
def test_any_record_line_is_a_row_only_for_a_whole_loss(key: str, value: float, avg: float | None) -> None:
    """For every key: a row exactly when the key is `loss`, qualified at most by a word naming the whole loss
    (`train_`, `total_`) or its average (`avg_`, `val_`); never a part's row."""
    line = f"     | > {key}: {value!r}" + ("" if avg is None else f"  ({avg!r})")
    *words, last = key.split("_")
    whole = last == "loss" and set(words) <= {"train", "training", "total", "avg", "average", "mean"} | {
        "val",
        "valid",
        "validation",
        "eval",
        "evaluation",
        "test",
    }
    read = read_line(line)
    assert record_part(line.encode()) == (not whole)
    if whole:
        assert read is not None and read.fields["loss"] == value
    elif last == "loss":
        assert read is None


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_tts_step_blocks_give_one_row_each_on_every_path(tmp_path: Path, how: ReaderSettings) -> None:
    """The entry's two `--> STEP:` blocks are two rows, their `| > loss:` values, on every read path."""
    assert _losses(tmp_path, TTS_LOG, how) == [0.38516, 0.38027]


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_tts_step_blocks_behind_a_pipeline_prefix_read_as_the_plain_log(tmp_path: Path, how: ReaderSettings) -> None:
    """The same log behind docker compose's `tts_1  | ` (a prefix a log pipeline adds to every line): the same
    two rows."""
    data = b"\n".join(b"tts_1  | " + line for line in TTS_LOG.splitlines()) + b"\n"
    assert _losses(tmp_path, data, how) == [0.38516, 0.38027]


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_many_tts_blocks_read_alike_on_every_path(tmp_path: Path, how: ReaderSettings) -> None:
    """Blocks enough for the bulk path's templates (the same line shapes again and again): one row per block."""
    block = (
        "   --> STEP: {i}/390 -- GLOBAL_STEP: {g}\n     | > decoder_loss: 0.2{i:03d}  (0.19815)\n"
        "     | > postnet_loss: 0.1{i:03d}  (0.16908)\n     | > loss: 0.3{i:03d}\n     | > lr: 0.00010\n\n"
    )
    data = "".join(block.format(i=i, g=91000 + i) for i in range(40)).encode()
    assert _losses(tmp_path, data, how) == pytest.approx([0.3 + i / 1e4 for i in range(40)])


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_coqui_blocks_with_coloured_evaluations_read_alike_on_every_path(tmp_path: Path, how: ReaderSettings) -> None:
    """The family's later layout (Coqui TTS's trainer): the whole loss first with its average, parts named
    `loss_dur` / `log_mle`, and `--> EVAL PERFORMANCE` blocks whose values are coloured (ANSI): one training row per
    step block, one evaluation loss per evaluation block (its parts none), on every path."""
    step = (
        "   --> TIME: 2021-06-07 15:29:27 -- STEP: {i}/406 -- GLOBAL_STEP: {i}\n     | > loss: 3.{i:03d}  (3.5)\n"
        "     | > log_mle: 0.8{i:03d}  (0.82178)\n     | > loss_dur: 2.{i:03d}  (2.74979)\n"
        "     | > current_lr: 0.00010 \n"
    )
    evaluation = (
        "  --> EVAL PERFORMANCE\n     | > avg_loader_time:\x1b[92m 0.01000 (+0.00000)\x1b[0m\n"
        "     | > avg_loss:\x1b[92m 2.{i:03d} (-0.04000)\x1b[0m\n     | > avg_loss_dur:\x1b[92m 1.5 (+0.01000)\x1b[0m\n"
    )
    text = "".join(step.format(i=i) + (evaluation.format(i=i) if i % 10 == 9 else "") for i in range(40))
    snap = read_run(one_log(tmp_path, text.encode().splitlines()), settings=how)
    assert snap.metrics.sort_values("offset", kind="stable")["loss"].tolist() == pytest.approx(
        [3 + i / 1000 for i in range(40)]
    )
    assert sorted(snap.evals["value"].tolist()) == pytest.approx([2 + i / 1000 for i in (9, 19, 29, 39)])
