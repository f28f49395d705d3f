"""A run's report from its logs and record: read, diagnose, compute, render (the CLI and the Monitor share it)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from core.errors import UserError
from core.files import read_checked, write_replacing
from core.logs import RunSnapshot
from core.logs.judgement.diagnose import diagnose
from core.report.data import build_report
from core.report.html import render_html
from core.report.source import ReportSource
from core.run.record_types import options_to_json
from core.run.registry import RunRecord
from core.workspace import REPO_ROOT, short

CARTESIAN_BUNDLE = (
    REPO_ROOT / "app" / "monitor" / "chart_assets" / "plotly-cartesian.min.js"
)  # npm plotly.js-cartesian-dist-min
_VERSION = re.compile(r"plotly\.js (?:\([^)]*\) )?v(\d+\.\d+\.\d+)")

__all__ = ["ReportWriteError", "check_out_file", "plotly_js", "record_facts", "report_html", "write_text_file"]


class ReportWriteError(UserError):
    """The report (or export) cannot be written where asked; one line naming the path."""


def record_facts(record: RunRecord | None) -> list[tuple[str, str]]:
    """The run record's facts a reader of the report needs (what ran, how, how it ended)."""
    if record is None:
        return []
    when = lambda t: "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + " UTC"  # noqa: E731
    facts = [
        ("run", record.run_id),
        ("status", str(record.status)),
        ("kind", str(record.kind)),
        ("scenario", record.scenario),
        ("design", record.design),
        ("launcher", record.launcher),
        ("device", f"{record.device_target} x {record.device_num}"),
        ("command", " ".join(record.command or record.argv)),
        ("started", when(record.started_at)),
        ("ended", when(record.ended_at)),
        ("exit code", "-" if record.exit_code is None else str(record.exit_code)),
        ("message", record.message),
    ]
    return [(k, v) for k, v in facts if v]


def plotly_js() -> str:
    """plotly.js to inline once: the cartesian bundle the Monitor's live chart ships (app/monitor/chart_assets, 1.5 MB:
    scatter is all a report draws) when it is the same plotly.js version as the installed plotly's full
    bundle (4.8 MB), so the figures' JSON always matches; else that full bundle. A 1,024-rank report is
    then ~1.6 MB instead of ~4.9 MB (both within the 5 MB bound)."""
    from plotly.offline import get_plotlyjs

    full = get_plotlyjs()
    try:
        small = read_checked(CARTESIAN_BUNDLE, 8 << 20, "plotly bundle").decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return full
    same = _version(small) is not None and _version(small) == _version(full)
    return small if same else full


def _version(js: str) -> str | None:
    m = _VERSION.search(js[:512])
    return m.group(1) if m else None


def report_html(snap: RunSnapshot, source: ReportSource, now: float | None = None) -> str:
    """The whole self-contained page of `snap` (a read of `source.log_dir`)."""
    now = time.time() if now is None else now
    diag = diagnose(snap)
    record = source.record
    title = f"Run {record.run_id}" if record else f"Run logs: {source.log_dir.name}"
    data = build_report(
        snap,
        diag,
        title=title,
        facts=record_facts(record),
        options=options_to_json(record.options, record.own, None) if record else {},  # the plan has its own part
        plan=source.plan,
        run_status=source.run_status,
        now=now,
    )
    return render_html(data, plotly_js())


def check_out_file(out: Path | str) -> Path:
    """`out` if a file can be written there (checked before minutes of reading 1,024 logs), else a
    ReportWriteError naming it: a folder, a missing parent folder, a parent without write permission."""
    out = Path(out)
    if out.is_dir():
        raise ReportWriteError(f"{short(str(out))} is a folder: give a file name such as run.html")
    if not out.parent.is_dir():
        raise ReportWriteError(f"cannot write {short(str(out))}: {short(str(out.parent))} is not a folder")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise ReportWriteError(f"cannot write {short(str(out))}: no write permission in {short(str(out.parent))}")
    return out


def write_text_file(out: Path, text: str) -> int:
    """Write `text` to `out` through a temp file and a rename (never half a file); bytes written.
    A folder, a missing parent or no permission is a ReportWriteError naming `out`."""
    out = check_out_file(out)
    data = text.encode("utf-8")
    try:
        write_replacing(out, data)
    except OSError as exc:
        raise ReportWriteError(f"cannot write {short(str(out))}: {exc.strerror or exc}") from None
    return len(data)
