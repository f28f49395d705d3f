"""Issue 30, round 8's build set (r8rows' part): the general rules its misread rows and ranks asked for, on the real
lines of the logs they were written from (each test names its source), read on every path the parser has, with the
input each rule must leave alone. The notations' own samples (OLMo's `train/CrossEntropyLoss=`, a Keras CSVLogger
table) are entries in core.logs.rows.notations_trainers, read by tests/test_grammar_entries.py.

- a run of NUL bytes (the hole a file truncated under its writer leaves) ends a line: the text after it is a line
  of its own (core.logs.bytes.rawio.nul_to_lf, on the usual read and the small files' batch);
- a lone job's `NAME-J-T.out` / `.err` pair is one process, rank 0, as a lone file is; several task numbers of one
  job stay ranks (core.logs.bytes.discover);
- a CSV table's header names the comma-parted rows under it (core.logs.rows.columns).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.bytes.discover import LogRole, discover
from core.logs.rows.general import read_line
from tests.helpers import READ_PATHS

# github.com/mindspore-lab/models/blob/5a5dedf330f6edf50ffd948d7cbe4f898ce23442/research/xidian/LPCNet_timers/
# scripts/train_timers3.log: the traceback's last line, the hole of NULs, then the next run's epochs
LPCNET = [
    b"mindspore/ccsrc/plugin/device/ascend/hal/device/ascend_memory_adapter.cc:62 Initialize",
    b"",
    b"\x00" * 3000 + b"epoch: 5 step: 5208, loss is 3.6623008251190186",
    b"Train epoch time: 2108878.763 ms, per step time: 404.931 ms",
    b"epoch: 6 step: 5208, loss is 3.7193944454193115",
    b"Train epoch time: 2113993.524 ms, per step time: 405.913 ms",
    b"epoch: 7 step: 5208, loss is 3.7177352905273438",
]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_the_line_after_a_hole_of_nuls_is_read_whole(tmp_path: Path, path: str) -> None:
    (tmp_path / "train_timers3.log").write_bytes(b"\n".join(LPCNET) + b"\n")
    m = read_run(tmp_path, settings=READ_PATHS[path]).metrics
    assert m["loss"].tolist() == [3.6623008251190186, 3.7193944454193115, 3.7177352905273438]
    assert m["epoch"].tolist() == [5, 6, 7]  # the first row's epoch too: it began a line of its own
    assert m["offset"].tolist()[0] == len(b"\n".join(LPCNET[:2])) + 1 + 3000  # its line begins after the hole


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_nuls_inside_utf16_text_are_its_own(tmp_path: Path, path: str) -> None:
    """UTF-16 text holds a NUL beside every ASCII byte: it is decoded first, never cut at its NULs."""
    text = "\n".join(x.decode() for x in LPCNET[3:]) + "\n"
    (tmp_path / "train.log").write_bytes(text.encode("utf-16"))
    m = read_run(tmp_path, settings=READ_PATHS[path]).metrics
    assert m["epoch"].tolist() == [6, 7] and m["loss"].tolist() == [3.7193944454193115, 3.7177352905273438]


def test_a_key_glued_to_a_lone_nul_in_a_line_still_names_no_metric() -> None:
    """The line reader's rule stands (test_logs_hardening3): a NUL is cut out before the line reader, never
    inside it."""
    read = read_line(b"\x00epoch: 1 step: 2, loss is 2.5")
    assert read is not None and "epoch" not in read.fields and read.fields["step"] == 2.0


# github.com/HojinSohn/Fine-Tuning-Bert-StockPrediction/blob/6bc07efe0a3792d8548fe80abad38467db2bc050/output_error/
# train-260-15.out (its .err: `E0000 00:00:... cuda_dnn.cc:8310] Unable to register cuDNN factory ...`)
BERT_OUT = (
    b"cuda\nEpoch 1: Average Training Loss = 0.6937084846889296\nEpoch 2: Average Training Loss = 0.6914314522762539\n"
)


def _workers(root: Path) -> list[tuple[int | None, str, str]]:
    return [(f.rank, f.rel, f.layout) for f in discover(root).files if f.role == LogRole.WORKER]


def test_a_lone_jobs_out_and_err_pair_is_rank_0(tmp_path: Path) -> None:
    (tmp_path / "train-260-15.out").write_bytes(BERT_OUT)
    (tmp_path / "train-260-15.err").write_bytes(b"Some weights of BertForSequenceClassification were not initialized\n")
    assert {(r, layout) for r, _, layout in _workers(tmp_path)} == {(0, "single")}
    snap = read_run(tmp_path)
    assert snap.n_ranks == 1 and snap.metrics["rank"].tolist() == [0, 0]


def test_a_jobs_several_tasks_stay_ranks(tmp_path: Path) -> None:
    """`srun --output=train-%j-%t.out` (tests/fixtures/real_logs/slurm-srun-task-id-files-cpu_produced-here): one file
    a task, the task id its rank; two tasks of one job are ranks 0 and 1 (and 14, 15 alone in a folder stay 14, 15)."""
    for names, ranks in ((("train-1-0.out", "train-1-1.out"), [0, 1]), (("x-7-14.out", "x-7-15.out"), [14, 15])):
        folder = tmp_path / names[0]
        folder.mkdir()
        for name in names:
            (folder / name).write_bytes(BERT_OUT)
        assert [(r, layout) for r, _, layout in _workers(folder)] == [(r, "slurm") for r in ranks]


# github.com/4hmetcakmak/BraTS2020CapstoneProject/blob/4e61e4643f1de1afc4cbb8d6f04d920547c8cd0f/training.log
# (Keras CSVLogger, CRLF line ends): its header and first two rows
BRATS = [
    b"epoch,accuracy,dice_coef,loss,lr,mean_io_u_5,precision,val_accuracy,val_dice_coef,val_loss,val_mean_io_u_5,"
    b"val_precision",
    b"0,0.9847438335418701,0.332878053188324,0.05603187158703804,0.001,0.7597786784172058,0.9889948964118958,"
    b"0.9850143790245056,0.38067764043807983,0.05463637784123421,0.8155959844589233,0.98931884765625",
    b"1,0.9869334101676941,0.3688015043735504,0.04265831038355827,0.001,0.7923908829689026,0.991500735282898,"
    b"0.9858249425888062,0.3836643099784851,0.04532903805375099,0.820518434047699,0.9906899929046631",
]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_csv_tables_rows_are_read_under_its_header(tmp_path: Path, path: str) -> None:
    (tmp_path / "training.log").write_bytes(b"\r\n".join(BRATS * 40) + b"\r\n")  # the header again: a new table
    m = read_run(tmp_path, settings=READ_PATHS[path]).metrics
    assert len(m) == 80 and m["loss"].tolist()[:2] == [0.05603187158703804, 0.04265831038355827]
    assert m["epoch"].tolist()[:2] == [0, 1] and m["val_loss"].tolist()[:2] == [
        0.05463637784123421,
        0.04532903805375099,
    ]


def test_comma_parted_lines_are_no_table_without_a_loss_name_or_with_words(tmp_path: Path) -> None:
    """A CSV header names a loss; a row is as many numbers: a line of words, or of another count, is none."""
    lines = [
        b"epoch,accuracy,lr,precision",  # no loss column: no table
        b"0,0.98,0.001,0.99",
        BRATS[0],
        b"0,0.98,0.33,nope,0.001,0.75,0.98,0.98,0.38,0.05,0.81,0.98",  # a word under `loss`
        b"0,0.98,0.33,0.05",  # another count
        b"Using loss, accuracy, lr as metrics",  # a sentence with commas
    ]
    (tmp_path / "training.log").write_bytes(b"\n".join(lines) + b"\n")
    assert read_run(tmp_path).metrics.empty
