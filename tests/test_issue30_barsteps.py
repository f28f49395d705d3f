"""Round 11's build set, progress-bar rows (issue 30 item 6): the rules their misreadings asked for, on their real
lines, through every read path (tests/helpers.READ_PATHS) and a live tick cut anywhere.

- trlx#319 (https://github.com/CarperAI/trlx/issues/319): the PPO bar's steps 77 to 79 draw equal losses (skipped
  steps over one rollout batch), each after DeepSpeed's per-step `OVERFLOW!` message: a draw after another line is
  a step of its own, a draw on the very next line the last state drawn again (core.logs.rows.redraws).
- AMMR's UTF-16 PowerShell capture (https://github.com/ML-Research-Implementation/Adaptive-Memory-Framework-/blob/
  7e56a494862033c30c21e98e3a2f46eb189ac4eb/train_output.log): `Training:   4%|` is no `training` metric (its
  percentage made every redraw a row of its own), the `Loss=` postfix set every 10 steps is one row per draw of
  it, and tqdm's `close()` drawing 250/250 again with the whole run's rate is no row.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs import ReaderSettings, read_run
from tests.helpers import READ_PATHS, cut_tick_and_once, same_reading

# trlx#319's excerpt, its lines 4-13 as the issue pastes them (the OVERFLOW record wrapped at 120 columns)
_TRLX_BAR = "[losses/total_loss: {} | losses/policy_loss: {} | losses/value_loss: {}]:   2%|  | {}"
_TRLX_OVERFLOW = (
    "[2023-02-21 22:13:4{}] [INFO] [stage_1_and_2.py:1762:step] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
    "Attempted loss sc\nale: {}, reducing to {}"
)
TRLX = [
    _TRLX_BAR.format("0.22", "0.13", "0.42", "76/3200 [14:53<7:36:46,  8.77s/it]"),
    _TRLX_OVERFLOW.format("3,188", "2048.0", "1024.0"),
    _TRLX_BAR.format("0.80", "0.73", "0.34", "77/3200 [14:54<5:44:06,  6.61s/it]"),
    _TRLX_OVERFLOW.format("4,752", "1024.0", "512.0"),
    _TRLX_BAR.format("0.80", "0.73", "0.34", "78/3200 [14:56<4:25:12,  5.10s/it]"),
    _TRLX_OVERFLOW.format("6,317", "512.0", "256.0"),
    _TRLX_BAR.format("0.80", "0.73", "0.34", "79/3200 [14:57<3:30:00,  4.04s/it]"),
]

# AMMR's train_output.log (UTF-16LE with a BOM, CRLF): lines 27-31, 38-41, 82-86, 90 and 93 of the kept excerpt
_AMMR_BAR = "Training: {:>3}%|{}| {}/250 [{}<{},  {}s/it{}]"
_AMMR_POSTFIX = ", Loss={}, QA={}, Budg={}, Entr={}"
_A = _AMMR_POSTFIX.format("10003.225", "10003.184", "0.000", "4.139")
_B = _AMMR_POSTFIX.format("7503.131", "7503.091", "0.000", "4.049")
_C = _AMMR_POSTFIX.format("7500.141", "7500.107", "0.000", "3.415")
_D = _AMMR_POSTFIX.format("9998.851", "9998.611", "0.411", "3.416")
AMMR = [
    _AMMR_BAR.format(4, "3         ", 9, "00:10", "04:52", "1.21", ""),
    _AMMR_BAR.format(4, "3         ", 9, "00:12", "04:52", "1.21", _A),
    _AMMR_BAR.format(4, "4         ", 10, "00:12", "04:53", "1.22", _A),
    _AMMR_BAR.format(4, "4         ", 11, "00:13", "05:01", "1.26", _A),
    _AMMR_BAR.format(5, "4         ", 12, "00:14", "05:03", "1.27", _A),
    _AMMR_BAR.format(8, "7         ", 19, "00:24", "05:14", "1.36", _A),
    _AMMR_BAR.format(8, "7         ", 19, "00:25", "05:14", "1.36", _B) + "  ",
    _AMMR_BAR.format(8, "8         ", 20, "00:25", "05:23", "1.41", _B),
    _AMMR_BAR.format(8, "8         ", 21, "00:27", "05:24", "1.42", _B),
    _AMMR_BAR.format(100, "#########9", 249, "06:08", "00:01", "1.57", _C),
    _AMMR_BAR.format(100, "#########9", 249, "06:10", "00:01", "1.57", _D),
    _AMMR_BAR.format(100, "##########", 250, "06:10", "00:00", "1.57", _D),
    _AMMR_BAR.format(100, "##########", 250, "06:10", "00:00", "1.48", _D),
    "Traceback (most recent call last):",
    '  File "D:\\Adaptive-Memory-Framework-\\train_squad.py", line 77, in train',
    "TypeError: save_checkpoint() got an unexpected keyword argument 'filename'",
]


def _trlx_bytes(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def _ammr_bytes(lines: list[str]) -> bytes:
    return ("\r\n".join(lines) + "\r\n").encode("utf-16")  # a BOM, then UTF-16LE, as PowerShell's `>` writes


def _read(tmp_path: Path, name: str, data: bytes, how: ReaderSettings) -> tuple[list[float], list[str]]:
    """The losses of `data` as a run's one log `name` read on the path `how`, and its metric columns."""
    folder = tmp_path / "log"
    folder.mkdir()
    (folder / name).write_bytes(data)
    m = read_run(folder, settings=how).metrics
    return m["loss"].tolist(), list(m.columns)


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_equal_values_drawn_after_another_line_are_a_step_of_their_own(tmp_path: Path, path: str) -> None:
    losses, _ = _read(tmp_path, "output.log", _trlx_bytes(TRLX), READ_PATHS[path])
    assert losses == pytest.approx([0.22, 0.80, 0.80, 0.80]), path


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_equal_values_drawn_on_the_next_line_at_a_moved_counter_are_a_redraw(tmp_path: Path, path: str) -> None:
    """The counterpart: the same bar lines with nothing between them are one state drawn as the bar moves."""
    bars = [line for line in TRLX if "OVERFLOW" not in line]
    losses, _ = _read(tmp_path, "output.log", _trlx_bytes(bars), READ_PATHS[path])
    assert losses == pytest.approx([0.22, 0.80]), path


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_postfix_set_every_n_steps_is_one_row_per_draw_of_it(tmp_path: Path, path: str) -> None:
    losses, columns = _read(tmp_path, "train_output.log", _ammr_bytes(AMMR), READ_PATHS[path])
    assert losses == pytest.approx([10003.225, 7503.131, 7500.141, 9998.851]), path
    assert "training" not in columns and {"qa", "budg", "entr"} <= set(columns), columns


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_tqdm_close_drawing_the_last_state_again_with_another_rate_is_no_row(tmp_path: Path, path: str) -> None:
    """The close draw (same counter and time, the whole run's rate) after the last state; the same line printed
    twice unchanged stays two rows (nothing was redrawn: tests/test_issue30_newlogs)."""
    lines = AMMR[10:13]
    assert lines[1][:40] == lines[2][:40] and lines[1] != lines[2]
    losses, _ = _read(tmp_path, "train_output.log", _ammr_bytes(lines), READ_PATHS[path])
    assert losses == pytest.approx([9998.851]), path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(["trlx", "ammr"]), at=st.floats(0.0, 1.0))
def test_bar_steps_read_alike_live_cut_anywhere(
    tmp_path_factory: pytest.TempPathFactory, which: str, at: float
) -> None:
    """A live tick cut at any byte (between a draw and the line after it too) reads what one read does."""
    name, data = ("output.log", _trlx_bytes(TRLX)) if which == "trlx" else ("train_output.log", _ammr_bytes(AMMR))
    live, once = cut_tick_and_once(tmp_path_factory.mktemp("cut"), name, data, int(at * len(data)))
    same_reading(live, once)
    assert len(once.metrics) == 4
