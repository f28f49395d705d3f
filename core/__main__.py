"""Command line: `python -m core <command> ...` (the commands are listed in core.cli.MODULE_OF)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from core.cli import command_modules
from core.cli.common import quiet_on_closed_pipe


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or (given a command's name) of the module that registers it only."""
    parser = argparse.ArgumentParser(prog="python -m core", description="ShardScope command line")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in command_modules(command):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    return int(quiet_on_closed_pipe(args.func)(args) or 0)  # `... | head` ends every command quietly


if __name__ == "__main__":
    sys.exit(main())
