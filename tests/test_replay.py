"""core.logs.live.replay: a recording replays into a folder the RunWatcher sees as a live run."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from core.logs import RunWatcher, read_run
from core.logs.live.replay import load_recording, record, replay, synthetic_recording

REAL_OK = Path(__file__).parent / "fixtures" / "real_msrun_logs" / "dp8_cpu_ok"


def test_synthetic_recording_is_labelled_and_replays_exactly(tmp_path: Path) -> None:
    rec = synthetic_recording(REAL_OK, tmp_path / "rec", seconds_per_line=0.01)
    assert rec.synthetic and json.loads((tmp_path / "rec" / "timing.json").read_text())["synthetic"] is True
    out = tmp_path / "out"
    with RunWatcher(out, rescan_s=0.1) as w:
        t0 = time.monotonic()
        assert replay(tmp_path / "rec", out, speed=2.0)
        elapsed = time.monotonic() - t0
        snap = w.snapshot(refresh=True)
    assert elapsed >= rec.duration_s / 2.0 * 0.8
    for f in REAL_OK.iterdir():
        assert (out / f.name).read_bytes() == f.read_bytes()
    ref = read_run(REAL_OK)
    assert len(snap.metrics) == len(ref.metrics) == 120
    assert snap.metrics["time"].notna().all()  # seen live: every row has an observation time
    assert (
        snap.metrics["time"].is_monotonic_increasing
        or snap.metrics.groupby("rank")["time"].apply(lambda s: s.is_monotonic_increasing).all()
    )


def test_replay_stops_early(tmp_path: Path) -> None:
    synthetic_recording(REAL_OK, tmp_path / "rec", seconds_per_line=0.5)
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    assert replay(tmp_path / "rec", tmp_path / "out", stop_event=stop) is False
    assert len(read_run(tmp_path / "out").metrics) < 120


def test_record_a_live_folder(tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    stop = threading.Event()
    result: dict = {}
    t = threading.Thread(target=lambda: result.setdefault("rec", record(live, tmp_path / "rec", stop, 0.02)))
    t.start()
    with open(live / "worker_0.log", "ab") as f:
        for i in range(5):
            f.write(b"epoch: 1 step: %d, loss is 1.0\n" % (i + 1))
            f.flush()
            time.sleep(0.06)
        f.write(b"partial")
    stop.set()
    t.join()
    rec = result["rec"]
    assert not rec.synthetic
    pairs = rec.files["worker_0.log"]
    assert len(pairs) >= 3 and pairs[-1][1] == 5 * len(b"epoch: 1 step: 1, loss is 1.0\n")
    assert [p[0] for p in pairs] == sorted(p[0] for p in pairs)


def test_bad_recording_is_refused(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "worker_0.log").write_bytes(b"abc\n")
    (rec / "timing.json").write_text(json.dumps({"files": {"../x.log": [[0, 1]]}}))
    with pytest.raises(ValueError):
        load_recording(rec)
    (rec / "timing.json").write_text(json.dumps({"files": {"worker_0.log": [[0, 99]]}}))
    with pytest.raises(ValueError):
        load_recording(rec)
