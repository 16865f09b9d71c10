"""Dashboard glitches found by outside testing (issue 25, items 18-20) in real Chromium."""

from __future__ import annotations

import time

import pytest
from ui_browser_helpers import fresh, needs_chromium, wait

pytestmark = [pytest.mark.slow, needs_chromium]


def test_runs_toolbar_renders_once_when_a_render_is_overtaken(page, browser_env) -> None:
    """A hash change while the runs page still waits for the server (here: the first /api/projects answers
    late, and fails) used to leave both renders in the page: two filter bars and a stray error."""
    fresh(page, browser_env, "/", "#runs-table tbody tr[data-run]")
    calls = []

    def slow_then_fail(route) -> None:
        calls.append(route.request.url)
        if len(calls) == 1:
            time.sleep(1.0)
            route.fulfill(status=500, content_type="application/json", body='{"error": "store busy"}')
        else:
            route.continue_()

    page.route("**/api/projects", slow_then_fail)
    try:
        page.evaluate("() => { location.hash = '#/?status=finished'; setTimeout(() => { location.hash = '#/?status=failed'; }, 100); }")
        page.wait_for_selector("#runs-table tbody tr[data-run]")
        page.wait_for_timeout(1500)  # the overtaken render has answered by now
        assert page.locator("#run-filter").count() == 1
        assert page.locator("#project-filter").count() == 1
        assert "store busy" not in page.inner_text("#app")
    finally:
        page.unroute("**/api/projects")
    assert len(calls) >= 2
    wait(page, "document.querySelectorAll('#runs-table tbody tr[data-run]').length >= 1")


def _grpo_step_rows(n_prompts: int = 16, n: int = 16) -> list[dict]:
    """What the trainer stores for one step of 16 prompts x 16 responses (its own sample_rows on a real
    Experience, with its default trainer.num_log_samples)."""
    import numpy as np
    import torch

    from rlcockpit.trainer.collect import Experience
    from rlcockpit.trainer.config.schema import TrainerConfig
    from rlcockpit.trainer.data import PromptRow
    from rlcockpit.trainer.observe.metrics import sample_rows
    from rlcockpit.trainer.rollout.engine import RolloutOutput

    bs = n_prompts * n
    rows = [PromptRow(f"What is {p} + {p}?", str(2 * p), "arith", text=f"What is {p} + {p}?") for p in range(n_prompts)
            for _ in range(n)]
    scores = torch.tensor([float(p % 4 == 0 or j % 3 == 0) for p in range(n_prompts) for j in range(n)])
    out = RolloutOutput(torch.ones(bs, 1, dtype=torch.long), torch.ones(bs, 1), torch.ones(bs, 4, dtype=torch.long),
                        torch.ones(bs, 4))
    exp = Experience(rows, np.repeat(np.arange(n_prompts), n), out, [f"answer {i}" for i in range(bs)], scores)
    return sample_rows(exp, TrainerConfig().num_log_samples)


def test_grpo_group_view_shows_every_group_of_the_step(page, browser_env, tmp_path) -> None:
    import rlcockpit

    run = rlcockpit.init(project="grpo16", name="g16", dir=browser_env["dir"], system_interval=None, health=False,
                         capture_meta=False)
    run.log({"critic/score/mean": 0.3}, step=1)
    run.log_samples(_grpo_step_rows(), step=1)
    run.finish()
    fresh(page, browser_env, f"/run/{run.id}/samples?view=groups", "#groups-out .grpo-group")
    assert page.locator("#groups-out .grpo-group").count() == 16
    assert page.locator("#groups-out .grpo-group.zero-var").count() == 4  # prompts 0, 4, 8, 12: all correct
    summary = page.inner_text("#group-summary")
    assert summary.startswith("16 groups, 4 with zero reward variance (25%)"), summary
    assert "256 responses, n = 16 per group" in summary and "uid" in summary


def _chart_run(dir_) -> str:
    import rlcockpit

    run = rlcockpit.init(project="charts25", name="c25", dir=dir_, system_interval=None, health=False, capture_meta=False)
    for step in range(30):
        m = {"critic/score/mean": 0.2 + step / 50, "perf/total_num_tokens": 1000.0 + (step * 37) % 11 * 100,
             "perf/deep_negative": -1.2e7 - step * 1e5}
        if step == 10:
            m["eval/final_score"] = 0.75  # logged once
        run.log(m, step=step)
    run.finish()
    return run.id


def _ink_in(page, selector: str, x0: int, x1: int) -> int:
    """Non-transparent pixels of the chart canvas under ``selector`` in columns x0..x1 (device pixels)."""
    return page.evaluate("""([sel, x0, x1]) => {
        const c = document.querySelector(sel);
        if (!c) return -1;
        const d = c.getContext('2d').getImageData(x0, 0, x1 - x0, c.height).data;
        let n = 0;
        for (let i = 3; i < d.length; i += 4) if (d[i] > 40) n++;
        return n;
    }""", [selector, x0, x1])


