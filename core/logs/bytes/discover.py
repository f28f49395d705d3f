"""Where a run's per-rank logs are: any layout that puts the rank number in the path, one `LogFile` per file.

Layouts (a rule matches the end of the path, so the user may point at the log folder, its parent or the
run folder; every rule is from a real launcher):
  msrun        `worker_{r}.log` (+ `scheduler.log`)
  mindformers  `rank_{r}/info.log` (+ `rank_{r}/error.log`: read for failures only, never for loss rows)
  mpirun       `--output-filename out` -> `out/1/rank.{r}/stdout` (and stderr)
  rank_table   `device{r}/train.log{r}` (model-zoo `run_distribute_train.sh`), or `train.log{r}` side by side
  model_zoo    `train_parallel{r}/log` (model-zoo scripts that `cd` into one folder per rank)
  torchrun     `--log-dir`: `attempt_{n}/{r}/stdout.log` and `stderr.log`
  slurm        `%t`-named outputs: `slurm-{job}_{t}.out`, `out.{t}`, `task-{t}.err`
  rank_dir     any `*.log/out/txt/err` under `rank_{r}/` / `rank{r}/`, or a file named `rank_{r}.log`
  single       a folder holding exactly one log file: it is rank 0; with no file named as a log at all, the one
               text file holding training or failure lines, read by its content (core.logs.bytes.sniff; said so)
Why so strict about links: the server may run as root; `worker_0.log -> /etc/shadow` must not be shown.
A link is followed only when its real path stays inside the chosen folder, or when the user asks.
Every file looked at and not taken is kept with the reason (`Discovery.skipped`), so the page and the
CLI can say why a folder shows no rank instead of "waiting".
"""

from __future__ import annotations

import errno
import os
import re
import stat as stat_mod
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from core.files import kind_of
from core.logs.bytes.sniff import MAX_SNIFFED, holds_training_text, sniffable

__all__ = [
    "MAX_DEPTH",
    "Discovery",
    "FolderCache",
    "LogFile",
    "LogRole",
    "Skipped",
    "discover",
    "discover_logs",
    "explain_empty",
    "folder_notes",
]

MAX_DEPTH = 4  # folders below the chosen one: run/output/log/rank_0/info.log is 3 deep
MAX_LISTED_SKIPS = 50  # skipped files kept with their reason (the count goes on)


class LogRole(StrEnum):
    """What a log file is to its run (a StrEnum: it prints, sorts and serialises as the word it always was)."""

    WORKER = "worker"  # a rank's output: loss rows, metrics, failures
    ERRORS = "errors"  # a rank's error-only log (MindFormers rank_N/error.log): failures only
    SCHEDULER = "scheduler"  # msrun's scheduler.log
    LAUNCHER = "launcher"  # a launcher's own stdout (msrun, mpirun, srun): failures only


@dataclass(frozen=True)
class LogFile:
    """One log file and what it is: a rank's output, its error-only log, the msrun scheduler, or a
    launcher's stdout."""

    path: Path
    rel: str
    role: LogRole  # a plain word ("worker") is taken and made the enum; an unknown one is a ValueError
    rank: int | None
    layout: str  # "msrun" | "mindformers" | "mpirun" | "rank_table" | "model_zoo" | "slurm" | "rank_dir" | ...

    def __post_init__(self) -> None:
        object.__setattr__(self, "role", LogRole(self.role))


@dataclass(frozen=True)
class Skipped:
    """A file (or link) seen under the folder and not read, with why."""

    rel: str
    why: str


@dataclass
class Discovery:
    """What a scan of the folder found: the logs to read and everything else it looked at."""

    files: list[LogFile]
    skipped: list[Skipped] = field(default_factory=list)
    n_skipped: int = 0  # may exceed len(skipped) (only MAX_LISTED_SKIPS are kept)
    n_seen: int = 0  # files (not folders) looked at
    truncated: bool = False  # stopped at the entry limit
    folders: list[str] = field(default_factory=list)  # every folder listed (for `FolderCache`)
    links: bool = False  # a symbolic link was met (its target may change without any folder changing)
    by_content: list[str] = field(default_factory=list)  # files read for their content, with no log name

    def skip(self, rel: str, why: str) -> None:
        self.n_skipped += 1
        if len(self.skipped) < MAX_LISTED_SKIPS:
            self.skipped.append(Skipped(rel, why))

    @property
    def links_refused(self) -> list[Skipped]:
        """Links not followed because they lead out of the folder."""
        return [s for s in self.skipped if s.why.startswith("a link to")]

    @property
    def not_read(self) -> list[Skipped]:
        """Entries a user must hear about even when ranks were read: links refused, link loops, entries
        that could not be checked or listed (a loop was once dropped without a word)."""
        return [s for s in self.skipped if s.why.startswith(_NOT_READ_WHYS)]


