"""Issue 30 on round 11's build set: failure and rank readings closed by general rules, each checked on the real lines
of its log (the source beside each) on every read path, and read live in two ticks cut at every byte:

- the shell's signal report glued to the end of a row's line (`... loss: 20.702034  eta: 125h56m Segmentation
  fault`, epfml/sent2vec#45): the row is read, and the report is the rank's failure
  (core.logs.rows.linekinds.signal_glued_to_row);
- a process's word that it received a stop signal (the "stop signal" kind: torchrun's elastic agent `Received 1
  death signal, shutting down workers`, modelscope/ms-swift#64; Lightning's `[rank: 2] Received SIGTERM: 15`,
  TengFeiyang01/EAGNet logs/train.out): a stop from outside, of the rank Lightning's `[rank: N] ` names (a rank
  source), its bar's last draw read before it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import STOP_KINDS, fatal_reason
from core.logs.rows.linekinds import failure_glued, signal_glued_to_row
from core.logs.rows.lineranks import line_rank
from core.logs.rows.snapshot import RunSnapshot
from tests.helpers import READ_PATHS, cut_tick_and_once

# github.com/epfml/sent2vec/issues/45 (the pasted output's last 4 lines)
SENT2VEC = (
    b"Read 227M words\n"
    b"Number of words:  374566\n"
    b"Number of labels: 0\n"
    b"Progress: 19.0%  words/sec/thread: 59  lr: 0.242889  loss: 20.702034  eta: 125h56m Segmentation fault\n"
)
# github.com/modelscope/ms-swift/issues/64 (a comment's pasted log: HF Trainer under torchrun; the excerpt's head)
SWIFT = (
    " 16%|\u2588\u258c        | 4079/25120 [3:02:08<15:17:58,  2.62s/it]\n"
    " 16%|\u2588\u258c        | 4080/25120 [3:02:10<15:17:25,  2.62s/it]\n"
    "                                                         \n"
    "{'loss': 2.2907, 'learning_rate': 9.547e-05, 'epoch': 2.6, 'global_step': 4080}\n"
    "\n"
    " 16%|\u2588\u258c        | 4080/25120 [3:02:10<15:17:25,  2.62s/it]\n"
    " 16%|\u2588\u258b        | 4083/25120 [3:02:19<16:33:47,  2.83s/it]\n"
    " 16%|\u2588\u258b        | 4084/25120 [3:02:22<16:20:02,  2.80s/it]WARNING:torch.distributed.elastic.agent.server"
    ".api:Received 1 death signal, shutting down workers\n"
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2973583 closing signal SIGHUP\n"
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2973584 closing signal SIGHUP\n"
).encode()
# github.com/TengFeiyang01/EAGNet/blob/7a1815b159d8b85408d1dfa940ef3523c6405fd4/logs/train.out: its line 61's last
# three `\r` segments (rank 0's bar), a blank line, a traceback header, one frame and the first exception line
_EAG_BAR = "Epoch 0:  31%|\u2588\u2588\u2588       | "
EAGNET = (
    "\r".join(
        [
            _EAG_BAR + "1224/3999 [1:07:00<2:31:54,  3.28s/it, v_num=29, train_intent_loss_step=1.410, "
            "train_total_loss=3.420]",
            _EAG_BAR + "1225/3999 [1:07:35<2:33:02,  3.31s/it, v_num=29, train_intent_loss_step=1.410, "
            "train_total_loss=3.420]",
            _EAG_BAR + "1225/3999 [1:07:35<2:33:02,  3.31s/it, v_num=29, train_intent_loss_step=1.110, "
            "train_total_loss=0.375][rank: 2] Received SIGTERM: 15",
        ]
    )
    + "\n\nTraceback (most recent call last):\n"
    '  File "/home/dwb25/QcNet/train_qcnet.py", line 48, in <module>\n'
    "    trainer.fit(model, datamodule)\n"
    "RuntimeError: DataLoader worker (pid 4020138) is killed by signal: Terminated. \n"
).encode()
# github.com/Bobo-y/flexible-yolov5/issues/11: a segfault glued to a tqdm bar (the failure read before this round)
YOLO = (
    "     Epoch   gpu_mem       box       obj       cls     total   targets  img_size\n"
    "     1/299     5.53G   0.08231   0.02054         0    0.1029        40       640:  36%|"
    "\u2588\u2588\u2588\u258c      | 303/836 [01:46<03:02,  2.91it/s]Segmentation fault\n"
).encode()


def _read(tmp_path: Path, data: bytes, path: str) -> RunSnapshot:
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "train.log").write_bytes(data)
    return read_run(tmp_path / "log", settings=READ_PATHS[path])


def _cuts(root: Path, data: bytes) -> list[tuple[Path, int]]:
    """Every third byte to cut a live read at, each with a folder of its own."""
    cuts = []
    for cut in range(1, len(data), 3):
        (root / str(cut)).mkdir()
        cuts.append((root / str(cut), cut))
    return cuts


def test_a_signal_report_glued_to_a_rows_end_is_told_by_its_shape() -> None:
    line = SENT2VEC.splitlines()[-1]
    assert line[signal_glued_to_row(line) :] == b"Segmentation fault"
    assert fatal_reason(line[signal_glued_to_row(line) :]) == "signal"
    assert failure_glued(line) == signal_glued_to_row(line)
    # the shell's own shapes stay whole (the "signal" kind reads them), and a word inside another is no report
    for whole in (b"run.sh: line 7: 4242 Killed", b"Segmentation fault (core dumped)", b"  Aborted"):
        assert signal_glued_to_row(whole) == 0, whole
    assert signal_glued_to_row(b"epoch 3 loss: 2.5 status: notKilled") == 0
    assert signal_glued_to_row(b"Progress: 19.0% words/sec/thread: 59 eta: 125h56m Segmentation fault") == 0
    assert signal_glued_to_row(b"iter 12 loss 2.5 Aborted (core dumped)") == len(b"iter 12 loss 2.5 ")


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_row_with_a_segfault_glued_to_it_is_a_row_and_the_ranks_failure(tmp_path: Path, path: str) -> None:
    snap = _read(tmp_path, SENT2VEC, path)
    assert snap.metrics["loss"].tolist() == [20.702034]
    assert failed_ranks(snap) == {0: "Segmentation fault"}


def test_a_row_with_a_segfault_glued_to_it_reads_alike_however_it_arrives(tmp_path: Path) -> None:
    for folder, cut in _cuts(tmp_path, SENT2VEC):
        live, once = cut_tick_and_once(folder, "train.log", SENT2VEC, cut)
        assert live.metrics["loss"].tolist() == once.metrics["loss"].tolist() == [20.702034], cut
        assert failed_ranks(live) == failed_ranks(once) == {0: "Segmentation fault"}, cut


def test_a_stop_signal_is_a_stop_from_outside_and_lightnings_tag_names_its_rank() -> None:
    swift = SWIFT.splitlines()[-3]
    assert fatal_reason(swift[failure_glued(swift) :]) == "stop signal" and "stop signal" in STOP_KINDS
    eagnet = EAGNET.split(b"\n")[0].split(b"\r")[-1]
    tail = eagnet[failure_glued(eagnet) :]
    assert tail == b"[rank: 2] Received SIGTERM: 15" and fatal_reason(tail) == "stop signal"
    said = line_rank(tail)
    assert said is not None and said.rank == 2
    assert fatal_reason(b"Received SIGTERM signal, saving a checkpoint") is None  # (no signal number: no such report)


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_torchruns_death_signal_ends_the_run(tmp_path: Path, path: str) -> None:
    snap = _read(tmp_path, SWIFT, path)
    assert snap.metrics["loss"].tolist() == [2.2907]
    failed = failed_ranks(snap)
    assert list(failed) == [0] and "Received 1 death signal" in failed[0]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_lightnings_sigterm_glued_to_the_bar_is_rank_2s_stop_after_the_bars_last_row(tmp_path: Path, path: str) -> None:
    snap = _read(tmp_path, EAGNET, path)
    assert snap.metrics["loss"].tolist() == [3.42, 0.375]
    failed = failed_ranks(snap)
    assert failed[2] == "[rank: 2] Received SIGTERM: 15"


@pytest.mark.parametrize(("name", "data"), [("swift", SWIFT), ("eagnet", EAGNET), ("yolo", YOLO)])
def test_the_glued_failures_read_alike_however_they_arrive(tmp_path: Path, name: str, data: bytes) -> None:
    for folder, cut in _cuts(tmp_path, data):
        live, once = cut_tick_and_once(folder, "train.log", data, cut)
        assert live.metrics["loss"].tolist() == once.metrics["loss"].tolist(), (name, cut)
        assert failed_ranks(live) == failed_ranks(once) and failed_ranks(once), (name, cut)


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_segfault_glued_to_a_tqdm_bar_stays_the_ranks_failure(tmp_path: Path, path: str) -> None:
    assert failed_ranks(_read(tmp_path, YOLO, path)) == {0: "Segmentation fault"}
