"""Issue 30, corpus gap horovodrun-rank-6-stderr-tag-keras-allreduce-traceback-cut_horovod-3989: horovodrun (Gloo)
tags every line of a worker `[rank]<stream>:` (`[6]<stderr>:`), mpirun --tag-output `[job,rank]<stream>:`
(`[1,6]<stderr>:`). Only the latter was a launcher's tag, so a traceback behind horovodrun's tag was no failure: the
cut-header frames rule (core.logs.rows.linekinds.opens_traceback) never saw the frame behind an unknown tag, and a
learnt line prefix (core.logs.rows.lineprefix) needs a traceback header to learn from, which a paste cut at both
ends does not hold. Now both tags are one launcher tag (core.logs.rows.failures.line_tag), naming the rank, on every
read path (the bulk scans take `[digits]<` lines as candidates: core.logs.tokens.bulk.CANDIDATE_START).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import line_tag
from core.logs.rows.lineranks import line_rank
from core.logs.tokens.bulk import RE_CANDIDATE_AT
from tests.helpers import READ_PATHS, entry_lines, one_log, read_entry

PATHS = READ_PATHS
HVD = "horovodrun-rank-6-stderr-tag-keras-allreduce-traceback-cut_horovod-3989"
# the entry's real lines (a traceback of rank 6 cut at both ends: frames only, a blank tagged line after each)
REAL = entry_lines(HVD)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_entry_s_cut_traceback_fails_rank_6(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, HVD, path)
    assert set(failed_ranks(snap)) == {6}
    [context] = snap.errors["context"].tolist()
    assert "_allreduce" in context


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("tag", [b"[6]<stderr>:", b"[1,6]<stderr>:"])
def test_frames_only_behind_either_launcher_tag_fail_the_tag_s_rank(tmp_path: Path, path: str, tag: bytes) -> None:
    lines = [tag + line.split(b":", 1)[1] for line in REAL]  # the same frames behind mpirun's tag
    snap = read_run(one_log(tmp_path, lines), settings=PATHS[path])
    assert set(failed_ranks(snap)) == {6}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_whole_tagged_traceback_names_its_exception_and_rank(tmp_path: Path, path: str) -> None:
    lines = [
        b"[6]<stderr>:Traceback (most recent call last):",
        *REAL[2:6],
        b"[6]<stderr>:tensorflow.python.framework.errors_impl.UnknownError: Gloo allreduce failed",
    ]
    snap = read_run(one_log(tmp_path, lines), settings=PATHS[path])
    assert failed_ranks(snap) == {6: "tensorflow.python.framework.errors_impl.UnknownError: Gloo allreduce failed"}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_tagged_frames_after_training_rows_are_no_failure_of_their_own_once_training_goes_on(
    tmp_path: Path, path: str
) -> None:
    # a frame quoted by a warning, training going on after it: the rank did not die (the cut-header rule's own limit)
    lines = [b"[6]<stdout>:epoch: 1 step: 1, loss is 2.5", REAL[2], b"[6]<stdout>:epoch: 1 step: 2, loss is 2.4"]
    snap = read_run(one_log(tmp_path, lines), settings=PATHS[path])
    assert failed_ranks(snap) == {}


STREAMS = st.sampled_from([b"stdout", b"stderr", b"stddiag"])  # OpenMPI's three streams


@given(rank=st.integers(0, 10**6), job=st.none() | st.integers(0, 99), stream=STREAMS)
def test_any_rank_behind_either_tag_is_read(rank: int, job: int | None, stream: bytes) -> None:
    tag = (b"[" + (b"" if job is None else b"%d," % job) + b"%d]<" % rank) + stream + b">:"
    line = tag + b'  File "train.py", line 3, in <module>'
    assert line_tag(line) == (rank, len(tag))
    assert RE_CANDIDATE_AT.match(line) is not None  # a candidate on the bulk scans
    named = line_rank(tag + b"epoch: 1 step: 2, loss is 2.5")
    assert named is not None and named.rank == rank


@pytest.mark.parametrize(
    "line",
    [
        b'[6] <stderr>:  File "train.py", line 3, in <module>',  # a space inside: no launcher's tag
        b'[]<stderr>:  File "train.py", line 3, in <module>',  # no rank
        b'[6]<stdin>:  File "train.py", line 3, in <module>',  # no output stream
        b"[6] epoch: 1 step: 2, loss is 2.5",  # a bracketed number is no tag
    ],
)
def test_what_is_no_launcher_tag(line: bytes) -> None:
    assert line_tag(line) == (None, 0)


@given(
    tag=st.one_of(
        st.tuples(st.none() | st.integers(0, 99), st.integers(0, 10**6), STREAMS).map(
            lambda t: (b"[" + (b"" if t[0] is None else b"%d," % t[0]) + b"%d]<" % t[1]) + t[2] + b">:"
        ),
        st.integers(0, 10**6).map(lambda r: b"[rank%d]:" % r),
    ),
    body=st.sampled_from([b"epoch: 1 step: 2, loss is 2.5", b"Traceback (most recent call last):"]),
)
def test_the_rows_and_the_failures_read_one_rank_behind_any_launcher_tag(tag: bytes, body: bytes) -> None:
    # one definition of the tags (lineranks.LAUNCHER_TAG / TORCH_TAG): a rank's rows and its failure never part
    rank, skip = line_tag(tag + body)
    named = line_rank(tag + body)
    assert named is not None and (named.rank, tag[skip:]) == (rank, b"")


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_traceback_on_openmpi_s_diagnostic_stream_fails_its_rank(tmp_path: Path, path: str) -> None:
    lines = [
        b"[1,2]<stdout>:epoch: 1 step: 1, loss is 2.5",
        b"[1,2]<stddiag>:Traceback (most recent call last):",
        b'[1,2]<stddiag>:  File "train.py", line 3, in <module>',
        b"[1,2]<stddiag>:RuntimeError: bad things",
    ]
    snap = read_run(one_log(tmp_path, lines), settings=PATHS[path])
    assert failed_ranks(snap) == {2: "RuntimeError: bad things"}
