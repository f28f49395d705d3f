"""Monitor page logic through Streamlit's AppTest (the live chart component renders as an unknown element)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from streamlit.testing.v1 import AppTest

from app.monitor import figures as ui
from app.monitor.figure_data import ChartOptions, prepare
from core.logs import read_run
from core.run.registry import runs_root

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "monitor.py")
REAL = Path(__file__).parent / "fixtures" / "real_msrun_logs"


@pytest.fixture(autouse=True)
def _workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(ws))
    monkeypatch.setenv("SHARDSCOPE_RECORDINGS", str(tmp_path / "recordings"))
    return ws


def _run(**params: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def test_no_source_explains_what_to_do() -> None:
    at = _run()
    assert any("Pick what to watch" in i.value for i in at.info)
    assert not at.metric


def test_log_folder_ok_run() -> None:
    at = _run(logdir=str(REAL / "dp8_cpu_ok"))
    assert [m.value for m in at.metric][:3] == ["8", "120", "30"]
    table = at.dataframe[0].value
    assert table["rank"].tolist() == list(range(8))
    assert set(table["state"]) == {ui.STATE_LABELS["finished"]}


def test_log_folder_failed_run_shows_crashes() -> None:
    at = _run(logdir=str(REAL / "semi_auto_on_cpu_error"))
    assert at.metric[3].value == "7"
    table = at.dataframe[0].value.set_index("rank")
    assert table.loc[0, "state"] == ui.STATE_LABELS["crashed"]
    assert "Invalid communication backend" in table.loc[0, "detail"]
    assert any("No loss lines yet" in i.value for i in at.info)
    # the news is that the run died before training, said above the loss-format help
    assert [e.value for e in at.error if "before printing a loss line" in e.value] == [
        "7 of 8 ranks failed before printing a loss line: the failure and its first lines are under **Failures** below."
    ]
    codes = [c.value for c in at.code]
    assert any("RuntimeError: Invalid communication backend" in c for c in codes)


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    at = _run(logdir=str(tmp_path / "nope"))
    assert any("does not exist" in e.value for e in at.error)


@pytest.mark.parametrize("logdir, words", [("/", "filesystem root"), ("x" * 10_000, "too long")])
def test_hostile_logdir_is_a_message_not_a_watch(logdir: str, words: str) -> None:
    """Issue 12 item 5: `?logdir=/` watched the whole filesystem; 10,000 characters raised ENAMETOOLONG."""
    at = _run(logdir=logdir)
    assert not at.exception
    assert any(words in e.value for e in at.error)


def test_empty_folder_waits_for_logs(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    at = _run(logdir=str(tmp_path / "empty"))
    assert any("No rank log read" in i.value and "holds no files yet" in i.value for i in at.info)


def test_folder_with_files_but_no_rank_log_says_why(tmp_path: Path) -> None:
    """Issue 18 item 4: files seen but none taken -> the page names them and why, not only "waiting"."""
    d = tmp_path / "odd"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "train.log").write_text("epoch: 1 step: 1, loss is 2.0\n")
    (d / "sub" / "other.log").write_text("x\n")
    at = _run(logdir=str(d))
    assert not at.exception
    text = " ".join(i.value for i in at.info)
    assert "sub/train.log: no rank number in its path" in text and "2 file(s) seen" in text


def test_last_step_at_scale_is_the_jobs_not_the_rank_that_stopped(tmp_path: Path) -> None:
    """Issue 18 item 6: 40 ranks (the scale view) reach step:[20/20] but rank 7 stops at 12: "Last step" is
    20 (was 12, the median of the unfinished ranks only) and rank 7 is listed as hung, not "loss diverges"."""
    from tests.helpers import mf_run

    mf_run(tmp_path, 40, 20, {7: 12})
    at = _run(logdir=str(tmp_path))
    assert [m.value for m in at.metric][:3] == ["40", "792", "20"]
    look = next(d.value for d in at.dataframe if "what" in d.value.columns).set_index("rank")
    assert look.at[7, "what"] == "hung" and "stopped at step 12 of 20" in look.at[7, "why"]


def test_link_out_of_the_folder_is_not_shown(tmp_path: Path) -> None:
    """Issue 22: worker_0.log -> a file outside the folder is not read nor listed under "Raw log tail"."""
    secret = tmp_path / "secret.txt"
    secret.write_text("root:SECRET-HASH:19000:0:99999:7:::\n")
    d = tmp_path / "logs"
    d.mkdir()
    (d / "worker_0.log").symlink_to(secret)
    (d / "worker_1.log").write_text("epoch: 1 step: 1, loss is 2.0\n")
    at = _run(logdir=str(d))
    assert not at.exception
    assert any("worker_0.log: a link to" in w.value for w in at.warning)
    tails = [s for s in at.selectbox if "worker_1.log" in (s.options or [])]  # the "Raw log tail" file box
    assert tails and all("worker_0.log" not in s.options for s in tails)
    assert "SECRET-HASH" not in " ".join(str(c.value) for c in at.code)
    at.checkbox(key="mon_follow_links").check().run()  # the user asks to follow links: read and listed
    assert not at.exception
    assert any("worker_0.log" in (s.options or []) for s in at.selectbox)
    assert not any("worker_0.log: a link to" in w.value for w in at.warning)


def test_bad_custom_regex_is_reported() -> None:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["logdir"] = str(REAL / "dp8_cpu_ok")
    at.run()
    at.sidebar.text_input(key="mon_regex").input("loss=(\\d+").run()
    assert not at.exception
    assert any("does not compile" in e.value for e in at.sidebar.error)


def test_custom_regex_parses_unusual_lines(tmp_path: Path) -> None:
    run = tmp_path / "custom"
    run.mkdir()
    (run / "worker_0.log").write_text("it 1 l=0.5\nit 2 l=0.25\n")
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["logdir"] = str(run)
    at.run()
    assert at.metric[1].value == "0"
    at.sidebar.text_input(key="mon_regex").input(r"it (?P<step>\d+) l=(?P<loss>\S+)").run()
    assert at.metric[1].value == "2"


def test_shipped_real_recording_is_offered_and_autostarts_from_the_link() -> None:
    at = _run(replay="dp8_cpu_msrun")
    assert at.segmented_control(key="mon_source").value == "Replay recorded run"
    assert at.selectbox(key="mon_rec").value == "dp8_cpu_msrun"
    assert not any("synthetic" in c.value for c in at.caption)
    out = Path(at.session_state["mon_replay_out"])
    assert out.is_dir() and "dp8_cpu_msrun" in out.name
    banner = " ".join(i.value for i in at.info)
    assert "**Replay** of the recorded run `dp8_cpu_msrun` (real 8-worker msrun" in banner
    assert "not a live job" in banner
    at.run()
    assert at.session_state["mon_replay_out"] == str(out), "a rerun must not restart the replay"


def test_replay_of_a_synthetic_recording(tmp_path: Path) -> None:
    from core.logs.live.replay import synthetic_recording

    synthetic_recording(REAL / "dp8_cpu_ok", tmp_path / "recordings" / "dp8-synthetic", seconds_per_line=0.001)
    at = _run()
    at.segmented_control(key="mon_source").set_value("Replay recorded run").run()
    at.selectbox(key="mon_rec").set_value("dp8-synthetic").run()
    assert any("synthetic" in c.value for c in at.caption)
    at.button[0].click().run()
    assert not at.exception
    out = Path(at.session_state["mon_replay_out"])
    assert out.is_dir()


def test_launched_run_from_registry(_workspace: Path) -> None:
    run_dir = runs_root(_workspace) / "r1"
    shutil.copytree(REAL / "semi_auto_on_cpu_error", run_dir / "log_output")
    (run_dir / "launcher.log").write_text(
        (Path(__file__).parent / "fixtures" / "logs" / "msrun_launcher.log").read_text()
    )
    (run_dir / "run.json").write_text(
        json.dumps(
            {
                "run_id": "r1",
                "status": "failed",
                "scenario": "semi_auto",
                "started_at": 1.0,
                "ended_at": 2.0,
                "log_dir": "log_output",
                "launcher": "msrun",
            }
        )
    )
    at = _run(run="r1")
    assert at.selectbox(key="mon_run").value == "r1"
    table = at.dataframe[0].value.set_index("rank")
    assert table.loc[3, "state"] == ui.STATE_LABELS["stopped"]  # the run failed elsewhere
    assert table.loc[1, "state"] == ui.STATE_LABELS["crashed"]


def test_figures_and_csv() -> None:
    snap = read_run(REAL / "dp8_cpu_ok")
    df = prepare(snap.metrics)
    fig, n, note = ui.loss_figure(df, ChartOptions(x_mode="Wall time"))
    assert note and "no timestamps" in note  # read after the fact: falls back to steps
    names = [t.name for t in fig.data]
    assert "mean of ranks" in names and "rank 7" in names and n > 0
    fig2, _, _ = ui.loss_figure(df, ChartOptions(ranks=(1,), show_band=True, log_y=True, ignore_outliers=True))
    assert [t.name for t in fig2.data if t.showlegend is not False] == ["rank 1"]
    assert fig2.layout.yaxis.type == "log" and fig2.layout.yaxis.range is not None
    assert ui.step_time_figure(df, snap.timings, None) is not None
    csv = ui.csv_bytes(snap).decode().splitlines()
    assert len(csv) == 121 and csv[0].startswith("rank,epoch,step,global_step,loss")


def _synth() -> ModuleType:
    """benchmarks/synth_logs.py as a module (benchmarks/ is not a package)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "synth_logs", Path(__file__).resolve().parent.parent / "benchmarks" / "synth_logs.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules["synth_logs"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_big_run_shows_aggregates_the_ranks_to_look_at_and_one_failure_group(tmp_path: Path) -> None:
    """64 ranks: no pill per rank; the straggler, the hung and the crashed rank are listed by name."""
    _synth().write_run(
        tmp_path / "big", 64, 30, straggler=21, hung=32, crashed=[43], noise_per_step=1, steps_per_epoch=10
    )
    at = _run(logdir=str(tmp_path / "big"))
    assert at.metric[0].value == "64"
    assert not at.multiselect  # no 64-entry rank picker
    look = at.dataframe[0].value
    assert look["rank"].tolist()[:3] == [43, 32, 21]
    assert look["what"].tolist()[:3] == ["failed first", "hung", "straggler"]
    strip = " ".join(m.value for m in at.markdown)
    assert "rank **43** failed first" in strip and "hung: 32" in strip and "21 (1.6" in strip
    assert sum("RuntimeError: The pointer[device_address] is null." in c.value for c in at.code) == 1
    assert any("likely root cause" in m.value and "**rank 43**" in m.value for m in at.markdown)
    status = at.dataframe[1].value  # only ranks that are not simply running or finished
    assert 43 in status["rank"].tolist() and "node" in status.columns