_LOG_EXT = r"(?:log|out|txt|err|jsonl)"  # jsonl: a trainer's JSON-lines log (LLaMA-Factory's trainer_log.jsonl)
# (pattern on the path relative to the chosen folder, role, layout); the first that matches wins.
_RULES: list[tuple[re.Pattern[str], LogRole, str]] = [
    (re.compile(r"(?:^|/)worker_(\d+)\.log$"), LogRole.WORKER, "msrun"),
    (re.compile(r"(?:^|/)scheduler\.log$"), LogRole.SCHEDULER, "msrun"),
    (re.compile(r"(?:^|/)rank_(\d+)/info\.log$"), LogRole.WORKER, "mindformers"),
    (re.compile(r"(?:^|/)rank_(\d+)/error\.log$"), LogRole.ERRORS, "mindformers"),
    (re.compile(r"(?:^|/)rank\.(\d+)/(?:stdout|stderr)$"), LogRole.WORKER, "mpirun"),
    (re.compile(r"(?:^|/)device_?(\d+)/[^/]*\.log\d*$"), LogRole.WORKER, "rank_table"),
    (re.compile(r"(?:^|/)train_parallel(\d+)/(?:log|[^/]*\.log)$"), LogRole.WORKER, "model_zoo"),
    # the same model-zoo files copied out of their `device{r}/` folders into one (`train.log0` ... `train.log7`): a
    # `.log` name with the rank glued on (a rotated log has a dot before its number, `train.log.1`: not a rank)
    (re.compile(r"(?:^|/)[\w.-]*\.log(\d{1,5})$"), LogRole.WORKER, "rank_table"),
    # torchrun's `--log-dir` (with `--redirects` / `--tee`): `<run id>/attempt_{n}/{local rank}/stdout.log` and
    # `stderr.log`, one folder per rank named by its number alone
    (re.compile(r"(?:^|/)(\d{1,5})/(?:stdout|stderr)\.log$"), LogRole.WORKER, "torchrun"),
    (re.compile(r"(?:^|/)slurm-\d+[_.-](\d+)\." + _LOG_EXT + "$"), LogRole.WORKER, "slurm"),
    # sbatch/srun --output=NAME-%j-%t.out (job id, then task id): Slurm's own .out/.err names only
    (_JOB_TASK := re.compile(r"(?:^|/)[\w.]+-\d+-(\d+)\.(?:out|err)$"), LogRole.WORKER, "slurm"),
    (
        re.compile(r"(?:^|/)(?:[\w-]+[._-])?(?:out|err|stdout|stderr|output|task)[._-](\d+)(?:\." + _LOG_EXT + ")?$"),
        LogRole.WORKER,
        "slurm",
    ),
    (re.compile(r"(?:^|/)rank[_-]?(\d+)/[^/]+\." + _LOG_EXT + "$"), LogRole.WORKER, "rank_dir"),
    # a prefix before the rank word too: Swin Transformer's and X-CLIP's `log_rank0.txt` (one file per rank)
    (re.compile(r"(?:^|/)(?:[\w-]+[._-])?rank[_-]?(\d+)\." + _LOG_EXT + "$"), LogRole.WORKER, "rank_dir"),
    # one file per device named by its number, maybe after a prefix (SPADE-DLinkNet's `logs/gpu0.log`, `gpu1.log`:
    # one print log per GPU, https://github.com/choiszt/spade_dlinknet/tree/0b2ae8f/logs): the device is the rank
    (
        re.compile(r"(?:^|/)(?:[\w-]+[._-])?(?:gpu|npu|device|card)[_-]?(\d+)\." + _LOG_EXT + "$"),
        LogRole.WORKER,
        "rank_dir",
    ),
    # Paddle's launcher (`python -m paddle.distributed.launch`): `log/workerlog.N` per rank, beside its `endpoints.log`
    (re.compile(r"(?:^|/)workerlog\.(\d+)$"), LogRole.WORKER, "paddle"),
]
_LAUNCHER_NAME = re.compile(r"^[^/]+\." + _LOG_EXT + "$")
# a launcher's own output is not a rank's, even when it is the only file so far (the workers' come later)
_LAUNCHER_OUTPUT = re.compile(r"^(?:msrun|mpirun|launcher|launch|scheduler)[\w.-]*$")
# a log rotated (`train.log.1`) or kept as a backup copy (FADNet's `logs/dispnetcres.log.bk`, `.bak`, `.old`); a
# redirect named by its stream and the time it started, no suffix (ChidanshM/verf's `log/output-251211-1801`:
# `output-%y%m%d-%H%M`; `stdout_20240101_1200`, `log-2024-01-01`): the stream word, then only digits and separators
_LOGLIKE = re.compile(
    r"(?:\." + _LOG_EXT + r"(?:\.\d+|\.bk|\.bak|\.old)?|/log|^log|stdout|stderr)$|"
    r"(?:^|/)(?:std)?(?:out(?:put)?|err(?:or)?|log)[._-]\d[\d._-]*$"
)
# Second choice, only when no file above is log-like: a text file whose NAME says log (`log` or `logs` as a word)
# under a document suffix: mmcv's `<timestamp>.log.json` JSON lines, console output pasted into `log_output.md`.
# Never beside a real log (mmcv writes `X.log` next to `X.log.json`: the `.log` is read), never a `README.md`.
# A trainer's JSON document too (HF's `trainer_state.json`, read whole: core.logs.bytes.jsondoc). A trainer's record
# file under the name it writes it by: Ultralytics' `results.csv` (a CSV row per epoch), detectron2's JSONWriter
# `metrics.json` (a JSON line per logging period); a table under a `.csv`/`.tsv` name saying log, results, metrics,
# history or epochs (Keras' `pd.DataFrame(history.history).to_csv(...)`: ResTS's `ResTS15epochs-full.csv`).
# Console output pasted into a `.md` whose name says output or results (`terminal_output_300_epochs.md`), or the
# losses it holds (a DGL example's run kept as `loss.md`: its rows under a code block of the curves' arrays).
_LOG_NAMED_TEXT = re.compile(
    r"(?:^|/)(?:(?:[^/]*[^a-z/])?logs?(?:[^a-z/][^/]*)?\.(?:json|md)|(?:trainer_state|metrics)\.json"
    r"|(?:[^/]*[^a-z/])?(?:logs?|results|metrics|history|epochs?)(?:[^a-z/][^/]*)?\.(?:csv|tsv)"
    r"|(?:[^/]*[^a-z/])?(?:output|results|loss(?:es)?)(?:[^a-z/][^/]*)?\.md)$",
    re.IGNORECASE,
)
_PRIORITY = {
    "msrun": 0,
    "mindformers": 1,
    "mpirun": 2,
    "rank_table": 3,
    "model_zoo": 4,
    "slurm": 5,
    "rank_dir": 6,
    "paddle": 7,
    "torchrun": 8,
}


