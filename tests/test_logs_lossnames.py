"""Issue 30 items 1-2 (round 38): loss lines without a `loss` word, multi-word keys in separated fields, and a line
of several progress redraws separated by CR. Real lines, each from the corpus entry named beside it."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs import ReaderSettings, read_run
from core.logs.judgement.status import tail_lines
from core.logs.rows.general import read_line, reads_nothing
from core.logs.rows.keys import metric_name
from core.logs.rows.reader import RunReader
from core.logs.tokens.bulk import scan_by_definition
from core.logs.tokens.lexicon import KEYWORDS, holds_keyword
from core.logs.tokens.linescan import scan_block

# tests/fixtures/real_logs/opennmt-step-rows-with-dataset-reload-line_opennmt-py-1362/log/train.log
OPENNMT = (
    b"[2019-03-21 18:31:43,773 INFO] Step 2250/200000; acc:  31.18; ppl: 57.53; xent: 4.05; lr: 0.00028; "
    b"5092/261 tok/s;   6641 sec\n"
    b"[2019-03-21 18:34:11,780 INFO] Step 2300/200000; acc:  30.36; ppl: 61.43; xent: 4.12; lr: 0.00028; "
    b"4953/257 tok/s;   6789 sec\n"
    b"[2019-03-21 18:35:23,631 INFO] Loading dataset from XXXX.train.0.pt, number of examples: 66620\n"
)
# tests/fixtures/real_logs/opennmt-step-rows-xent-turns-nan_opennmt-py-1072/log/train.log
OPENNMT_NAN = (
    b"[2018-11-26 15:06:01,481 INFO] Step 5650/50000; acc:   0.19; ppl:   nan; xent:  nan; lr: 0.00070; "
    b"1928/2310 tok/s;  21110 sec\n"
)
# tests/fixtures/real_logs/deepspeed-random-ltd-perplexity-nan-then-sigint_deepspeedexamples/log/train_with_kernel.log
DEEPSPEED = b"Step at 1 with Perplexity: 61.57951131190911\nStep at 4 with Perplexity: nan\n"
# tests/fixtures/real_logs/mlx-lora-iter-train-loss-and-val-loss-rows_mlx-examples-620/log/train.log
MLX = (
    b"Iter 25: Train loss 1.593, Learning Rate 7.000e-05, It/sec 0.999, Tokens/sec 387.697, Trained Tokens 9699, "
    b"Peak mem 8.104 GB\n"
)


def _settings(compiled: bool) -> ReaderSettings:
    """Tiny blocks so a few lines take the bulk path; `compiled`: its compiled scan too."""
    return ReaderSettings(read_block=256, prefetch_min=1, block_min=1, max_partial_line=255, shape_min=1,
                          compiled_min=0 if compiled else 1 << 40)  # fmt: skip


@pytest.mark.parametrize("settings_", [None, _settings(False), _settings(True)], ids=["line", "bulk", "compiled"])
def test_opennmt_xent_is_the_loss_and_ppl_a_metric_on_every_path(tmp_path: Path, settings_) -> None:
    """OpenNMT-py prints no `loss` word: `xent` (cross entropy) is the training loss, `ppl` a metric, and a `[date
    INFO]` line holding only `xent` is found by the keyword scan, the compiled one included."""
    (tmp_path / "train.log").write_bytes(b"[2019-03-21 18:31:40,000 INFO] Start training\n" + OPENNMT + OPENNMT_NAN)
    m = read_run(tmp_path, settings=settings_).metrics
    assert m["step"].tolist() == [2250, 2300, 5650]
    assert m["loss"].tolist()[:2] == [4.05, 4.12] and math.isnan(m["loss"].iloc[2])
    assert m["ppl"].tolist()[:2] == [57.53, 61.43] and m["acc"].tolist()[:2] == [31.18, 30.36]
    assert m["lr"].tolist() == [0.00028, 0.00028, 0.0007]


def test_opennmt_validation_lines_are_evaluation() -> None:
    """`Validation perplexity:` / `Validation xent:` (OpenNMT-py's own eval report) are no training rows."""
    for line in (b"[2019-03-21 18:55:00,000 INFO] Validation perplexity: 23.9", b"[x INFO] Validation xent: 3.17"):
        read = read_line(line)
        assert read is not None and read.eval, line


def test_a_perplexity_only_line_is_an_evaluation_series_of_its_own(tmp_path: Path) -> None:
    """DeepSpeed's `Step at 4 with Perplexity: nan`: no loss on the line, so no training row and no NaN loss; the
    perplexity is an eval series named by its key (not by the prose before it: `with`)."""
    read = read_line(b"Step at 4 with Perplexity: nan")
    assert read is not None and read.eval and list(read.extras) == ["perplexity"]
    (tmp_path / "train.log").write_bytes(DEEPSPEED)
    snap = read_run(tmp_path)
    assert snap.metrics.empty
    assert snap.evals["name"].tolist() == ["perplexity", "perplexity"]


@pytest.mark.parametrize(
    "line",
    [
        b"[INFO] Applying patch to apply_rotary_pos_emb 3.5",  # `ppl` inside a word
        b"Loading model cost 1.241 seconds.",  # `cost` is no loss word (a real corpus line)
        b"[INFO] xent function defined at line 12",  # a loss word with no number after it
        b"ppl",
    ],
)
def test_prose_with_or_near_the_new_words_gives_no_row(line: bytes) -> None:
    read = read_line(line)
    assert read is None or "loss" not in read.fields


def test_reads_nothing_never_skips_a_line_with_a_loss_word() -> None:
    """`reads_nothing` (the templated path's cheap skip) must not call an xent or perplexity line empty."""
    for line in (OPENNMT.splitlines()[0], DEEPSPEED.splitlines()[1]):
        assert not reads_nothing(line) and read_line(line) is not None


@settings(max_examples=300, deadline=None)
@given(
    word=st.sampled_from(KEYWORDS),
    case=st.lists(st.booleans(), min_size=10, max_size=10),
    before=st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")),
    after=st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")),
    offset=st.integers(0, 15),
)
@example(word=b"perplexity", case=[True] * 10, before=b"", after=b"", offset=3)  # in capitals
def test_every_keyword_makes_a_bracketed_line_a_candidate_on_both_scans(
    word: bytes, case: list[bool], before: bytes, after: bytes, offset: int
) -> None:
    """Whatever surrounds a keyword (in any case, at any alignment), its `[...]` line is found by the compiled scan
    and by a small read's search alike."""
    spelled = bytes(c - 32 if up and 97 <= c <= 122 else c for c, up in zip(word, case + [False] * 10, strict=False))
    line = b"[INFO] " + b"y" * offset + before + spelled + after
    data = b"first\n" + line + b"\n[INFO] nothing here\n"
    compiled = [x.tolist() for x in scan_block(np.frombuffer(data, dtype=np.uint8), len(data))]
    small = [x.tolist() for x in scan_by_definition(data, len(data), True, bytearray())]
    assert compiled == small
    assert 6 in compiled[2] and holds_keyword(line.lower())


def test_mlx_multi_word_keys_are_named_from_the_start_of_their_field() -> None:
    """MLX's `Learning Rate 7.000e-05, ..., Trained Tokens 9699, Peak mem 8.104 GB`: between commas, every word
    before the value is the key (not only the last: `rate`, `mem`), an integer value and a spaced unit too."""
    read = read_line(MLX)
    assert read is not None and not read.eval
    assert read.fields["loss"] == 1.593 and read.fields["lr"] == 7e-05 and read.keys["lr"] == "learning_rate"
    assert read.extras == {"it_sec": 0.999, "tokens_sec": 387.697, "trained_tokens": 9699.0, "peak_mem": 8.104}


@pytest.mark.parametrize(
    ("line", "expect"),
    [
        # old Megatron (tests/fixtures/real_logs/megatron-old-format-space-pairs-nan_chinese-transformer-xl-7)
        (
            b" iteration      700/    3000 | consumed samples: 22400 | learning rate 6.300E-06 | lm loss 6.758929E+00 "
            b"| loss scale 64.0 |",
            {"lr": 6.3e-06, "loss_scale": 64.0, "consumed_samples": 22400.0},
        ),
        # `;`-separated fields (a detectron-style trainer, issue 30's corpus)
        (b"Epoch 3 Loss 10.08; LR 1.00e-06; Iter time 3.72; Mem 29072.79MB", {"lr": 1e-06, "mem": 29072.79}),
        # nanoGPT's unit glued to the value (tests/fixtures/real_logs/nanogpt-iter-loss-turns-nan-quoted_nanogpt-215)
        (b"iter 1631: loss 4.0863, time 561.94ms, mfu 30.12%", {"step_time_ms": 561.94, "mfu": 30.12}),
    ],
)
def test_separated_fields_of_other_suites_keep_their_keys(line: bytes, expect: dict[str, float]) -> None:
    read = read_line(line)
    assert read is not None
    got = {**read.fields, **read.extras}
    assert {k: got.get(k) for k in expect} == expect


_WORDS = st.from_regex(re.compile(r"[A-Z][a-z]{1,7}|[a-z]{2,8}|[A-Z][a-z]{1,4}/sec"), fullmatch=True).filter(
    lambda w: (
        w.lower() not in {"loss", "is", "nan", "inf", "infinity", "rank", "ms", "s", "e"}
        and metric_name(w.encode()) not in {"step", "epoch", "iter", "batch", "it", "iteration", "steps", "epochs"}
    )
)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.lists(_WORDS, min_size=1, max_size=3).map(" ".join), min_size=1, max_size=4, unique=True),
    values=st.lists(st.decimals(0, 10**6, places=3, allow_nan=False).map(str), min_size=4, max_size=4),
    sep=st.sampled_from([", ", " | ", "; "]),
)
def test_a_key_of_several_words_in_a_field_is_all_its_words(keys: list[str], values: list[str], sep: str) -> None:
    """After `Train loss 1.5` (no separator), each field `Some Key Words 12.5` gives a column named by all of its
    words (metric_name), holding its value: for any words, any number of fields and `,`, `|` or `;`."""
    names = [metric_name(k.encode()) for k in keys]
    if len(set(names)) < len(names) or any(n.split("_")[-1] == "loss" for n in names):
        return  # two spellings of one name, or a loss of its own: other rules
    line = "Iter 5: Train loss 1.5" + "".join(f"{sep}{k} {v}" for k, v in zip(keys, values, strict=False))
    read = read_line(line.encode())
    assert read is not None and read.fields["loss"] == 1.5
    got = {read.keys.get(c, c): v for c, v in (*read.fields.items(), *read.extras.items())}
    for name, value in zip(names, values, strict=False):
        assert got.get(name) == float(value), (line, got)


