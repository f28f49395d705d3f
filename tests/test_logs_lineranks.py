"""Issue 30 item 3: ranks from the line when one stream carries several, on real lines of each source.

Every source (core/logs/rows/lineranks.py) reads its real sample lines; then real logs are read as a user
reads them: a stream tagged by mpirun, torch, WeNet, VISSL or pdsh gives every rank (or host) its own rows,
error rows and status, the same on the line-by-line and the bulk paths; a stream stripped of its tags reads
the same rows (rank aside). Also error rows typed (issue 30 item 5).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs import ERROR_COLUMNS, ReaderSettings, rank_status, read_run
from core.logs.rows.filestate import ErrorKind, ErrorRow
from core.logs.rows.lineranks import RANK_SOURCES, LineRank, line_rank

REAL = Path(__file__).parent / "fixtures" / "real_logs"
ONE_BY_ONE = ReaderSettings(block_min=1 << 30, shape_min=1 << 30)
BULK = ReaderSettings(compiled_min=0, shape_min=16, block_min=1)

# WeNet issue 941 (tests/fixtures/real_logs/wenet-train-and-cv-batches-rank-suffix_wenet-941): rows end in `rank N`
WENET = (REAL / "wenet-train-and-cv-batches-rank-suffix_wenet-941" / "log" / "train.log").read_bytes()
# VISSL issue 480 (github.com/facebookresearch/vissl/issues/480), the training output, copied as printed
VISSL = (
    b"INFO 2021-12-02 18:52:20,806 log_hooks.py: 277: Rank: 0; [ep: 0] iter: 57; lr: 0.71785; loss: 2.94718; "
    b"btime(ms): 192; eta: 0:00:08; peak_mem(M): 4176;\n"
    b"INFO 2021-12-02 18:52:20,935 log_hooks.py: 277: Rank: 0; [ep: 0] iter: 58; lr: 0.77805; loss: 2.93593; "
    b"btime(ms): 191; eta: 0:00:08; peak_mem(M): 4176;\n"
    b"INFO 2021-12-02 18:52:21,071 log_hooks.py: 277: Rank: 0; [ep: 0] iter: 59; lr: 0.83631; loss: 2.9267; "
    b"btime(ms): 189; eta: 0:00:07; peak_mem(M): 4176;\n"
)
# LLaVA issue 1264 (github.com/haotian-liu/LLaVA/issues/1264): DeepSpeed over pdsh, two nodes, each line
# prefixed by its host; the loss printed by the first node's main process only
PDSH = (
    b"192.168.50.171:   total_norm_cuda = get_accelerator().FloatTensor([float(total_norm)])\n"
    b"192.168.50.170: {'loss': 1.2992, 'learning_rate': 1.282051282051282e-06, 'epoch': 0.0}\n"
    b"192.168.50.170: {'loss': 1.2859, 'learning_rate': 2.564102564102564e-06, 'epoch': 0.0}\n"
    b"192.168.50.170: {'loss': 1.2685, 'learning_rate': 3.846153846153847e-06, 'epoch': 0.0}\n"
)


def _write(folder: Path, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.log").write_bytes(data)
    return folder


# ----------------------------------------------------------------------------- the sources, on their samples


@pytest.mark.parametrize("source", RANK_SOURCES, ids=[s.name for s in RANK_SOURCES])
def test_each_rank_source_reads_its_real_samples(source: object) -> None:
    for sample in source.samples:  # type: ignore[attr-defined]
        assert source.pattern.search(sample.line) is not None  # type: ignore[attr-defined]
        assert line_rank(sample.line) == LineRank(sample.rank, sample.host), sample.source


@pytest.mark.parametrize(
    "line",
    [
        b"epoch: 1 step: 402, loss is 482.6315612792969",  # MindAudio's LossMonitor, no tag
        b"top1: 76.1",  # a metric at a line's start is no host
        b"Epoch-1: loss 0.3",  # nor a progress word
        b"Epoch 1 completed with avg loss: 2.4179, learning rate: 0.003",
        b"[2023-07-25 21:01:57,475] [INFO] [logging.py:96:log_dist] [Rank 0] rank=0 time (ms) | forward: 652.31",
        b"the ranks disagree",
        b"",
    ],
)
def test_lines_without_a_rank_source_name_none(line: bytes) -> None:
    assert line_rank(line) is None


@given(st.binary(max_size=200))
def test_line_rank_never_fails_and_names_a_rank_from_the_line(data: bytes) -> None:
    named = line_rank(data)
    if named is not None:
        assert named.rank is not None or named.host is not None
        assert named.rank is None or (named.rank >= 0 and str(named.rank).encode() in data)


# ----------------------------------------------------------------------------- real streams of several ranks


@pytest.mark.parametrize("how", [ONE_BY_ONE, BULK], ids=["one-by-one", "bulk"])
def test_wenet_trailing_rank_gives_each_rank_its_rows(tmp_path: Path, how: ReaderSettings) -> None:
    snap = read_run(_write(tmp_path / "run", WENET), settings=how)
    m = snap.metrics
    assert sorted(snap.ranks["rank"].tolist()) == [0, 1, 2, 3]  # rank 3 has its CV line only
    assert m.groupby("rank")["loss"].apply(list).to_dict() == {
        0: [12.646465, 25.618004],
        1: [16.885244, 18.340179],
        2: [19.729301, 23.600426],
    }
    assert sorted(snap.evals.drop_duplicates(["offset"])["rank"].tolist()) == [0, 1, 2, 3]
    last = snap.ranks.set_index("rank")["last_loss"].to_dict()
    assert last[1] == 18.340179 and last[2] == 23.600426


@pytest.mark.parametrize("how", [ONE_BY_ONE, BULK], ids=["one-by-one", "bulk"])
def test_vissl_rank_field_names_the_rows_rank(tmp_path: Path, how: ReaderSettings) -> None:
    """`Rank: 0;` in a file the layout calls rank 2 (a rank folder): the line's word wins."""
    _write(tmp_path / "run" / "rank_2", VISSL)
    snap = read_run(tmp_path / "run", settings=how)
    assert snap.metrics["rank"].tolist() == [0, 0, 0]
    assert snap.metrics["loss"].tolist() == [2.94718, 2.93593, 2.9267]
    assert snap.ranks["rank"].tolist() == [0]


