"""Plan vs run: MindSpore's device-memory statistic lines, parsed per rank and reported by `diagnose --json`."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.cli import diagnose as cli_diagnose
from core.logs.memory import MIB, MemoryUse, memory_report, parse_memory

REAL = Path(__file__).parent / "fixtures" / "real_msrun_logs" / "dp8_cpu_ok"
# The block as MindSpore's docs print it (docs "Simulated compilation" / dryrun page, MS_SIMULATION_LEVEL=1,
# GLOG_v=1). The first line's prefix is illustrative, in the format of the real INFO/WARNING lines of
# tests/fixtures/real_msrun_logs (level, module(pid,thread,process):time [file:line] function]).
PREFIX = "[INFO] DEVICE(7587,7f5998a3be40,python):2026-11-22-07:09:00.377.254 [ascend_dynamic_mem_adapter.cc:1] x] "
BLOCK = PREFIX + """Device MOC memory size: 65536M
MindSpore Used memory size: 59392M
MindSpore memory base address: 0xffffe9dc1407
Used peak memory usage (without fragments): 23716M
Actual peak memory usage (with fragments): 26244M
"""


def test_the_documented_block_parses_in_bytes() -> None:
    use = parse_memory(BLOCK.splitlines())
    assert use == MemoryUse(65536 * MIB, 59392 * MIB, 23716 * MIB, 26244 * MIB)


def test_the_older_hbm_spelling_and_the_last_report_wins() -> None:
    lines = ["Device HBM memory size: 62432M", "Used peak memory usage (without fragments): 100M",
             "Used peak memory usage (without fragments): 48874M"]
    use = parse_memory(lines)
    assert use is not None and use.device == 62432 * MIB and use.peak == 48874 * MIB and use.actual_peak is None


def test_a_log_without_the_lines_says_none() -> None:
    assert parse_memory(["epoch: 1 step: 1, loss is 2.3", "memory is fine"]) is None
    assert memory_report({0: ["nothing"], 1: BLOCK.splitlines()}) == {
        "1": {"planned": None, "measured": MemoryUse(65536 * MIB, 59392 * MIB, 23716 * MIB, 26244 * MIB).to_dict()}}


@given(st.lists(st.text(max_size=80), max_size=20))
def test_any_text_parses_or_gives_none(lines: list[str]) -> None:
    use = parse_memory(lines)
    assert use is None or all(v is None or v % MIB == 0 for v in use.to_dict().values())


def test_diagnose_json_has_measured_memory_per_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "log_output"
    shutil.copytree(REAL, run)
    with (run / "worker_3.log").open("a", encoding="utf-8") as f:
        f.write(BLOCK)
    parser = argparse.ArgumentParser()
    cli_diagnose.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["diagnose", str(run), "--json"])
    args.func(args)
    out = json.loads(capsys.readouterr().out)
    assert out["memory"] == {"3": {"planned": None, "measured": {
        "device_bytes": 65536 * MIB, "mindspore_bytes": 59392 * MIB, "peak_bytes": 23716 * MIB,
        "actual_peak_bytes": 26244 * MIB}}}
