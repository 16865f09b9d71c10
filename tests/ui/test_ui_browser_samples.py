"""Samples, phases, mismatch, diagnosis and the language switch in real Chromium."""

from __future__ import annotations

import json

import pytest
from ui_browser_helpers import SHOTS, fresh, needs_chromium, open_page, wait

from rlcockpit.ui.app import STATIC_DIR

pytestmark = [pytest.mark.slow, needs_chromium]


def _rows(page):
    return page.eval_on_selector_all("#samples-table tbody tr", "els => els.length")


def _col(page, name):
    return page.evaluate("""(name) => {
        const heads = [...document.querySelectorAll('#samples-table thead th')].map((th) => th.dataset.col);
        const i = heads.indexOf(name);
        return [...document.querySelectorAll('#samples-table tbody tr')].map((tr) => tr.children[i].textContent);
    }""", name)


def _reloaded(page, before):
    wait(page, f"document.querySelector('#samples-out').dataset.loaded !== '{before}'")


def test_samples_sort_filter_search_and_paging_past_200(page, browser_env) -> None:
    fresh(page, browser_env, f"/run/{browser_env['ids']['rich']}/samples", "#samples-table")
    assert page.input_value("#sample-step") == "50" and _rows(page) == 100
    # sort by reward, highest first
    before = page.get_attribute("#samples-out", "data-loaded")
    page.click("#samples-table th[data-col='reward']")
    _reloaded(page, before)
    rewards = [float(x) for x in _col(page, "reward")]
    assert rewards == sorted(rewards, reverse=True) and rewards[0] == 1.0
    assert "of 263" in page.inner_text("#page-info")  # 16 GRPO rows, 244 bulk rows, 3 probes
    # page through all 260 rows of the step
    seen = set(_col(page, "prompt"))
    for expected in ("101–200 of 263", "201–263 of 263"):
        before = page.get_attribute("#samples-out", "data-loaded")
        page.click("#page-next")
        _reloaded(page, before)
        assert expected in page.inner_text("#page-info")
        seen |= set(_col(page, "prompt"))
    assert page.is_disabled("#page-next") and len(seen) > 200
    # sort by another column
    before = page.get_attribute("#samples-out", "data-loaded")
    page.click("#samples-table th[data-col='response_length']")
    _reloaded(page, before)
    lengths = [float(x) for x in _col(page, "response_length")]
    assert lengths == sorted(lengths)  # a new column sorts ascending (reward starts descending)
    # an expression filter on any column
    page.fill("#sample-filter", "reward >= 0.8 and response_length > 100")
    before = page.get_attribute("#samples-out", "data-loaded")
    page.press("#sample-filter", "Enter")
    _reloaded(page, before)
    assert all(float(x) >= 0.8 for x in _col(page, "reward")) and all(float(x) > 100 for x in _col(page, "response_length"))
    page.fill("#sample-filter", "")
    page.press("#sample-filter", "Enter")
    # full-text search across every step
    page.check("#search-all")
    before = page.get_attribute("#samples-out", "data-loaded")
    page.fill("#sample-search", "needle3")
    _reloaded(page, before)
    page.wait_for_timeout(400)
    texts = _col(page, "response")
    assert texts and all("needle3" in x for x in texts) and page.locator("#samples-table mark.hit").count() == len(texts)
    assert "filter" not in page.url or "needle3" in page.url


def test_grpo_group_view(page, browser_env) -> None:
    fresh(page, browser_env, f"/run/{browser_env['ids']['rich']}/samples?view=groups&gstep=40", "#groups-out .grpo-group")
    groups = page.locator("#groups-out .grpo-group")
    assert groups.count() == 4
    first = groups.first  # zero-variance groups first
    assert "zero-var" in first.get_attribute("class") and "Compute 0 * 7." in first.inner_text()
    assert page.locator("#groups-out .grpo-group.zero-var").count() == 1
    summary = page.inner_text("#group-summary")
    assert "4 groups" in summary and "1 with zero reward variance" in summary and "uid" in summary
    other = groups.nth(1)
    heads = other.locator("thead th").all_inner_texts()
    assert heads[:3] == ["#", "reward", "advantage"] and "acc" in heads and "format" in heads
    advs = [float(x) for x in other.locator("td.adv").all_inner_texts()]
    assert len(advs) == 4 and abs(sum(advs)) < 1e-6 and max(advs) > 0 > min(advs)  # GRPO: centred within the group
    assert all(float(x) == 0 for x in first.locator("td.adv").all_inner_texts())
    page.screenshot(path=str(SHOTS / "samples-groups.png"), full_page=True)


