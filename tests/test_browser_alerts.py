"""Issue 34 item 2, the browser channel: an open Monitor tab whose run fails asks the browser for a
notification (permission granted here as a user would), once per alert per session."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.browser import chromium, dashboard, require_browser, shot

pytestmark = pytest.mark.browser

# every frame's Notification wrapped: each one created is reported on the console, then really created
CAPTURE = """(() => {
  const Real = window.Notification;
  if (!Real || Real.__captured) return;
  function Captured(title, options) {
    const seen = {title: title, body: (options || {}).body, permission: Real.permission};
    console.log("NOTIFICATION " + JSON.stringify(seen));
    return new Real(title, options);
  }
  Object.defineProperty(Captured, "permission", {get: () => Real.permission});
  Captured.requestPermission = (...args) => Real.requestPermission(...args);
  Captured.__captured = true;
  window.Notification = Captured;
})();"""
LOSS = "".join(f"epoch: 1 step: {i}, loss is {2 - i / 100}\n" for i in range(1, 9))
CRASH = "Traceback (most recent call last):\n" + '  File "train.py", line 9, in <module>\n'
CRASH += "RuntimeError: allreduce lost its peer\n"


def test_a_rank_failing_under_an_open_tab_shows_one_notification(tmp_path: Path) -> None:
    require_browser()
    logs = tmp_path / "log_output"
    logs.mkdir()
    for rank in range(2):
        (logs / f"worker_{rank}.log").write_text(LOSS)
    seen: list[dict] = []
    with dashboard(tmp_path / "ws") as url, chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.grant_permissions(["notifications"], origin=url)
        context.add_init_script(CAPTURE)
        page = context.new_page()
        page.on("console", lambda msg: msg.text.startswith("NOTIFICATION ") and seen.append(json.loads(msg.text[13:])))
        page.goto(f"{url}/monitor?logdir={logs}", wait_until="domcontentloaded")
        page.get_by_text("Step time", exact=True).first.wait_for(timeout=90_000)
        page.wait_for_timeout(3000)  # a few live ticks: a healthy run asks for nothing
        assert seen == []
        with (logs / "worker_1.log").open("a") as f:
            f.write(CRASH)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not seen:
            page.wait_for_timeout(300)
        assert seen, "no notification was created"
        page.wait_for_timeout(4000)  # more live ticks and re-renders: still one notification
        shot(page, "monitor_alert_notification", full=True)
    assert len(seen) == 1, seen
    assert seen[0]["title"] == "ShardScope: rank 1 failed" and seen[0]["permission"] == "granted"
    assert (
        seen[0]["body"] == "log_output: rank 1 failed first (RuntimeError: allreduce lost its peer); 1 rank(s) failed"
    )
