"""The tokens every stage above agrees on: what a number is, which fields a row has, and the level tags
that mark framework chatter and error lines. Kept here, at the bottom of the line stages, so the byte scans
(`bulk`, `plain`) and the grammar (`core.logs.rows.general`, `formats`) read one definition."""

from __future__ import annotations

ROW_FIELDS = (
    "epoch",
    "step",
    "epochs_total",
    "steps_total",
    "loss",
    "step_time_ms",
    "lr",
    "global_norm",
    "loss_scale",
    "overflow",
    "throughput",
    "time",
)
"""What a loss line gives, in the order of the metric columns (then offset, added by the reader)."""

ROW_KEYS = (*ROW_FIELDS, "offset")
"""A row as the byte scans hand it over: the fields, then where its line starts in the file."""

NUM = rb"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|NAN|[Ii]nfinity|inf|Inf|INF)"
"""A number as logs print it: decimals, exponents, and every spelling of NaN and infinity."""

NOISE_PREFIXES = (b"[WARNING]", b"[INFO]", b"[DEBUG]")
"""MindSpore's level tags for lines that never carry a row or end a rank on their own."""

ERROR_PREFIXES = (b"[ERROR]", b"[CRITICAL]", b"[EXCEPTION]")
"""MindSpore's level tags for error lines."""
