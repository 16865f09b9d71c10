"""W&B-shaped nested summaries (``define_metric(summary="max")``, ``run.summary["acc"] = {"min":, "max":}``) in
the runs table, API and real Chromium: the key-metric columns, W&B's ``loss.min`` columns and filters."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest
from ui_browser_helpers import ARGS, CHROMIUM, needs_chromium, wait
from ui_helpers import base_url, http, running_server

import rlcockpit


def _nested_summary_run(d: Path) -> str:
    """The calls of W&B's "Customize summary metrics" guide, plus a plain run to compare against."""
    run = rlcockpit.init(project="wb", name="nested", dir=d, health=False, system_interval=None, capture_meta=False)
    run.define_metric("reward", summary="max")
    run.define_metric("loss", summary="min,last")
    for i in range(5):
        run.log({"reward": 0.1 * i, "loss": 1.0 - 0.1 * i, "kl": 0.01})
    run.log({"reward": 0.2, "loss": 0.8})
    run.summary["acc"] = {"min": 0.2, "max": 0.9}
    run.finish()
    plain = rlcockpit.init(project="wb", name="plain", dir=d, health=False, system_interval=None, capture_meta=False)
    plain.log({"reward": 0.3, "loss": 0.9})
    plain.finish()
    return run.id


def _get(srv, path: str):
    status, _, body = http(srv, path)
    assert status == 200, body
    return json.loads(body)


def test_nested_summaries_in_runs_api(tmp_path):
    rid = _nested_summary_run(tmp_path)
    with running_server(tmp_path) as srv:
        fields = _get(srv, "/api/runs/fields")["summary"]
        assert {"reward.max", "loss.min", "loss.last", "acc.min", "acc.max", "loss"} <= set(fields), fields
        runs = {r["name"]: r for r in _get(srv, "/api/runs?columns=summary.loss.min,acc.max")["runs"]}
        assert runs["nested"]["id"] == rid
        assert runs["nested"]["metrics"]["reward"] == pytest.approx(0.4)  # the max W&B's summary keeps
        assert runs["nested"]["cols"] == {"summary.loss.min": pytest.approx(0.6), "acc.max": 0.9}
        assert runs["plain"]["cols"] == {"summary.loss.min": None, "acc.max": None}
        flt = urllib.parse.quote("summary.loss.min < 0.7 and reward.max > 0.3")
        got = _get(srv, f"/api/runs?filter={flt}")
        assert [r["name"] for r in got["runs"]] == ["nested"] and got["unknown_names"] == []


@pytest.mark.slow
@needs_chromium
def test_nested_summary_columns_render_in_chromium(tmp_path):
    from playwright.sync_api import sync_playwright

    rid = _nested_summary_run(tmp_path)
    with running_server(tmp_path) as srv, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900}, locale="en-US")
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(base_url(srv) + "/")
        page.evaluate("() => { localStorage.clear(); localStorage.setItem('rlcockpit-lang', 'en'); }")
        page.reload()
        page.wait_for_selector(f"#runs-table tr[data-run='{rid}']")
        reward_cell = page.locator(f"#runs-table tr[data-run='{rid}'] td").nth(6).text_content()
        assert reward_cell.strip().startswith("0.4"), reward_cell
        page.click("#columns-btn")
        page.fill("#column-search", "loss")
        assert page.locator("#column-picker input[data-path='summary.loss.min']").count() == 1
        page.check("#column-picker input[data-path='summary.loss.min']")
        page.wait_for_selector("#runs-table td[data-col='summary.loss.min']")
        cell = page.text_content(f"#runs-table tr[data-run='{rid}'] td[data-col='summary.loss.min']")
        assert cell.strip().startswith("0.6") and "{" not in cell, cell
        page.fill("#run-filter", "loss.min < 0.7")
        page.press("#run-filter", "Enter")
        wait(page, "document.querySelectorAll('#runs-table tbody tr[data-run]').length === 1")
        assert errors == []
        browser.close()
