"""The one base of every error a user is shown: what is wrong and what to do, in one line.

Why: the pages and the CLI catch `UserError` (beside `OSError` for the file system) instead of a
hand-made tuple of classes per call, and a new error class needs nothing but this base. The ground
floor of core: it imports nothing, so every package may raise a subclass.
"""

from __future__ import annotations

__all__ = ["UserError"]


class UserError(Exception):
    """A user-facing error: `str(exc)` is the one-line message the page shows and the CLI prints."""
