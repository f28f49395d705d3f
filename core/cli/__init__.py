"""The command line, one module per `python -m core <command>`; each module has `register(sub)`.

`core/__main__.py` builds the parser from `MODULE_OF` (command -> its module, in help order) and imports
only the module of the command it was given: a refusal of a bad file then costs the few modules that
command needs, not pandas and the log reader of every other command (`plan` on a YAML bomb answers in
well under a second). `COMMANDS` (every command module) is imported on first use.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# every sub-command, in help order, and the module under core/cli that registers it
MODULE_OF = {
    "preview": "preview",
    "edit": "edit",
    "model": "model",
    "plan": "plan",
    "generate": "generate",
    "check": "check",
    "launch": "runs",
    "stop": "runs",
    "runs": "runs",
    "delete": "runs",
    "watch-folder": "runs",
    "watch": "watch",
    "diagnose": "diagnose",
    "report": "report",
    "export": "export",
}


def command_modules(command: str | None = None) -> list[ModuleType]:
    """The modules registering `command` (one), or every command module when it is not a command name."""
    names = [MODULE_OF[command]] if command in MODULE_OF else list(dict.fromkeys(MODULE_OF.values()))
    return [importlib.import_module(f"core.cli.{name}") for name in names]


def __getattr__(name: str) -> list[ModuleType]:
    if name == "COMMANDS":
        return command_modules()
    raise AttributeError(name)
