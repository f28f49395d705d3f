"""Issue 30, generality by construction: real lines behind the prefixes users' log pipelines add are read as the
plain lines are (tests/mutations.py builds the logs, each prefix family cited; benchmarks/prefix_matrix.py prints
the whole matrix). The rule under test: a traceback header inside a line teaches the file's prefix
(core.logs.rows.lineprefix), and the failure's later lines behind a prefix of that shape are read behind it."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as hs

from core.logs.rows.general import read_line
from core.logs.rows.lineprefix import learn_prefix, prefix_end
from core.logs.rows.notations import NOTATIONS
from core.logs.tokens.lexicon import number
from tests.helpers import READ_PATHS
from tests.mutations import CORPUS, PREFIXES, T0, Prefix, compare, entry_lines, facts, prefixed, write_log

# a loss row then a traceback, real lines (tests/fixtures/real_logs/detectron2-floatingpointerror-traceback_
# detectron2-838 and paddleseg-train-line-then-cut-traceback_paddlecustomdevice-690)
_REAL = [
    "2023-07-14 20:35:56 [INFO]      [TRAIN] epoch: 151, iter: 1206/160000, loss: 2.3800, lr: 0.009932, "
    "batch_cost: 4.6610, reader_cost: 0.00038, ips: 6.8655 samples/sec | ETA 205:35:40",
    "Traceback (most recent call last):",
    '  File "/home/yview/work/ai/outside/pytorch/detectron2/detectron2/engine/train_loop.py", line 132, in train',
    "    self.run_step()",
    '  File "/home/yview/work/ai/outside/pytorch/detectron2/detectron2/engine/train_loop.py", line 239, '
    "in _detect_anomaly",
    "    self.iter, loss_dict",
    "FloatingPointError: Loss became infinite or NaN at iteration=2137!",
    "",
]
# families whose prefix begins with a word, a digit or `(`: the scan already hands their lines to the parser
# (a `[`-led prefix is not a candidate line: the report's "not done")
_LEARNT = [p for p in PREFIXES if not p.make(T0).startswith("[")]
# corpus entries whose failure is a Python traceback with its header (the rule's evidence)
_TRACEBACK_ENTRIES = [
    "detectron2-floatingpointerror-traceback_detectron2-838",
    "paddleseg-train-line-then-cut-traceback_paddlecustomdevice-690",
    "fairseq-traceback-typeerror-before-training_fairseq-322",
    "jupyter-traceback-device-side-assert-after-one-loss-line_transformers-tutorials-17",
    "tf-slim-step-row-then-resourceexhausted_mlwic2-25",
]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
@pytest.mark.parametrize("family", _LEARNT, ids=lambda p: p.name)
def test_a_traceback_behind_a_pipeline_prefix_is_the_plain_logs_failure(
    tmp_path: Path, family: Prefix, path: str
) -> None:
    """Failed before: behind `trainer_1  | `, loguru's head, glog's, syslog's, Ray's, `srun -l`'s ... the header
    and the exception were plain lines, the run read as not failed."""
    plain = facts(write_log(tmp_path / "plain", _REAL), READ_PATHS[path])
    assert plain.failed and plain.kinds == {"exception"} and plain.rows == 1
    got = facts(write_log(tmp_path / "mutated", prefixed(_REAL, family)), READ_PATHS[path])
    assert compare(plain, got, family.rank) == dict.fromkeys(("rows", "losses", "failed", "kind", "rank"), True)


@pytest.mark.parametrize("entry", _TRACEBACK_ENTRIES)
def test_real_corpus_tracebacks_behind_every_learnt_family_keep_their_facts(tmp_path: Path, entry: str) -> None:
    """The harness on real logs: each entry behind each family, on every read path, reads as the plain log."""
    lines = entry_lines(CORPUS / entry)
    for path, st in READ_PATHS.items():
        plain = facts(write_log(tmp_path / path / "plain", lines), st)
        for fam in _LEARNT:
            got = facts(write_log(tmp_path / path / fam.name, prefixed(lines, fam)), st)
            kept = compare(plain, got, fam.rank)
            assert all(kept.values()), (path, fam.name, kept)


_WORD = hs.text("abcdefghijklmnopqrstuvwxyz_-.", min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(word=_WORD, number=hs.integers(0, 10**6), sep=hs.sampled_from([" | ", ": ", "] ", ") ", " - ", "> "]))
@example(word="svc_", number=1, sep="  | ")
@example(word="eval", number=0, sep=" | ")
@example(word="test", number=0, sep=" | ")
def test_any_prefix_with_a_mark_and_a_rising_number_is_learnt(tmp_path: Path, word: str, number: int, sep: str) -> None:
    """For every prefix `WORD NUMBER SEP` whose number rises line by line, the traceback is the plain log's, and the
    loss line before it is the plain log's row unless the prefix alone names an evaluation split: the prefix is
    learnt from the traceback header, after that first line was judged, and `eval0 | ... loss: 2.38` read alone is
    an evaluation line (a limit of learning from the traceback, said in issue 30's stop-45 note)."""
    lines = [f"{word}{number + i}{sep}{line}" for i, line in enumerate(_REAL)]
    got = facts(write_log(tmp_path / f"{word}{number}", lines), READ_PATHS["line_by_line"])
    assert got.failed and got.kinds == {"exception"}
    first = read_line(lines[0])
    assert first is not None
    assert got.rows == (0 if first.eval else 1)


@given(prefix=hs.binary(max_size=200), line=hs.binary(max_size=80))
def test_a_learnt_prefix_never_matches_past_the_line_and_matches_its_own_shape(prefix: bytes, line: bytes) -> None:
    """For every text: a learnt pattern matches the prefix it came from, and `prefix_end` stays within the line."""
    pattern = learn_prefix(prefix)
    if pattern is None:
        return
    assert prefix_end(pattern, prefix + line) == len(prefix)
    assert 0 <= prefix_end(pattern, line) <= len(line)


@pytest.mark.parametrize(
    "text",
    [b"Original ", b'{"msg": "', b"x" * 161 + b": ", b"", b"error in "],
    ids=["a-message-word", "quoted", "too-long", "empty", "words-only"],
)
def test_text_that_is_no_pipeline_prefix_is_not_learnt(text: bytes) -> None:
    """PyTorch's `Original Traceback (most recent call last):` (a DataLoader worker's quoted traceback), a JSON
    record's text, an over-long message, words without a mark: none is a prefix to strip from later lines."""
    assert learn_prefix(text) is None


def test_a_learnt_prefix_lets_digits_change_and_nothing_else() -> None:
    pattern = learn_prefix(b"2026-11-26 10:00:00.123 | INFO     | __main__:train:42 - ")
    assert pattern is not None
    assert prefix_end(pattern, b"2026-11-26 10:00:07.9 | INFO     | __main__:train:142 - x") > 0
    assert prefix_end(pattern, b"2026-11-26 10:00:07.9 | WARNING  | __main__:train:142 - x") == 0


# ---------------------------------------------------------------- a NaN / infinity in every spelling, in the loss's
# place of every notation (core.logs.rows.notations' real samples): MSVC's C runtime prints `1.#QNAN`, `-1.#IND`,
# `1.#INF` (Windows builds before VS 2015); glibc `nan`, `-nan`, `inf`; JavaScript/JSON writers `Infinity`
_SPELLINGS = ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1.#QNAN", "-1.#IND", "1.#INF", "-1.#INF"]


def _loss_samples() -> list[tuple[str, str, tuple[int, int]]]:
    """(notation, real sample line, the span of its loss) of every training-row sample with a finite loss."""
    out = []
    for notation in NOTATIONS:
        for sample in notation.samples:
            loss = (sample.expect or {}).get("loss")
            if sample.eval or loss is None or not math.isfinite(loss):
                continue
            read = read_line(sample.line)
            if read is not None and "loss" in read.spans:
                out.append((notation.name, sample.line, _raw_span(sample.line, read.spans["loss"])))
    return out


def _raw_span(line: str, span: tuple[int, int]) -> tuple[int, int]:
    """`span` (of the text read_line reads: a bar's draw before a cursor-up and escape codes taken out) in `line`
    as written, where the spelling is put."""
    raw = line.encode()
    ups = [m.end() for m in re.finditer(rb"\x1b\[[0-9]*[AF]", raw)]
    codes = [m.span() for m in re.finditer(rb"\x1b\[[0-9;]*[A-Za-z]", raw)]
    kept = [i for i in range(ups[-1] if ups else 0, len(raw)) if not any(a <= i < b for a, b in codes)]
    return kept[span[0]], kept[span[1] - 1] + 1


_SAMPLES = _loss_samples()


def _spelt(line: str, span: tuple[int, int], spelling: str) -> str:
    raw = line.encode()
    return (raw[: span[0]] + spelling.encode() + raw[span[1] :]).decode()


@pytest.mark.parametrize("spelling", _SPELLINGS)
def test_no_spelling_of_nan_or_inf_reads_as_a_finite_loss_in_any_notation(spelling: str) -> None:
    """Failed before for `1.#QNAN`, `-1.#IND`, `1.#INF`: `1.` was read, a loss of 1.0 where the run diverged."""
    assert len(_SAMPLES) >= 30
    for name, line, span in _SAMPLES:
        read = read_line(_spelt(line, span, spelling))
        assert read is None or not math.isfinite(read.fields.get("loss", math.nan)), (name, spelling)


# notations whose key-number pairs do not take `1.#QNAN` as a value yet: the row is dropped, never read as 1.0
# (the test above); the report's "not done"
_MSVC_GAPS = ("space_pairs", "semicolon_fields", "multi_word_fields")


@pytest.mark.parametrize("path", sorted(READ_PATHS))
@pytest.mark.parametrize("spelling", ["1.#QNAN", "-1.#IND", "1.#INF", "-1.#INF"])
def test_an_msvc_nan_is_the_rows_nan_on_every_read_path(tmp_path: Path, spelling: str, path: str) -> None:
    """A sample's shape 20 times (the bulk path's templates learn it), then its loss spelt MSVC's way: the same
    rows as the plain log, the last one non-finite (infinity for `#INF`, its sign kept). Failed before: the
    templated path raised on `1.#QNAN`, the others read 1.0."""
    cases = [(n, line, span) for n, line, span in _SAMPLES if n not in _MSVC_GAPS]
    assert len(cases) >= 30
    for k, (name, line, span) in enumerate(cases):
        got = facts(write_log(tmp_path / f"m{k}", [line] * 20 + [_spelt(line, span, spelling), ""]), READ_PATHS[path])
        assert got.rows == 21 and got.last is not None, (name, got)
        if "INF" in spelling:
            assert got.last == (-math.inf if spelling.startswith("-") else math.inf), (name, got)
        else:
            assert math.isnan(got.last), (name, got)


@given(raw=hs.from_regex(rb"\A[-+]?\d\.#(QNAN|SNAN|IND|INF)\Z"))
def test_every_msvc_spelling_is_a_number_that_is_not_finite(raw: bytes) -> None:
    assert not math.isfinite(number(raw))
    assert math.isinf(number(raw)) == (b"INF" in raw)


# ---------------------------------------------------------------- a failure glued behind a bar's draw with a postfix
# real lines: the bar (tests/fixtures/real_logs/lightning-progress-bar-then-max-epochs-reached_lightning-14428), the
# failures (tqdm-bar-glued-nccl-watchdog-rank-2-and-0_firefly-183, cuda-oom-traceback_megatron-lm-60)
_BAR = (
    "Epoch 0: 100%|███████████████████████████████████████████████████████████| 100/100 [00:00<00:00, 324.18it/s,"
    " loss=0.0663, v_num=13]"
)
_GLUED_FAILURES = [
    "[E ProcessGroupNCCL.cpp:821] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=23290, "
    "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1801014 milliseconds before timing out.",
    "RuntimeError: CUDA out of memory. Tried to allocate 2.29 GiB (GPU 0; 31.72 GiB total capacity; 19.22 GiB "
    "already allocated; 1.88 GiB free; 28.32 GiB reserved in total by PyTorch)",
]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
@pytest.mark.parametrize("failure", _GLUED_FAILURES, ids=["nccl", "exception"])
@pytest.mark.parametrize("before", [0, 20], ids=["alone", "after-20-draws"])
def test_a_failure_glued_behind_a_postfix_draw_is_the_failure_and_the_draw_keeps_its_row(
    tmp_path: Path, failure: str, path: str, before: int
) -> None:
    """Failed before: behind `324.18it/s, loss=0.0663, v_num=13]` (a rate then a postfix, not `it/s]`) the failure
    was part of the bar's line, the run read as not failed. The draw's row stays (rows and losses as the plain log)."""
    head = ["step 1 loss 2.5"] + [_BAR] * before
    plain = facts(write_log(tmp_path / "plain", [*head, _BAR, failure, ""]), READ_PATHS[path])
    assert plain.failed
    got = facts(write_log(tmp_path / "glued", [*head, _BAR + failure, ""]), READ_PATHS[path])
    assert compare(plain, got, None) == dict.fromkeys(("rows", "losses", "failed", "kind", "rank"), True), (plain, got)