def test_single_point_scatter_for_per_step_x_and_unclipped_labels(page, browser_env) -> None:
    from ui_browser_helpers import BLUE, card, ink

    rid = _chart_run(browser_env["dir"])
    fresh(page, browser_env, f"/run/{rid}", card("eval/final_score") + " canvas")
    wait(page, f"document.querySelector(\"{card('eval/final_score')} .chart-box\").dataset.points === '1'")
    assert ink(page, card("eval/final_score") + " canvas", BLUE) > 10  # the one point is drawn
    # y tick labels such as -1.25e+7 fit their axis: nothing drawn in the canvas's first columns
    assert _ink_in(page, card("perf/deep_negative") + " canvas", 0, 2) == 0
    assert page.locator("#x-warning").is_hidden()
    # a per-step count as x: points, not a zigzag line, and the page says why
    fresh(page, browser_env, f"/run/{rid}?x=metric:perf/total_num_tokens", card("critic/score/mean") + " canvas")
    wait(page, f"document.querySelector(\"{card('critic/score/mean')} .chart-box\").dataset.scatter === '1'")
    warning = page.inner_text("#x-warning")
    assert "perf/total_num_tokens is not cumulative" in warning
    fresh(page, browser_env, f"/compare?runs={rid}&keys=critic/score/mean&x=metric:perf/total_num_tokens",
          "#x-warning:not([hidden])")
    assert "perf/total_num_tokens is not cumulative" in page.inner_text("#x-warning")


def test_chinese_diagnosis_shows_the_guides_chinese_text_for_each_finding(page, browser_env) -> None:
    """The diagnosis page in Chinese adds, to each finding, what the metric guide says in Chinese about its
    metric (if abnormal, action), and all chrome is Chinese. (The finding's own title is Chinese too since
    finding 19d; its English stays in the title's tooltip, which is what this test finds the card by.)"""
    import json
    import urllib.request

    rid = browser_env["ids"]["grpo-baseline"]
    with urllib.request.urlopen(f"{browser_env['url']}/api/guide?lang=zh", timeout=30) as resp:
        guide = json.loads(resp.read())
    kl = guide["entries"][guide["aliases"].get("actor/kl_loss", "actor/kl_loss")]
    fresh(page, browser_env, f"/run/{rid}/diagnosis?lang=zh", "#diagnosis .finding")
    wait(page, "document.documentElement.lang === 'zh-CN'")
    card = page.locator("#diagnosis .finding").filter(has=page.locator("h4[title^='KL to reference']"))
    box = card.locator(".finding-guide")
    assert box.count() == 1
    text = box.inner_text()
    assert f"指标指南：{kl['title']}" in text and kl["action"] in text and "处理：" in text
    fresh(page, browser_env, f"/run/{rid}/diagnosis?lang=en", "#diagnosis .finding")
    assert "Metric guide:" in page.locator("#diagnosis .finding", has_text="KL to reference").inner_text()


def test_chinese_diagnosis_shows_chinese_findings_and_story_with_their_numbers(page, browser_env) -> None:
    """Finding 19d: in Chinese the diagnosis of a real stored run shows its root-cause story, finding titles,
    causes and actions in Chinese; numbers, metric keys, steps and the overrides to paste are the run's own."""
    import json
    import re
    import urllib.request

    def diagnosis(rid: str, lang: str) -> dict:
        with urllib.request.urlopen(f"{browser_env['url']}/api/runs/{rid}/diagnosis?lang={lang}", timeout=60) as resp:
            return json.loads(resp.read())

    cjk = re.compile(r"[\u4e00-\u9fff]")
    rid = next(r for r in browser_env["ids"].values() if isinstance(r, str) and diagnosis(r, "en")["diagnosis"].get("root_cause"))
    en, zh = diagnosis(rid, "en"), diagnosis(rid, "zh")
    assert zh["overrides"] == en["overrides"] and zh["verl_overrides"] == en["verl_overrides"]
    rc = zh["diagnosis"]["root_cause"]
    assert cjk.search(rc["title"]) and f"第 {rc['step']} 步" in rc["title"] and cjk.search(rc["explanation"])
    fresh(page, browser_env, f"/run/{rid}/diagnosis?lang=zh", "#diagnosis .finding")
    wait(page, "document.documentElement.lang === 'zh-CN'")
    assert page.inner_text("#root-cause h4") == rc["title"]
    chain = page.inner_text("#root-cause ol.chain")
    assert all(link["text"] in chain for link in rc["chain"]) and cjk.search(chain)
    shown = page.locator("#diagnosis .finding h4").all()
    assert len(shown) == len(zh["diagnosis"]["findings"]) >= 1
    titles = {f["title"]: f for f in zh["diagnosis"]["findings"]}
    english = {f["title"] for f in en["diagnosis"]["findings"]}
    for h4 in shown:
        text = h4.inner_text()
        assert cjk.search(text), text
        assert h4.get_attribute("title") in english  # the English original, in the tooltip
        f = next(f for t, f in titles.items() if t in text)
        values = f["evidence"]["values"]
        if f["detector"] in ("kl_spike", "kl_rising"):
            assert f"{values['kl']:.3g}" in text
        if f["detector"] == "reward_cliff":
            assert f"{values['reward']:.3g}" in text and f"{values['reward_before']:.3g}" in text
    body = page.inner_text("#diagnosis")
    for f in zh["diagnosis"]["findings"]:
        for a in f["actions"]:
            assert cjk.search(a["title"]) and a["title"] in body
            assert all(o in page.inner_text("#app") for o in a["overrides"])
    fresh(page, browser_env, f"/run/{rid}/diagnosis?lang=en", "#diagnosis .finding")
    assert page.inner_text("#root-cause h4") == en["diagnosis"]["root_cause"]["title"]
    assert not cjk.search(page.inner_text("#diagnosis .finding h4"))
