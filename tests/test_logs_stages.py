"""core/logs is laid out by stage (issue 30 item 5): bytes -> tokens -> rows -> judgement -> live, and a
module only imports its own stage or those below it; every stage's map names exactly its modules."""

from __future__ import annotations

import ast
import re

from core.workspace import REPO_ROOT

LOGS = REPO_ROOT / "core" / "logs"
STAGES = ["bytes", "tokens", "rows", "judgement", "live"]


def _stage_imports() -> list[tuple[str, str, str]]:
    """(module, its stage, the stage it imports) for every core.logs import."""
    found = []
    for path in sorted(LOGS.rglob("*.py")):
        rel = path.relative_to(LOGS).parts
        if len(rel) < 2:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("core.logs."):
                found.append(("/".join(rel), rel[0], node.module.split(".")[2]))
    return found


def test_every_module_sits_in_a_stage() -> None:
    flat = sorted(p.name for p in LOGS.glob("*.py") if p.name != "__init__.py")
    assert flat == []
    assert sorted(p.name for p in LOGS.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(STAGES)


def test_imports_run_up_the_stages_never_down() -> None:
    found = _stage_imports()
    assert found, "no import between stages found: the check reads nothing"
    wrong = [(m, t) for m, s, t in found if STAGES.index(t) > STAGES.index(s)]
    assert wrong == []


def test_each_stage_map_names_exactly_its_modules() -> None:
    for stage in STAGES:
        doc = ast.get_docstring(ast.parse((LOGS / stage / "__init__.py").read_text(encoding="utf-8"))) or ""
        named = set(re.findall(r"\b([a-z0-9_]+\.py)\b", doc))
        modules = {p.name for p in (LOGS / stage).glob("*.py") if p.name != "__init__.py"}
        assert named == modules, stage
