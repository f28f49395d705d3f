"""A BOM-less UTF-16 log whose first write is a few bytes (a trainer writing its first line in pieces).

Why: with fewer than 8 bytes the head cannot say UTF-16 (`utf16_codec`); read as UTF-8, the NULs of those bytes
became line ends and were taken, and once the head said UTF-16 the read went on from there: the first row was lost
(steps [2, 3, 4]), at every read block, for first writes of 2..7 bytes. The read now waits for the bytes that say.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.logs import ReaderSettings
from core.logs.bytes.utf16 import utf16_codec, utf16_undecided
from core.logs.rows.reader import RunReader

# MindSpore's LossMonitor line (as tests/test_logs_hardening3.py's UTF-16 log), CRLF as PowerShell's Out-File writes
_LOG = (
    "".join(f"epoch: 1 step: {s}, loss is 1.0\r\n" for s in range(1, 4))
    + 'Traceback (most recent call last):\r\n  File "train.py", line 3, in <module>\r\nValueError: boom\r\n'
    + "epoch: 1 step: 4, loss is 0.5, lr: 0.1\n"
)


@pytest.mark.parametrize("first", range(2, 8))
@pytest.mark.parametrize("block", [128, 200, 1 << 20, None])  # None: the default settings (short logs batched)
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_utf16_log_whose_first_write_is_a_few_bytes_keeps_its_first_row(
    tmp_path: Path, encoding: str, block: int | None, first: int
) -> None:
    data = _LOG.encode(encoding)
    path = tmp_path / "worker_0.log"
    path.write_bytes(data[:first])  # a partial first line: too few bytes to call it UTF-16
    settings = None if block is None else ReaderSettings(prefetch_min=1, read_block=block, max_partial_line=block - 1)
    reader = RunReader(tmp_path, settings=settings)
    reader.refresh()
    assert reader.snapshot().metrics.empty
    with open(path, "ab") as f:
        f.write(data[first:])
    reader.refresh()
    snap = reader.snapshot()
    assert snap.metrics["step"].tolist() == [1, 2, 3, 4]
    assert snap.metrics["loss"].tolist() == [1.0, 1.0, 1.0, 0.5]
    assert snap.errors["message"].tolist() == ["ValueError: boom"] and snap.errors["line"].tolist() == [6]


@given(st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=4, max_size=40))
@example("step")
def test_a_head_too_short_to_say_utf16_waits_only_while_it_fits_utf16(text: str) -> None:
    for encoding in ("utf-16-le", "utf-16-be"):
        raw = text.encode(encoding)
        for n in range(len(raw) + 1):
            undecided = utf16_undecided(raw[:n])
            assert undecided == (n // 2 * 2 < 8 and b"\x00" in raw[:n])  # 8 bytes decide (`utf16_codec`)
            assert not (undecided and utf16_codec(raw[:n]) is not None)  # never both: decided or waiting
    for other in (text.encode("utf-8"), text.encode("utf-16")[:7], text.encode("utf-32")[:7], b"\x00" * 7):
        assert not any(utf16_undecided(other[:n]) for n in range(2, len(other) + 1))  # UTF-8, a BOM, NUL padding


def test_a_still_file_too_short_to_say_utf16_is_read_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "worker_0.log"
    path.write_bytes("step".encode("utf-16-le")[:7])  # stays ambiguous: read as before, its NULs as line ends
    old = time.time() - 60
    os.utime(path, (old, old))
    reader = RunReader(tmp_path)
    reader.refresh()
    assert reader.files[path].consumed == 6  # the bytes up to its last NUL, taken as lines (as before)
