"""Sizes as users read them: one formatter for every byte count the product shows."""

from __future__ import annotations

BINARY_UNITS = ("KiB", "MiB", "GiB", "TiB")  # MindSpore's and MindFormers' "GB" is a GiB


def format_bytes(n: float) -> str:
    """`16384` -> `16.0 KiB`, `512` -> `512 B`: binary units, one decimal, negatives kept."""
    value = float(n)
    if abs(value) < 1024:
        return f"{value:.0f} B"
    for unit in BINARY_UNITS:
        value /= 1024
        if abs(value) < 1024 or unit == BINARY_UNITS[-1]:
            break
    return f"{value:.1f} {unit}"
