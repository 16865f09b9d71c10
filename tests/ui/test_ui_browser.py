"""Run-page charts in real Chromium: zoom and reset, synced crosshair and x-range, smoothing, x-axis modes,
per-chart log scale, enlarge, legend toggles, "add runs", findings only where cited with tooltips inside the
window, regex search and sections kept in URL + localStorage, PNG and CSV export, the data_lost banner."""

from __future__ import annotations

import pytest
from ui_browser_helpers import BLUE, ORANGE, RED, SHOTS, card, fresh, ink, needs_chromium, open_page, wait

pytestmark = [pytest.mark.slow, needs_chromium]


def _run_page(page, env, name="grpo-baseline", extra=""):
    fresh(page, env, f"/run/{env['ids'][name]}{extra}", "[data-loaded='1']")


def _drag(page, selector, frm: float, to: float) -> None:
    box = page.locator(selector + " .u-over").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * frm, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * (frm + to) / 2, y, steps=4)
    page.mouse.move(box["x"] + box["width"] * to, y, steps=4)
    page.mouse.up()


def _xrange(page, key):
    return page.evaluate("(sel) => { const b = document.querySelector(sel + ' .chart-box'); return [Number(b.dataset.xmin), Number(b.dataset.xmax)]; }",
                         card(key))


def test_drag_zoom_syncs_every_chart_and_double_click_resets(page, browser_env) -> None:
    _run_page(page, browser_env)
    full = _xrange(page, "actor/entropy")
    assert full[0] <= 0 and full[1] >= 119
    _drag(page, card("actor/kl_loss"), 0.3, 0.6)
    zoomed = wait(page, "(() => { const b = document.querySelector(\"" + card("actor/entropy") + " .chart-box\"); "
                  "return Number(b.dataset.xmax) - Number(b.dataset.xmin) < 60 ? [Number(b.dataset.xmin), Number(b.dataset.xmax)] : null; })()")
    assert 20 < zoomed[0] < 50 and 50 < zoomed[1] < 90
    for key in ("actor/kl_loss", "critic/score/mean", "perf/throughput"):  # the same range on every chart of the page
        assert _xrange(page, key) == pytest.approx(zoomed, abs=1e-6)
    page.dblclick(card("critic/score/mean") + " .u-over")
    wait(page, "Number(document.querySelector(\"" + card("actor/kl_loss") + " .chart-box\").dataset.xmax) >= 119")
    assert _xrange(page, "actor/entropy") == pytest.approx(full, abs=1e-6)


