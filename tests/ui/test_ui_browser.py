"""End-to-end dashboard tests in a real headless Chromium (Debian's /usr/bin/chromium, Playwright).

One browser and one page per module keep these lean. Screenshots of every page land in
``test-output/screenshots/`` (repo root, gitignored) for reviewers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ui_helpers import base_url

import rlcockpit

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is absent (make system-deps installs it)"),
]


@pytest.fixture(scope="module")
def page(server) -> Iterator:
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_page(viewport={"width": 1440, "height": 900})
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        outside: list[str] = []
        origin = base_url(server)
        pg.on("request", lambda r: outside.append(r.url) if not r.url.startswith(origin) else None)
        pg.errors = errors  # type: ignore[attr-defined]
        yield pg
        assert not outside, f"the dashboard requested non-local URLs: {outside[:5]}"
        browser.close()


def _wait(page, expression: str, timeout: float = 8.0) -> None:
    """Poll a JS expression until truthy. (Playwright's wait_for_function evaluates strings with eval,
    which the dashboard's CSP rightly forbids; page.evaluate goes through the DevTools protocol.)"""
    deadline = time.monotonic() + timeout
    while not page.evaluate(f"() => Boolean({expression})"):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {expression}")
        page.wait_for_timeout(100)


def _open(page, server, hash_: str) -> None:
    page.goto(base_url(server) + "/" + hash_)


def _canvas_has_ink(page, selector: str) -> bool:
    """True when the canvas under ``selector`` has drawn pixels in the line colour area (not just axes)."""
    return page.evaluate("""(sel) => {
        const c = document.querySelector(sel);
        if (!c) return false;
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let coloured = 0;
        for (let i = 0; i < d.length; i += 4) {
            const [r, g, b, a] = [d[i], d[i + 1], d[i + 2], d[i + 3]];
            if (a > 0 && b > 180 && r < 120) coloured++;   // the blue series colour (#4c8dff)
        }
        return coloured > 50;
    }""", selector)


def test_runs_list_filter_and_select(page, server, store_env) -> None:
    _open(page, server, "#/")
    page.wait_for_selector("#runs-table tbody tr[data-run]")
    assert page.locator("#runs-table tbody tr[data-run]").count() == 3
    assert page.locator(".pill.failed").count() == 1
    page.fill("#run-search", "baseline")
    _wait(page, "document.querySelectorAll('#runs-table tbody tr[data-run]').length === 1")
    page.fill("#run-search", "")
    _wait(page, "document.querySelectorAll('#runs-table tbody tr[data-run]').length === 3")
    page.screenshot(path=str(SHOTS / "01-runs.png"), full_page=True)


def test_run_page_draws_charts_with_markers_and_tooltip(page, server, store_env) -> None:
    rid = store_env["ids"]["grpo-baseline"]
    _open(page, server, f"#/run/{rid}")
    page.wait_for_selector("[data-loaded='1']")
    groups = page.eval_on_selector_all("section.group", "els => els.map(e => e.dataset.group)")
    assert groups[:3] == ["actor", "critic", "response_length"]
    page.wait_for_timeout(300)
    assert _canvas_has_ink(page, ".chart-card[data-key='actor/kl_loss'] canvas")
    assert _canvas_has_ink(page, ".chart-card[data-key='critic/score/mean'] canvas")
    # hover values
    box = page.locator(".chart-card[data-key='actor/kl_loss'] canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2)
    hover = page.locator(".chart-card[data-key='actor/kl_loss'] .chart-hover")
    hover.wait_for(state="visible")
    assert "step" in hover.inner_text()
    # metric guide tooltip on the metric name
    page.hover(".chart-card[data-key='actor/entropy'] .metric-name")
    page.wait_for_selector("#tip:not([hidden])")
    assert "actor/entropy" in page.inner_text("#tip")
    # smoothing, log scale and wall-time axis redraw without errors
    page.fill("#smoothing", "0.8")
    page.dispatch_event("#smoothing", "input")
    page.check("#log-scale")
    page.select_option("#x-axis", "time")
    page.wait_for_timeout(200)
    assert _canvas_has_ink(page, ".chart-card[data-key='critic/score/mean'] canvas")
    page.uncheck("#log-scale")
    page.select_option("#x-axis", "step")
    page.screenshot(path=str(SHOTS / "02-run-charts.png"))
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_samples_search_highlight_and_xss_is_inert(page, server, store_env) -> None:
    rid = store_env["ids"]["grpo-baseline"]
    page.evaluate("document.title = 'rlcockpit'; window.__pwned = undefined")
    _open(page, server, f"#/run/{rid}/samples")
    page.wait_for_selector("#samples-table tbody tr")
    page.wait_for_timeout(300)
    # the malicious sample is shown as text and nothing ran
    assert page.locator("#samples-table td", has_text="<script>window.__pwned=1").count() == 1
    assert page.locator("#samples-table script, #samples-table img, #samples-table a[href^='javascript']").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert "pwned" not in page.title()
    # repeated span highlighted
    assert page.locator("#samples-table span.rep", has_text="the answer is").count() >= 1
    page.screenshot(path=str(SHOTS / "03-samples.png"), full_page=True)
    # search
    page.fill("#sample-search", "1 + 3")
    _wait(page, "document.querySelectorAll('#samples-table tbody tr').length === 1")
    assert page.locator("#samples-table mark.hit").count() >= 1
    # step slider
    page.fill("#sample-search", "")
    _wait(page, "document.querySelectorAll('#samples-table tbody tr').length === 5")
    page.fill("#step-slider", "0")
    page.dispatch_event("#step-slider", "change")
    _wait(page, "document.querySelector('#step-label').textContent.startsWith('0 ')")
    _wait(page, "document.querySelectorAll('#samples-table tbody tr').length === 4")
    # same prompt at two steps
    page.select_option("#cmp-a", "0")
    page.select_option("#cmp-b", "119")
    page.click("#cmp-btn")
    page.wait_for_selector(".cmp-pair")
    assert "4 prompt(s)" in page.inner_text("#cmp-summary")
    page.screenshot(path=str(SHOTS / "04-samples-compare.png"), full_page=True)
    assert page.evaluate("window.__pwned") is None and "pwned" not in page.title()


def test_diagnosis_and_config_pages(page, server, store_env) -> None:
    rid = store_env["ids"]["grpo-baseline"]
    _open(page, server, f"#/run/{rid}/diagnosis")
    page.wait_for_selector("#root-cause")
    assert page.locator(".finding").count() >= 1
    assert "=" in page.inner_text("pre.overrides")
    page.click("#copy-overrides")
    page.screenshot(path=str(SHOTS / "05-diagnosis.png"), full_page=True)
    _open(page, server, f"#/run/{rid}/config")
    page.wait_for_selector("#config-table")
    assert "actor.optim.lr" in page.inner_text("#config-table")
    assert page.inner_text("#run-command").strip() != ""
    page.screenshot(path=str(SHOTS / "06-config.png"), full_page=True)


def test_compare_two_runs(page, server, store_env) -> None:
    _open(page, server, "#/")
    page.wait_for_selector("#runs-table tbody tr[data-run]")
    for name in ("grpo-baseline", "grpo-high-lr"):
        page.locator("#runs-table tbody tr", has_text=name).locator("input.run-select").check()
    assert page.is_enabled("#compare-btn")
    page.click("#compare-btn")
    page.wait_for_selector("#config-diff")
    page.wait_for_selector("#compare-charts .chart-card")
    page.wait_for_timeout(300)
    assert "actor.optim.lr" in page.inner_text("#config-diff")
    assert "rollout.n" not in page.inner_text("#config-diff")  # only differing keys by default
    assert page.locator("#compare-legend a").count() == 2
    assert _canvas_has_ink(page, "#compare-charts .chart-card canvas")
    assert _canvas_has_ink(page, "#path-plot canvas")
    page.screenshot(path=str(SHOTS / "07-compare.png"), full_page=True)
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_live_run_charts_update_without_reload(page, server, store_env) -> None:
    run = rlcockpit.init(project="arith", name="live", dir=store_env["dir"], system_interval=None, health=False,
                         capture_meta=False)
    try:
        for s in range(20):
            run.log({"critic/score/mean": s / 20}, step=s)
        run.flush()
        _open(page, server, f"#/run/{run.id}")
        page.wait_for_selector("[data-loaded='1']")
        assert page.locator("#live-indicator").is_visible()
        series_requests: list[str] = []
        page.on("request", lambda r: series_requests.append(r.url) if "/series?" in r.url else None)
        for s in range(20, 30):
            run.log({"critic/score/mean": 5.0}, step=s)
        run.flush()
        _wait(page, "document.querySelector(\"#run-name\").parentElement.textContent.includes('step 29')",
          timeout=8)
        last = page.inner_text(".chart-card[data-key='critic/score/mean'] .last")
        assert last == "5"
        # only incremental fetches after the first load: nothing re-downloads the whole history
        assert series_requests and all("since=" in u for u in series_requests)
        page.screenshot(path=str(SHOTS / "08-live.png"))
    finally:
        run.finish()