def _lone_job_task(
    groups: dict[tuple[str, str], list[LogFile]],
    others: list[tuple[Path, str, int, str]],
    entries: dict[str, tuple[Path, int, str]],
) -> None:
    """Move a folder's `NAME-J-T.out/.err` files naming one task only to `others` (read as one process, rank 0).
    Why: a number in a name with no rank word says a rank only beside its siblings; a lone job's pair
    (`train-260-15.out` / `.err`, a cluster job's own naming: job or array ids) is one process, as any lone
    file is (the corpus convention: the ranks a log shows). Several tasks of one job stay ranks (`train-1-0.out`,
    `train-1-1.out`)."""
    for key, files in list(groups.items()):
        if len({f.rank for f in files}) == 1 and all(_JOB_TASK.search(f.rel) for f in files):
            del groups[key]
            others.extend((entries[f.rel][0], f.rel, entries[f.rel][1], entries[f.rel][2]) for f in files)


def _match(rel: str) -> tuple[LogRole, int | None, str, str] | None:
    """(role, rank, layout, group) for a rank-log path, None otherwise; the group is the path before
    the part that carries the rank (two runs' `worker_0.log` in two folders are two groups)."""
    for pattern, role, layout in _RULES:
        m = pattern.search(rel)
        if m:
            rank = int(m.group(1)) if m.groups() else None
            return role, rank, layout, rel[: m.start() + (1 if rel[m.start() : m.start() + 1] == "/" else 0)]
    return None


