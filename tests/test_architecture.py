"""The house rules of core/, checked on the code itself: one package per concern, imports one way.

No core module imports streamlit; no module of core/, app/ or pages/ grows past ~500 lines; no import
cycle between modules; the packages form a one-way stack (cli -> run -> codegen -> models/plan ->
sharding -> files -> workspace; logs -> files -> workspace; errors and units under all); every error a user
is shown subclasses core.errors.UserError.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

from core.workspace import REPO_ROOT

CORE = REPO_ROOT / "core"
MAX_LINES = 520  # "no module over ~500 lines"
PACKAGES = [
    *("errors", "units", "workspace", "files"),
    *("sharding", "models", "plan", "codegen", "run", "logs", "alerts", "report", "cli", "__main__"),
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in CORE.rglob("*.py"):
        name = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the core modules it imports (a `from pkg import mod` counts as pkg.mod)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "core":
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    deps.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.split(".")[0] == "core"}
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def test_core_never_imports_streamlit() -> None:
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            assert not any(n.split(".")[0] == "streamlit" for n in names), name


def test_no_module_in_core_is_over_about_500_lines() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in _modules().items()}
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}


def test_no_module_in_app_or_pages_is_over_about_500_lines() -> None:
    """The UI layer keeps the same rule as core (issue 20: the Designer page was 948 lines)."""
    paths = [*(REPO_ROOT / "app").rglob("*.py"), *(REPO_ROOT / "pages").rglob("*.py")]
    assert len(paths) > 10  # the folders were found
    sizes = {str(p.relative_to(REPO_ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in paths}
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}


def test_no_import_cycle_between_modules() -> None:
    graph = _imports(_modules())
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for dep in graph[node]:
            if dep.startswith(node + "."):
                continue  # a package re-exporting its own modules
            if state.get(dep) == 1:
                cycles.append([*stack[stack.index(dep) :], dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])
    assert cycles == []


def test_packages_import_one_way() -> None:
    """A package may import only packages below it in PACKAGES (logs stands beside the others)."""
    graph = _imports(_modules())
    upward = []
    for name, deps in graph.items():
        if name == "core":
            continue
        here = name.split(".")[1]
        for dep in deps:
            there = dep.split(".")[1]
            if here != there and PACKAGES.index(there) > PACKAGES.index(here):
                upward.append(f"{name} -> {dep}")
    assert upward == []
    assert not any(
        d.split(".")[1] in {"run", "codegen", "cli"} for n, ds in graph.items() if n.startswith("core.logs") for d in ds
    )


def test_every_user_facing_error_is_a_user_error() -> None:
    """Pages and the CLI catch `UserError`: an error class of core that is not one would escape them
    as a traceback (private helpers, `_Name`, are never shown)."""
    import importlib
    import inspect

    from core.errors import UserError

    strays = []
    for name in _modules():
        if name.endswith("__main__"):
            continue
        module = importlib.import_module(name)
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                cls.__module__ == name
                and issubclass(cls, Exception)
                and not cls_name.startswith("_")
                and not issubclass(cls, UserError)
            ):
                strays.append(f"{name}.{cls_name}")
    assert strays == []
    assert _imports(_modules())["core.errors"] == set()  # the ground floor imports nothing of core


MAX_UI_FUNCTION_LINES = 60  # "no UI function over 60 lines" (issue 32): compute first, then draw


def _function_lengths(source: str) -> dict[str, int]:
    """name -> lines (def to last line) of every function in `source`, nested ones included (the longest
    of two functions of one name)."""
    lengths: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            lengths[node.name] = max(lengths.get(node.name, 0), lines)
    return lengths


def _ui_functions() -> dict[str, int]:
    """'path:name' -> lines of every function in app/ and pages/, nested ones included."""
    lengths: dict[str, int] = {}
    for path in [*(REPO_ROOT / "app").rglob("*.py"), *(REPO_ROOT / "pages").rglob("*.py")]:
        for name, lines in _function_lengths(path.read_text(encoding="utf-8")).items():
            lengths[f"{path.relative_to(REPO_ROOT)}:{name}"] = lines
    return lengths


def test_no_function_in_app_or_pages_is_over_60_lines() -> None:
    """A UI function that computes while it draws grows without end (issue 32: loss_figure 132 lines)."""
    lengths = _ui_functions()
    assert len(lengths) > 100  # the functions were found, nested ones too
    assert {where: n for where, n in lengths.items() if n > MAX_UI_FUNCTION_LINES} == {}


def test_the_function_length_rule_counts_nested_functions() -> None:
    """A closure inside a short page function is a function too (the Monitor's live_panel was one)."""
    body = "\n".join(f"        x{i} = {i}" for i in range(70))
    source = f"def page() -> None:\n    def panel() -> None:\n{body}\n    panel()\n"
    assert _function_lengths(source) == {"page": 73, "panel": 71}


LAUNCHER_NAMES = frozenset({"msrun", "mpirun", "slurm", "rank_table"})
LAUNCHER_PACKAGES = ("core/run/launchers/", "core/codegen/launchers/")


def _launcher_name_branches(source: str) -> list[int]:
    """Lines comparing something to a launcher's name (`x == "slurm"`, `x in ("msrun", ...)`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for side in [node.left, *node.comparators]:
            items = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
            if any(isinstance(i, ast.Constant) and i.value in LAUNCHER_NAMES for i in items):
                found.append(node.lineno)
    return found


def test_nothing_outside_the_launcher_objects_branches_on_a_launcher_name() -> None:
    """CONTRIBUTING: a launcher is one module per package; a branch on its name elsewhere is a launcher
    that adding one would have to find (issue 32: preflight and the Launch page still had six)."""
    branches = {}
    for path in [*CORE.rglob("*.py"), *(REPO_ROOT / "app").rglob("*.py"), *(REPO_ROOT / "pages").rglob("*.py")]:
        where = str(path.relative_to(REPO_ROOT))
        if not where.startswith(LAUNCHER_PACKAGES):
            lines = _launcher_name_branches(path.read_text(encoding="utf-8"))
            if lines:
                branches[where] = lines
    assert branches == {}
    assert _launcher_name_branches('if job.launcher == "slurm" or x in ("mpirun", "y"):\n    pass\n') == [1, 1]


def test_one_view_of_a_run_s_processes() -> None:
    """Stop, clean-up, status and the supervisor ask `RunProcesses`; no second function asks the same."""
    defined = {
        node.name
        for path in CORE.rglob("*.py")
        for node in ast.parse(path.read_text(encoding="utf-8")).body  # module functions (not the view's methods)
        if isinstance(node, ast.FunctionDef)
    }
    assert defined & {"run_processes", "leftover_processes", "launcher_alive", "_kill_leftovers"} == set()


def _dead_definitions() -> list[str]:
    """Module-level functions and classes of core/, app/ and pages/ whose name appears nowhere but in their
    own definition (not in another module, a test, a benchmark or a script)."""
    folders = ("core", "app", "pages", "tests", "benchmarks", "scripts")
    texts = {
        path: path.read_text(encoding="utf-8") for folder in folders for path in (REPO_ROOT / folder).rglob("*.py")
    }
    words: Counter[str] = Counter()
    for text in texts.values():
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    dead = []
    for path, text in texts.items():
        if path.relative_to(REPO_ROOT).parts[0] in ("core", "app", "pages"):
            for node in ast.parse(text).body:
                dunder = getattr(node, "name", "").startswith("__")  # Python calls it (a module __getattr__)
                if isinstance(node, ast.FunctionDef | ast.ClassDef) and not dunder and words[node.name] <= 1:
                    dead.append(f"{path.relative_to(REPO_ROOT)}:{node.name}")
    return dead


def test_no_dead_definition() -> None:
    """Issue 32: eleven functions nobody called (bytes_bar_figure, start_run, same_process, ...) still read
    as part of the design; a definition nothing names is deleted."""
    assert _dead_definitions() == []


def _test_imports() -> list[tuple[str, str, str]]:
    """(test file, module, name) of every `from X import name` in tests/."""
    found = []
    for path in (REPO_ROOT / "tests").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found += [(path.name, node.module, alias.name) for alias in node.names]
    return found


def test_tests_import_helpers_from_helper_modules_never_from_a_test_module() -> None:
    """Shared strategies live in tests/strategies.py, other helpers in tests/helpers.py (jobs.py, browser.py):
    importing a test module runs its module code and, under pytest, collects its tests a second time."""
    assert [(f, m) for f, m, _ in _test_imports() if m.startswith("tests.test_")] == []
    assert (REPO_ROOT / "tests" / "strategies.py").is_file() and (REPO_ROOT / "tests" / "helpers.py").is_file()


def test_tests_import_no_private_name_of_core() -> None:
    """Tests go through public seams: a private name a test needs becomes a small public one that says
    what it is for (issue 32: `_worth_positions`, `_json`, `_node_exec`, ... were imported)."""
    private = [
        (f, m, n)
        for f, m, n in _test_imports()
        if m.split(".")[0] in ("core", "app", "pages") and n.startswith("_") and not n.startswith("__")
    ]
    assert private == []


def test_no_hypothesis_example_database_is_in_the_repository() -> None:
    """Hypothesis keeps failing examples in .hypothesis/: local state, never committed (a database would
    replay one machine's examples on every clone)."""
    assert ".hypothesis/" in (REPO_ROOT / ".gitignore").read_text(encoding="utf-8").split()
    if shutil.which("git") and (REPO_ROOT / ".git").exists():
        tracked = subprocess.run(
            ["git", "ls-files", "--", ".hypothesis"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        )
        assert tracked.stdout == ""


def _module_aliases(tree: ast.Module) -> set[str]:
    """Names a test binds to a module of core/, app/ or pages/ (`import core.x as y`, `from core import x`)."""
    own = ("core", "app", "pages")
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name for a in node.names if a.name.split(".")[0] in own}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in own:
            base = REPO_ROOT.joinpath(*node.module.split("."))
            for alias in node.names:
                if (base / f"{alias.name}.py").is_file() or (base / alias.name / "__init__.py").is_file():
                    names.add(alias.asname or alias.name)
    return names


def test_tests_read_no_private_name_of_a_core_or_app_module() -> None:
    """`module._name` in a test is a private import by another spelling (issue 32: `live_chart._build_dir`)."""
    found = []
    for path in (REPO_ROOT / "tests").glob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = _module_aliases(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    assert found == []
