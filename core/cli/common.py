"""What every command shares: one-line errors on stderr with exit status 2, never a traceback."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def quiet_on_closed_pipe(handle: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """`handle`, but a reader that closes the pipe early (`| head -3`) ends us quietly, not with a traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            code = handle(args)
            sys.stdout.flush()  # buffered output (stdout is a pipe) meets the closed pipe here, not at exit
            return code
        except BrokenPipeError:
            # Python would flush stdout again at exit and print a second error: point it at /dev/null.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 0

    return run
