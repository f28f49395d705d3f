"""The bulk path's compiled forms (issue 30, speed): the LossMonitor pass (core.logs.tokens.lmscan) and the
block scan give what their reference forms give, line for line, bit for bit."""

from __future__ import annotations

import gc
import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.bytes.source import CheckedFiles
from core.logs.tokens import bulk
from core.logs.tokens.lmscan import lm_rows
from tests.strategies import loss_line, value_text

_LOSS = bulk.ROW_KEYS.index("loss")


def _bits(rows: np.ndarray) -> list[bytes]:
    return [struct.pack(f"<{len(r)}d", *r) for r in np.nan_to_num(rows, nan=-7.25).tolist()]


def _lines() -> st.SearchStrategy[bytes]:
    odd = st.sampled_from(
        [
            b"epoch: 1 step: 2, loss is 1.5.2\n",
            b"epoch: 1 step: 2, loss is .\n",
            b"epoch: 1 step: 2, loss is -\n",
            b"epoch: 1 step: 2, loss is 1e\n",
            b"epoch: 1 step: 2, loss is 1.5\r\r\n",
            b"epoch: 12345678901 step: 2, loss is 1.5\n",
            b"epoch: 123456789012 step: 2, loss is 1.5\n",
            b"epoch: 1 step: 2, loss is 123456789012345678901234567.5\n",
            b"epoch: 1 step: 2, loss is 0.00000000000000000000123\n",
            b"epoch: 1 step: 2, loss is +.5\n",
            b"epoch: 1 step: 2 loss is 1.5\n",
            b"epoch:  1 step: 2, loss is 1.5\n",
            b"[INFO] epoch: 1 step: 2, loss is 1.5\n",
        ]
    )
    return st.one_of(loss_line(), odd, st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"") + b"\n"))


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_lines(), min_size=1, max_size=30), cut=st.booleans())
@example(lines=[b"epoch: 1 step: 2, loss is 2.3139476776123047\n"], cut=False)
@example(lines=[b"epoch: 1 step: 2, loss is 1.5"], cut=False)  # the buffer ends before the newline
@example(lines=[b"x\n", b"epoch: 1 step: 2, loss is 1.5\n", b"[INFO] e\n"], cut=False)  # a few start with `e`
@example(lines=[b"[INFO] epoch: 1 step: 2, loss is 1.5\n", b"e"], cut=True)  # none taken; a start at the end
def test_compiled_lossmonitor_rows_are_the_line_readers(lines: list[bytes], cut: bool) -> None:
    """Every line the compiled pass takes is a whole `RE_LM_AT` line and its row is `lm_row`'s bit for bit
    (17-digit repr floats, midpoints, over 18 digits, signs, CR); it takes every line numpy's form takes."""
    data = b"\n" + b"".join(lines)
    if cut:
        data = data[:-1]  # the last line's newline not there: never taken
    starts = np.cumsum([1] + [len(x) for x in lines[:-1]]).astype(np.int64)
    take, rows = lm_rows(bytearray(data), starts, 100, float("nan"))
    take_np, rows_np = bulk.lm_block(data, starts, 100, float("nan"))
    assert not (take_np & ~take).any()  # never fewer lines than numpy's form
    expected = []
    for ls in starts[take].tolist():
        m = bulk.RE_LM_AT.match(data, ls)
        assert m is not None and data.find(b"\n", ls) == m.end() + (data[m.end() : m.end() + 1] == b"\r")
        expected.append(bulk.lm_row(m, 100 + ls, float("nan")))
    assert _bits(rows) == _bits(np.array(expected).reshape(-1, len(bulk.ROW_KEYS)))
    assert _bits(rows[take_np[take]]) == _bits(rows_np)


@settings(max_examples=300, deadline=None)
@given(text=value_text(), sign=st.sampled_from([b"", b"-", b"+"]))
def test_compiled_lossmonitor_values_are_float(text: bytes, sign: bytes) -> None:
    """The loss of a taken line is `float` of its text, whatever its digits (a plain decimal or left alone)."""
    line = b"epoch: 3 step: 9, loss is " + (sign + text if text[:1] not in b"+-" else text) + b"\n"
    take, rows = lm_rows(line, np.array([0]), 0, float("nan"))
    if take[0]:
        value = float(line[len(b"epoch: 3 step: 9, loss is ") : -1])
        assert struct.pack("<d", rows[0, _LOSS]) == struct.pack("<d", value)
    else:
        assert (
            bulk.RE_LM_AT.match(line) is None
            or not line.rstrip(b"\n").split(b"is ")[1].lstrip(b"+-").replace(b".", b"", 1).isdigit()
        )