def test_crosshair_is_synced_across_charts(page, browser_env) -> None:
    _run_page(page, browser_env)
    box = page.locator(card("actor/kl_loss") + " .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
    page.wait_for_timeout(150)
    lefts = page.evaluate("""(keys) => keys.map((k) => {
        const c = document.querySelector(`.chart-card[data-key='${k}'] .u-cursor-x`);
        const over = document.querySelector(`.chart-card[data-key='${k}'] .u-over`).getBoundingClientRect();
        const m = /translate\\(([-\\d.]+)px/.exec(c.style.transform || "");
        return m ? Number(m[1]) / over.width : (parseFloat(c.style.left) / over.width);
    })""", ["actor/kl_loss", "actor/entropy", "critic/score/mean"])
    assert all(abs(x - 0.5) < 0.03 for x in lefts), lefts
    tip = page.inner_text("#tip")
    assert "step" in tip and "grpo-baseline" in tip


def test_smoothing_ema_and_time_weighted_ema(page, browser_env) -> None:
    _run_page(page, browser_env)
    # the functions themselves, against hand-computed values (debiased EMA; TWEMA on irregular x)
    vals = page.evaluate("""async () => {
        const m = await import('/static/js/smooth.js');
        return { ema: m.ema([1, 2, null, 3], 0.5), tw: m.twema([0, 1, 10], [0, 1, 1], 0.5), tw_even: m.twema([0, 1, 2], [1, 2, 3], 0.5),
                 ema_even: m.ema([1, 2, 3], 0.5) };
    }""")
    assert vals["ema"][0] == pytest.approx(1.0) and vals["ema"][1] == pytest.approx(5 / 3) and vals["ema"][2] is None
    assert vals["ema"][3] == pytest.approx((0.125 + 0.25 * 2 + 0.5 * 3) / (1 - 0.125), rel=1e-6)
    assert vals["tw_even"] == pytest.approx(vals["ema_even"])  # equal spacing: the same as EMA
    d1, d2 = 0.5 ** (1 / 5), 0.5 ** (9 / 5)  # decay by distance / mean spacing (10 / 2)
    assert vals["tw"][2] == pytest.approx((d2 + 1) / ((d1 + 1) * d2 + 1))
    page.select_option("#smoothing-kind", "twema")
    page.wait_for_timeout(200)
    assert "smooth=twema" in page.url
    series = page.get_attribute(card("actor/entropy") + " .chart-box", "data-series")
    assert series == "2"  # raw (faint) + smoothed
    page.select_option("#smoothing-kind", "ema")
    page.wait_for_timeout(200)
    assert page.get_attribute(card("actor/entropy") + " .chart-box", "data-series") == "2"


def test_x_axis_modes(page, browser_env) -> None:
    _run_page(page, browser_env, "rich")
    page.select_option("#x-axis", "time")
    page.wait_for_selector("[data-loaded='1']")
    wait(page, "Number(document.querySelector(\"" + card("actor/entropy") + " .chart-box\").dataset.xmin) > 1e9")
    page.select_option("#x-axis", "relative")
    lo, hi = wait(page, "(() => { const b = document.querySelector(\"" + card("actor/entropy") + " .chart-box\"); "
                  "const r = [Number(b.dataset.xmin), Number(b.dataset.xmax)]; return r[1] < 1e6 ? r : null; })()")
    assert -5 < lo < 600 and hi < 3600
    page.select_option("#x-axis", "metric:critic/score/mean")
    lo, hi = wait(page, "(() => { const b = document.querySelector(\"" + card("actor/entropy") + " .chart-box\"); "
                  "const r = [Number(b.dataset.xmin), Number(b.dataset.xmax)]; return r[0] > 0.2 && r[1] < 1.5 ? r : null; })()")
    assert lo == pytest.approx(0.3, abs=0.02) and hi == pytest.approx(0.8, abs=0.02)
    assert "x=metric" in page.url.replace("%3A", ":")


def test_log_scale_is_per_chart_and_kept(page, browser_env) -> None:
    _run_page(page, browser_env)
    page.click(card("actor/grad_norm") + " .log-btn")
    wait(page, "document.querySelector(\"" + card("actor/grad_norm") + " .chart-box\").dataset.ylog === '1'")
    assert page.get_attribute(card("actor/entropy") + " .chart-box", "data-ylog") == "0"
    assert "actor%2Fgrad_norm" in page.url or "actor/grad_norm" in page.url
    page.reload()
    page.wait_for_selector("[data-loaded='1']")
    assert page.get_attribute(card("actor/grad_norm") + " .chart-box", "data-ylog") == "1"


def test_enlarge_a_chart(page, browser_env) -> None:
    _run_page(page, browser_env)
    page.click(card("actor/kl_loss") + " .enlarge-btn")
    page.wait_for_selector("#enlarged canvas")
    big = page.locator("#enlarged canvas").first.bounding_box()
    small = page.locator(card("actor/kl_loss") + " canvas").first.bounding_box()
    assert big["width"] > 2 * small["width"] and big["height"] > 2 * small["height"]
    assert ink(page, "#enlarged canvas", BLUE) > 50
    page.screenshot(path=str(SHOTS / "enlarged.png"))
    page.keyboard.press("Escape")
    page.wait_for_selector("#enlarged", state="detached")


def test_add_runs_overlay_and_legend_toggle(page, browser_env) -> None:
    _run_page(page, browser_env)
    other = browser_env["ids"]["grpo-high-lr"]
    page.select_option("#add-run", other)
    page.wait_for_selector(f"#overlay-chips .chip[data-run='{other}']")
    wait(page, "document.querySelector(\"" + card("critic/score/mean") + " .chart-box\").dataset.series === '2'")
    canvas = card("critic/score/mean") + " canvas"
    assert ink(page, canvas, BLUE) > 30 and ink(page, canvas, ORANGE) > 30
    assert f"overlay={other}" in page.url
    page.click(card("critic/score/mean") + f" .legend-item[data-id='{other}']")
    page.wait_for_timeout(200)
    assert ink(page, canvas, ORANGE) < 5 and ink(page, canvas, BLUE) > 30
    page.click(card("critic/score/mean") + f" .legend-item[data-id='{other}']")
    page.wait_for_timeout(200)
    assert ink(page, canvas, ORANGE) > 30
    page.click(f"#overlay-chips .chip[data-run='{other}'] .chip-x")
    wait(page, "document.querySelector(\"" + card("critic/score/mean") + " .chart-box\").dataset.series === '1'")


def test_findings_only_on_cited_charts_with_tooltips_inside_the_window(page, browser_env) -> None:
    _run_page(page, browser_env, "rich")
    kl = card("actor/kl_loss") + " canvas"
    assert ink(page, kl, RED, tol=30) > 20  # the critical finding cites actor/kl_loss
    assert ink(page, card("actor/entropy") + " canvas", RED, tol=30) == 0  # and nothing else
    assert ink(page, card("critic/score/mean") + " canvas", RED, tol=30) == 0
    # hover the marker (step 58 of 59: the right edge); the long tooltip must stay inside the window
    page.set_viewport_size({"width": 1100, "height": 800})
    page.wait_for_timeout(300)
    box = page.locator(card("actor/kl_loss") + " .u-over").bounding_box()
    x = page.evaluate("(sel) => { const b = document.querySelector(sel).getBoundingClientRect(); return b.left; }", card("actor/kl_loss") + " .u-over")
    page.mouse.move(x + box["width"] * 58 / 59, box["y"] + 10)
    wait(page, "document.querySelector('#tip') && !document.querySelector('#tip').hidden && document.querySelector('#tip').textContent.includes('KL rising late')")
    tip = page.locator("#tip").bounding_box()
    assert tip["x"] >= 0 and tip["y"] >= 0 and tip["x"] + tip["width"] <= 1100 and tip["y"] + tip["height"] <= 800
    page.mouse.move(*_center(page, card("actor/entropy") + " .u-over", 58 / 59))
    page.wait_for_timeout(150)
    assert "KL rising late" not in page.inner_text("#tip")
    page.set_viewport_size({"width": 1440, "height": 900})


def _center(page, selector, frac):
    b = page.locator(selector).bounding_box()
    return b["x"] + b["width"] * frac, b["y"] + b["height"] / 2


def test_regex_search_and_sections_kept_in_url_and_local_storage(page, browser_env) -> None:
    _run_page(page, browser_env)
    titles = page.eval_on_selector_all("section.group", "els => els.map(e => e.dataset.group)")
    assert titles[:3] == ["actor", "critic", "response_length"] and "val-core" in titles
    page.fill("#metric-filter", "actor/.*loss")
    page.wait_for_timeout(300)
    shown = page.eval_on_selector_all(".chart-card:not([hidden])", "els => els.map(e => e.dataset.key)")
    assert sorted(shown) == ["actor/kl_loss", "actor/pg_loss"]
    assert page.locator("section.group[data-group='critic']").is_hidden()
    assert "q=actor%2F.*loss" in page.url or "q=actor/.*loss" in page.url
    page.click("section.group[data-group='actor'] .group-title")
    assert "collapsed=actor" in page.url
    # a new visit without the parameters gets the same view from localStorage
    open_page(page, browser_env, f"/run/{browser_env['ids']['grpo-high-lr']}", "[data-loaded='1']")
    page.reload()
    page.wait_for_selector("[data-loaded='1']")
    assert page.input_value("#metric-filter") == "actor/.*loss"
    assert page.locator("section.group[data-group='actor'] .charts").is_hidden()
    page.fill("#metric-filter", "[")  # invalid regex: substring match and a hint, no crash
    page.wait_for_timeout(300)
    assert page.inner_text("#filter-invalid") != ""


def test_png_and_csv_export(page, browser_env) -> None:
    _run_page(page, browser_env)
    with page.expect_download() as dl:
        page.click(card("actor/kl_loss") + " .csv-btn")
    text = open(dl.value.path()).read()
    lines = text.strip().splitlines()
    assert dl.value.suggested_filename == "actor_kl_loss.csv"
    assert lines[0].startswith("Step,grpo-baseline") and len(lines) == 121
    assert float(lines[78].split(",")[1]) == pytest.approx(0.5 + 0.002 * 77)
    with page.expect_download() as dl:
        page.click(card("actor/kl_loss") + " .png-btn")
    data = open(dl.value.path(), "rb").read()
    assert dl.value.suggested_filename == "actor_kl_loss.png" and data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000


def test_data_lost_banner(page, browser_env) -> None:
    _run_page(page, browser_env, "rich")
    text = page.inner_text("#data-lost")
    assert "40–44" in text and "store_unavailable" in text and "250" in text
    page.screenshot(path=str(SHOTS / "run-rich.png"))
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_wheel_zoom_and_shift_drag_pan(page, browser_env) -> None:
    _run_page(page, browser_env)
    box = page.locator(card("actor/kl_loss") + " .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
    page.keyboard.down("Control")
    for _ in range(3):
        page.mouse.wheel(0, -100)
        page.wait_for_timeout(50)
    page.keyboard.up("Control")
    lo, hi = wait(page, "(() => { const b = document.querySelector(\"" + card("actor/entropy") + " .chart-box\"); "
                  "const r = [Number(b.dataset.xmin), Number(b.dataset.xmax)]; return r[1] - r[0] < 100 ? r : null; })()")
    assert hi - lo == pytest.approx(119 * 0.8 ** 3, rel=0.05) and lo < 59.5 < hi  # zoomed around the pointer
    page.keyboard.down("Shift")
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    lo2, hi2 = wait(page, "(() => { const b = document.querySelector(\"" + card("actor/entropy") + " .chart-box\"); "
                    f"const r = [Number(b.dataset.xmin), Number(b.dataset.xmax)]; return r[0] > {lo} + 1 ? r : null; }})()")
    assert hi2 - lo2 == pytest.approx(hi - lo, rel=1e-6)  # panned: same width, moved right
    assert lo2 - lo == pytest.approx(0.2 * (hi - lo), rel=0.15)