_LOOP_WHY = "a symbolic link loop (ELOOP: too many levels of symbolic links)"
_NOT_READ_WHYS = ("a link to", _LOOP_WHY, "cannot be checked", "cannot be listed")


def _why_not_checked(exc: OSError) -> str:
    """Why an entry could not be stat'ed, in words; a link loop is named as one (ELOOP)."""
    if exc.errno == errno.ELOOP:
        return _LOOP_WHY
    return f"cannot be checked: {exc.strerror or exc}"


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _child(folder: Path, entry: os.DirEntry) -> Path:
    """`Path(entry.path)`, made as `Path.iterdir` makes its children where Python has that (no re-parse of the
    whole path: ~8 us a file, a tenth of a 1,024-rank folder's whole discovery)."""
    make = getattr(folder, "_make_child_relpath", None)
    return make(entry.name) if make is not None else Path(entry.path)


def _scan(root: Path, found: Discovery, follow_links: bool, max_entries: int) -> list[tuple[Path, str, int, str]]:
    """Every file under `root` (bounded depth and count) as (path, rel, depth, kind); refused links and
    unlistable folders go to `found.skipped`."""
    root_real = os.path.realpath(root)
    out: list[tuple[Path, str, int, str]] = []
    visited = {root_real}
    stack: list[tuple[Path, str, int]] = [(root, "", 0)]
    seen = 0
    while stack:
        folder, prefix, depth = stack.pop()
        found.folders.append(str(folder))
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            found.skip(prefix.rstrip("/") or ".", f"cannot be listed: {exc.strerror or exc}")
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                found.truncated = True
                return out
            rel = prefix + entry.name
            try:
                is_link = entry.is_symlink()
                if is_link:
                    found.links = True
                    real = os.path.realpath(entry.path)
                    if not follow_links and not _inside(real, root_real):
                        found.skip(
                            rel,
                            f"a link to {real}, outside the chosen folder (not followed; ask to "
                            "follow links to read it)",
                        )
                        continue
                    mode = os.stat(entry.path).st_mode
                else:
                    real = ""
                    mode = entry.stat(follow_symlinks=False).st_mode
            except OSError as exc:
                found.skip(rel, _why_not_checked(exc))
                continue
            if stat_mod.S_ISDIR(mode):
                if depth == 0 and _RULES[0][0].search(rel):  # a folder named worker_N.log: say so
                    out.append((_child(folder, entry), rel, depth, "dir"))
                    continue
                key = real if is_link else entry.path
                if depth + 1 <= MAX_DEPTH and key not in visited:
                    visited.add(key)
                    stack.append((_child(folder, entry), rel + "/", depth + 1))
                continue
            out.append((_child(folder, entry), rel, depth, "file" if stat_mod.S_ISREG(mode) else kind_of(mode)))
    return out