def test_the_prose_before_a_key_is_not_its_name() -> None:
    assert metric_name(b"with Perplexity") == "perplexity"
    assert metric_name(b"the ppl") == "ppl"
    assert metric_name(b"number of steps") == "number_of_steps"  # words inside a key stay
    assert metric_name(b"per step time") == "per_step_time"
    assert metric_name(b"with") == "with"  # a key of one word is its word


# Item 3: a progress bar redrawn with CR and no newline: every segment is a draw, each a training state
_CR_LINE = b"\r".join(b"epoch: 1 step: %d, loss is %s" % (s, v) for s, v in ((1, b"2.5"), (2, b"2.4"), (3, b"2.3")))


@pytest.mark.parametrize("settings_", [None, _settings(False), _settings(True)], ids=["line", "bulk", "compiled"])
def test_cr_separated_draws_are_each_a_row_the_last_one_last(tmp_path: Path, settings_) -> None:
    """`\\r` within a line: the reader splits at every CR (core.logs.bytes.rawio.cr_to_lf), so each segment is read,
    the one the user sees (the last) last; the rows keep the file's byte offsets."""
    data = b"start\n" + _CR_LINE + b"\n"
    (tmp_path / "train.log").write_bytes(data)
    m = read_run(tmp_path, settings=settings_).metrics
    assert m["step"].tolist() == [1, 2, 3] and m["loss"].tolist() == [2.5, 2.4, 2.3]
    assert all(data[int(o) :].startswith(b"epoch: 1 step: %d" % s) for o, s in zip(m["offset"], [1, 2, 3], strict=True))