def test_big_run_rank_expression(tmp_path: Path) -> None:
    _synth().write_run(tmp_path / "big", 40, 10, straggler=3, noise_per_step=0, steps_per_epoch=5)
    at = _run(logdir=str(tmp_path / "big"))
    at.text_input(key="mon_rank_expr").input("node 2, stragglers").run()
    assert not at.exception and not at.error
    assert at.dataframe[1].value["rank"].tolist() == [3, *range(16, 24)]
    at.text_input(key="mon_rank_expr").input("node 9").run()
    assert any("there are 5 nodes" in e.value for e in at.error)
    at.text_input(key="mon_rank_expr").input("banana").run()
    assert any("'banana' is not a rank" in e.value for e in at.error)


def test_multi_node_run_groups_its_ranks_by_node(_workspace: Path) -> None:
    """A 2 x 4 run (msrun --local_worker_num=4): the Monitor says which node each rank is on."""
    run_dir = runs_root(_workspace) / "mn"
    shutil.copytree(REAL / "dp8_cpu_ok", run_dir / "log_output")
    (run_dir / "run.json").write_text(
        json.dumps(
            {
                "run_id": "mn",
                "status": "succeeded",
                "scenario": "data_parallel",
                "started_at": 1.0,
                "ended_at": 2.0,
                "log_dir": "log_output",
                "launcher": "msrun",
                "device_num": 8,
                "options": {"device_num": 8, "local_worker_num": 4},
            }
        )
    )
    at = _run(run="mn")
    assert not at.exception
    table = at.dataframe[0].value
    assert table.groupby("node")["rank"].apply(sorted).to_dict() == {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}
    assert any("8 ranks on 2 nodes, 4 per node" in c.value for c in at.caption)


