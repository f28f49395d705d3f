"""Device memory a MindSpore run reports: parse the statistic lines from a rank's log text (pure).

MindSpore's Ascend memory adapter prints, at INFO level (`GLOG_v=1`) or with `MS_MEMORY_STATISTIC=1`, once a
graph has run (and in DryRun with `MS_SIMULATION_LEVEL`), a block like (MindSpore docs, "dryrun" / memory
analysis pages; the format string is `AscendDynamicMemAdapter::DevMemStatistics`):

    Device MOC memory size: 65536M             (older releases: "Device HBM memory size")
    MindSpore Used memory size: 59392M
    MindSpore memory base address: 0xffffe9dc1407
    Used peak memory usage (without fragments): 23716M
    Actual peak memory usage (with fragments): 26244M

M is MiB (the source divides by kMBToByte = 2^20). The first line usually carries the log prefix
(`[INFO] DEVICE(...) ...`), so a key is searched anywhere in a line; the last report of a log wins.
A peak no device can hold (`999999999999M`: more than 10x the device's size, or than 1 PiB) is flagged,
never shown as a figure (`implausible`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MIB = 1 << 20
GIB = 1 << 30
MAX_PLAUSIBLE_BYTES = 1 << 50  # 1 PiB: no accelerator has a thousandth of it
MAX_DEVICE_RATIO = 10  # a peak this many times the device's own size is a garbled line, not a measure
_KEYS = {
    "Device MOC memory size": "device",
    "Device HBM memory size": "device",
    "MindSpore Used memory size": "mindspore",
    "Used peak memory usage (without fragments)": "peak",
    "Actual peak memory usage (with fragments)": "actual_peak",
}
_LINE = re.compile("(" + "|".join(re.escape(k) for k in _KEYS) + r"):\s*(\d{1,12})M\b")


@dataclass(frozen=True)
class MemoryUse:
    """One rank's reported device memory, in bytes (None: that line was not in the log)."""

    device: int | None = None
    mindspore: int | None = None
    peak: int | None = None
    actual_peak: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return {
            "device_bytes": self.device,
            "mindspore_bytes": self.mindspore,
            "peak_bytes": self.peak,
            "actual_peak_bytes": self.actual_peak,
        }


def implausible(use: MemoryUse) -> str | None:
    """Why a measured peak cannot be real (more than MAX_DEVICE_RATIO x the device's size, or 1 PiB), in
    one line; None when every peak is plausible. Why: a 12-digit `999999999999M` read as-is showed
    976,562,500 GiB in the memory table as if measured."""
    for label, value in (("measured peak", use.peak), ("peak with fragments", use.actual_peak)):
        if value is None:
            continue
        if value > MAX_PLAUSIBLE_BYTES:
            limit = "more than 1 PiB"
        elif use.device and value > MAX_DEVICE_RATIO * use.device:
            limit = f"more than {MAX_DEVICE_RATIO}x the device's {use.device / GIB:,.0f} GiB"
        else:
            continue
        return (
            f"{label} {value / GIB:,.0f} GiB is not plausible: {limit} "
            "(a garbled or misread memory statistic line; not shown as a figure)"
        )
    return None


def parse_memory(lines: Iterable[str]) -> MemoryUse | None:
    """The last reported value of each statistic in `lines`, or None when the log has none of them."""
    found: dict[str, int] = {}
    for line in lines:
        if "memory" not in line:
            continue
        for match in _LINE.finditer(line):
            found[_KEYS[match.group(1)]] = int(match.group(2)) * MIB
    return MemoryUse(**found) if found else None


def memory_report(tails: Mapping[int, Iterable[str]], planned: Mapping[int, int] | None = None) -> dict[str, Any]:
    """`{rank: {"planned": bytes | None, "measured": {...}}}` for every rank whose log reports its memory
    (`diagnose --json`'s `memory`); planned comes from the plan a run was launched from, when known."""
    report: dict[str, Any] = {}
    for rank in sorted(tails):
        use = parse_memory(tails[rank])
        if use is not None:
            report[str(rank)] = {"planned": (planned or {}).get(rank), "measured": use.to_dict()}
            if (why := implausible(use)) is not None:
                report[str(rank)]["implausible"] = why
    return report


def memory_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Monitor's table of `memory_report`: per rank, GiB planned / measured peak / peak with fragments /
    the device's size, and how far the measured peak is from the plan (%; None without a plan); `note`
    says why a rank's peaks are left blank (an implausible figure is never shown as one)."""
    gib = float(GIB)
    rows = []
    for rank, entry in report.items():
        planned, measured = entry["planned"], entry["measured"]
        note = entry.get("implausible", "")
        peak = None if note else measured["peak_bytes"]
        actual = None if note else measured["actual_peak_bytes"]
        rows.append(
            {
                "rank": int(rank),
                "planned GiB": None if planned is None else round(planned / gib, 2),
                "peak GiB": None if peak is None else round(peak / gib, 2),
                "peak with fragments GiB": None if actual is None else round(actual / gib, 2),
                "device GiB": None if measured["device_bytes"] is None else round(measured["device_bytes"] / gib, 2),
                "peak vs plan %": None
                if planned is None or peak is None
                else round(100.0 * (peak - planned) / planned, 1),
                "note": note,
            }
        )
    return sorted(rows, key=lambda r: r["rank"])
