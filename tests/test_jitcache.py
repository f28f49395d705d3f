"""numba's disk cache is keyed by the tokens package's source (core.logs.tokens.jitcache): a change to an inlined
module (kwletters.py, stamps.py) once left linescan's stale kernel in use, because numba keys by a file's stamp."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numba

from core.logs.tokens import jitcache, linescan

REPO = Path(__file__).resolve().parents[1]


def test_the_digest_follows_every_module_of_the_package(tmp_path: Path) -> None:
    package = tmp_path / "tokens"
    shutil.copytree(REPO / "core" / "logs" / "tokens", package, ignore=shutil.ignore_patterns("__pycache__"))
    before = jitcache.source_digest(package)
    assert jitcache.source_digest(package) == before  # the same source, the same folder
    kw = package / "kwletters.py"
    kw.write_text(kw.read_text() + "\n# one more line\n")  # an inlined module only: linescan.py untouched
    assert jitcache.source_digest(package) != before
    (package / "new_module.py").write_text("")
    kw.write_text(kw.read_text().removesuffix("\n# one more line\n"))
    assert jitcache.source_digest(package) != before  # a module added counts too


def test_the_folder_lies_under_the_users_numba_folder_else_the_cache_home(tmp_path: Path) -> None:
    digest = jitcache.source_digest()
    assert jitcache.cache_folder(str(tmp_path / "nb"), {}) == tmp_path / "nb" / "shardscope-numba" / digest
    home = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert jitcache.cache_folder("", home) == tmp_path / "xdg" / "shardscope-numba" / digest


def test_the_kernels_are_cached_in_the_content_keyed_folder() -> None:
    folder = jitcache.CACHE_FOLDER
    assert folder is not None and str(folder) == numba.config.CACHE_DIR
    assert folder.name == jitcache.source_digest()
    kernels = [v for v in vars(linescan).values() if isinstance(v, numba.core.registry.CPUDispatcher)]
    assert kernels, "linescan defines compiled kernels"
    for kernel in kernels:
        assert Path(kernel._cache._cache_path).is_relative_to(folder), kernel


def test_an_unwritable_folder_keeps_numbas_default(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the folder's parent should be: mkdir fails
    code = (
        "import numba, os; os.environ['XDG_CACHE_HOME'] = os.environ['BLOCKED']; "
        "numba.config.CACHE_DIR = ''; "
        "from core.logs.tokens import jitcache; print(repr(jitcache.CACHE_FOLDER), repr(numba.config.CACHE_DIR))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"BLOCKED": str(blocked), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        check=True,
    ).stdout.split()
    assert out == ["None", "''"]
