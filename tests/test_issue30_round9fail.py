"""Issue 30 on round 9's build set: the failure judgements and line ranks read wrong, each closed by a general rule
and checked on the real lines of its log (the source beside each), on every read path:

- Hydra's `[date][name][ERROR] - Error executing job with overrides: [...]` (facebookresearch/map-anything#89): the
  `Hydra job error` kind, and its glued stamp at error level a candidate of the scans;
- an IDE's `Process finished with exit code -1073741819 (0xC0000005)` (milesial/Pytorch-UNet#205): the `process
  exit code` kind (0 is a clean end);
- a trainer's `[RANK N]` tag behind srun's `N: ` label (awslabs/awsome-distributed-ai#1039): the tag's global rank;
- a redirect named by its stream and start time, `output-251211-1801` (ChidanshM/verf): the folder's one log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.bytes.discover import discover
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import fatal_reason
from core.logs.rows.lineranks import line_rank
from tests.helpers import READ_PATHS, one_log

PATHS = READ_PATHS

# github.com/facebookresearch/map-anything/issues/89 (the whole pasted log; its overrides list cut here)
HYDRA_89 = [
    b"[2025-10-31 05:07:02,550][__main__][INFO] - Epoch: [7]  [ 600/2916]  eta: 0:54:53  lr: 0.000072  epoch: "
    b"7.2023 (7.1029)  loss: ..... time: 1.3483  data: 0.0002  max mem: 137223",
    b"[2025-10-31 05:07:11,062][__main__][ERROR] - Error executing job with overrides: ['machine=hpc_train', "
    b"'dataset=scannetpp_518_many_ar_48ipg_8g', 'dataset.num_workers=12', 'dataset.num_views=4', 'loss=gs_loss']",
]
# the classic LossMonitor rows before it, so the failure line sits among rows on every path
LM = [b"epoch: 1 step: %d, loss is %.4f" % (s, 2.0 - s / 1000) for s in range(1, 60)]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_hydra_error_executing_job_ends_the_run(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, [*LM, *HYDRA_89]), settings=PATHS[path])
    failed = failed_ranks(snap)
    assert set(failed) == {0} and "Error executing job with overrides" in failed[0]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_hydra_info_line_alone_is_no_failure(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, [*LM, HYDRA_89[0]]), settings=PATHS[path])
    assert failed_ranks(snap) == {}


def test_hydra_kind_needs_its_own_words() -> None:
    assert fatal_reason(HYDRA_89[1]) == "Hydra job error"
    assert fatal_reason(b"Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.") == (
        "Hydra job error"
    )
    assert fatal_reason(b"[2025-10-31 05:07:11,062][__main__][INFO] - executing job 3 with overrides") is None


# github.com/milesial/Pytorch-UNet/issues/205 (the pasted output's last two lines)
UNET_205 = [
    b"Epoch 2/5:   2%|\xe2\x96\x8f         | 1/49 [00:24<09:19, 11.65s/img, loss (batch)=36.3]",
    b"Process finished with exit code -1073741819 (0xC0000005)",
]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_an_ide_s_non_zero_exit_code_ends_the_run(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, [*LM, *UNET_205]), settings=PATHS[path])
    failed = failed_ranks(snap)
    assert set(failed) == {0} and "exit code -1073741819" in failed[0]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_an_ide_s_exit_code_zero_is_a_clean_end(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, [*LM, b"Process finished with exit code 0"]), settings=PATHS[path])
    assert failed_ranks(snap) == {}


def test_exit_code_kind_reads_the_code_whole() -> None:
    assert fatal_reason(b"Process finished with exit code 0") is None
    assert fatal_reason(b"Process finished with exit code 0 (took 3 s)") is None
    for code in (b"1", b"137 (interrupted by signal 9: SIGKILL)", b"01", b"-1073740791 (0xC0000409)"):
        assert fatal_reason(b"Process finished with exit code " + code) == "process exit code", code


# github.com/awslabs/awsome-distributed-ai/pull/1039 (the description's test output, srun -l over 2 nodes x 4)
SRUN_1039 = [
    b"0: [RANK 3] Epoch 0 | Batchsize: 32 | Steps: 235 | Loss: 0.24456023513240382",
    b"1: [RANK 5] Epoch 0 | Batchsize: 32 | Steps: 235 | Loss: 0.261846293271222",
    b"1: [RANK 4] Epoch 0 | Batchsize: 32 | Steps: 235 | Loss: 0.2621041301479365",
    b"1: [RANK 6] Epoch 0 | Batchsize: 32 | Steps: 235 | Loss: 0.26154112798419404",
    b"1: [RANK 7] Epoch 0 | Batchsize: 32 | Steps: 235 | Loss: 0.25475989499307694",
    b"0: [RANK 0] Epoch 0 | Batchsize: 32 | Steps: 235 | Loss: 0.2592492013654493",
]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_rank_tag_behind_srun_s_label_names_the_row_s_rank(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, SRUN_1039), settings=PATHS[path])
    by_rank = snap.metrics.groupby("rank")["loss"].first().to_dict()
    assert sorted(by_rank) == [0, 3, 4, 5, 6, 7]
    assert by_rank[3] == pytest.approx(0.24456023513240382) and by_rank[0] == pytest.approx(0.2592492013654493)


def test_only_the_capital_rank_tag_is_a_prefix() -> None:
    tagged = line_rank(b"[RANK 12] Epoch 0 | Loss: 0.3")
    assert tagged is not None and tagged.rank == 12
    # Megatron's per-rank memory report and library messages start `[Rank N] `: no prefix (the corpus convention)
    assert line_rank(b"[Rank 5] (after 1 iterations) memory (MB) | allocated: 12480.07421875") is None
    assert line_rank(b"[RANK 3]Epoch 0 | Loss: 0.3") is None  # no blank after the tag


@pytest.mark.parametrize(
    "name", ["output-251211-1801", "stdout_20240101_1200", "log-2024-01-01", "stderr-20251211-1801"]
)
def test_a_redirect_named_by_its_stream_and_time_is_the_one_log(tmp_path: Path, name: str) -> None:
    """ChidanshM/verf's `log/output-251211-1801` (the stdout of `python -m train.train_gait_model`, no suffix) was
    skipped as no log: a stream word, then only the time it started, names a redirect."""
    one_log(tmp_path, LM[:3]).joinpath("train.log").rename(tmp_path / name)
    assert [(f.rel, f.rank) for f in discover(tmp_path).files] == [(name, 0)]


@pytest.mark.parametrize("name", ["output-final", "logo-2024", "catalog-2024", "output-251211-1801.py", "dialog_1"])
def test_a_stream_word_needs_only_a_time_after_it(tmp_path: Path, name: str) -> None:
    one_log(tmp_path, LM[:3]).joinpath("train.log").rename(tmp_path / name)
    assert discover(tmp_path).files == []
