"""What every command shares: one-line errors on stderr with exit status 2, never a traceback."""

from __future__ import annotations

import sys


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2
