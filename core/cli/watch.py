"""`python -m core watch LOG_DIR [--polling] [--once] [--alert TARGET ...]`: follow per-rank losses and failures
in a terminal, and send alerts (core.alerts) while it runs."""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pandas as pd

from core.alerts import Alert, Alerter, Dispatcher
from core.alerts.channels import Target, parse_smtp, parse_target
from core.alerts.delivery import DeliveryPolicy
from core.alerts.settings import load as load_alert_settings
from core.alerts.settings import rule_settings
from core.cli.common import fail, launcher_notes, terminal_safe
from core.errors import UserError
from core.logs import LogFormatError, RunSnapshot, RunWatcher, rank_status, read_run
from core.logs.bytes.discover import LogRole, folder_notes
from core.logs.bytes.guard import LogDirError, validate_log_dir
from core.logs.judgement.status import failed_ranks, hidden_nans, loss_text
from core.logs.judgement.streams import shared_streams
from core.logs.judgement.victims import stopped_ranks
from core.logs.rows.cells import as_int
from core.logs.rows.filestate import JOB_RANK, NOTE_KINDS, note_lines
from core.logs.rows.shapes import line_shapes, metric_labels
from core.run.registry import RUN_FILE, launcher_outputs, read_record
from core.workspace import default_workspace

ALERT_EVERY_S = 1.0  # alert rules judged at most this often (a diagnosis of 1,024 ranks is not free)
MAX_ROWS_PER_UPDATE = 200  # loss rows printed one by one per update; more: the last row of each rank
DRAIN_S = 4.0  # on SIGTERM: what is queued gets this long to be delivered (the supervisor waits for it)
CATCH_UP_S = 2.0  # on SIGTERM: at most this long to read the last lines before the last judgment


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `watch` subcommand."""
    p = sub.add_parser(
        "watch",
        help="follow a run's per-rank logs (loss, stalls, crashes)",
        description="Print new loss rows as they arrive and a per-rank status table.",
    )
    p.add_argument("log_dir", type=str, help="msrun --log_dir, mpirun output folder or rank-table run folder")
    p.add_argument("--polling", action="store_true", help="poll instead of inotify (NFS/shared filesystems)")
    p.add_argument(
        "--once",
        action="store_true",
        help="print a summary and exit (exit code 1 if a rank crashed or no loss row was read)",
    )
    p.add_argument("--loss-regex", default=None, help="custom regex with a named group `loss` (and step, epoch)")
    p.add_argument("--stall-after", type=float, default=60.0, help="seconds without a new line = stalled")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between status tables")
    add_alert_options(p)
    p.add_argument(
        "--follow-links",
        action="store_true",
        help="also read logs that are links to files outside LOG_DIR (refused by default)",
    )
    p.set_defaults(func=handle)


def add_alert_options(p: argparse.ArgumentParser) -> None:
    """The --alert options of `watch` (issue 34): targets, their format, SMTP server and rule thresholds."""
    p.add_argument(
        "--alert",
        action="append",
        default=[],
        metavar="TARGET",
        help="send alerts to an http(s):// URL, mailto:ADDR or exec:PATH (the alert JSON on its stdin); repeatable",
    )
    p.add_argument(
        "--alert-format",
        default="json",
        choices=["json", "slack", "feishu", "dingtalk", "wecom"],
        help="body of the webhook targets (signing secrets: the workspace's alerts.json)",
    )
    p.add_argument("--smtp", default=None, metavar="HOST:PORT", help="SMTP server of mailto: targets")
    p.add_argument("--hang-after", type=float, default=None, help="seconds without a new line = hang alert")
    p.add_argument("--alert-log", default=None, help="where delivery attempts are recorded (JSON lines)")
    p.add_argument("--workspace", default=None, help="the workspace whose alerts.json is used (default: the usual)")
    p.add_argument(
        "--alert-targets-of-workspace",
        action="store_true",
        help="also send to the standing targets of alerts.json (how a launched run's supervisor starts its watch)",
    )
    p.add_argument("--alert-run", default=None, metavar="RUN_ID", help="the run named in the alerts")
    p.add_argument(
        "--with-parent",
        type=int,
        default=None,
        metavar="PID",
        help="end (after a last judgment) when this watch's parent, PID, is gone (a run's supervisor)",
    )
    p.add_argument("--quiet", action="store_true", help="print alerts and notes only, no loss rows or tables")


def alert_record_path(log_dir: Path, workspace: Path) -> Path:
    """`alerts.jsonl` next to the run's record when the folder is a launched run's, else in the workspace's
    `alerts/` folder under the folder's name and a hash of its path (the watched folder may be read-only)."""
    if (log_dir.parent / RUN_FILE).is_file():
        return log_dir.parent / "alerts.jsonl"
    digest = hashlib.sha256(str(log_dir).encode()).hexdigest()[:12]
    return workspace / "alerts" / f"{log_dir.name or 'root'}-{digest}.jsonl"


