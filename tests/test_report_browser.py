"""Issue 34 item 4 in a browser: the report of a 1,024-rank run opens from file:// in Chromium with no
network request at all, and its plotly charts are drawn (screenshots in test-artifacts/: look at them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cli.report import handle
from tests.browser import ARTIFACTS, chromium, require_browser
from tests.helpers import report_args, synth_folder

pytestmark = pytest.mark.browser
FIXTURE = Path(__file__).parent / "fixtures" / "real_msrun_logs" / "dp8_cpu_ok"


@pytest.mark.parametrize(("which", "charts"), [("ranks1024", 2), ("real_dp8", 2), ("real_failed", 0)])
def test_report_opens_offline_and_draws_its_charts(tmp_path: Path, which: str, charts: int) -> None:
    require_browser()
    real = {"real_dp8": FIXTURE, "real_failed": FIXTURE.parent / "semi_auto_on_cpu_error"}  # 7 ranks raised
    folder = synth_folder(tmp_path / "logs") if which == "ranks1024" else real[which]
    out = tmp_path / "run.html"
    assert handle(report_args(str(folder), str(out))) == 0
    requests: list[str] = []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("request", lambda r: requests.append(r.url))
        page.goto(out.as_uri(), wait_until="load")
        page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= {charts}")
        drawn = page.locator(".js-plotly-plot").count()
        lines = page.locator(".js-plotly-plot .scatterlayer .trace").count()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"report_{which}.png"), full_page=True)
    assert requests == [out.as_uri()]  # the file itself, nothing else: it opens offline
    assert drawn == charts  # loss and step time
    assert lines >= 3 or not charts  # band, mean and at least one line drawn (not an empty plot)