def test_same_prompt_across_steps_from_the_probe_set(page, browser_env) -> None:
    fresh(page, browser_env, f"/run/{browser_env['ids']['rich']}/samples?view=prompt", "#prompt-select")
    page.wait_for_selector("#prompt-select option[value^='Probe']", state="attached")
    wait(page, "document.querySelectorAll('#prompt-history .history-step').length > 0")
    assert page.input_value("#prompt-select").startswith("Probe 0")
    steps = page.eval_on_selector_all("#prompt-history .history-step", "els => els.map(e => Number(e.dataset.step))")
    assert steps == [0, 10, 20, 30, 40, 50]
    assert page.inner_text("#prompt-history .history-step[data-step='10']").count("\n") >= 1
    page.select_option("#prompt-select", "Probe 2: what is 2 + 2?")
    wait(page, "document.querySelector('#prompt-history').textContent.includes('step 50')")
    assert "probe" in page.url.lower() or "prompt=" in page.url


def test_two_steps_side_by_side(page, browser_env) -> None:
    fresh(page, browser_env, f"/run/{browser_env['ids']['grpo-baseline']}/samples?view=compare", "#cmp-btn")
    page.select_option("#cmp-a", "0")
    page.select_option("#cmp-b", "119")
    page.click("#cmp-btn")
    page.wait_for_selector(".cmp-pair")
    assert "4 prompt(s)" in page.inner_text("#cmp-summary")


def test_step_phase_timeline(page, browser_env) -> None:
    fresh(page, browser_env, f"/run/{browser_env['ids']['rich']}/phases", "#phase-table")
    phases = page.eval_on_selector_all("#phase-table tbody tr", "els => els.map(e => e.dataset.phase)")
    assert phases == ["generation", "log_prob", "reference", "advantage", "update", "sync", "idle"]
    shares = page.eval_on_selector_all("#phase-table tbody td.num", "els => els.map(e => parseFloat(e.textContent))")
    assert sum(shares) == pytest.approx(100, abs=0.5) and shares[0] == max(shares)  # generation dominates
    assert shares[-1] == pytest.approx(0.25 / 7.0 * 100, abs=0.6)  # idle = step minus the phases
    assert "timing_s/generate_sequences" in page.inner_text("#phase-unassigned")  # nested: not counted twice
    assert page.locator(".chart-card[data-key='perf/mfu/actor']").count() == 1
    assert page.locator(".chart-card[data-key='perf/throughput']").count() == 1
    page.select_option("#phase-mode", "share")
    page.wait_for_timeout(200)
    ymax = page.evaluate("() => { const c = document.querySelector('#phase-chart .chart-box'); return c.dataset.points; }")
    assert int(ymax) == 60
    page.screenshot(path=str(SHOTS / "phases.png"), full_page=True)


def test_mismatch_panel_against_verl_bounds(page, browser_env) -> None:
    fresh(page, browser_env, f"/run/{browser_env['ids']['rich']}/mismatch", "#mismatch-table")
    row = page.locator("#mismatch-table tr[data-key='rollout_corr/rollout_is_mean']")
    cells = row.locator("td").all_inner_texts()
    assert cells[2] == "0.5 … 2" and cells[3] == "out of bounds" and cells[4] == "10" and "rollout_corr.md" in cells[5]
    ok = page.locator("#mismatch-table tr[data-key='rollout_corr/kl']").locator("td").all_inner_texts()
    assert ok[2] == "|x| ≤ 0.1" and ok[3] == "within bounds"
    diff = page.locator("#mismatch-table tr[data-key='training/rollout_probs_diff_mean']").locator("td").all_inner_texts()
    assert diff[3] == "out of bounds" and "guide" in diff[5]
    assert page.locator("#mismatch-charts .chart-card").count() == 5
    page.screenshot(path=str(SHOTS / "mismatch.png"), full_page=True)


def test_diagnosis_and_config_pages(page, browser_env) -> None:
    rid = browser_env["ids"]["grpo-high-lr"]  # its entropy collapse has a fix (the baseline's warning is held back)
    fresh(page, browser_env, f"/run/{rid}/diagnosis", "#root-cause")
    assert page.locator(".finding").count() >= 1 and "=" in page.inner_text("pre.overrides")
    page.click("#copy-overrides")
    assert page.get_attribute("#report-link", "href").endswith("/report.html")
    page.screenshot(path=str(SHOTS / "diagnosis.png"), full_page=True)
    open_page(page, browser_env, f"/run/{rid}/config", "#config-table")
    assert "actor.optim.lr" in page.inner_text("#config-table") and page.inner_text("#run-command").strip()