def test_pdsh_host_prefix_gives_a_series_per_host_labelled(tmp_path: Path) -> None:
    snap = read_run(_write(tmp_path / "run", PDSH))
    assert snap.metrics["loss"].tolist() == [1.2992, 1.2859, 1.2685]
    assert snap.metrics["rank"].tolist() == [0, 0, 0]
    assert snap.hosts == {0: "192.168.50.170"}  # the first host with a row; the other printed no row


def test_two_hosts_are_two_series(tmp_path: Path) -> None:
    """The same real line shapes, from both nodes (hosts renamed only): one series each, in node order."""
    other = PDSH.replace(b"192.168.50.170:", b"192.168.50.172:", 1)  # first row from another node
    snap = read_run(_write(tmp_path / "run", other))
    assert snap.metrics["rank"].tolist() == [0, 1, 1]
    assert snap.hosts == {0: "192.168.50.172", 1: "192.168.50.170"}


def test_mpirun_tagged_stream_is_the_tagged_ranks() -> None:
    snap = read_run(REAL / "mpirun-tag-output-exception_uniter-31" / "log")
    assert snap.ranks["rank"].tolist() == [1]
    states = rank_status(snap).set_index("rank")["state"].to_dict()
    assert states == {1: "crashed"}


def test_torch_rank_tags_give_each_named_rank_a_status() -> None:
    snap = read_run(REAL / "nccl-watchdog-rank-tags-one-stream_llamafactory-6269" / "log")
    states = rank_status(snap).set_index("rank")["state"].to_dict()
    assert states == {0: "crashed", 3: "crashed", 4: "crashed"}


def test_a_failure_of_one_rank_is_not_undone_by_another_ranks_rows(tmp_path: Path) -> None:
    """Real tagged lines: rank 4's NCCL abort (LLaMA-Factory 6269), then WeNet rows of ranks 0-2 only:
    rank 4 trained on after nothing, so it stays failed; in an untagged file a later row would settle it."""
    abort = (REAL / "nccl-watchdog-rank-tags-one-stream_llamafactory-6269" / "log" / "train.log").read_bytes()
    rank4 = b"".join(line for line in abort.splitlines(keepends=True) if line.startswith(b"[rank4]:"))
    snap = read_run(_write(tmp_path / "run", rank4 + WENET))
    assert 4 in snap.crashed_ranks()
    assert not {0, 1, 2} & set(snap.crashed_ranks())


