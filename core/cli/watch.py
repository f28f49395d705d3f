"""`python -m core watch LOG_DIR [--polling] [--once]`: follow per-rank losses and failures in a terminal."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import pandas as pd

from core.cli.common import fail, terminal_safe
from core.logs import LogFormatError, RunSnapshot, RunWatcher, rank_status, read_run
from core.logs.guard import LogDirError, validate_log_dir
from core.logs.shapes import line_shapes, metric_labels


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `watch` subcommand."""
    p = sub.add_parser("watch", help="follow a run's per-rank logs (loss, stalls, crashes)",
                       description="Print new loss rows as they arrive and a per-rank status table.")
    p.add_argument("log_dir", type=str, help="msrun --log_dir, mpirun output folder or rank-table run folder")
    p.add_argument("--polling", action="store_true", help="poll instead of inotify (NFS/shared filesystems)")
    p.add_argument("--once", action="store_true", help="print a summary and exit (exit code 1 if a rank crashed)")
    p.add_argument("--loss-regex", default=None, help="custom regex with a named group `loss` (and step, epoch)")
    p.add_argument("--stall-after", type=float, default=60.0, help="seconds without a new line = stalled")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between status tables")
    p.set_defaults(func=handle)


def _fmt(v: float, spec: str = ".4g") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, spec)


def status_table(snap: RunSnapshot, stall_after_s: float = 60.0) -> str:
    """Plain-text per-rank table: rank, state, last epoch/step, last loss, age of last line, detail; then
    the files that were found but not read."""
    st = rank_status(snap, stall_after_s=stall_after_s)
    lines = [f"{'rank':>4}  {'state':<9} {'epoch':>5} {'step':>7} {'loss':>10} {'age':>7}  detail"]
    for _, r in st.iterrows():
        age = r["age_s"]
        lines.append(
            f"{int(r['rank']):>4}  {r['state']:<9} {_fmt(r['last_epoch'], '.0f'):>5} {_fmt(r['last_step'], '.0f'):>7}"
            f" {_fmt(r['last_loss']):>10} {_fmt(age, '.0f') + 's' if age == age else '-':>7}"
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
    evals = snap.evals
    n_eval = len(evals.drop_duplicates(["file", "offset"])) if not evals.empty else 0
    out = [f"{snap.log_dir}: layout={snap.layout}, ranks={snap.n_ranks}, loss rows={len(snap.metrics)}, "
           f"eval rows={n_eval}"]
    labels = metric_labels(snap.metric_keys)
    if labels:
        out.append("metrics: " + ", ".join(terminal_safe(x) for x in labels))
    if snap.metrics.empty and snap.n_ranks:
        out.append(no_rows_help(snap))
    out.append(status_table(snap, stall_after_s))
    errs = snap.errors
    if not errs.empty:
        out.append("errors:")
        for _, e in errs.iterrows():
            rank = "?" if pd.isna(e["rank"]) else str(int(e["rank"]))
            out.append(f"  [{e['kind']}] rank {rank} {terminal_safe(e['file'])}:{e['line']}: "
                       f"{terminal_safe(e['message'])[:160]}")
    return "\n".join(out)


def no_rows_help(snap: RunSnapshot) -> str:
    """Item 7 of issue 18: no loss row was read, so show the most frequent line shapes that carry
    numbers (digits as #) and how to give a regex, instead of an empty table."""
    shapes = line_shapes(f.path for f in snap.files if f.role == "worker")
    if not shapes:
        return "no loss rows: no line of the rank logs carries a number"
    out = ["no loss rows: no line has a loss key and a number. Most frequent line shapes with numbers "
           "(digits as #); give --loss-regex with a named group `loss` (and step, epoch) for yours:"]
    out += [f"  {s.count:>7} x {terminal_safe(s.shape)[:160]}" for s in shapes]
    return "\n".join(out)


def handle(args: argparse.Namespace) -> int:
    """Entry point of `python -m core watch`."""
    try:
        log_dir: Path = validate_log_dir(args.log_dir)
    except LogDirError as exc:
        return fail(str(exc))
    if args.once:
        try:
            snap = read_run(log_dir, loss_regex=args.loss_regex)
        except LogFormatError as exc:
            return fail(str(exc))
        print(summary(snap, args.stall_after))
        return 1 if snap.crashed_ranks() else 0
    try:
        watcher = RunWatcher(log_dir, polling=args.polling, loss_regex=args.loss_regex)
    except LogFormatError as exc:
        return fail(str(exc))
    watcher.start()
    printed: dict[str, int] = {}
    n_errors = 0
    last_table = 0.0
    last_states = ""
    version = -1
    print(f"watching {log_dir} ({'polling' if args.polling else 'inotify'}); Ctrl-C to stop", flush=True)
    try:
        while True:
            version = watcher.wait_for_change(version, timeout=args.interval)
            snap = watcher.snapshot()
            m = snap.metrics
            for (rank, file), grp in m.groupby(["rank", "file"], sort=True):
                key = f"{rank}:{file}"
                seen = printed.get(key, 0)
                if len(grp) < seen:  # the file was truncated (relaunch): print it again
                    print(f"rank {rank}: {file} restarted", flush=True)
                    seen = 0
                for _, r in grp.iloc[seen:].iterrows():
                    print(f"rank {int(rank):>3}  epoch {_fmt(r['epoch'], '.0f'):>4}  step {_fmt(r['step'], '.0f'):>6}"
                          f"  loss {_fmt(r['loss'], '.6g')}", flush=True)
                printed[key] = len(grp)
            if len(snap.errors) > n_errors:
                for _, e in snap.errors.iloc[n_errors:].iterrows():
                    print(f"!! [{e['kind']}] rank {e['rank']} {e['file']}: {e['message'][:200]}", flush=True)
                n_errors = len(snap.errors)
            table = status_table(watcher.snapshot(refresh=True), args.stall_after)
            states = "\n".join(line[:16] for line in table.splitlines())
            if states != last_states or time.monotonic() - last_table >= 30:
                print(table, flush=True)
                last_table, last_states = time.monotonic(), states
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        watcher.stop()
    snap = watcher.snapshot()
    return 1 if snap.crashed_ranks() else 0

