"""The team dashboard in real Chromium: KPI target lines on charts, the leaderboard, adding a target, saving
a view and opening its link, rating a sample — through the browser's cookie login (CSRF enforced)."""

from __future__ import annotations

import numpy as np
import pytest

from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.remote.client import RemoteStore

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
KEY = "val-core/aime/acc/mean@1"

pytestmark = pytest.mark.slow


@pytest.fixture
def browser_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield page, errors
        browser.close()


def test_team_dashboard_in_chromium(team, tmp_path, browser_page) -> None:
    page, errors = browser_page
    remote = RemoteStore(team.url, team.tokens["alice"], spool_dir=tmp_path, start=False)
    remote.create_run({"id": "r-aime", "project": "rl", "name": "aime-run"})
    steps = np.arange(20)
    remote.write_batch("r-aime", WriteBatch(points={KEY: (steps, np.linspace(0.3, 0.8, 20), np.zeros(20))},
                                            samples=[(19, [{"prompt": "1+1?", "response": "\\boxed{}", "reward": 1.0}])]))
    assert remote.uploader.flush()
    remote.close()
    with team.client("boss") as boss:
        assert boss.post("/api/team/projects/rl/targets", json={"target": f"{KEY} >= 0.70", "label": "AIME"}).status_code == 200
    team.server.team.kpis.drain()

    page.goto(f"{team.url}/?token={team.tokens['boss']}#/team?project=rl")  # cookie login, then the cookie is used
    page.wait_for_selector("#kpi-targets table")
    assert "token" not in page.url and page.url.endswith("/#/team?project=rl")  # out of the address bar
    assert team.tokens["boss"] not in page.evaluate("window.location.href + JSON.stringify(history.state)")
    text = page.inner_text("#kpi-targets")
    assert "aime-run" in text and "AIME" in text and "alice" in text
    page.fill("#kpi-input", "perf/throughput >= 2000")
    page.click("#kpi-add")  # a browser write: goes through the CSRF check
    page.locator("#kpi-targets h4", has_text="perf/throughput").wait_for()

    page.goto(f"{team.url}/#/run/r-aime")
    page.wait_for_selector(f".chart-card[data-key='{KEY}'] .chart-box[data-targets='1']")

    page.on("dialog", lambda d: d.accept("my view"))
    page.click("#save-view")
    page.wait_for_selector("#view-link")
    link = page.inner_text("#view-link")
    assert "/#/view/" in link
    page.goto(f"{team.url}/#/")
    page.goto(link)
    page.wait_for_url("**/#/run/r-aime*")

    page.goto(f"{team.url}/#/run/r-aime/samples")
    page.wait_for_selector("#samples-table .rate-btn[data-rating='hacked']")
    page.click("#samples-table .rate-btn[data-rating='hacked']")
    page.wait_for_selector("#samples-table .rating.hacked")
    ratings = team.server.store.events("r-aime", "sample_rating")
    assert ratings and ratings[0]["payload"]["rating"] == "hacked" and ratings[0]["payload"]["author"] == "boss"
    assert not errors, errors