def alert_setup(args: argparse.Namespace, log_dir: Path) -> tuple[Alerter, Dispatcher] | None:
    """The rules and the dispatcher of `watch --alert` (None without --alert); a bad target, SMTP server or
    alerts.json is one UserError line."""
    if not args.alert and not args.alert_targets_of_workspace:
        return None
    workspace = Path(args.workspace) if args.workspace else default_workspace()
    saved = load_alert_settings(workspace)
    launched = (log_dir.parent / RUN_FILE).is_file()
    run = log_dir.parent.name if launched else (log_dir.name or str(log_dir))  # a launched run: its run id
    run = args.alert_run or run
    rules = saved.rules_for(run)
    if args.hang_after is not None:
        rules = rule_settings({"hang_s": args.hang_after}, rules, "--hang-after")
    smtp = parse_smtp(args.smtp) if args.smtp else saved.smtp
    if smtp is not None and args.smtp and saved.smtp is not None and saved.smtp.host == smtp.host:
        smtp = replace(saved.smtp, port=smtp.port)  # the workspace's login for that host
    targets: list[Target] = [parse_target(t, args.alert_format, saved.secrets.get(t), smtp) for t in args.alert]
    if args.alert_targets_of_workspace:
        targets += saved.targets
    if not targets:  # only the workspace's targets were asked for, and it names none
        print(terminal_safe(f"{workspace / 'alerts.json'} names no targets: this run sends no alert"), flush=True)
        return None
    record = Path(args.alert_log) if args.alert_log else alert_record_path(log_dir, workspace)
    for t in targets:
        print(terminal_safe(f"alerts to {t.describe()}"), flush=True)
    print(terminal_safe(f"alert attempts recorded in {record}"), flush=True)
    return Alerter(run, rules), Dispatcher(targets, record, DeliveryPolicy())


def _fmt(v: float, spec: str = ".4g") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, spec)


def _fmt_loss(v: float) -> str:
    """A loss as the row stream prints it: a NaN or infinite loss is said (`nan`, `inf`), never `-`:
    it is the divergence a user scans the rows for."""
    if v is None:
        return "-"
    return format(v, ".6g")


def status_table(snap: RunSnapshot, stall_after_s: float = 60.0) -> str:
    """Plain-text per-rank table: rank, state, last epoch/step, last loss, age of last line, detail; then
    the files that were found but not read. No rank log, no table: a header over nothing reads as a broken
    table (the summary and the folder notes say what the folder holds)."""
    st = rank_status(snap, stall_after_s=stall_after_s)
    if st.empty:
        return "\n".join(skipped_lines(snap))
    lines = [f"{'rank':>4}  {'state':<9} {'epoch':>5} {'step':>7} {'loss':>10} {'age':>7}  detail"]
    for _, r in st.iterrows():
        age = r["age_s"]
        lines.append(
            f"{int(r['rank']):>4}  {r['state']:<9} {_fmt(r['last_epoch'], '.0f'):>5} {_fmt(r['last_step'], '.0f'):>7}"
            f" {loss_text(r['last_loss'], r['n_loss']):>10} {_fmt(age, '.0f') + 's' if age == age else '-':>7}"
            f"  {terminal_safe(r['detail'])[:80]}"
        )
    return "\n".join([*lines, *skipped_lines(snap)])


def skipped_lines(snap: RunSnapshot, limit: int = 20) -> list[str]:
    """One line per log file found but not read (a FIFO, a folder, permission denied): never silent;
    past `limit` files, how many more."""
    items = sorted(snap.skipped.items())
    lines = [f"skipped {terminal_safe(rel)}: {why}" for rel, why in items[:limit]]
    return lines + ([f"skipped {len(items) - limit:,} more files"] if len(items) > limit else [])


