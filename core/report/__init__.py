"""Sharing a run: one self-contained HTML report (`data.py` computes it, `html.py` renders it) and a
TensorBoard export (`tensorboard.py`). `source.py` turns a run id or a log folder into what they read.

Why a package of its own: it reads logs (core.logs) and run records (core.run), so it sits above both
and below the CLI; nothing here imports streamlit, so the Monitor's buttons and the CLI share it.
"""

from __future__ import annotations
