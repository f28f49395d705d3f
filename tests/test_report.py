"""Issue 34 item 4: `python -m core report RUN_OR_DIR --out run.html` writes ONE self-contained HTML file
(plotly.js inlined once, no external resource), bounded in size at 1,024 ranks, with the diagnosis and
its evidence, every rank, the run's options and plan, and every log-derived string escaped."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.synth_logs import EXCEPTION, write_run
from core.__main__ import main
from core.codegen.options import RunOptions
from core.report.html import script_json
from core.run.record_types import PlannedRun
from core.run.registry import RunRecord, write_record
from core.run.states import RunKind, RunStatus
from tests.helpers import synth_folder

FIXTURE = Path(__file__).parent / "fixtures" / "real_msrun_logs" / "dp8_cpu_ok"
MAX_BYTES = 5_000_000  # "<= 5 MB", taken as decimal megabytes (the stricter reading)


@pytest.fixture(scope="module")
def big_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("big")
    out = tmp / "run.html"
    assert main(["report", str(synth_folder(tmp / "logs")), "--out", str(out)]) == 0
    return out, out.read_text(encoding="utf-8")


def test_a_1024_rank_report_is_one_bounded_self_contained_file(big_report: tuple[Path, str]) -> None:
    out, text = big_report
    assert sorted(p.name for p in out.parent.iterdir()) == ["logs", "run.html"]  # one file, no side folder
    assert out.stat().st_size <= MAX_BYTES
    assert len(re.findall(r"plotly\.js (?:\([^)]*\) )?v\d+\.\d+\.\d+", text)) == 1  # plotly.js embedded once
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", text, re.I)  # nothing loaded from outside
    start = text.index("<script>")
    ours = text[:start] + text[text.index("</script>", start) :]  # all but plotly.js (which names its CDN)
    assert "http://" not in ours and "https://" not in ours
    figures = json.loads(re.search(r'id="report-figures">(.*?)</script>', text, re.S).group(1))
    assert [f["layout"]["yaxis"]["title"]["text"] for f in figures] == ["loss", "step time (ms)"]
    names = [t["name"] for t in figures[0]["data"]]
    # the Monitor's aggregate at scale: band + mean + the ranks to look at, never 1,024 traces
    assert names[:3] == ["max across ranks", "min-max across ranks", "mean across ranks"]
    assert {"rank 682", "rank 512", "rank 341"} <= set(names) and len(names) <= 3 + 8
    assert max(len(t["x"]) for t in figures[0]["data"]) <= 400


def test_the_bound_holds_with_plotlys_full_bundle_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the 1.5 MB cartesian bundle (another plotly version) the full 4.8 MB one is inlined: still <= 5 MB."""
    from core.report import make

    monkeypatch.setattr(make, "CARTESIAN_BUNDLE", tmp_path / "absent.js")
    out = tmp_path / "run.html"
    assert main(["report", str(synth_folder(tmp_path / "logs")), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "* plotly.js v" in text and "cartesian" not in text[:2000]
    assert out.stat().st_size <= MAX_BYTES


def test_the_report_holds_the_diagnosis_with_evidence_and_every_rank(big_report: tuple[Path, str]) -> None:
    _, text = big_report
    assert "likely root cause: rank 682" in text
    assert EXCEPTION in text
    assert "Rank 682's own error, worker_682.log:" in text  # the first failing rank's traceback, quoted
    assert "Traceback (most recent call last):" in text
    assert "<h2>Ranks (1,024)</h2>" in text
    assert len(re.findall(r"<tr(?: class=\w+)?><td>\d+<td>", text)) == 1024
    assert re.search(r"<tr class=crashed><td>682<td>crashed", text)
    assert "<td class=n>341<td>straggler" in text and "<td class=n>512<td>hung" in text  # the ranks to look at


def test_the_diagnosis_evidence_lines_of_a_real_failed_run(tmp_path: Path) -> None:
    """The real msrun run where 7 ranks raised and the scheduler timed one out (tests/fixtures)."""
    out = tmp_path / "r.html"
    assert main(["report", str(FIXTURE.parent / "semi_auto_on_cpu_error"), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "likely root cause: rank 5" in text
    assert "Invalid communication backend: CPU for semi_auto_parallel/auto_parallel mode" in text
    assert "<pre>scheduler: node 1 timed out</pre>" in text  # the group's evidence line
    assert "job: RuntimeError: The total number of timed out node is 1." in text
    assert "No loss line was read." in text and 'id="report-figures">[]</script>' in text  # no empty chart


def test_report_of_a_run_id_shows_its_options_and_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    run_dir = ws / "runs" / "dp8-run"
    shutil.copytree(FIXTURE, run_dir / "log")
    plan = PlannedRun(memory_bytes=123456789, recipe="dp8", source="planned from run.yaml (dp8)")
    record = RunRecord(
        run_id="dp8-run",
        run_dir=run_dir,
        log_dir=run_dir / "log",
        status=RunStatus.SUCCEEDED,
        kind=RunKind.GENERATED,
        command=["bash", "run.sh"],
        device_num=8,
        options=RunOptions(batch_size=32, epochs=1),
        plan=plan,
    )
    write_record(record)
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(ws))
    out = tmp_path / "r.html"
    assert main(["report", "dp8-run", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "<h1>Run dp8-run</h1>" in text
    assert "<td>batch_size<td>32" in text and "<td>recipe<td>dp8" in text and "<td>memory_bytes<td>123456789" in text
    assert "<td>status<td>succeeded" in text
    assert "<h2>Ranks (8)</h2>" in text
    # 8 ranks: one line per rank in both charts
    figures = json.loads(re.search(r'id="report-figures">(.*?)</script>', text, re.S).group(1))
    assert [t["name"] for t in figures[0]["data"]] == [f"rank {r}" for r in range(8)]


HOSTILE = "<script>alert(document.cookie)</script><img src=x onerror=alert(1)>"


def test_every_log_derived_string_is_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "<img src=x onerror=alert(2)>"
    write_run(folder, 4, 20, crashed=[1], noise_per_step=0)
    log = folder / "worker_1.log"
    log.write_text(log.read_text().replace(EXCEPTION, f"RuntimeError: {HOSTILE}"))
    other = folder / "worker_2.log"
    other.write_text(other.read_text() + f"[ERROR] ME(1:1,MainProcess): {HOSTILE}\n")
    out = tmp_path / "run.html"
    assert main(["report", str(folder), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(document.cookie)&lt;/script&gt;" in text  # shown, as text
    assert len(re.findall(r"<script", text)) == 3  # plotly.js, the figures' JSON, the call that draws them
    assert "<img" not in text and "alert(2)" in text  # the folder name too


@given(st.text(max_size=200))
def test_embedded_json_cannot_close_its_script_element(value: str) -> None:
    text = script_json({"name": value, "x": [1, None]})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"name": value, "x": [1, None]}


@pytest.mark.parametrize(
    ("target", "out", "says"),
    [
        ("no-such-run", "{tmp}/r.html", "is neither a run of"),
        ("{tmp}/missing/logs", "{tmp}/r.html", "does not exist"),
        ("{fixture}", "{tmp}/no/such/dir/r.html", "is not a folder"),
        ("{fixture}", "{tmp}", "is a folder: give a file name"),
        ("{fixture}", "/proc/r.html", "cannot write '/proc/r.html'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, target: str, out: str, says: str
) -> None:
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    fill = {"tmp": str(tmp_path), "fixture": str(FIXTURE)}
    assert main(["report", target.format(**fill), "--out", out.format(**fill)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and says in err
    assert not (tmp_path / "r.html").exists()
