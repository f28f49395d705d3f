"""The dashboard's pages in one place, so pages can link to each other by key."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PAGES_DIR = Path(__file__).resolve().parent.parent / "pages"


@dataclass(frozen=True)
class PageInfo:
    key: str
    title: str
    icon: str
    blurb: str

    @property
    def path(self) -> Path:
        return PAGES_DIR / f"{self.key}.py"


PAGES: dict[str, PageInfo] = {
    page.key: page
    for page in (
        PageInfo("home", "Home", ":material/home:", "What ShardScope does and where to start."),
        PageInfo(
            "planner",
            "Planner",
            ":material/insights:",
            "Every data / model / pipeline / sequence / optimizer-parallel recipe for your cards: memory per card "
            "against communication per step; apply the one that fits, export MindFormers' parallel_config.",
        ),
        PageInfo(
            "designer",
            "Layout Designer",
            ":material/grid_view:",
            "Compose a device matrix and drag device axes onto tensor dimensions; see which slice lives on "
            "which rank and what communication each operator implies.",
        ),
        PageInfo(
            "launch",
            "Launch",
            ":material/rocket_launch:",
            "Generate train.py + run.sh for a MindSpore scenario from the design, check the machine, "
            "launch and stop the job with one click.",
        ),
        PageInfo(
            "monitor",
            "Monitor",
            ":material/monitoring:",
            "Live per-rank loss curves parsed from the workers' logs; crashed, stalled and NaN ranks at a glance.",
        ),
    )
}


def page_path(key: str) -> Path:
    return PAGES[key].path
