"""Issue 30 item 5: the grammar is data. Every notation (core.logs.rows.notations) and every failure kind
(core.logs.rows.failure_kinds) is one entry with real sample lines and the reading they must give; this file
reads every sample through every path the parser has (line by line, the numpy and compiled bulk paths with
line templates, and small files batched, compiled or not) and checks the reading.

The entries added to show it (each fails on the code before them): the fairseq JSON notation with string
values (facebookresearch/fairseq#233) and the C++ abort kind (`terminate called after throwing an instance
of ...`: vllm-project/vllm-ascend#8360, microsoft/mscclpp#665, Determined22/zh-NER-TF#98).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.rows.columns import header_of, read_row
from core.logs.rows.failure_kinds import FAILURE_KINDS, LAUNCHER_REPORTS, FailureKind, FailureSample, LauncherReport
from core.logs.rows.failures import fatal_quick, fatal_reason, line_tag, task_end
from core.logs.rows.formats import FORMATS
from core.logs.rows.general import read_line
from core.logs.rows.linetemplates import make_template
from core.logs.rows.notations import NOTATIONS, NotationSample
from core.logs.rows.reader import RunReader, RunSnapshot
from core.logs.rows.seam import ReadPath, Seam
from core.logs.tokens.bulk import RE_LM_AT
from core.logs.tokens.lexicon import keyed_start
from tests.helpers import READ_PATHS

# Every way the parser reads a file (core.logs.rows.parser: the seam is `Parser.feed` / `feed_many`)
PATHS = READ_PATHS  # every way the parser reads a file (tests/helpers.py)
ENGAGED = {  # the path each setting makes the seam take (core.logs.rows.seam), checked on every read
    "line_by_line": ReadPath.LINE,
    "bulk": ReadPath.BULK,
    "batched": ReadPath.BATCHED,
    "batched_compiled": ReadPath.BATCHED,
}
REPEAT = 40  # copies of a sample: enough for the bulk paths (`block_min`, `shape_min`) to take them
LM = "epoch: 1 step: {s}, loss is {v}\n"
NOISE = "[WARNING] ME(4242:1400,MainProcess):2026-11-22-07:09:00.372.000 [a.py:1] chatter {s}\n"

NOTATION_SAMPLES = [(n.name, s) for n in NOTATIONS for s in n.samples]
FAILURE_SAMPLES = [(k, s) for k in FAILURE_KINDS for s in k.samples]


def _read(folder: Path, path: str) -> tuple[RunSnapshot, Seam]:
    """read_run on `folder` by `path`, and the seam that chose it (which checks the path was taken)."""
    reader = RunReader(folder, settings=PATHS[path], one_shot=True)
    reader.refresh()
    seam = reader.parser.seam
    assert (
        seam.blocks[ENGAGED[path]] > 0
        and sum(seam.blocks.values()) == seam.blocks[ENGAGED[path]] + (seam.blocks[ReadPath.TEMPLATED])
    ), (path, seam.blocks)
    return reader.snapshot(), seam


def _same(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or math.isclose(got, want, rel_tol=1e-12, abs_tol=0.0)


def _ids(pairs: list) -> list[str]:
    return [f"{name if isinstance(name, str) else name.name}-{i}" for i, (name, _) in enumerate(pairs)]


# ----------------------------------------------------------------------------- the tables themselves


def test_every_entry_has_real_samples_with_their_source() -> None:
    for n in NOTATIONS:
        assert n.name and n.what and n.samples, n.name
        assert all(s.line and s.source for s in n.samples), n.name
        if n.pattern is not None:  # a pattern gives the loss, and holds a loss key or begins as a keyed line
            # (lexicon.KEYED_START: llm.c's, Marian's): the scans find its lines
            lows = [s.line.lower().encode() for s in n.samples]
            assert b"(?P<loss>" in n.pattern and all(b"loss" in x or keyed_start(x) for x in lows), n.name
    for k in FAILURE_KINDS:
        assert k.name and k.samples and (k.anchors or k.coded), k.name
        assert all(s.line and s.source for s in k.samples), k.name
    for r in LAUNCHER_REPORTS:
        assert r.samples and all(s.line and s.source for s, _, _ in r.samples), r.launcher
    assert len({n.name for n in NOTATIONS}) == len(NOTATIONS)
    assert len({k.name for k in FAILURE_KINDS}) == len(FAILURE_KINDS)


def test_the_suites_formats_are_the_suite_notations() -> None:
    assert [f.name for f in FORMATS] == [n.name for n in NOTATIONS if n.suite]
    assert all(f.sample == n.samples[0].line for f, n in zip(FORMATS, [n for n in NOTATIONS if n.suite], strict=True))


def test_anchors_hold_no_digits_and_every_sample_holds_one() -> None:
    """The quick test and the bulk path's literal search find a kind by its anchors: a sample without one
    would be read on one path and missed on another."""
    for k in (*FAILURE_KINDS, *LAUNCHER_REPORTS):
        assert not any(set(a) & set(b"0123456789#") for a in k.anchors)
        samples = k.samples if isinstance(k, FailureKind) else [s for s, _, _ in k.samples]
        for s in samples:
            line = s.line.encode()
            coded = isinstance(k, FailureKind) and k.coded and re.search(rb"[A-Z][0-9]{4}", line)
            assert coded or any(a in line for a in k.anchors), s.line
            assert fatal_quick().search(line), s.line


# ----------------------------------------------------------------------------- notations


def _check_read(sample: NotationSample) -> None:
    header = None if sample.header is None else header_of(sample.header.encode())
    assert sample.header is None or header is not None, sample.header
    read = read_line(sample.line) if header is None else read_row(header, sample.line.encode())
    if sample.eval:
        assert read is not None and read.eval, sample.line
        return
    if sample.expect is None:
        assert read is None or read.eval or "loss" not in read.fields, sample.line
        return
    assert read is not None and not read.eval, sample.line
    got = {**read.fields, **read.extras}
    for column, want in sample.expect.items():
        if want is None:
            assert column not in got, (sample.line, column)
        else:
            assert column in got and _same(got[column], float(want)), (sample.line, column, got.get(column))


@pytest.mark.parametrize(("name", "sample"), NOTATION_SAMPLES, ids=_ids(NOTATION_SAMPLES))
def test_every_notation_sample_reads_as_its_entry_says(name: str, sample: NotationSample) -> None:
    assert name in {n.name for n in NOTATIONS}
    _check_read(sample)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize(("name", "sample"), NOTATION_SAMPLES, ids=_ids(NOTATION_SAMPLES))
def test_every_notation_sample_reads_alike_on_every_path(
    tmp_path: Path, name: str, sample: NotationSample, path: str
) -> None:
    """A file of the sample repeated (among framework chatter): its rows on each path are what the entry
    says, one per line, none for an evaluation line or a line that only mentions a loss."""
    header = "" if sample.header is None else sample.header + "\n"  # a column table's (core.logs.rows.columns)
    (tmp_path / "worker_0.log").write_text(
        "".join(NOISE.format(s=i) + header + sample.line + "\n" for i in range(REPEAT)), encoding="utf-8"
    )
    (tmp_path / "worker_1.log").write_text("".join(LM.format(s=i, v=1.5) for i in range(1, REPEAT)))
    snap, seam = _read(tmp_path, path)
    rows = snap.metrics[snap.metrics["rank"] == 0]
    if sample.expect is None:
        assert rows.empty, (name, path)
        if sample.eval:
            # of the file's rank, or of the rank the line names (WeNet's trailing `rank 2`: core.logs.rows.lineranks)
            assert len(snap.evals) >= REPEAT
        return
    assert len(rows) == REPEAT, (name, path)
    line = sample.line.encode()
    read = read_line(line)
    templated = read is not None and make_template(line, read) is not None  # (MindYOLO's global step: no)
    if path == "bulk" and RE_LM_AT.match(line + b"\n") is None and templated:
        assert seam.lines[ReadPath.TEMPLATED] >= REPEAT // 2, (name, "the bulk path read it by its template")
    for column, want in sample.expect.items():
        values = rows[column] if column in rows else pd.Series([math.nan] * len(rows))
        if want is None:
            assert values.isna().all(), (path, column)
        else:
            assert all(_same(float(v), float(want)) for v in values), (path, column, values.iloc[0])


def test_the_json_string_values_notation_is_read() -> None:
    """The entry added to show a notation is one entry (fairseq `--log-format json`, fairseq#233): its
    string-quoted values gave nothing before."""
    [entry] = [n for n in NOTATIONS if n.name == "json_string_values"]
    read = read_line(entry.samples[0].line)
    assert read is not None and read.fields["loss"] == 3.18 and read.fields["step"] == 21497
    assert read.extras["nll_loss"] == 1.417 and read.fields["epoch"] == 10


def test_a_pattern_s_column_is_named_by_the_key_the_line_prints() -> None:
    """fairseq-233's `"gnorm": "0.194"` fills the pattern's `global_norm` and is listed as `gnorm` (the key a user
    looks for), once: the general reader's second reading of the same value is no column of its own."""
    [entry] = [n for n in NOTATIONS if n.name == "json_string_values"]
    read = read_line(entry.samples[1].line)
    assert read is not None and read.fields["global_norm"] == 0.194 and read.fields["step"] == 53749
    assert (read.keys["global_norm"], read.keys["step"], read.keys["nll_loss"]) == ("gnorm", "num_updates", "nll_loss")
    assert "gnorm" not in read.extras and "num_updates" not in read.extras and read.extras["nll_loss"] == 1.328


@settings(max_examples=200, deadline=None)
@given(
    loss=st.floats(min_value=0, max_value=1e6, allow_nan=False),
    updates=st.integers(0, 10**9),
    lr=st.floats(min_value=0, max_value=1, allow_nan=False),
)
def test_a_json_string_values_line_reads_every_value_exactly(loss: float, updates: int, lr: float) -> None:
    line = (
        f'{{"epoch": 3, "loss": "{loss!r}", "nll_loss": "1.5", "ppl": "2.67", "wps": 1671182, "num_updates": {updates},'
        f' "lr": {lr!r}, "gnorm": "0.291", "clip": "100%", "loss_scale": "8.000", "wall": 8285}}'
    )
    read = read_line(line)
    assert read is not None and not read.eval
    assert (read.fields["loss"], read.fields["step"], read.fields["lr"]) == (loss, updates, lr)


# ----------------------------------------------------------------------------- failure kinds


def _body(sample: FailureSample) -> bytes:
    line = sample.line.encode()
    rank, skip = line_tag(line)
    assert rank == sample.rank
    return line[skip:]


@pytest.mark.parametrize(("kind", "sample"), FAILURE_SAMPLES, ids=_ids(FAILURE_SAMPLES))
def test_every_failure_sample_is_named_by_its_kind(kind: FailureKind, sample: FailureSample) -> None:
    assert fatal_reason(_body(sample)) == kind.name


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize(("kind", "sample"), FAILURE_SAMPLES, ids=_ids(FAILURE_SAMPLES))
def test_every_failure_sample_ends_its_rank_on_every_path(
    tmp_path: Path, kind: FailureKind, sample: FailureSample, path: str
) -> None:
    """A log that trains, then prints the sample (among chatter): on each path the failure is the file's
    last error, of the rank its tag names (else the file's), an exception (it ended the rank)."""
    rows = "".join(NOISE.format(s=s) + LM.format(s=s, v=2.0 - s / 1000) for s in range(1, REPEAT * 3))
    (tmp_path / "worker_3.log").write_text(rows + sample.line + "\n" + NOISE.format(s=0))
    (tmp_path / "worker_4.log").write_text(rows)
    snap, _ = _read(tmp_path, path)
    assert len(snap.metrics) == 2 * (REPEAT * 3 - 1), kind.name
    err = snap.errors.iloc[-1]
    assert err["kind"] == "exception" and err["message"] in sample.line, (path, err["message"])
    assert int(err["rank"]) == (3 if sample.rank is None else sample.rank)


# Every launcher sample, DeepSpeed's behind its `[date]` stamp among them (a stamped line at error level is a
# candidate of the scans: core.logs.tokens.bulk.STAMPED_ERROR; deepspeed-launcher-return-code-minus-9-during-
# build_deepspeed-3512 was missed before it)
LAUNCHER_SAMPLES = [
    pytest.param(report, sample, id=f"{report.launcher}-{j}")
    for report in LAUNCHER_REPORTS
    for j, sample in enumerate(report.samples)
]


@pytest.mark.parametrize(("report", "sample"), [(r, s) for r in LAUNCHER_REPORTS for s in r.samples])
def test_every_launcher_sample_is_read_as_its_entry_says(
    report: LauncherReport, sample: tuple[FailureSample, tuple[int, ...], str]
) -> None:
    line, ranks, reason = sample
    ended = task_end(line.line.encode())
    assert ended is not None and (ended.launcher, ended.ranks, ended.reason) == (report.launcher, ranks, reason)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize(("report", "sample"), LAUNCHER_SAMPLES)
def test_every_launcher_sample_names_its_tasks_on_every_path(
    tmp_path: Path, report: LauncherReport, sample: tuple[FailureSample, tuple[int, ...], str], path: str
) -> None:
    line, ranks, _ = sample
    rows = "".join(LM.format(s=s, v=1.5) for s in range(1, REPEAT * 3))
    (tmp_path / "worker_0.log").write_text(rows + line.line + "\n")
    errors = _read(tmp_path, path)[0].errors
    tasks = errors[errors["kind"] == "task_exit"]
    assert sorted(int(r) for r in tasks["rank"]) == sorted(ranks), (path, report.launcher, line.line)


def test_the_cpp_abort_kind_is_read() -> None:
    """The entry added to show a failure kind is one entry: std::terminate's line (vllm-ascend#8360 after an
    HCCL watchdog's exception) was no failure before, and `diagnose` said nothing of the rank."""
    [kind] = [k for k in FAILURE_KINDS if k.name == "C++ abort"]
    for sample in kind.samples:
        assert fatal_reason(_body(sample)) == "C++ abort"
    assert fatal_reason(b"the job will terminate called by the scheduler") is None


def test_a_torchrun_report_behind_a_date_stamp_names_its_rank(tmp_path: Path) -> None:
    """Found by running the launcher samples through every path: torch's elastic agent behind python
    logging's `[date]` (xiuqhou/Salience-DETR#4) is read by `task_end`, and the scans hand the line over (a
    `[date]`-stamped line at error level is a candidate: core.logs.tokens.bulk.STAMPED_ERROR)."""
    line = (
        "[2024-05-08 08:47:31,877] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
        "local_rank: 2 (pid: 5939) of binary: /home/ubuntu/anaconda3/envs/salience_detr/bin/python"
    )
    ended = task_end(line.encode())
    assert ended is not None and ended.ranks == (2,)
    (tmp_path / "worker_0.log").write_text("".join(LM.format(s=s, v=1.5) for s in range(1, 9)) + line + "\n")
    assert read_run(tmp_path).errors["rank"].tolist() == [2]
