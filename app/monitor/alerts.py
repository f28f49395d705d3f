"""The Monitor's alerts (issue 34): the delivery attempts of the run's alert watch (its `alerts.jsonl`), and a
browser notification from the open tab when the page judges a new failure of the watched run."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st
import streamlit.components.v1 as components

from app.monitor import state
from core.alerts.rules import run_outcome
from core.cli.watch import alert_record_path
from core.logs import RunSnapshot
from core.logs.judgement.diagnose import Diagnosis
from core.run.states import RunStatus
from core.run.supervisor import ALERT_LOG
from core.workspace import default_workspace

ATTEMPT_COLUMNS = ["time", "rule", "target", "outcome", "tries", "detail"]
MAX_TAIL = 256 << 10  # bytes of alerts.jsonl read (it is bounded to 512 KiB): the newest attempts
MAX_SHOWN = 200  # attempts listed, newest first
LIVE_S = 600.0  # a run whose newest line is older than this at first look is not live: its failure is old news
FINAL = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.STOPPED})  # a run over: its failure is old news


@dataclass(frozen=True)
class Notice:
    """One browser notification: its key (once per key per session), title and body."""

    key: str
    title: str
    body: str


def read_attempts(path: Path, limit: int = MAX_SHOWN) -> pd.DataFrame:
    """The newest delivery attempts recorded in `path` (newest first); lines that are not an attempt are
    skipped (a line cut by a full disk, or a forged one). The targets were masked when recorded."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - MAX_TAIL))
            data = f.read(MAX_TAIL)
    except OSError:
        return pd.DataFrame(columns=ATTEMPT_COLUMNS)
    lines = data.decode("utf-8", "replace").splitlines()[1 if size > MAX_TAIL else 0 :]
    rows = []
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("time"), int | float):
            continue
        rows.append(
            {
                "time": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry["time"])),
                "rule": str(entry.get("rule", ""))[:40],
                "target": str(entry.get("target", ""))[:120],
                "outcome": str(entry.get("outcome", ""))[:20],
                "tries": entry.get("attempt") if isinstance(entry.get("attempt"), int) else None,
                "detail": str(entry.get("detail", ""))[:200],
            }
        )
        if len(rows) >= limit:
            break
    return pd.DataFrame(rows, columns=ATTEMPT_COLUMNS)


def failure_notices(diag: Diagnosis, snap: RunSnapshot, label: str, run_status: RunStatus | None) -> list[Notice]:
    """What the page judges a failure now: a rank failed (the first one, as the diagnosis says), a hang, the
    run ended failed."""
    out = []
    first = diag.root_cause
    if first is not None:
        group = next((g for g in diag.failure_groups if g.first_rank == first), None)
        why = f" ({group.exception[:120]})" if group is not None else ""
        n = len({r for g in diag.failure_groups for r in g.ranks})
        out.append(
            Notice(
                "rank_failed",
                f"ShardScope: rank {first} failed",
                f"{label}: rank {first} failed first{why}; {n} rank(s) failed",
            )
        )
    if diag.hung:
        ranks = ", ".join(str(h.rank) for h in diag.hung[:8])
        out.append(Notice("hang", f"ShardScope: {label} hangs", f"{label}: no new line from rank(s) {ranks}"))
    if run_status == RunStatus.FAILED or (run_status is None and run_outcome(snap) == "failed"):
        out.append(Notice("run_failed", f"ShardScope: {label} failed", f"{label}: the run ended failed"))
    return out


def notify_script(notices: list[Notice], scope: str) -> str:
    """A tiny page that asks the browser for permission once and shows each notice not shown yet in this tab
    (sessionStorage: a re-rendered frame shows nothing twice). The texts go in as JSON, never as markup."""
    data = json.dumps([{"key": f"{scope}|{n.key}", "title": n.title, "body": n.body} for n in notices])
    data = data.replace("<", "\\u003c")  # no "</script>" can close the script early
    return (
        "<script>(function(){const notes=" + data + ";"
        "let N=window.Notification;try{N=window.parent.Notification||N}catch(e){}"
        "if(!N)return;let seen={};try{seen=JSON.parse(sessionStorage.getItem('shardscope_notified')||'{}')}catch(e){}"
        "const show=()=>{for(const n of notes){if(seen[n.key])continue;seen[n.key]=1;"
        "new N(n.title,{body:n.body,tag:n.key});}"
        "try{sessionStorage.setItem('shardscope_notified',JSON.stringify(seen))}catch(e){}};"
        "if(N.permission==='granted')show();"
        "else if(N.permission!=='denied')N.requestPermission().then(p=>{if(p==='granted')show()});"
        "})();</script>"
    )


def _live(snap: RunSnapshot) -> bool:
    if snap.ranks.empty:
        return False
    newest = snap.ranks["last_activity"].max()
    return newest == newest and time.time() - float(newest) <= LIVE_S


def watch_failed(log: Path) -> None:
    """A launched run's alert watch that could not start (a bad alerts.json): its one line, on the page."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - 4096))
            last = f.read().decode("utf-8", "replace").strip().splitlines()[-1:]
    except OSError:
        return
    if last and last[0].startswith("error: "):
        st.warning(f"This run's alert watch stopped, so it sends no alert: {last[0][7:][:300]}")


def alerts_panel(
    source_dir: Path, label: str, run_status: RunStatus | None, diag: Diagnosis, snap: RunSnapshot
) -> None:
    """Browser notifications for the failures judged since the page first looked at a live run (once per key
    per session), then the delivery attempts of the run's alert watch (`watch --alert` or the supervisor's)."""
    scope = str(source_dir)
    seen_of = st.session_state.setdefault(state.ALERT_KEYS, {})
    shown: dict[str, Notice] = st.session_state.setdefault(state.ALERT_NOTICES, {}).setdefault(scope, {})
    notices = failure_notices(diag, snap, label, run_status)
    if scope not in seen_of:  # first look: a run already over, or quiet for long, brings no news
        old = run_status in FINAL or not _live(snap)
        seen_of[scope] = {n.key for n in notices} if old else set()
    for n in notices:
        if n.key not in seen_of[scope]:
            seen_of[scope].add(n.key)
            shown[n.key] = n
    if shown:
        components.html(notify_script(list(shown.values()), scope), height=0)
    watch_failed(source_dir.parent / ALERT_LOG)
    path = alert_record_path(source_dir, default_workspace())
    if not path.is_file():
        return
    attempts = read_attempts(path)
    failed = int(attempts["outcome"].isin(["failed", "dropped", "rate_limited"]).sum())
    with st.expander(f"Alerts: {len(attempts)} delivery attempt(s), {failed} not delivered", expanded=failed > 0):
        st.caption(f"Recorded by the run's alert watch in `{path}` (newest first; webhook tokens are not recorded).")
        st.dataframe(attempts, hide_index=True, width="stretch", height=min(38 + 35 * max(len(attempts), 1), 320))