def summary(snap: RunSnapshot, stall_after_s: float = 60.0) -> str:
    """What `--once` prints: layout, rank count, loss rows, status table and fatal errors."""
    lines = snap.evals.drop_duplicates(["file", "offset"])  # one line gives one entry per scalar
    n_summary = int(lines["summary"].sum()) if not lines.empty else 0
    head = f"loss rows={len(snap.metrics)}, eval rows={len(lines) - n_summary}"
    out = [
        f"{snap.log_dir}: layout={snap.layout}, ranks={snap.n_ranks}, {head}"
        + (f", summary rows={n_summary}" if n_summary else "")
    ]
    labels = metric_labels(snap.metric_keys)
    if labels:
        out.append("metrics: " + ", ".join(terminal_safe(x) for x in labels))
    if snap.hosts:  # a pdsh stream: rows that name their host only, one series per host
        out.append(
            "hosts (no rank on their lines): " + ", ".join(f"{n} = {terminal_safe(h)}" for n, h in snap.hosts.items())
        )
    if snap.metrics.empty and snap.n_ranks:
        out.append(no_rows_help(snap))
    out += [terminal_safe(shared.message()) for shared in shared_streams(snap.metrics)]  # ranks untold apart
    table = status_table(snap, stall_after_s)
    if table:
        out.append(table)
    out.append(failed_line(snap))
    errs = snap.errors
    hidden = hidden_nans(snap)  # a NaN behind another failure (a traceback after it) is said too
    if not errs.empty or hidden:
        out.append("errors:")
        for _, e in errs.iterrows():
            # whose error: a rank's, the job's (a launcher's own traceback: `diagnose` lists it as `job:`), or unknown
            whose = "rank ?" if pd.isna(e["rank"]) else "job" if e["rank"] == JOB_RANK else f"rank {int(e['rank'])}"
            out.append(
                f"  [{e['kind']}] {whose} {terminal_safe(e['file'])}:{e['line']}: {terminal_safe(e['message'])[:160]}"
            )
        out += [f"  [nan] rank {nan.rank}: {nan.message()}" for nan in hidden]
    return "\n".join(out)


def failed_line(snap: RunSnapshot) -> str:
    """The run's verdict in one line, the judgement `diagnose` and the Monitor make too
    (core.logs.judgement.status.failed_ranks): `failed ranks: 3, 4 (rank 3: <why>)` or `failed ranks: none`; the
    rank named is the lowest that failed of its own, not one only stopped from outside (core.logs.judgement.victims)."""
    failed = failed_ranks(snap)
    if not failed:
        return "failed ranks: none"
    stopped = stopped_ranks(snap.errors)  # a launcher's SIGTERM'd rank is no cause while another failed of its own
    own = [r for r in sorted(failed) if r not in stopped]
    first = own[0] if own else min(failed)
    listed = ", ".join(str(r) for r in sorted(failed)[:16]) + (
        f" (+{len(failed) - 16} more)" if len(failed) > 16 else ""
    )
    return f"failed ranks: {listed} (rank {first}: {terminal_safe(failed[first])[:160]})"


def no_rows_help(snap: RunSnapshot) -> str:
    """Item 7 of issue 18: no loss row was read, so show the most frequent line shapes that carry
    numbers (digits as #) and how to give a regex, instead of an empty table."""
    shapes = line_shapes(f.path for f in snap.files if f.role == LogRole.WORKER)
    if not shapes:
        return "no loss rows: no line of the rank logs carries a number"
    out = [
        "no loss rows: no line has a loss key and a number. Most frequent line shapes with numbers "
        "(digits as #); give --loss-regex with a named group `loss` (and step, epoch) for yours:"
    ]
    out += [f"  {s.count:>7} x {terminal_safe(s.shape)[:160]}" for s in shapes]
    return "\n".join(out)


def _row_line(rank: float, epoch: float, step: float, loss: float) -> str:
    return f"rank {int(rank):>3}  epoch {_fmt(epoch, '.0f'):>4}  step {_fmt(step, '.0f'):>6}  loss {_fmt_loss(loss)}"


def new_rows(m: pd.DataFrame, start: int, limit: int = MAX_ROWS_PER_UPDATE) -> list[str]:
    """Lines for the loss rows `m[start:]`: each row while they are few, else the last row of every
    rank and how many were not printed (a terminal cannot show 100,000 rows a second, and trying
    made `watch` fall further behind and ignore Ctrl-C)."""
    new = m.iloc[start:]
    cols = [new[k].to_numpy() for k in ("rank", "epoch", "step", "loss")]
    if len(new) <= limit:
        return [_row_line(*row) for row in zip(*cols, strict=True)]
    last = new.drop_duplicates("rank", keep="last").sort_values("rank")
    shown = last.head(limit)
    lines = [
        _row_line(*row) for row in zip(*(shown[k].to_numpy() for k in ("rank", "epoch", "step", "loss")), strict=True)
    ]
    more = f" (first {limit} of {len(last)} ranks)" if len(last) > limit else ""
    return [*lines, f"... {len(new):,} new loss rows since the last update: the last one per rank above{more}"]


