"""Where numba keeps the compiled scans: a folder named by the scans' source text, not by their files' stamps.

Why: numba's disk cache keys a function by its own file's stamp (mtime and size), and linescan.py's kernel
inlines kwletters.py and stamps.py, so a change to those alone left a stale kernel in use (seen twice, and the
tests passed on it). Every kernel module imports this first: numba's cache folder becomes one per content digest
of this package's modules (and numba's version), so a changed source, an upgrade or a checkout of another commit
compiles afresh, and the old folder is never read. Under the user's own `NUMBA_CACHE_DIR` when set (numba reads
it into `numba.config.CACHE_DIR`), else the user's cache folder; when neither can be written, numba's own default
is kept. numba reads the setting when a function is decorated, so the modules must import this before that.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

import numba

__all__ = ["CACHE_FOLDER", "cache_folder", "source_digest", "use_content_keyed_cache"]

_PACKAGE = Path(__file__).resolve().parent


def source_digest(package: Path = _PACKAGE) -> str:
    """A digest of every module of `package` (names and bytes) and numba's version: the compiled code's identity."""
    digest = hashlib.sha256(numba.__version__.encode())
    for path in sorted(package.glob("*.py")):
        digest.update(b"\0" + path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def cache_folder(user_dir: str, environ: Mapping[str, str] = os.environ) -> Path:
    """The folder for this source's compiled code: under numba's user-set folder, else the user's cache folder."""
    root = Path(user_dir) if user_dir else Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "shardscope-numba" / source_digest()


def use_content_keyed_cache() -> Path | None:
    """Point numba's disk cache at `cache_folder` (created 0700); None, and numba's default kept, if not writable."""
    user_dir = str(getattr(numba.config, "CACHE_DIR", "") or "")  # numba's config sets its names at run time
    folder = cache_folder(user_dir)
    if user_dir == str(folder):
        return folder
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK | os.X_OK):
        return None
    setattr(numba.config, "CACHE_DIR", str(folder))  # noqa: B010 (a name numba's config sets at run time)
    return folder


CACHE_FOLDER = use_content_keyed_cache()
