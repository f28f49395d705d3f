"""Sizes as users read them: one formatter for every byte count the product shows."""

from __future__ import annotations

BINARY_UNITS = ("KiB", "MiB", "GiB", "TiB")  # MindSpore's and MindFormers' "GB" is a GiB


def format_bytes(n: float) -> str:
    """`16384` -> `16.0 KiB`, `512` -> `512 B`: binary units, one decimal, negatives kept."""
    value = float(n)
    if abs(float(f"{value:.0f}")) < 1024:  # judged on the number shown: 1023.5 B is "1.0 KiB", not "1024 B"
        return f"{value:.0f} B"
    for unit in BINARY_UNITS:
        value /= 1024
        if abs(float(f"{value:.1f}")) < 1024 or unit == BINARY_UNITS[-1]:  # 1 MiB - 1 B: "1.0 MiB"
            break
    return f"{value:.1f} {unit}"