def behind_line(behind: int, was: int) -> str | None:
    """What to say when the reader falls behind the writer, or catches up again (None: nothing new)."""
    if behind and not was:
        return (
            f"behind: {behind / 2**20:,.1f} MiB written and not read yet (the logs grow faster than they "
            "are read); reading on"
        )
    if was and not behind:
        return "caught up: every line written so far is read"
    return None


def _surviving(printed: dict[tuple[int, str], int], restarted: set[int]) -> int:
    """Rows still in the table after ranks restarted: their files' rows were dropped, the rest keep their order."""
    for key in [k for k in printed if k[0] in restarted]:
        del printed[key]
    return sum(printed.values())


def _count(printed: dict[tuple[int, str], int], rows: pd.DataFrame) -> None:
    if rows.empty:
        return
    counts = rows.groupby(["rank", "file"], observed=True, sort=False).size()
    ranks, files = counts.index.get_level_values("rank"), counts.index.get_level_values("file")
    for rank, file, n in zip(ranks, files, counts, strict=True):
        printed[(as_int(rank), str(file))] = printed.get((as_int(rank), str(file)), 0) + int(n)


def judged_alerts(alerter: Alerter, snap: RunSnapshot) -> list[Alert]:
    """The new alerts of this snapshot; a rule that breaks on an odd log is one line, and the watch goes on
    (the terminal and the other rules matter more than one alert)."""
    try:
        return alerter.check(snap)
    except (ArithmeticError, KeyError, LookupError, TypeError, ValueError) as exc:
        print(terminal_safe(f"alert rules skipped this tick: {type(exc).__name__}: {exc}")[:300], flush=True)
        return []


def follow(
    watcher: RunWatcher,
    interval: float,
    stall_after: float,
    notes_now: Callable[[], list[str]] = list,
    alerts: tuple[Alerter, Dispatcher] | None = None,
    until: Callable[[], bool] = lambda: False,
    quiet: bool = False,
) -> None:
    """Print new loss rows, errors, how far behind the reader is, and the status table until Ctrl-C or `until()`;
    while no rank log is read, `notes_now()` says what the folder holds and why (again when it changes).
    `alerts`: judge the rules about once a second and queue what is new (delivery runs on its own threads)."""
    judged = 0.0
    last_notes: list[str] = []
    printed: dict[tuple[int, str], int] = {}  # rows taken so far per (rank, file), to survive restarts
    seen = n_errors = behind = 0
    restarts: dict[int, int] = {}
    last_table, last_states, version = 0.0, "", -1
    while not until():
        version = watcher.wait_for_change(version, timeout=min(interval, 0.5))
        snap = watcher.snapshot()
        m = snap.metrics
        now_restarts = dict(zip(snap.ranks["rank"].astype(int), snap.ranks["restarts"].astype(int), strict=True))
        restarted = {r for r, n in now_restarts.items() if n > restarts.get(r, 0)}
        restarts = now_restarts
        if restarted or len(m) < seen:
            for rank in sorted(restarted):
                print(f"rank {rank}: log restarted (relaunch)", flush=True)
            seen = _surviving(printed, restarted)
        if len(m) > seen:
            if not quiet:
                print("\n".join(new_rows(m, seen)), flush=True)
            _count(printed, m.iloc[seen:])
            seen = len(m)
        if len(snap.errors) > n_errors:
            new = snap.errors.iloc[n_errors:]
            for line in note_lines(new):
                print(terminal_safe(line), flush=True)
            for _, e in new[~new["kind"].isin(NOTE_KINDS)].iterrows():
                print(f"!! [{e['kind']}] rank {e['rank']} {e['file']}: {e['message'][:200]}", flush=True)
            n_errors = len(snap.errors)
        note = behind_line(snap.behind_bytes, behind)
        behind = snap.behind_bytes
        if note:
            print(note, flush=True)
        if not snap.n_ranks or last_notes:  # say why nothing is read, and again when that changes
            notes = notes_now()
            if notes != last_notes:
                print("\n".join(terminal_safe(n) for n in notes), flush=True)
                last_notes = notes
        if alerts is not None and time.monotonic() - judged >= ALERT_EVERY_S:
            judged = time.monotonic()
            for alert in judged_alerts(alerts[0], snap):
                print(terminal_safe(f"alert {alert.rule}: {alert.message}"), flush=True)
                alerts[1].enqueue(alert)
        if quiet:
            continue
        table = status_table(snap, stall_after)
        states = "\n".join(line[:16] for line in table.splitlines())
        if states != last_states or time.monotonic() - last_table >= max(interval, 30):
            if behind:
                table += f"\n(behind: {behind / 2**20:,.1f} MiB not read yet)"
            shared = [terminal_safe(s.message()) for s in shared_streams(m)]  # with the table: why one rank
            text = "\n".join(part for part in [*shared, table] if part)  # no rank log yet: no empty table
            if text:
                print(text, flush=True)
            last_table, last_states = time.monotonic(), states