ENGLISH = json.loads((STATIC_DIR / "i18n" / "en.json").read_text())
CHINESE = json.loads((STATIC_DIR / "i18n" / "zh.json").read_text())


def _english_left(page, data: list[str]) -> list[str]:
    """UI strings of en.json (whole words, longer than 3 characters, not kept in zh.json) still visible on the
    page once the data on it (run names, metric keys, prompts and responses) is taken out."""
    import re

    text = page.evaluate("() => document.body.innerText + ' ' + [...document.querySelectorAll('[placeholder],[title]')]"
                         ".map(e => (e.getAttribute('placeholder') || '') + ' ' + (e.getAttribute('title') || '')).join(' ')")
    for item in sorted(data, key=len, reverse=True):
        text = text.replace(item, " ")
    out = []
    for key, value in ENGLISH.items():
        fixed = value.split("{")[0].strip()
        if len(fixed) > 3 and fixed not in CHINESE.get(key, "") and re.search(r"(?<![\w/.])" + re.escape(fixed) + r"(?![\w/])", text):
            out.append(f"{key}: {fixed}")
    return out


def _data_strings(env) -> list[str]:
    from rlcockpit.store import open_store

    store = open_store(env["dir"])
    out: list[str] = []
    for run in store.list_runs():
        out += [run["name"], run["id"], run["project"], *(run.get("tags") or []), run.get("group") or "", *store.keys(run["id"])]
        rows = store.samples(run["id"], limit=400)
        out += [str(r.get(c)) for r in rows for c in ("prompt", "response", "data_source")]
        out += sorted({k for r in rows for k in r})  # column names are data too
    # the health engine's findings and diagnosis are stored English text, not UI strings
    import urllib.request

    def leaves(obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield str(k)
                yield from leaves(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from leaves(v)
        elif isinstance(obj, str):
            yield obj

    for run in store.list_runs():
        with urllib.request.urlopen(f"{env['url']}/api/runs/{run['id']}/diagnosis", timeout=30) as resp:
            out += list(leaves(json.loads(resp.read())["diagnosis"]))
    return [x for x in out if x]


def test_chinese_for_every_ui_text_and_the_metric_guide(page, browser_env) -> None:
    assert set(ENGLISH) == set(CHINESE) and all(CHINESE.values())
    ids = browser_env["ids"]
    data = _data_strings(browser_env)
    fresh(page, browser_env, f"/run/{ids['rich']}", "[data-loaded='1']")
    page.select_option("#lang-select", "zh")
    page.wait_for_selector("[data-loaded='1']")
    wait(page, "document.querySelector('#tab-charts')?.textContent === '图表'")
    assert page.evaluate("() => document.documentElement.lang") == "zh-CN"
    pages = [f"/run/{ids['rich']}", f"/run/{ids['rich']}/samples", f"/run/{ids['rich']}/samples?view=groups",
             f"/run/{ids['rich']}/phases", f"/run/{ids['rich']}/mismatch", f"/run/{ids['grpo-baseline']}/diagnosis",
             f"/run/{ids['grpo-baseline']}/config", "/", f"/compare?runs={ids['grpo-baseline']},{ids['grpo-high-lr']}"]
    for hash_ in pages:
        page.goto(browser_env["url"] + "/#" + hash_)
        page.reload()
        page.wait_for_timeout(900)
        left = _english_left(page, data)
        assert not left, (hash_, left)
        if hash_ == f"/run/{ids['rich']}/samples?view=groups":
            page.screenshot(path=str(SHOTS / "zh-groups.png"))
    # the metric guide's own text in Chinese, in the tooltip of a metric name
    page.goto(browser_env["url"] + "/#/run/" + ids["rich"])
    page.reload()
    page.wait_for_selector("[data-loaded='1']")
    page.hover(".chart-card[data-key='actor/entropy'] .metric-name")
    wait(page, "!document.querySelector('#tip').hidden")
    tip = page.inner_text("#tip")
    assert "熵" in tip and "健康范围" in tip
    page.screenshot(path=str(SHOTS / "zh-run.png"))
    page.select_option("#lang-select", "en")
    wait(page, "document.querySelector('#tab-charts')?.textContent === 'Charts'")
    assert not page.errors, page.errors  # type: ignore[attr-defined]
