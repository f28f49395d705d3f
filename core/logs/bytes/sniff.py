"""A folder's files with no log name, read by their content: the last choice of discovery (core.logs.bytes.discover).

Why: a run's output saved under a name no rule knows (a Slurm job's `#SBATCH -e e` stderr capture, named `e`; a
redirect to `t_tgm-251214_2126.m`) left a folder with no rank: `watch` and `diagnose` read nothing. When no file of
the folder has a log name or a record name, its regular files are looked at: a bounded sample of each (its head and
its tail), taken only when it is text (no NUL byte, UTF-8 but for a rare stray byte) holding training or failure
lines (a loss word before a decimal number, twice; or a Python traceback's header). Never looked at: names of
binaries and checkpoints, configs, code and documents (a `.md` or `.json` is read by its name's rules or not at all),
hidden files, and names holding a word the name rules judge (`log`, `out`, `err`, `std`: their near misses stay
out). Discovery says which files it read this way and why (`Discovery.by_content`, `folder_notes`).
Real files (tests/fixtures/real_logs): `lightning-checkpoint-val-loss-lines-only-no-train-loss_walk-jump-fork-e`
(`Epoch 0, global step 1: 'val_loss' reached 0.33304 (best 0.33304), saving model to ...`) and
`epoch-train-val-pipe-rows-then-bare-traceback-header-in-tqdm_verf-t-tgm-251214-2126`
(`INFO:Trainer:Epoch [1/30] Train: 0.0084 | Val: 0.1483 | 269.4s`, `(Loss: 0.1483)`, a traceback's header).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from core.files import FileCheckError, open_checked

__all__ = ["MAX_SNIFFED", "SAMPLE_BYTES", "holds_training_text", "sniffable"]

SAMPLE_BYTES = 32 << 10  # read from a file's head and from its tail: its first lines and its last
MAX_SNIFFED = 32  # files looked at by content in one folder (a folder of thousands of unnamed files is no run's)
# suffixes never read by content: binaries, checkpoints and arrays, archives, images, configs, code, documents
_NEVER = frozenset(
    {
        *("bin", "pt", "pth", "ckpt", "safetensors", "npz", "npy", "h5", "hdf5", "pkl", "pickle", "onnx", "pb"),
        *("tflite", "mindir", "om", "params", "so", "o", "a", "pyc", "whl", "tar", "gz", "tgz", "bz2", "xz", "zst"),
        *("zip", "7z", "rar", "png", "jpg", "jpeg", "gif", "bmp", "tif", "tiff", "webp", "svg", "pdf", "mp4", "wav"),
        *("flac", "mp3", "yaml", "yml", "toml", "ini", "cfg", "conf", "json", "jsonl", "env", "properties", "lock"),
        *("py", "sh", "bash", "zsh", "c", "cc", "cpp", "cxx", "h", "hpp", "cu", "cuh", "js", "ts", "java", "go", "rs"),
        *("rb", "pl", "lua", "swift", "kt", "scala", "md", "markdown", "rst", "html", "htm", "xml", "ipynb", "tex"),
        *("csv", "tsv"),
    }
)
# a loss word, then within the line a decimal number (`'val_loss' reached 0.33304`, `(Loss: 0.1483)`); a traceback
_LOSS_VALUE = re.compile(rb"(?i)loss[^\n\d]{0,24}[-+]?\d+\.\d")
_TRACEBACK = b"Traceback (most recent call last)"


# a word the name rules judge (`log`, `out`, `err`, `std`): a name holding one was weighed by them, and refused on
# purpose when it is a near miss (`catalog-2024`, `dialog_1`, `logo-2024`, `output-final`: test_issue30_round9fail);
# content does not overrule them
_NAME_WORDS = re.compile(r"log|out|err|std", re.IGNORECASE)


def sniffable(rel: str) -> bool:
    """Whether a file (`rel`, its path in the folder) may be read by its content: not hidden, no word the name
    rules judge in its name, no suffix of a binary, checkpoint, config, code file or document."""
    name = rel.rsplit("/", 1)[-1]
    if name.startswith(".") or _NAME_WORDS.search(name):
        return False
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return suffix not in _NEVER


def _sample(path: Path) -> bytes | None:
    """The file's head and tail (SAMPLE_BYTES each), or None when it cannot be opened as a regular file."""
    try:
        with open_checked(path, None, "log") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(SAMPLE_BYTES)
            if size <= 2 * SAMPLE_BYTES:
                return head + f.read(SAMPLE_BYTES)
            f.seek(size - SAMPLE_BYTES)
            return head + b"\n" + f.read(SAMPLE_BYTES)
    except (OSError, FileCheckError):
        return None


def holds_training_text(path: Path) -> bool:
    """Whether the file is text holding training or failure lines (by a bounded sample: `_sample`)."""
    data = _sample(path)
    if not data or b"\x00" in data:
        return False
    if data.decode("utf-8", "replace").count("\ufffd") > len(data) // 100 + 2:  # (a sample may cut a character)
        return False
    return _TRACEBACK in data or len(_LOSS_VALUE.findall(data, 0)[:2]) == 2
