"""Command line: `python -m core preview|generate|launch|stop|runs|watch ...`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from core import cli_preview, cli_run, cli_watch


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="ShardScope command line")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (cli_preview, cli_run, cli_watch):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