def test_a_bar_redrawing_the_same_values_over_cr_is_one_row(tmp_path: Path) -> None:
    """A tqdm bar drawn over CR: its counter moves (`update`) with the values it drew before: no second row; a new
    loss at the same counter (`set_postfix`) is a row."""
    draws = [
        b"  20%|##  | 1/5 [00:01<00:04, 1.2it/s, loss=2.90]",
        b"  20%|##  | 1/5 [00:01<00:04, 1.2it/s, loss=2.80]",
        b"  40%|#### | 2/5 [00:02<00:03, 1.2it/s, loss=2.80]",
        b"  40%|#### | 2/5 [00:02<00:03, 1.2it/s, loss=2.70]",
    ]
    (tmp_path / "train.log").write_bytes(b"start\n" + b"\r".join(draws) + b"\n")
    assert read_run(tmp_path).metrics["loss"].tolist() == [2.9, 2.8, 2.7]


def test_cr_draws_written_across_two_live_ticks_are_read_once_each(tmp_path: Path) -> None:
    """A live tick may end mid-line, between two CR draws: the draws before it are read then, the rest at the next
    tick, none twice."""
    path = tmp_path / "train.log"
    path.write_bytes(b"start\n" + _CR_LINE[: _CR_LINE.index(b"\r", 40) + 1] + b"epoch: 1 st")
    reader = RunReader(tmp_path)
    reader.refresh()
    assert reader.snapshot().metrics["loss"].tolist() == [2.5, 2.4]
    with path.open("ab") as f:
        f.write(b"ep: 3, loss is 2.3\n")
    reader.refresh()
    assert reader.snapshot().metrics["loss"].tolist() == [2.5, 2.4, 2.3]


def test_the_log_tail_shows_a_redrawn_line_as_its_last_draw(tmp_path: Path) -> None:
    """The Monitor's log tail (and diagnose's context) shows what a terminal shows of a line a bar redrew over CR:
    its last draw, not every draw glued into one line; a CRLF line loses only its CR."""
    path = tmp_path / "train.log"
    path.write_bytes(b"start\r\n" + _CR_LINE + b"\n[INFO] a\r[WARNING] b\nend\n")
    assert tail_lines(path, hide_noise=False) == ["start", "epoch: 1 step: 3, loss is 2.3", "[WARNING] b", "end"]
    assert tail_lines(path) == ["start", "epoch: 1 step: 3, loss is 2.3", "end"]  # the noise seen is hidden
