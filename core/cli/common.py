"""What every command shares: one-line errors on stderr with exit status 2, never a traceback."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

# A terminal control sequence: CSI (ESC [ or the 8-bit CSI, parameters, one final byte), OSC / DCS /
# SOS / PM / APC strings (up to BEL or ESC \, or the end), or ESC, intermediates and one final byte.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
_SPACES = str.maketrans("\t\n\r\v\f", "     ")


def terminal_safe(text: object) -> str:
    """`text` as one printable line: text from a log may hold escape sequences that recolour, retitle,
    clear or rewrite the user's terminal, so sequences are removed, tabs and line breaks become
    spaces and any other non-printable character (C0/C1 controls, DEL, bidi overrides) is dropped."""
    flat = _SEQUENCE.sub("", str(text)).translate(_SPACES)
    return flat if flat.isprintable() else "".join(ch for ch in flat if ch.isprintable())


def launcher_notes(launchers: Sequence[Path]) -> list[str]:
    """One line per launcher output read beside a run's log folder: the user named only the folder."""
    return [
        terminal_safe(f"also read {p.parent.name}/{p.name}: the launcher's output of the run this folder belongs to")
        for p in launchers
    ]


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


INTERRUPTED = 130  # what a shell reports for a command ended by SIGINT (128 + 2)


def quiet_on_closed_pipe(handle: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """`handle`, but a reader that closes the pipe early (`| head -3`) ends us quietly, not with a traceback, and
    so does a Ctrl-C that lands before a command's own handler is in place (one line, the shell's 130)."""

    def run(args: argparse.Namespace) -> int:
        try:
            code = handle(args)
            sys.stdout.flush()  # buffered output (stdout is a pipe) meets the closed pipe here, not at exit
            return code
        except KeyboardInterrupt:
            print(f"interrupted: {getattr(args, 'command', 'the command')} stopped by Ctrl-C", file=sys.stderr)
            return INTERRUPTED
        except BrokenPipeError:
            # Python would flush stdout again at exit and print a second error: point it at /dev/null.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 0

    return run
