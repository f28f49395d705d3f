"""Command line: `python -m core <command> ...` (the commands are listed in core.cli.COMMANDS)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from core.cli import COMMANDS
from core.cli.common import quiet_on_closed_pipe


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="ShardScope command line")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(quiet_on_closed_pipe(args.func)(args) or 0)  # `... | head` ends every command quietly


if __name__ == "__main__":
    sys.exit(main())
