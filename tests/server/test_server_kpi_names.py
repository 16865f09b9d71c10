"""A KPI target on a metric whose name has a space (issue 25, item 20): parsed, added from the team page in
Chromium, and drawn on that metric's chart."""

from __future__ import annotations

import numpy as np
import pytest

from rlcockpit.server.kpi import parse_target
from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.remote.client import RemoteStore

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
KEY = "reward mean"


@pytest.mark.parametrize("text,want", [("reward mean >= 0.5", ("reward mean", ">=", 0.5)),
                                       ("  eval / pass rate<70%", ("eval / pass rate", "<", 0.7)),
                                       ('"odd >name" > 1', ("odd >name", ">", 1.0))])
def test_target_keys_may_hold_spaces(text, want) -> None:
    assert parse_target(text) == want


@pytest.mark.parametrize("bad", ["reward mean", "a >= b >= 1", "  >= 1"])
def test_still_refused(bad) -> None:
    with pytest.raises(ValueError, match="KPI target"):
        parse_target(bad)


@pytest.mark.slow
def test_team_page_adds_a_target_on_a_spaced_metric(team, tmp_path) -> None:
    from playwright.sync_api import sync_playwright

    remote = RemoteStore(team.url, team.tokens["alice"], spool_dir=tmp_path, start=False)
    remote.create_run({"id": "r-space", "project": "rl", "name": "space-run"})
    remote.write_batch("r-space", WriteBatch(points={KEY: (np.arange(10), np.linspace(0.1, 0.9, 10), np.zeros(10))}))
    assert remote.uploader.flush()
    remote.close()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{team.url}/?token={team.tokens['boss']}#/team?project=rl")
        page.wait_for_selector("#kpi-input")
        page.fill("#kpi-input", f"{KEY} >= 0.5")
        page.click("#kpi-add")
        page.locator("#kpi-targets h4", has_text=f"{KEY} >= 0.5").wait_for(timeout=15_000)
        assert not page.locator("#kpi-targets .error:visible").count()
        team.server.team.kpis.drain()
        page.goto(f"{team.url}/#/run/r-space")
        page.wait_for_selector(f".chart-card[data-key='{KEY}'] .chart-box[data-targets='1']")
        browser.close()
    assert not errors, errors
