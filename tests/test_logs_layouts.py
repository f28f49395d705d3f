"""Issue 18 item 4 (any folder layout) and issue 22 (no symlink escape): which files are a run's rank logs.

Trees are built in tmp_path with the launchers' real file names; real committed layouts (model-zoo
`train_parallelN/log`, rank-table `deviceN/train.logN`) are in tests/fixtures/real_layouts (SOURCES.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.__main__ import main
from core.logs import read_run
from core.logs.bytes.discover import MAX_DEPTH, discover, discover_logs

REAL = Path(__file__).parent / "fixtures" / "real_layouts"
LM = "epoch: 1 step: {s}, loss is {v}\n"
# a real MindFormers 2023 line from output/log/rank_0/info.log (core.logs.rows.formats "mindformers_2023")
MF = (
    "[INFO] 2023-07-11 10:47:36,427 [/root/workspace/code/mindformers/core/callback/callback.py:269] "
    "print_output_info: Epoch:[  1/  1], step:[    {s}/  125], loss:[2.244/2.244], time:507844.205 ms, "
    "lr:[0.], overflow cond: True, loss_scale: 268435460.0\n"
)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _lm(steps: int = 3) -> str:
    return "".join(LM.format(s=s, v=2.0 - s / 10) for s in range(1, steps + 1))


def _workers(root: Path) -> list[tuple[int | None, str, str]]:
    return [(f.rank, f.rel, f.layout) for f in discover_logs(root) if f.role == "worker"]


# ----------------------------------------------------------------------------- each layout


def test_mindformers_layout_from_output_log_and_run_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for r in range(2):
        _write(run / "output" / "log" / f"rank_{r}" / "info.log", "".join(MF.format(s=s) for s in (1, 2, 3)))
        _write(run / "output" / "log" / f"rank_{r}" / "error.log", "")
    _write(run / "output" / "checkpoint" / "rank_0" / "llama_rank_0-1_1.ckpt", "x")  # not a log
    for root, prefix in ((run / "output" / "log", ""), (run / "output", "log/"), (run, "output/log/")):
        assert _workers(root) == [
            (0, f"{prefix}rank_0/info.log", "mindformers"),
            (1, f"{prefix}rank_1/info.log", "mindformers"),
        ]
        snap = read_run(root)
        assert snap.n_ranks == 2 and len(snap.metrics) == 6 and snap.layout == "mindformers"


def test_mindformers_error_log_feeds_failures_not_loss_rows(tmp_path: Path) -> None:
    d = tmp_path / "output" / "log" / "rank_0"
    _write(d / "info.log", MF.format(s=1) + MF.format(s=2))
    _write(
        d / "error.log",
        MF.format(s=1) + "[ERROR] 2023-07-11 10:47:40,001 [trainer.py:9] run: "
        "RuntimeError: EI0006: Getting socket times out.\n",
    )
    snap = read_run(tmp_path / "output")
    roles = {f.rel: f.role for f in snap.files}
    assert roles["log/rank_0/error.log"] == "errors"
    assert len(snap.metrics) == 2  # the loss line repeated in error.log is not a second row
    errs = snap.errors
    assert list(errs["rank"]) == [0] and errs["kind"].iat[0] == "exception" and "EI0006" in errs["message"].iat[0]


def test_openmpi_output_filename_from_parent(tmp_path: Path) -> None:
    for r in range(3):
        _write(tmp_path / "out" / "1" / f"rank.{r}" / "stdout", _lm())
    assert _workers(tmp_path) == [(r, f"out/1/rank.{r}/stdout", "mpirun") for r in range(3)]
    assert _workers(tmp_path / "out") == [(r, f"1/rank.{r}/stdout", "mpirun") for r in range(3)]


def test_real_model_zoo_train_parallel_layout() -> None:
    assert _workers(REAL / "model_zoo_unimol") == [(r, f"train_parallel{r}/log", "model_zoo") for r in range(8)]
    snap = read_run(REAL / "model_zoo_unimol")  # each rank printed steps 1 and 2 (SOURCES.md)
    assert snap.n_ranks == 8 and len(snap.metrics) == 16
    assert snap.metrics.groupby("rank")["step"].max().tolist() == [2.0] * 8


def test_real_rank_table_layout_and_its_failure() -> None:
    assert _workers(REAL / "rank_table_lpcnet_EI0004") == [
        (r, f"device{r}/train.log{r}", "rank_table") for r in range(8)
    ]
    from core.logs.judgement.diagnose import diagnose

    [group] = diagnose(read_run(REAL / "rank_table_lpcnet_EI0004")).failure_groups  # EI0004 on every rank
    assert group.ranks == list(range(8)) and "EI0004: The ranktable is invalid" in group.exception


@pytest.mark.parametrize(
    "names",
    [
        ["slurm-123_0.out", "slurm-123_1.out", "slurm-123_2.out"],
        ["out.0", "out.1", "out.2"],
        ["task-0.err", "task-1.err", "task-2.err"],
        ["rank_0/train.log", "rank_1/train.log", "rank_2/train.log"],
        ["rank0.log", "rank1.log", "rank2.log"],
    ],
)
def test_slurm_and_rank_named_outputs(tmp_path: Path, names: list[str]) -> None:
    for name in names:
        _write(tmp_path / name, _lm())
    assert [(r, rel) for r, rel, _ in _workers(tmp_path)] == [(i, n) for i, n in enumerate(names)]
    assert read_run(tmp_path).n_ranks == 3


def test_one_file_is_rank_zero(tmp_path: Path) -> None:
    _write(tmp_path / "train.log", _lm(4))
    assert _workers(tmp_path) == [(0, "train.log", "single")]
    snap = read_run(tmp_path)
    assert snap.n_ranks == 1 and len(snap.metrics) == 4


def test_msrun_layout_unchanged_and_launcher_stays_launcher(tmp_path: Path) -> None:
    for r in range(2):
        _write(tmp_path / f"worker_{r}.log", _lm())
    _write(tmp_path / "scheduler.log", "")
    _write(tmp_path / "msrun.log", "Start worker process with rank id:0\n")
    files = {f.rel: (f.role, f.rank) for f in discover_logs(tmp_path)}
    assert files == {
        "worker_0.log": ("worker", 0),
        "worker_1.log": ("worker", 1),
        "scheduler.log": ("scheduler", None),
        "msrun.log": ("launcher", None),
    }


def test_two_runs_side_by_side_read_one_and_say_why(tmp_path: Path) -> None:
    for r in range(4):
        _write(tmp_path / "big" / f"worker_{r}.log", _lm())
    for r in range(2):
        _write(tmp_path / "small" / f"worker_{r}.log", _lm())
    found = discover(tmp_path)
    assert {f.rel.split("/")[0] for f in found.files} == {"big"}
    assert {s.rel for s in found.skipped} == {"small/worker_0.log", "small/worker_1.log"}
    assert all("already read from big/worker_" in s.why for s in found.skipped)


def test_depth_and_entry_limits_hold(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(MAX_DEPTH + 1)])
    _write(deep / "worker_0.log", _lm())
    assert _workers(tmp_path) == []
    for r in range(30):
        _write(tmp_path / f"worker_{r}.log", _lm(1))
    found = discover(tmp_path, max_entries=10)
    assert found.truncated and len(found.files) <= 10


# ----------------------------------------------------------------------------- nothing taken: say why


def test_files_seen_but_none_taken_are_named_by_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _write(tmp_path / "logs" / "train.log", _lm())
    _write(tmp_path / "logs" / "eval.log", _lm())
    _write(tmp_path / "README.md", "notes")
    assert main(["watch", str(tmp_path), "--once"]) == 1
    out = capsys.readouterr().out
    assert "3 file(s) seen, none read as a rank log" in out
    assert "logs/train.log: no rank number in its path" in out and "README.md: not a log" in out
    assert main(["diagnose", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "logs/eval.log: no rank number in its path" in err and "no failure" not in err


def test_diagnose_json_gives_a_verdict_when_no_file_is_a_rank_log(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A folder whose only file is no rank log (a run's stdout saved as `.md`): `diagnose --json` still prints one
    JSON object (no rank, none failed, why nothing was judged), as `watch --once` prints `failed ranks: none`, so a
    script comparing the two gets a verdict from both; the exit stays 2 (nothing read is no success)."""
    _write(tmp_path / "model_notes.md", _lm())
    assert main(["diagnose", str(tmp_path), "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["failure_groups"] == [] and out["ranks"] == 0 and not out["failed"]
    assert "model_notes.md: not a log" in out["nothing_to_judge"]["why"]


def test_empty_folder_says_it_waits(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["watch", str(tmp_path), "--once"]) == 1
    out = capsys.readouterr().out
    assert "holds no files yet (waiting for worker_N.log" in out
    assert "ranks=0" in out and "rank  state" not in out  # no status table's header over no rank


# ----------------------------------------------------------------------------- issue 22: links


def _link_tree(tmp_path: Path) -> tuple[Path, Path]:
    secret = _write(tmp_path / "outside" / "shadow", "root:$6$SECRETHASH:19000:0:99999:7:::\n" + _lm(2))
    d = tmp_path / "logs"
    _write(d / "worker_1.log", _lm())
    (d / "worker_0.log").symlink_to(secret)
    return d, secret


def test_link_out_of_the_folder_is_refused_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    d, secret = _link_tree(tmp_path)
    found = discover(d)
    assert [f.rel for f in found.files] == ["worker_1.log"]
    assert found.links_refused[0].rel == "worker_0.log" and str(secret) in found.links_refused[0].why
    snap = read_run(d)
    assert snap.n_ranks == 1 and "worker_0.log" not in {f.rel for f in snap.files}
    assert main(["watch", str(d), "--once"]) == 0
    out = capsys.readouterr().out
    assert "not read: worker_0.log: a link to" in out and "SECRETHASH" not in out
    assert main(["diagnose", str(d), "--json"]) == 0
    assert "outside the chosen folder" in capsys.readouterr().out


def test_link_followed_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    d, _ = _link_tree(tmp_path)
    assert [f.rel for f in discover_logs(d, follow_links=True) if f.role == "worker"] == [
        "worker_0.log",
        "worker_1.log",
    ]
    assert read_run(d, follow_links=True).n_ranks == 2
    assert main(["watch", str(d), "--once", "--follow-links"]) == 0
    assert "ranks=2" in capsys.readouterr().out


def test_linked_folder_outside_refused_inside_allowed(tmp_path: Path) -> None:
    outside = tmp_path / "etc"
    _write(outside / "worker_5.log", _lm())
    d = tmp_path / "logs"
    _write(d / "real" / "worker_0.log", _lm())
    (d / "rank_dir").symlink_to(outside, target_is_directory=True)
    (d / "inside.log").symlink_to(d / "real" / "worker_0.log")  # a link that stays inside: read
    (d / "loop").symlink_to(d, target_is_directory=True)  # a loop must not hang or repeat
    found = discover(d)
    assert [f.rel for f in found.files if f.role == "worker"] == ["real/worker_0.log"]
    assert [s.rel for s in found.links_refused] == ["rank_dir"]
    assert any(f.rel == "inside.log" and f.role == "launcher" for f in found.files)


def test_watcher_refuses_links_too(tmp_path: Path) -> None:
    from core.logs import RunWatcher

    d, _ = _link_tree(tmp_path)
    with RunWatcher(d, polling=True) as w:
        assert [f.rel for f in w.snapshot(refresh=True).files] == ["worker_1.log"]


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/etc/shadow").exists(), reason="needs root and /etc/shadow")
def test_issue_22_repro_etc_shadow(tmp_path: Path) -> None:
    _write(tmp_path / "worker_1.log", _lm())
    (tmp_path / "worker_0.log").symlink_to("/etc/shadow")
    assert [f.rel for f in read_run(tmp_path).files] == ["worker_1.log"]


def test_tail_refuses_a_link_swapped_after_discovery(tmp_path: Path) -> None:
    from core.logs import tail_lines

    d, secret = _link_tree(tmp_path)
    (d / "worker_1.log").unlink()
    (d / "worker_1.log").symlink_to(secret)  # was a plain log when the page listed it
    shown = tail_lines(d / "worker_1.log", inside=d)
    assert len(shown) == 1 and "outside the chosen folder" in shown[0] and "SECRETHASH" not in shown[0]
    assert any("SECRETHASH" in line for line in tail_lines(d / "worker_1.log"))  # asked to follow: shown


def test_a_launchers_output_alone_is_not_rank_zero(tmp_path: Path) -> None:
    """msrun's stdout is there before the workers' logs: it must not become rank 0 meanwhile."""
    _write(tmp_path / "msrun.log", "Start worker process with rank id:0\n")
    assert _workers(tmp_path) == []
    assert [(f.rel, f.role) for f in discover_logs(tmp_path)] == [("msrun.log", "launcher")]


# ----------------------------------------------------------------------------- a log under a document suffix
# real lines: mmsegmentation issue 271's `*.log.json` (mmcv TextLoggerHook JSON lines) and the `Train Epoch:` bar of
# dhairyag/ImageNet1k_ResNet50's `log_output.md` (corpus entries mmseg-log-json-lines-..., resnet50-imagenet-...)
MMCV_JSON = (
    '{"mode": "train", "epoch": 1, "iter": 850, "lr": 0.00962, "memory": 6567, "data_time": 0.00983, '
    '"decode.loss_seg": 1.09146, "decode.acc_seg": 61.63455, "aux.loss_seg": 0.47744, "aux.acc_seg": 59.19695, '
    '"loss": 1.5689, "time": 1.4326}\n'
)
MD_BAR = (
    "```bash\nEpoch: 1\nLearning rate: 0.005000\nTrain Epoch: 1 Loss: 5.872 Acc@1 3.611 Acc@5 11.045: "
    "100%|██████████| 10010/10010 [3:06:24<00:00,  1.12s/it]\n```\n"
)
# a DGL GraphSAGE run kept as `loss.md` (SijingYu/GraphSAGE_MultiGPU, corpus entry dgl-graphsage-epoch-step-loss-
# pipes-eval-test-acc_graphsage-multigpu-loss-md): a code block of the curves' arrays, then the run's rows
MD_LOSS = (
    "```python\nloss_4 = np.array([4.260439383677947, 1.6890802750220666])\n```\n\n"
    "Epoch 00000 | Step 00000 | Loss 6.1411 | Train Acc 0.0160 | Speed (samples/sec) nan | GPU 296.2 MB\n"
)


@pytest.mark.parametrize(
    ("name", "text", "loss"),
    [
        ("20210101_120000.log.json", MMCV_JSON, 1.5689),
        ("train.log.json", MMCV_JSON, 1.5689),
        ("log_output.md", MD_BAR, 5.872),
        ("training_logs.md", MD_BAR, 5.872),
        ("loss.md", MD_LOSS, 6.1411),  # named for the losses it holds
        ("train_losses.md", MD_LOSS, 6.1411),
    ],
)
def test_a_log_named_text_file_alone_is_rank_zero(tmp_path: Path, name: str, text: str, loss: float) -> None:
    """A folder whose only log is mmcv's `X.log.json` or console output pasted into `log_output.md` was read as
    holding no log at all: its name says log, so it is the one rank's log."""
    _write(tmp_path / name, text)
    _write(tmp_path / "config.json", '{"loss": 1.0}\n')  # not named log: never read
    assert _workers(tmp_path) == [(0, name, "single")]
    snap = read_run(tmp_path)
    assert snap.metrics["loss"].tolist() == [loss]


@pytest.mark.parametrize(
    "name", ["README.md", "catalog.md", "logging.json", "changelog.md", "blog.json", "glossary.md", "lossless.md"]
)
def test_a_document_not_named_log_is_never_read(tmp_path: Path, name: str) -> None:
    _write(tmp_path / name, MMCV_JSON)
    assert _workers(tmp_path) == []
    assert any(s.rel == name and "not a log" in s.why for s in discover(tmp_path).skipped)


def test_mmcv_json_twin_beside_its_text_log_is_not_read(tmp_path: Path) -> None:
    """mmcv writes `X.log` and `X.log.json` side by side (the same rows twice): the `.log` alone is rank 0."""
    _write(tmp_path / "20210101_120000.log", _lm(2))
    _write(tmp_path / "20210101_120000.log.json", MMCV_JSON)
    assert _workers(tmp_path) == [(0, "20210101_120000.log", "single")]
    assert len(read_run(tmp_path).metrics) == 2


# a real line of FADNet's `logs/dispnetcres.log.bk` (https://github.com/HKBU-HPML/FADNet/blob/
# 728db94e86514d021a989c6d3464d9e2673359af/logs/dispnetcres.log.bk; round 7's set-aside entry fadnet-tab-separated-...)
FADNET = (
    "2019-08-27 10:51:08,139 [dltrainer.py:209] INFO Epoch: [0][0/739]\tTime 33.019 (33.019)\tData 5.903 (5.903)"
    "\tLoss 54.733 (54.733)\tEPE 42.126 (42.126)\n"
)


@pytest.mark.parametrize("name", ["dispnetcres.log.bk", "train.log.bak", "train.out.old"])
def test_a_backup_copy_of_a_log_alone_is_rank_zero(tmp_path: Path, name: str) -> None:
    """A folder holding only a log's backup copy (`X.log.bk`) was read as holding no log: it is the one rank's."""
    _write(tmp_path / name, FADNET)
    assert _workers(tmp_path) == [(0, name, "single")]
    assert read_run(tmp_path).metrics["loss"].tolist() == [54.733]


@pytest.mark.parametrize("name", ["train.bak", "notes.old", "model.bk"])
def test_a_backup_not_of_a_log_is_never_read(tmp_path: Path, name: str) -> None:
    _write(tmp_path / name, FADNET)
    assert _workers(tmp_path) == []