def test_a_folder_over_the_watch_cap_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import core.logs.live.watcher as watcher_module

    monkeypatch.setattr(watcher_module, "MAX_WATCHES", 3)  # the real cap is 2,048 folders
    out = tmp_path / "mpirun_out"
    for r in range(4):  # mpirun layout: one folder per rank
        d = out / "1" / f"rank.{r}"
        d.mkdir(parents=True)
        (d / "stdout").write_text("epoch: 1 step: 1, loss is 2.5\n")
    at = _run(logdir=str(out))
    assert any("watched for changes" in w.value for w in at.warning)
    small = tmp_path / "small"
    small.mkdir()
    (small / "worker_0.log").write_text("epoch: 1 step: 1, loss is 2.5\n")
    assert not any("watched for changes" in w.value for w in _run(logdir=str(small)).warning)


def test_small_run_chart_payload_is_bounded(tmp_path: Path) -> None:
    """8 ranks x 5,000 steps of full-repr losses: every trace downsampled and sent as float32."""
    import plotly.io as pio

    for rank in range(8):
        (tmp_path / f"worker_{rank}.log").write_text(
            "".join(
                f"epoch: 1 step: {s}, loss is {2.3139476776123047 / (1 + s / 900) + rank / 97!r}\n"
                for s in range(1, 5001)
            )
        )
    df = prepare(read_run(tmp_path).metrics)
    fig, _, _ = ui.loss_figure(df, ChartOptions())
    assert all(len(t.y) <= 1000 for t in fig.data)
    assert all(t.y.dtype == "float32" for t in fig.data)
    assert len(pio.to_json(fig, validate=False)) < 350_000


