"""Command line: `python -m core preview|generate|launch|stop|runs|watch ...`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from core import cli_preview


def _register_optional(sub: argparse._SubParsersAction) -> None:
    """Subcommands whose modules may be absent in a partial checkout are added when importable."""
    for module_name in ("core.cli_run", "core.cli_watch"):
        try:
            module = __import__(module_name, fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.register(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="ShardScope command line")
    sub = parser.add_subparsers(dest="command", required=True)
    cli_preview.register(sub)
    _register_optional(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
