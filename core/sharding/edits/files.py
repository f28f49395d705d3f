"""Designs on disk: the first-visit design, listing, loading and saving inside a folder."""

from __future__ import annotations

from pathlib import Path

from core.sharding.design import Design, DesignError, LayoutSpec, Sharding, TensorSpec, load_design, save_design
from core.workspace import EXAMPLES_DIR, WorkspaceError, child

DEFAULT_EXAMPLE = "seed004_dense_matmul.json"


def default_design() -> Design:
    """Seed 004's DenseMatMulNet: what a first visit shows."""
    try:
        return load_design(EXAMPLES_DIR / DEFAULT_EXAMPLE, strict=False)
    except DesignError:
        return Design(
            name="seed004_dense_matmul",
            layouts={"layout": LayoutSpec((2, 2, 2), ("dp", "sp", "mp"))},
            tensors={"x": TensorSpec((2, 4), "float32", Sharding("layout", ("mp", ("sp", "dp"))))},
        )


def list_designs(folder: Path) -> list[str]:
    """JSON design files in a folder, by name (a missing folder has none)."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.glob("*.json") if p.is_file())


def design_file_name(name: str) -> str:
    """The file name a design is saved under: its name + .json, checked so it cannot escape."""
    name = name.strip()
    if not name.endswith(".json"):
        name += ".json"
    return name


def load_from_folder(folder: Path, file_name: str) -> tuple[Design | None, list[str]]:
    """(design, []) or (None, ["$.path: message", ...]); never raises."""
    try:
        path = child(folder, file_name, "design file")
    except WorkspaceError as exc:
        return None, [str(exc)]
    try:
        return load_design(path, strict=False), []
    except DesignError as exc:
        return None, [f"{p.path}: {p.message}" for p in exc.problems]


def save_to_folder(design: Design, folder: Path, file_name: str) -> Path:
    """Save under folder/<name>.json; raises WorkspaceError for names that would escape."""
    folder.mkdir(parents=True, exist_ok=True)
    return save_design(design, child(folder, design_file_name(file_name), "design file"))
