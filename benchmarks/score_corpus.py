"""Score the log reader on real-log corpus entries: how many it reads right, and on what it fails.

    .venv/bin/python benchmarks/score_corpus.py [ENTRY_DIR ...] [--json]

With no entry, every folder of tests/fixtures/real_logs. An entry is a corpus folder (`expect.json`,
`SOURCE.md`, `log/`, see tests/fixtures/real_logs/README.md). It is "read right" when all four measures
issue 30 names hold:

- rows:    loss rows per rank as expected;
- losses:  each rank's first and last training loss within 1e-6 relative (`"nan"` for a NaN);
           (rows and losses are compared as the corpus test compares them: tests/corpus_measure.py)
- failure: failed or not, as expected (the one judgement, `core.logs.judgement.status.failed_ranks`,
           which `watch`, `diagnose` and the Monitor share);
- rank:    the expected failing ranks are among the ranks judged failed, and no rank is judged failed
           in a log that has no failure.

Why a script beside the corpus test: the set-aside third of new logs is scored before it joins the
corpus (issue 30 item 6: build on the rest, then report the set-aside rate), and the rate is a figure
for the closing note, not a pass/fail.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from core.logs import read_run  # noqa: E402
from core.logs.judgement.status import failed_ranks  # noqa: E402
from tests.corpus_measure import expected_rows, first_and_last, rows_per_rank, same  # noqa: E402

CORPUS = REPO / "tests" / "fixtures" / "real_logs"


@dataclass(frozen=True)
class Score:
    entry: str
    rows: bool
    losses: bool
    failure: bool
    rank: bool
    why: str

    @property
    def right(self) -> bool:
        return self.rows and self.losses and self.failure and self.rank


def score(entry: Path) -> Score:
    """The four measures on one entry, with what went wrong in `why`."""
    exp: dict[str, Any] = json.loads((entry / "expect.json").read_text(encoding="utf-8"))
    snap = read_run(entry / exp["watch_path"])
    m = snap.metrics
    why: list[str] = []
    got_rows, want_rows = rows_per_rank(m), expected_rows(exp)
    rows = got_rows == want_rows
    if not rows:
        why.append(f"rows {got_rows} != {want_rows}")
    losses = True
    for which in ("first_loss", "last_loss"):
        for rank, value in exp[which].items():
            read = first_and_last(m, int(rank))
            if read is None:
                losses = False
                why.append(f"rank {rank}: no loss rows")
                continue
            got = read[0 if which == "first_loss" else 1]
            if not same(got, value):
                losses = False
                why.append(f"rank {rank} {which} {got!r} != {value!r}")
    judged = failed_ranks(snap)
    failure = bool(judged) == bool(exp["failed"])
    if not failure:
        why.append(f"failed {bool(judged)} != {exp['failed']} ({'; '.join(sorted(set(judged.values())))[:120]})")
    rank = set(exp["failed_ranks"]) <= set(judged) and (bool(exp["failed"]) or not judged)
    if not rank:
        why.append(f"failed ranks {sorted(judged)} vs {exp['failed_ranks']}")
    return Score(entry.name, rows, losses, failure, rank, "; ".join(why))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("entries", nargs="*", type=Path, help="corpus entry folders (default: the whole corpus)")
    ap.add_argument("--json", action="store_true", help="one JSON object per entry")
    args = ap.parse_args(argv)
    entries = args.entries or sorted(p.parent for p in CORPUS.glob("*/expect.json"))
    if not entries:
        print("no corpus entry found (a folder with expect.json)", file=sys.stderr)
        return 2
    scores = [score(e) for e in entries]
    for s in scores:
        if args.json:
            print(json.dumps({**asdict(s), "right": s.right}))
        else:
            marks = " ".join("ok " if ok else "BAD" for ok in (s.rows, s.losses, s.failure, s.rank))
            print(f"{'right' if s.right else 'WRONG'}  {marks}  {s.entry}  {s.why}")
    n = len(scores)
    print(
        f"read right: {sum(s.right for s in scores)}/{n} = {100 * sum(s.right for s in scores) / n:.0f} %"
        f" (rows {sum(s.rows for s in scores)}, losses {sum(s.losses for s in scores)},"
        f" failure {sum(s.failure for s in scores)}, failing rank {sum(s.rank for s in scores)}; of {n})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