def discover(log_dir: Path | str, max_entries: int = 20000, follow_links: bool = False) -> Discovery:
    """Find per-rank logs under `log_dir`, sorted by role and rank, and say what was left out and why.

    Top-level `*.log/*.out/*.txt/*.err` files that are not rank logs (e.g. msrun's own stdout) are
    "launcher" files: only scanned for failures. When two runs' logs sit side by side (the same ranks
    in two folders), the folder with the most ranks is read and the other is skipped with the reason.
    """
    root = Path(log_dir)
    found = Discovery([])
    entries = _scan(root, found, follow_links, max_entries)
    found.n_seen = len(entries) + found.n_skipped  # refused links and unlistable entries count as seen
    groups: dict[tuple[str, str], list[LogFile]] = {}
    others: list[tuple[Path, str, int, str]] = []
    for path, rel, depth, kind in entries:
        hit = _match(rel)
        if hit is None:
            others.append((path, rel, depth, kind))
            continue
        role, rank, layout, group = hit
        groups.setdefault((layout, group), []).append(LogFile(path, rel, role, rank, layout))
    _lone_job_task(groups, others, {rel: (path, depth, kind) for path, rel, depth, kind in entries})
    found.files = _pick_groups(groups, found)
    have_workers = any(f.role == LogRole.WORKER for f in found.files)
    loglike = [(p, r) for p, r, _, k in others if k == "file" and _LOGLIKE.search(r)]
    if not loglike:
        loglike = [(p, r) for p, r, _, k in others if k == "file" and _LOG_NAMED_TEXT.search(r)]
    if not loglike and not found.files and not found.truncated:  # last: no file is named as a log at all
        loglike = _by_content(others)
        found.by_content = [r for _, r in loglike]
    single: set[str] = set()
    if (
        not have_workers
        and (len(loglike) == 1 or _one_process(loglike))
        and not found.truncated
        and not any(_LAUNCHER_OUTPUT.match(r.rsplit("/", 1)[-1]) for _, r in loglike)
    ):
        single = {r for _, r in loglike}
        for path, rel in loglike:  # one log file (or one process's stdout and stderr): rank 0
            found.files.append(LogFile(path, rel, LogRole.WORKER, 0, "single"))
    names = {r for _, r in loglike}
    for path, rel, depth, kind in others:
        if rel in single:
            continue
        if kind != "file":
            found.skip(rel, f"{kind}, not a regular file")
        elif rel not in names:
            found.skip(rel, "not a log (no .log/.out/.txt/.err name, no stdout/stderr)")
        elif depth == 0 and _LAUNCHER_NAME.match(rel):
            found.files.append(LogFile(path, rel, LogRole.LAUNCHER, None, "other"))
        else:
            found.skip(
                rel,
                "no rank number in its path (worker_N.log, rank_N/, rank.N/, deviceN/, "
                "train_parallelN/, slurm-J_N.out)",
            )
    order = {role: i for i, role in enumerate(LogRole)}  # workers first, launchers last
    found.files.sort(key=lambda f: (order[f.role], -1 if f.rank is None else f.rank, f.rel))
    return found


def _by_content(others: list[tuple[Path, str, int, str]]) -> list[tuple[Path, str]]:
    """The regular files (the first MAX_SNIFFED whose names may hold text) that are text holding training or
    failure lines (core.logs.bytes.sniff): a folder with no file named as a log."""
    looked = [(p, r) for p, r, _, k in others if k == "file" and sniffable(r)][:MAX_SNIFFED]
    return [(p, r) for p, r in looked if holds_training_text(p)]


# the stream a file's name says it holds: stdout (`out`, `log`, `output`) or stderr (`err`, `error`), a word of its own
_RE_STREAM_WORD = re.compile(r"(?<![a-z0-9])(?:std)?(?:(err(?:or)?)|out(?:put)?|log)(?![a-z0-9])", re.IGNORECASE)


def _one_process(loglike: list[tuple[Path, str]]) -> bool:
    """Two files whose names differ only in the stream they say they hold, one of them stderr: one process's
    stdout and stderr (Slurm's `train.out` / `train.err`, a redirect's `train_log.log` / `train_error.log`)."""
    if len(loglike) != 2:
        return False
    a, b = (r for _, r in loglike)
    keys = [_RE_STREAM_WORD.sub("#", r) for r in (a, b)]
    errs = [any(m.group(1) for m in _RE_STREAM_WORD.finditer(r)) for r in (a, b)]
    return keys[0] == keys[1] and errs[0] != errs[1]


def _pick_groups(groups: dict[tuple[str, str], list[LogFile]], found: Discovery) -> list[LogFile]:
    """Every group of rank logs whose ranks no bigger group already has (biggest first, then the
    shallowest folder, then the launcher's priority); the others are skipped with the reason."""

    def ranks(files: list[LogFile]) -> set[int]:
        return {f.rank for f in files if f.role == LogRole.WORKER and f.rank is not None}

    order = sorted(
        groups.items(), key=lambda kv: (-len(ranks(kv[1])), kv[0][1].count("/"), _PRIORITY.get(kv[0][0], 9), kv[0][1])
    )
    taken: dict[int, str] = {}
    out: list[LogFile] = []
    for (_layout, group), files in order:
        clash = sorted(ranks(files) & set(taken))
        if clash:
            where = taken[clash[0]]
            for f in files:
                found.skip(
                    f.rel,
                    f"rank {clash[0]} is already read from {where} (another run or a copy in "
                    f"another layout; point at {group or '.'} to read this one)",
                )
            continue
        for f in files:
            if f.role == LogRole.WORKER and f.rank is not None:
                taken.setdefault(f.rank, f.rel)
        out.extend(files)
    return out


