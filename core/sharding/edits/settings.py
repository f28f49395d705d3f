"""Design-wide edits: device count, name, description, loss and the repeated block."""

from __future__ import annotations

from dataclasses import replace

from core.sharding.design import LOSSES, MAX_DEVICES, MAX_REPEAT, Design, RepeatSpec
from core.sharding.edits.text import EditError
from core.workspace import is_safe_name


def set_device_num(design: Design, device_num: int) -> Design:
    if not 1 <= int(device_num) <= MAX_DEVICES:
        raise EditError(f"device count {device_num} is out of range: use 1..{MAX_DEVICES}")
    return replace(design, device_num=int(device_num))


def set_name(design: Design, name: str) -> Design:
    name = name.strip()
    if not is_safe_name(name):
        raise EditError(
            f"design name {name!r} is not allowed: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (it names the file)"
        )
    return replace(design, name=name)


def set_description(design: Design, text: str) -> Design:
    if len(text) > 2000:
        raise EditError("description: at most 2000 characters")
    return replace(design, description=text)


def set_loss(design: Design, loss: str) -> Design:
    """How the network's output (the last operator) is trained: "mse" or "cross_entropy"."""
    if loss not in LOSSES:
        raise EditError(f"unknown loss {loss!r}: use one of {', '.join(LOSSES)}")
    return replace(design, loss=loss)


def set_repeat(design: Design, count: int | None, first: str = "", last: str = "", carry: str = "") -> Design:
    """Operators first..last as one layer repeated `count` times (None: no repeat block).

    References are stored as given and checked live by `design_problems` (paths `$.repeat.*`)."""
    if count is None:
        return replace(design, repeat=None)
    if not 1 <= int(count) <= MAX_REPEAT:
        raise EditError(f"repeat count {count} is out of range: use 1..{MAX_REPEAT}")
    return replace(design, repeat=RepeatSpec(int(count), first, last, carry))
