"""The shared design in the session: created once (`current_design`), changed only through `commit` / `apply`.

Every page that reads the design the user is working on calls `current_design()`; the Designer's
widgets run a `core.sharding.edits` function through `apply(scope, edit, ...)`, which commits the
new design or stores why it was refused for that part of the page (`show_edit_error(scope)`).

Each commit bumps a version counter that is part of every Designer widget key (`vkey`): widgets (and
the sortables iframe, which ignores new items under a fixed key) remount from the new design, so
nothing shows a stale value.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

import streamlit as st

from core.sharding.design import Design
from core.sharding.edits import EditError, default_design
from core.sharding.layout import LayoutError
from core.workspace import WorkspaceError

DESIGN_KEY = "design"
VERSION_KEY = "designer_version"
ERROR_KEY = "designer_edit_error"
NOTICE_KEY = "designer_notice"
FAILED = object()  # what `apply` returns when the edit was refused

# Errors an edit raises for input it cannot store: shown as "Edit not applied: <message>".
EDIT_ERRORS = (EditError, LayoutError, WorkspaceError)


class Scope(StrEnum):
    """The part of the Designer an edit came from: its refusal is shown there, and only there."""

    MATRIX = "matrix"
    TENSOR = "tensor"
    OPERATOR = "operator"
    FILE = "file"


def current_design() -> Design:
    """The design the user is working on; the first call of a session seeds it (seed 004's
    DenseMatMulNet). A non-Design value (a stale session) is replaced too."""
    if not isinstance(st.session_state.get(DESIGN_KEY), Design):
        st.session_state[DESIGN_KEY] = default_design()
    st.session_state.setdefault(VERSION_KEY, 0)
    return st.session_state[DESIGN_KEY]


def version() -> int:
    return int(st.session_state.get(VERSION_KEY, 0))


def vkey(*parts: object) -> str:
    """A widget key that changes whenever the design changes from outside that widget."""
    return "designer:" + ":".join(str(p) for p in parts) + f"@{version()}"


def commit(design: Design, notice: str | None = None) -> None:
    """Make `design` the shared design (every page sees it) and remount the Designer's widgets."""
    st.session_state[DESIGN_KEY] = design
    st.session_state[VERSION_KEY] = version() + 1
    if notice:
        st.session_state[NOTICE_KEY] = notice


def fail(scope: Scope, message: str) -> None:
    st.session_state[ERROR_KEY] = (scope, message)


def apply(scope: Scope, fn: Callable[..., Any], *args: Any) -> Any:
    """Run an edit on the current design; store the result, or the reason it was refused.

    Returns what the edit returns besides the design (a new name), or `FAILED`."""
    try:
        result = fn(current_design(), *args)
    except EDIT_ERRORS as exc:
        fail(scope, str(exc))
        return FAILED
    design, extra = result if isinstance(result, tuple) else (result, None)
    commit(design)
    return extra


def value_cb(scope: Scope, key: str, fn: Callable[..., Any], *args: Any) -> None:
    """on_change: pass the widget's value as the last argument of the edit."""
    apply(scope, fn, *args, st.session_state[key])


def show_edit_error(scope: Scope) -> None:
    """Show (once) why the last edit in this part of the page was refused."""
    pending = st.session_state.get(ERROR_KEY)
    if pending and pending[0] == scope:
        st.session_state.pop(ERROR_KEY, None)
        st.error(f"Edit not applied: {pending[1]}", icon=":material/block:")


def show_notice() -> None:
    notice = st.session_state.pop(NOTICE_KEY, None)
    if notice:
        st.success(notice, icon=":material/check_circle:")