def test_live_chart_uses_the_small_plotly_bundle_only_when_versions_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import plotly

    from app.monitor import chart as live_chart

    full = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert live_chart.bundle_version(full) == live_chart.bundle_version(live_chart.CARTESIAN_BUNDLE)
    assert live_chart.plotly_bundle() == live_chart.CARTESIAN_BUNDLE
    other = tmp_path / "plotly-cartesian.min.js"
    other.write_text("/**\n* plotly.js (cartesian - minified) v0.0.1\n*/")
    monkeypatch.setattr(live_chart, "CARTESIAN_BUNDLE", other)  # a plotly upgrade the vendored copy does not match
    assert live_chart.plotly_bundle() == full


FORMATS_DIR = Path(__file__).parent / "fixtures" / "logs" / "formats"


def test_metric_picker_and_evaluation_points() -> None:
    """Issue 18 items 2-3: every metric of the loss lines is offered; evaluation lines are a series drawn
    on request; the CSV carries every metric column."""
    at = _run(logdir=str(FORMATS_DIR / "mindcv"))
    picker = at.selectbox(key="mon_metric")
    assert picker.value == "loss" and {"loss", "lr", "time (step_time_ms)"} <= set(picker.options)
    evals = at.checkbox(key="mon_eval")
    assert evals.label == "Evaluation points (3 lines)" and not evals.value
    picker.set_value("lr").run()
    evals.check().run()
    assert not at.exception
    csv = ui.csv_bytes(read_run(FORMATS_DIR / "mindocr")).decode().splitlines()
    assert "fps_per_card" in csv[0].split(",") and len(csv) == 8


def test_unknown_format_shows_line_shapes(tmp_path: Path) -> None:
    """Issue 18 item 7: no loss row -> the most frequent numeric line shapes and the regex hint."""
    (tmp_path / "worker_0.log").write_text("".join(f"[12:00:{i:02d}] it {i} cost={i / 7:.4f}\n" for i in range(30)))
    at = _run(logdir=str(tmp_path))
    assert any("Custom loss regex" in i.value for i in at.info)
    assert any("30 x [#:#:#] it # cost=#.#" in c.value for c in at.code)


def test_loss_figure_draws_the_picked_metric_and_eval_points() -> None:
    snap = read_run(FORMATS_DIR / "eval_lines")
    df = prepare(snap.metrics)
    fig, _, _ = ui.loss_figure(df, ChartOptions(smoothing=0.0, show_band=False, show_eval=True), [], snap.evals)
    evals = [t for t in fig.data if t.name == "eval loss"]
    losses = snap.evals[snap.evals["name"] == "loss"]["value"].tolist()
    assert len(evals) == 1 and list(evals[0].y) == losses and losses[:2] == [0.529534, 0.334828]
    assert list(evals[0].x) == [900.0, 900.0, 900.0]  # the step of the last training line before each summary
    cv = read_run(FORMATS_DIR / "mindcv")
    fig, _, _ = ui.loss_figure(prepare(cv.metrics), ChartOptions(smoothing=0.0, show_band=False, metric="lr"))
    assert fig.layout.yaxis.title.text == "lr" and list(fig.data[0].y) == cv.metrics["lr"].tolist()


MEMORY_BLOCK = (
    "[INFO] DEVICE(7587,7f5998a3be40,python):2026-11-22-07:09:00.377.254 [ascend_mem.cc:1] x] "
    "Device MOC memory size: 65536M\nMindSpore Used memory size: 59392M\n"
    "Used peak memory usage (without fragments): 23716M\n"
    "Actual peak memory usage (with fragments): 26244M\n"
)