class _GcWatch(CheckedFiles):
    """The real files, noting whether the cyclic collector could run at each read."""

    def __init__(self, fail: bool = False) -> None:
        self.enabled: list[bool] = []
        self.fail = fail

    def read_at(self, f: BinaryIO, buf: bytearray | memoryview, n: int, pos: int) -> int:
        self.enabled.append(gc.isenabled())
        if self.fail:
            raise RuntimeError("the disk went away")
        return super().read_at(f, buf, n, pos)


@pytest.mark.parametrize("before", [True, False])
def test_read_run_pauses_the_collector_and_restores_it(tmp_path: Path, before: bool) -> None:
    """A one-shot read runs with the cyclic collector paused (a full collection of a big heap mid-read cost
    it up to a third of its time), and leaves it as it found it, also when the read fails."""
    (tmp_path / "worker_0.log").write_bytes(b"epoch: 1 step: 1, loss is 2.5\n" * 50)
    source = _GcWatch()
    was = gc.isenabled()
    try:
        (gc.enable if before else gc.disable)()
        snap = read_run(tmp_path, source=source)
        assert gc.isenabled() is before
        assert source.enabled and not any(source.enabled)
        assert snap.metrics["loss"].tolist() == [2.5] * 50
        with pytest.raises(RuntimeError):
            read_run(tmp_path, source=_GcWatch(fail=True))  # a read that fails: the collector as it was
        assert gc.isenabled() is before
    finally:
        (gc.enable if was else gc.disable)()


def test_a_plain_line_an_anchor_lets_through_is_searched_for_failures_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain line that holds a failure kind's anchor (` training`) is read by the per-line reader; a log repeats
    it (`Number of training samples: 64` each epoch): its failure signatures are searched once, not per copy,
    and a real failure's line with the same anchor is still one (issue 30, MindCV's 2,000-step read)."""
    from core.logs.rows import failures

    searched: list[bytes] = []
    real = failures.fatal_reason

    def counted(line: bytes) -> str | None:
        searched.append(line)
        return real(line)

    monkeypatch.setattr(failures, "fatal_reason", counted)
    plain = b"Number of training samples: 64\n"
    long = b"Number of training samples: " + b"6" * 2000 + b"\n"  # not remembered: the memory stays bounded
    lines = [b"epoch: 1 step: %d, loss is 2.5\n" % s + plain + long for s in range(1, 301)]
    lines.append(b"Exception in main training loop: Caught RuntimeError in replica 0 on device 0.\n")
    (tmp_path / "worker_0.log").write_bytes(b"".join(lines))
    snap = read_run(tmp_path)
    assert len(snap.metrics) == 300
    assert searched.count(plain.rstrip(b"\n")) == 1
    assert searched.count(long.rstrip(b"\n")) == 300
    assert [k for k in snap.errors["kind"]] == ["exception"]
    assert "main training loop" in snap.errors["message"].iloc[0]


def test_a_batch_of_small_logs_names_new_metrics_in_file_order(tmp_path: Path) -> None:
    """Small logs go to the table a batch at a time (one write per column): the metrics a file names first still
    come in file order, as when the files are read one by one (hypothesis found a batch that put them otherwise)."""
    from core.logs import ReaderSettings

    files = [
        b"epoch: 0001, step: 0, loss is 4.52\n\x1b[32mstep 0/0 train_loss=4.52 val_loss=4.52\x1b[0m\n",
        b"[INFO] 2026-11-23 19:14:00,332 [mindformers/core/callback/callback.py:747] print_output_info: { Epoch:"
        b"[  0/  4], step:[    0/   16], loss:[4.52/4.52], per_step_time: 4503ms, lr: 0.003, overflow cond: False, "
        b"loss_scale: 1.0, global_norm: [0.73903346], train_throughput_per_npu: 0.000T\n",
    ]
    for rank, data in enumerate(files):
        (tmp_path / f"worker_{rank}.log").write_bytes(data)
    together = read_run(tmp_path, settings=ReaderSettings(read_block=2048, compiled_min=0))
    alone = read_run(tmp_path, settings=ReaderSettings(read_block=2048, prefetch_min=1, compiled_min=0))
    assert list(together.metrics.columns) == list(alone.metrics.columns)
    assert list(together.metrics.columns)[-2:] == ["val_loss", "loss_avg"]