def discover_logs(log_dir: Path | str, max_entries: int = 20000, follow_links: bool = False) -> list[LogFile]:
    """The log files `discover` takes (see there)."""
    return discover(log_dir, max_entries, follow_links).files


_SETTLED_NS = 2_000_000_000  # a folder changed this recently may change again within its clock's step


class FolderCache:
    """`discover_logs` of one folder, given again without a scan while no folder it listed has changed.

    Why: a live tick rescans the folder for new ranks, and at 1,024 ranks the scan (an entry, a path, a rule
    and a `LogFile` per file) was ~12 ms of every tick although a run's files are created once. A folder's
    entries change only with its mtime/ctime (a file added, removed, renamed; its mode changed), so one stat per
    folder says whether the last scan still holds. Never cached: a scan that met a link (its target may change
    while no folder does), stopped at its entry limit, or saw a folder changed within the last 2 s (a change in
    the same clock step as the scan would go unseen)."""

    def __init__(self) -> None:
        self._stamp: list[tuple[int, int, int]] | None = None
        self._files: list[LogFile] = []
        self._folders: list[str] = []
        self._key: tuple[str, bool, int] | None = None

    @staticmethod
    def _stamps(folders: list[str]) -> list[tuple[int, int, int]] | None:
        try:
            return [(s.st_ino, s.st_mtime_ns, s.st_ctime_ns) for s in map(os.stat, folders)]
        except OSError:
            return None

    def files(self, log_dir: Path | str, follow_links: bool = False, max_entries: int = 20000) -> list[LogFile]:
        """What `discover_logs(log_dir, max_entries, follow_links)` gives now (a new list each call)."""
        key = (str(log_dir), follow_links, max_entries)
        if self._stamp is not None and key == self._key and self._stamps(self._folders) == self._stamp:
            return list(self._files)
        now = time.time_ns()
        found = discover(log_dir, max_entries, follow_links)
        self._stamp, self._key, self._files, self._folders = None, key, found.files, found.folders
        if not found.links and not found.truncated:
            stamp = self._stamps(found.folders)
            if stamp is not None and all(now - m > _SETTLED_NS for _, m, _ in stamp):  # (ctime: compared only)
                self._stamp = stamp
        return list(found.files)


def explain_empty(found: Discovery, folder: str, limit: int = 8) -> str:
    """One paragraph for a folder with no rank log: which files were seen and why none was taken."""
    if found.n_seen == 0 and not found.skipped:
        return (
            f"{folder} holds no files yet (waiting for worker_N.log, rank_N/info.log, 1/rank.N/stdout, "
            "deviceN/train.logN, train_parallelN/log or slurm-J_N.out)."
        )
    launchers = [
        f"{f.rel}: no rank number in its name (read for failures only, as a launcher's output)"
        for f in found.files
        if f.role != LogRole.WORKER
    ]
    reasons = launchers + [f"{s.rel}: {s.why}" for s in found.skipped]
    shown = "; ".join(reasons[:limit])
    total = len(launchers) + found.n_skipped
    more = f"; and {total - limit} more" if total > limit else ""
    cut = " The scan stopped at its entry limit." if found.truncated else ""
    return f"{folder}: {found.n_seen} file(s) seen, none read as a rank log: {shown}{more}.{cut}"


def folder_notes(log_dir: Path | str, follow_links: bool = False) -> list[str]:
    """What a user must be told about a folder besides its ranks: links not followed (what, why), and,
    when no rank log is there, which files were seen and why none was taken. Empty when all is plain."""
    found = discover(log_dir, follow_links=follow_links)
    notes = [f"not read: {s.rel}: {s.why}" for s in found.not_read]
    notes += [f"skipped {s.rel}: {s.why}" for s in found.skipped if s.why.endswith("not a regular file")]
    notes += [
        f"read by its content: {rel} (no file here is named as a log; this one is text holding training or failure "
        "lines)"
        for rel in found.by_content
        if any(f.rel == rel for f in found.files)
    ]
    if not any(f.role == LogRole.WORKER for f in found.files):
        notes.append(explain_empty(found, str(log_dir)))
    return notes