# ----------------------------------------------------------------------------- tagged and untagged agree

_TAGS = (  # (before the line, after it)
    lambda r: (f"[1,{r}]<stdout>:".encode(), b""),
    lambda r: (f"[rank{r}]:".encode(), b""),
    lambda r: (b"", f" rank {r}".encode()),
    lambda r: (f"worker-{r}: ".encode(), b""),
)
_TAGGED = re.compile(rb"^(?:\[1,\d+\]<stdout>:|\[rank\d+\]:|worker-\d+: )|(?: rank \d+$)", re.MULTILINE)
_WENET_LINES = [line for line in WENET.splitlines() if b"TRAIN" in line]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    picks=st.lists(st.tuples(st.integers(0, len(_WENET_LINES) - 1), st.integers(0, 12)), min_size=1, max_size=150),
    tag=st.sampled_from(range(len(_TAGS))),
    bulk=st.booleans(),
)
def test_tagged_and_untagged_streams_read_the_same_rows(
    tmp_path_factory: pytest.TempPathFactory, picks: list[tuple[int, int]], tag: int, bulk: bool
) -> None:
    """Real WeNet rows (their trailing `rank N` cut) behind each prefix tag: the same rows as the stream
    without tags, rank aside; each row's rank is its tag's (a host: its node's order), on either path."""
    how = BULK if bulk else ONE_BY_ONE
    lines = [re.sub(rb" rank \d+$", b"", _WENET_LINES[i]) for i, _ in picks]
    tagged = b"".join(
        _TAGS[tag](r)[0] + line + _TAGS[tag](r)[1] + b"\n" for line, (_, r) in zip(lines, picks, strict=True)
    )
    root = tmp_path_factory.mktemp("tags")
    with_tags = read_run(_write(root / "tagged", tagged), settings=how).metrics
    plain = read_run(_write(root / "plain", _TAGGED.sub(b"", tagged)), settings=how).metrics
    cols = ["epoch", "step", "loss", "lr", "loss_att", "loss_ctc"]
    assert with_tags[cols].equals(plain[cols])
    assert set(plain["rank"]) == {0}
    if tag < 3:
        assert with_tags["rank"].tolist() == [r for _, r in picks]
    else:  # hosts: one series per host, numbered in the order they first appear
        order: dict[int, int] = {}
        assert with_tags["rank"].tolist() == [order.setdefault(r, len(order)) for _, r in picks]


# ----------------------------------------------------------------------------- typed error rows


def test_error_rows_are_typed_and_frozen() -> None:
    from core.logs.rows.reader import RunReader

    reader = RunReader(REAL / "mpirun-tag-output-exception_uniter-31" / "log")
    reader.refresh()
    snap = reader.snapshot()
    errors = [e for st_ in reader.files.values() for e in st_.errors]
    assert errors and all(isinstance(e, ErrorRow) for e in errors)
    assert {e.kind for e in errors} <= set(ErrorKind) and errors[0].rank == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        errors[0].rank = 0  # type: ignore[misc]
    assert list(snap.errors.columns) == ERROR_COLUMNS
    assert snap.errors["kind"].map(type).eq(str).all()  # the frame holds the kind's string, as it always did


def test_a_live_stream_keeps_each_ranks_count_and_last_row_across_ticks(tmp_path: Path) -> None:
    """The table takes a file's rows every tick: each rank's count and last row outlive the take."""
    from core.logs.rows.reader import RunReader

    lines = WENET.splitlines(keepends=True)
    run = _write(tmp_path / "run", b"".join(lines[:4]))
    reader = RunReader(run)
    reader.refresh()
    first = reader.snapshot().ranks.set_index("rank")
    assert first["n_loss"].to_dict() == {0: 1, 1: 1, 2: 2}
    with (run / "train.log").open("ab") as f:
        f.write(b"".join(lines[4:]))
    reader.refresh()
    snap = reader.snapshot()
    ranks = snap.ranks.set_index("rank")
    assert ranks["n_loss"].to_dict() == {0: 2, 1: 2, 2: 2, 3: 0}
    assert ranks["last_loss"].dropna().to_dict() == {0: 25.618004, 1: 18.340179, 2: 23.600426}
    assert snap.metrics.groupby("rank").size().to_dict() == {0: 2, 1: 2, 2: 2}