def test_a_run_launched_from_a_yaml_shows_planned_against_measured_memory(_workspace: Path) -> None:
    """Issue 21 item 5: the plan kept in the run's record beside what each rank's log says it used."""
    planned = 30 * (1 << 30)
    run_dir = runs_root(_workspace) / "mf"
    shutil.copytree(REAL / "dp8_cpu_ok", run_dir / "log_output")
    for rank in (0, 5):
        with (run_dir / "log_output" / f"worker_{rank}.log").open("a", encoding="utf-8") as f:
            f.write(MEMORY_BLOCK)
    (run_dir / "run.json").write_text(
        json.dumps(
            {
                "run_id": "mf",
                "status": "succeeded",
                "scenario": "mindformers",
                "started_at": 1.0,
                "ended_at": 2.0,
                "log_dir": "log_output",
                "launcher": "msrun",
                "kind": "own",
                "options": {
                    "plan": {
                        "memory_bytes": planned,
                        "recipe": "dp8 mp1 pp1 os m8×b1",
                        "source": "planned from llama2_7b.yaml (dp8 mp1 pp1 os m8×b1; the busiest pipeline stage)",
                    }
                },
            }
        )
    )
    at = _run(run="mf")
    assert any(m.value == "**Planned:** 30.0 GiB per card" for m in at.markdown)
    assert any(
        c.value == "`planned from llama2_7b.yaml (dp8 mp1 pp1 os m8×b1; the busiest pipeline stage)`"
        for c in at.caption
    )
    at.toggle(key="mon_memory_read").set_value(True).run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "peak vs plan %" in d.value.columns).set_index("rank")
    assert list(table.index) == [0, 5]
    assert table.loc[5, "planned GiB"] == 30.0 and table.loc[5, "peak GiB"] == round(23716 / 1024, 2)
    assert table.loc[0, "peak vs plan %"] == round(100 * (23716 * (1 << 20) - planned) / planned, 1)


def test_a_folder_without_a_plan_or_memory_lines_says_so() -> None:
    at = _run(logdir=str(REAL / "dp8_cpu_ok"))
    assert any(c.value.startswith("No plan for this run") for c in at.caption)
    at.toggle(key="mon_memory_read").set_value(True).run()
    assert any("No rank's log has them yet" in i.value and "GLOG_v=1" in i.value for i in at.info)


def test_a_compared_run_whose_folder_cannot_be_watched_is_said_not_drawn(_workspace: Path, tmp_path: Path) -> None:
    """The "Compare with runs" choices come from run records: a record's log_dir gets the checks of a
    folder the user picks (here it names a regular file), one warning, and the page still draws."""
    not_a_folder = tmp_path / "gone"
    not_a_folder.write_text("a file now, not the run's log folder\n")
    run_dir = runs_root(_workspace) / "other"
    run_dir.mkdir(parents=True)
    record = {"run_id": "other", "status": "succeeded", "started_at": 1.0, "ended_at": 2.0}
    record |= {"log_dir": str(not_a_folder), "kind": "external", "launcher": "msrun"}
    (run_dir / "run.json").write_text(json.dumps(record))
    at = _run(logdir=str(REAL / "dp8_cpu_ok"))
    at.multiselect(key="mon_compare").select("other").run()
    assert not at.exception, at.exception
    assert any("run other is not compared" in w.value and "not a folder" in w.value for w in at.warning)
    assert at.dataframe[0].value["rank"].tolist() == list(range(8))


def test_share_buttons_make_the_report_and_the_tensorboard_zip() -> None:
    """Issue 34 items 4-5: the Monitor offers the report and the TensorBoard export as downloads."""
    import io
    import zipfile

    from app.monitor import share as monitor_share
    from core.report.source import source_of_folder
    from core.workspace import default_workspace

    at = _run(logdir=str(REAL / "dp8_cpu_ok"))
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download report (HTML)" in labels and "Download for TensorBoard (zip)" in labels
    snap = read_run(REAL / "dp8_cpu_ok")
    page = monitor_share.report_html(snap, source_of_folder(REAL / "dp8_cpu_ok", default_workspace()))
    assert page.startswith("<!DOCTYPE html>") and "<h2>Ranks (8)</h2>" in page
    names = zipfile.ZipFile(io.BytesIO(monitor_share.tensorboard_zip(snap))).namelist()
    assert sorted({n.split("/")[0] for n in names}) == [f"rank_{r:04d}" for r in range(8)]
