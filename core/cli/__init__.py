"""The command line, one module per `python -m core <command>`; each module has `register(sub)`.

`core/__main__.py` only builds the parser from `COMMANDS` (a plain list, in help order).
"""

from __future__ import annotations

from core.cli import check, diagnose, edit, generate, model, plan, preview, runs, watch

COMMANDS = [preview, edit, model, plan, generate, check, runs, watch, diagnose]