class Ending:
    """What tells the watch to end: SIGTERM (the supervisor, at the run's end), or its `parent` gone (a
    supervisor killed outright must not leave its watch behind: the watch is then reparented)."""

    def __init__(self, parent: int | None) -> None:
        self.parent = parent
        self.asked = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: self.asked.set())

    def __call__(self) -> bool:
        return self.asked.is_set() or self.orphaned()

    def orphaned(self) -> bool:
        return self.parent is not None and os.getppid() != self.parent

    def why(self) -> str:
        return "SIGTERM" if self.asked.is_set() else f"its parent {self.parent} is gone"


def last_judgment(watcher: RunWatcher, alerts: tuple[Alerter, Dispatcher], log_dir: Path) -> None:
    """The run is over: read its last lines (bounded), judge once more with the record's final status (a
    launched run's `run_ended`), and queue what is new; the caller drains the queues."""
    deadline = time.monotonic() + CATCH_UP_S
    version = -1
    while time.monotonic() < deadline:
        version = watcher.wait_for_change(version, timeout=0.2)
        if watcher.catching_up is None:
            break
    status = None
    if (log_dir.parent / RUN_FILE).is_file():
        try:
            status = str(read_record(log_dir.parent).status)
        except (UserError, OSError, ValueError):
            status = None  # an unreadable record: the logs alone say how the run ended
    try:
        fresh = alerts[0].check(watcher.snapshot(refresh=True), run_status=status)
    except (ArithmeticError, LookupError, TypeError, ValueError) as exc:
        print(terminal_safe(f"last alert judgment skipped: {type(exc).__name__}: {exc}")[:300], flush=True)
        fresh = []
    for alert in fresh:
        print(terminal_safe(f"alert {alert.rule}: {alert.message}"), flush=True)
        alerts[1].enqueue(alert)


def handle(args: argparse.Namespace) -> int:
    """Entry point of `python -m core watch`."""
    try:
        log_dir: Path = validate_log_dir(args.log_dir)
    except LogDirError as exc:
        return fail(str(exc))
    launchers = launcher_outputs(log_dir)
    if args.once and args.alert:
        return fail("--alert needs a live watch: leave out --once")
    if args.once:
        try:
            snap = read_run(log_dir, loss_regex=args.loss_regex, extra_files=launchers, follow_links=args.follow_links)
        except LogFormatError as exc:
            return fail(str(exc))
        print(summary(snap, args.stall_after))
        for note in folder_notes(log_dir, args.follow_links) + launcher_notes(launchers):
            print(note)
        if not snap.n_ranks or snap.metrics.empty:
            return 1  # nothing read is not a healthy run: the summary said what was seen and why
        return 1 if failed_ranks(snap) else 0  # the judgement `diagnose` and the Monitor make
    try:
        alerts = alert_setup(args, log_dir)
    except UserError as exc:
        return fail(str(exc))
    if alerts is None and args.alert_targets_of_workspace:
        return 0  # nothing to send: a run's supervisor needs no watch (said above)
    try:
        watcher = RunWatcher(
            log_dir,
            polling=args.polling,
            loss_regex=args.loss_regex,
            extra_files=launchers,
            follow_links=args.follow_links,
        )
    except LogFormatError as exc:
        return fail(str(exc))
    print(f"watching {log_dir} ({'polling' if args.polling else 'inotify'}); Ctrl-C to stop", flush=True)
    for note in launcher_notes(launchers):
        print(note)
    until = Ending(args.with_parent)
    try:
        watcher.start()  # reads one capped block at most: the rest on the watcher's thread
        notes = lambda: folder_notes(log_dir, args.follow_links)  # noqa: E731
        follow(watcher, args.interval, args.stall_after, notes, alerts, until, args.quiet)
        if alerts is not None:  # SIGTERM or the parent gone: the run is over
            last_judgment(watcher, alerts, log_dir)
        print(f"ended ({until.why()})", flush=True)
        return 0
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        watcher.stop()  # its reader finishes the block it is on (TICK_BYTES: a fraction of a second)
        if alerts is not None:
            alerts[1].close(DRAIN_S)  # what is queued gets a few seconds, never more
    snap = watcher.snapshot()
    return 1 if failed_ranks(snap) else 0
