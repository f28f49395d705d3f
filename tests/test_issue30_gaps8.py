"""Issue 30, round 8's gaps: a Hugging Face `trainer_state.json` (a pretty-printed JSON document, its `log_history`
records spread over several lines) read as its run's rows (core.logs.bytes.jsondoc), on the line-by-line and bulk
paths, live as the trainer rewrites it, and bad documents read to nothing. (The round's line rules, a value before
its unit, a spaced dash's field, a bar's timed fields and clock times, a Python dict's quoted numbers, are grammar
entries in core.logs.rows.notations_trainers: tests/test_grammar_entries.py reads them on every path.)

The real document: tests/fixtures/real_logs/hf-trainer-state-json-whisper-early-stopped-step-1500-of-10990_whisper-
finetune-trainer-state (ByErenOzer/Whisper_Finetune, trainer_state.json at a3d944a).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from core.logs import read_run
from core.logs.bytes.discover import discover
from core.logs.bytes.jsondoc import document_lines
from core.logs.rows.reader import RunReader
from core.logs.rows.seam import ReadPath
from tests.helpers import READ_PATHS, REAL_LOGS

WHISPER = (
    REAL_LOGS
    / "hf-trainer-state-json-whisper-early-stopped-step-1500-of-10990_whisper-finetune-trainer-state"
    / "log"
    / "trainer_state.json"
)
_ENGAGED = {"line_by_line": ReadPath.LINE, "bulk": ReadPath.BULK}


def _doc() -> dict[str, Any]:
    doc = json.loads(WHISPER.read_bytes())
    assert isinstance(doc, dict)
    return doc


def test_the_documents_records_are_one_json_line_each() -> None:
    lines = document_lines(WHISPER.read_bytes()).splitlines()
    assert len(lines) == 67  # 60 training records, 6 evaluations, the final summary
    assert json.loads(lines[0]) == {
        "epoch": 0.022747952684258416,
        "grad_norm": 6.625,
        "learning_rate": 4.800000000000001e-06,
        "loss": 0.8328424835205078,
        "step": 25,
    }
    assert b'"train_runtime": 28624.551' in lines[-1]


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"[1, 2]", b'{"log_history": 3}', b'{"log_history": [1, "x", []]}', b"[" * 100_000, b"\xff\xfe{"],
)
def test_no_document_gives_no_line(raw: bytes) -> None:
    """Half-written, not an object, no `log_history` list, nested past the parser's depth, not UTF-8: nothing."""
    assert document_lines(raw) == b""


@pytest.mark.parametrize("path", sorted(_ENGAGED))
def test_trainer_state_json_is_read_as_the_runs_rows(tmp_path: Path, path: str) -> None:
    shutil.copy(WHISPER, tmp_path / "trainer_state.json")
    reader = RunReader(tmp_path, settings=READ_PATHS[path], one_shot=True)
    reader.refresh()
    assert reader.parser.seam.blocks[_ENGAGED[path]] > 0, reader.parser.seam.blocks
    snap = reader.snapshot()
    rows = snap.metrics
    assert rows["step"].tolist() == list(range(25, 1501, 25))
    assert rows["loss"].iloc[0] == 0.8328424835205078 and rows["loss"].iloc[-1] == 0.1799742889404297
    assert rows["global_norm"].iloc[0] == 6.625 and rows["lr"].iloc[0] == 4.800000000000001e-06
    evals = snap.evals.drop_duplicates("offset")
    assert evals["summary"].tolist() == [False] * 6 + [True]  # eval_loss records, then train_runtime's
    assert evals["step"].tolist() == [250, 500, 750, 1000, 1250, 1500, 1500]


def test_a_folders_one_trainer_state_json_is_rank_0(tmp_path: Path) -> None:
    shutil.copy(WHISPER, tmp_path / "trainer_state.json")
    [log] = discover(tmp_path).files
    assert (log.rel, log.rank, log.layout) == ("trainer_state.json", 0, "single")


@pytest.mark.parametrize("head_changes", [True, False])
def test_a_rewritten_trainer_state_json_grows_its_rows_once(tmp_path: Path, head_changes: bool) -> None:
    """The trainer rewrites the whole file at each save: its first keys change (`best_metric`, `epoch`: the reader
    reads it again from its start) or not (the records past those read are read): each record is one row."""
    doc = _doc()
    history = doc["log_history"]
    doc["log_history"] = history[:21]  # 20 training records, the first evaluation
    target = tmp_path / "trainer_state.json"
    target.write_text(json.dumps(doc, indent=2))
    reader = RunReader(tmp_path)
    reader.refresh()
    assert reader.snapshot().metrics["step"].tolist() == list(range(25, 501, 25))
    if head_changes:
        doc["best_global_step"] = 999
    doc["log_history"] = history
    target.write_text(json.dumps(doc, indent=2))
    reader.refresh()
    assert reader.snapshot().metrics["step"].tolist() == list(range(25, 1501, 25))


def test_a_half_written_save_is_read_at_its_next_change(tmp_path: Path) -> None:
    target = tmp_path / "trainer_state.json"
    raw = WHISPER.read_bytes()
    target.write_bytes(raw[: len(raw) // 2])
    reader = RunReader(tmp_path)
    reader.refresh()
    assert reader.snapshot().metrics.empty
    target.write_bytes(raw)
    reader.refresh()
    assert len(reader.snapshot().metrics) == 60


def test_read_run_reads_the_document_as_rank_0(tmp_path: Path) -> None:
    """`read_run`, what `watch` and `diagnose` both read (their agreement: tests/test_real_logs_corpus.py)."""
    shutil.copy(WHISPER, tmp_path / "trainer_state.json")
    snap = read_run(tmp_path)
    assert len(snap.metrics) == 60 and snap.ranks["rank"].tolist() == [0]
