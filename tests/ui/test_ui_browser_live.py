"""Pages stay live while runs write (server-sent events, no reload, no polling): new metrics become charts,
new samples and findings appear, the runs list picks up new runs."""

from __future__ import annotations

import pytest
from ui_browser_helpers import RED, SHOTS, card, fresh, ink, needs_chromium, wait

import rlcockpit
from rlcockpit.health import Finding

pytestmark = [pytest.mark.slow, needs_chromium]


def test_run_page_picks_up_new_metrics_samples_and_findings(page, browser_env) -> None:
    run = rlcockpit.init(project="live", name="just-started", dir=browser_env["dir"], system_interval=None, health=False,
                         capture_meta=False)
    try:
        run.log({f"data/stat{i}": float(i) for i in range(5)}, step=0)  # what a trainer logs before its first step
        run.flush()
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        fresh(page, browser_env, f"/run/{run.id}", "[data-loaded='1']")
        assert page.locator(".chart-card").count() == 5 and page.locator("#live-indicator").is_visible()
        page.evaluate("() => { window.__sameDocument = true; }")
        assert page.inner_text("#tab-samples").startswith("Samples (0")
        loaded = len(requests)
        for step in range(1, 31):  # now the training keys arrive
            m = {f"actor/m{i}": step * 0.01 * i for i in range(30)}
            m.update({f"critic/c{i}": 1.0 / step for i in range(20)})
            m.update({f"timing_s/t{i}": 0.5 for i in range(20)})
            m["actor/kl_loss"] = 0.001 * step
            run.log(m, step=step)
        run.log_samples([{"prompt": "p", "response": "r", "reward": 1.0}], step=30)
        run.log_finding(Finding(detector="kl_spike", severity="critical", step=25, title="KL up", metric="actor/kl_loss"))
        run.flush()
        wait(page, "document.querySelectorAll('.chart-card').length === 76", timeout=15)
        wait(page, "document.querySelector('#run-step').textContent.includes('30')")
        wait(page, "document.querySelector('#tab-samples').textContent.startsWith('Samples (1')")
        wait(page, "document.querySelector('.sev.critical') && document.querySelector('.sev.critical').textContent === '1'")
        assert page.evaluate("() => window.__sameDocument") is True  # no reload happened
        sections = page.eval_on_selector_all("section.group", "els => els.map(e => e.dataset.group)")
        assert sections[:3] == ["actor", "critic", "timing_s"] and "data" in sections
        wait(page, "Number(document.querySelector(\"" + card("actor/kl_loss") + " .chart-box\").dataset.points) === 30")
        page.wait_for_timeout(300)
        assert ink(page, card("actor/kl_loss") + " canvas", RED, tol=30) > 10  # the new finding's marker
        later = requests[loaded:]
        assert any("/live?" in u for u in requests) and not any("/series?" in u for u in later), later[:5]
        page.screenshot(path=str(SHOTS / "live.png"))
    finally:
        run.finish()
    wait(page, "document.querySelector('#live-indicator').hidden", timeout=10)  # the stream ends with the run


def test_runs_list_picks_up_a_new_run(page, browser_env) -> None:
    fresh(page, browser_env, "/?project=live2", "#runs-table")
    page.evaluate("() => { window.__sameDocument = true; }")
    run = rlcockpit.init(project="live2", name="brand-new", dir=browser_env["dir"], system_interval=None, health=False,
                         capture_meta=False)
    try:
        run.log({"critic/score/mean": 0.5}, step=1)
        run.flush()
        wait(page, "[...document.querySelectorAll('#runs-table .run-link')].some(a => a.textContent === 'brand-new')", timeout=15)
        assert page.evaluate("() => window.__sameDocument") is True
    finally:
        run.finish()
    assert not page.errors, page.errors  # type: ignore[attr-defined]
