"""Issue 30's mutation harness as a matrix: real corpus logs behind each prefix family, facts kept or lost.

    .venv/bin/python benchmarks/prefix_matrix.py [--path NAME ...] [--limit N] [--misses]

For every one-file corpus entry (tests/mutations.harness_entries) and every prefix family (tests/mutations.PREFIXES),
the prefixed log is read and its facts (rows, first/last loss, failed, kind, failing rank) compared with the plain
log's. Prints, per family, how many entries keep each fact, on each read path asked (default: `bulk`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers import READ_PATHS  # noqa: E402
from tests.mutations import PREFIXES, compare, entry_lines, facts, harness_entries, prefixed, write_log  # noqa: E402

FACTS = ("rows", "losses", "failed", "kind", "rank")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", action="append", choices=sorted(READ_PATHS), help="read path(s) (default: bulk)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N entries (0: all)")
    ap.add_argument("--family", action="append", help="only these prefix families")
    ap.add_argument("--misses", action="store_true", help="list every entry a family misreads")
    args = ap.parse_args(argv)
    entries = harness_entries()
    if args.limit:
        entries = entries[: args.limit]
    families = [p for p in PREFIXES if not args.family or p.name in args.family]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for path in args.path or ["bulk"]:
            settings = READ_PATHS[path]
            plain = {e.name: facts(write_log(root / "plain" / e.name, entry_lines(e)), settings) for e in entries}
            print(f"read path {path}: {len(entries)} entries; kept per fact")
            print(f"{'family':<14}" + "".join(f"{f:>8}" for f in FACTS) + "     all")
            for fam in families:
                kept = dict.fromkeys(FACTS, 0)
                whole = 0
                for e in entries:
                    got = facts(write_log(root / fam.name / e.name, prefixed(entry_lines(e), fam)), settings)
                    ok = compare(plain[e.name], got, fam.rank)
                    for f in FACTS:
                        kept[f] += ok[f]
                    whole += all(ok.values())
                    if args.misses and not all(ok.values()):
                        bad = ",".join(f for f in FACTS if not ok[f])
                        print(f"  miss {fam.name} {e.name}: {bad} plain={plain[e.name]} got={got}")
                print(f"{fam.name:<14}" + "".join(f"{kept[f]:>8}" for f in FACTS) + f"{whole:>8}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
