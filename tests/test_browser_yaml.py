"""The Planner in a real browser with a hostile YAML uploaded (issue 31 item 1): two sessions on one server.

Before, the 600-byte alias bomb (level 8) grew the server to 22 GB until the kernel killed it, and level 7
stalled every session for 10 s. Now one session uploads it and sees one line; the other keeps working.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from tests.helpers import bomb

pytestmark = pytest.mark.browser


def test_a_bomb_uploaded_in_one_session_is_one_line_and_the_other_session_keeps_working(tmp_path: Path) -> None:
    from tests.browser import VIEWPORT, choose, chromium, dashboard, shot, wait_idle

    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(8))
    with dashboard(tmp_path / "ws") as url, chromium() as browser:
        uploader = browser.new_context(viewport=VIEWPORT).new_page()
        other = browser.new_context(viewport=VIEWPORT).new_page()
        for page in (uploader, other):
            page.goto(f"{url}/planner")
            page.get_by_text("Proposed:").wait_for(timeout=90_000)
            wait_idle(page)
        recipes = other.locator("[data-testid='stMetricValue']").first
        before = recipes.inner_text()

        choose(uploader, uploader.locator("[data-testid='stSelectbox']").first, "a MindFormers YAML")
        uploader.locator("input[type='file']").first.set_input_files(str(path))
        # meanwhile the other session asks for 64 devices instead of 8: a new plan is drawn
        devices = other.get_by_label("devices", exact=True)
        devices.fill("64")
        devices.press("Enter")

        error = uploader.locator("[data-testid='stAlertContentError']").filter(has_text="Cannot read the YAML")
        error.wait_for(timeout=60_000)
        text = error.inner_text().strip()
        assert "\n" not in text and len(text) < 400, text
        assert "bomb.yaml" in text and "key l4[1]" in text and "more than 20,000 values" in text, text
        shot(uploader, "planner_yaml_bomb_refused")

        other.wait_for_function(
            "before => document.querySelector('[data-testid=\"stMetricValue\"]').innerText !== before",
            arg=before,
            timeout=90_000,
        )
        wait_idle(other)
        assert other.get_by_text("Proposed:").count() == 1
        assert recipes.inner_text() != before
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=10) as health:  # the server is alive
            assert health.status == 200
