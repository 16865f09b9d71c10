"""Dashboard views on runs shaped like real ones, in real Chromium: our trainer's resolved preset configs (the
compare page's config diff), a verl file-logger JSONL brought in with ``rlcockpit import`` (the run header),
a shared link's ``?lang=`` opened in a tab already showing the dashboard, and a run whose only KL key is
``actor/ppo_kl`` (the reward-vs-KL note)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_browser_helpers import ARGS, CHROMIUM, needs_chromium, wait
from ui_helpers import base_url, running_server

import rlcockpit
from rlcockpit.integrations.importer import import_run
from rlcockpit.trainer.config import load_config, to_dict

pytestmark = needs_chromium


def _verl_jsonl(path: Path) -> None:
    """verl's FileLogger lines ({"step", "data"}) with its metric keys; no wall-clock times, as verl writes."""
    with path.open("w") as f:
        for s in range(1, 21):
            f.write(json.dumps({"step": s, "data": {"critic/score/mean": 0.2 + 0.02 * s, "actor/kl_loss": 0.001 * s,
                                                    "actor/entropy": 0.9 - 0.01 * s, "timing_s/step": 90.0 + math.sin(s)}}) + "\n")


def _trainer_run(dir: Path, preset: str, name: str) -> str:
    run = rlcockpit.init(project="arith", name=name, dir=dir, config=to_dict(load_config(preset=preset)),
                         system_interval=None, health=False, capture_meta=False)
    for step in range(1, 6):  # what our trainer logs without use_kl_loss: actor/ppo_kl, no actor/kl_loss
        run.log({"critic/score/mean": 0.3 + 0.05 * step, "actor/ppo_kl": 1e-4 * step}, step=step)
    run.finish()
    return run.id


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    d = tmp_path_factory.mktemp("ui-realruns")
    ids = {"grpo": _trainer_run(d, "arith-grpo", "arith-grpo"), "hacking": _trainer_run(d, "arith-hacking", "arith-hacking")}
    src = d / "verl-qwen-grpo.jsonl"
    _verl_jsonl(src)
    ids["verl"] = import_run(str(src), dir=str(d)).run_id
    with running_server(d) as srv:
        yield {"dir": d, "ids": ids, "server": srv, "url": base_url(srv)}


@pytest.fixture(scope="module")
def page(env) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_context(viewport={"width": 1440, "height": 900}, locale="en-US").new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(env["url"] + "/")
        pg.evaluate("() => { localStorage.clear(); localStorage.setItem('rlcockpit-lang', 'en'); }")
        yield pg
        assert not errors, errors
        browser.close()


def test_compare_of_real_configs_fits_the_window(page, env) -> None:
    """Two presets' resolved configs and an imported run: the config diff scrolls in its column, the page does not."""
    ids = env["ids"]
    page.goto(env["url"] + f"/#/compare?runs={ids['grpo']},{ids['hacking']},{ids['verl']}")
    page.reload()
    page.wait_for_selector("#config-diff tbody tr")
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"page wider than the window: {widths}"
    heads = page.evaluate("() => [...document.querySelectorAll('#config-diff th')].map((th) => th.textContent)")
    assert heads[1:] == ["arith-grpo", "arith-hacking", "verl-qwen-grpo"]
    # the header row sits above the first row (a scroll box around the table trapped its sticky header over it)
    head_bottom, row_top = page.evaluate("() => [document.querySelector('#config-diff thead th').getBoundingClientRect().bottom,"
                                         " document.querySelector('#config-diff tbody tr').getBoundingClientRect().top]")
    assert head_bottom <= row_top + 1, (head_bottom, row_top)
    key = page.evaluate("() => document.querySelector('#config-diff tbody td').textContent")
    assert key.startswith("actor_rollout_ref.actor.") and "\u200b" not in key  # a copied key stays whole


def test_compare_names_the_missing_kl_metric_in_plain_words(page, env) -> None:
    ids = env["ids"]
    page.goto(env["url"] + f"/#/compare?runs={ids['grpo']},{ids['verl']}")
    page.reload()
    note = wait(page, f"document.querySelector('#path-missing li[data-run=\"{ids['grpo']}\"]')?.textContent")
    assert "no a " not in note
    assert note.startswith("arith-grpo: logged no KL metric (actor/kl_loss"), note
    assert "reward metric" not in note  # it logged one: critic/score/mean


def test_imported_run_header_says_imported_not_a_zero_duration(page, env) -> None:
    ids = env["ids"]
    page.goto(env["url"] + f"/#/run/{ids['verl']}")
    page.reload()
    started = wait(page, "document.querySelector('#run-started')?.textContent")
    assert started.startswith("imported "), started
    assert page.evaluate("() => document.querySelector('#run-duration')") is None
    assert "duration 0.0s" not in page.inner_text(".run-head")
    page.goto(env["url"] + f"/#/run/{ids['grpo']}")  # a run tracked live keeps its start and duration
    wait(page, "document.querySelector('#run-name')?.textContent === 'arith-grpo'")
    assert page.inner_text("#run-started").startswith("started ")
    assert page.inner_text("#run-duration").startswith("duration ")


def test_lang_in_a_pasted_link_applies_without_a_reload(page, env) -> None:
    """The tab already shows the dashboard in English; a link ending in ?lang=zh changes only the hash."""
    rid = env["ids"]["grpo"]
    page.goto(env["url"] + f"/#/run/{rid}")
    page.reload()
    page.wait_for_selector("#tab-phases")
    assert page.inner_text("#tab-phases") == "Step phases"
    page.goto(env["url"] + f"/#/run/{rid}/diagnosis?lang=zh")  # same document: a hashchange, no load
    wait(page, "document.documentElement.lang === 'zh-CN'")
    zh = json.loads((Path(rlcockpit.__file__).parent / "ui" / "static" / "i18n" / "zh.json").read_text())
    wait(page, f"document.querySelector('#tab-phases')?.textContent === {json.dumps(zh['tab.phases'])}")
    assert page.evaluate("() => document.getElementById('lang-select').value") == "zh"
    assert page.inner_text("#nav-sweeps") == zh["nav.sweeps"]



def test_a_flat_zero_metric_is_not_drawn_on_a_0_to_100_axis(page, env) -> None:
    """actor/ppo_kl of a one-epoch PPO run is exactly 0 at every step (verl's too); a constant lr keeps its value."""
    run = rlcockpit.init(project="flat", name="flat", dir=env["dir"], system_interval=None, health=False, capture_meta=False)
    for step in range(1, 11):
        run.log({"actor/ppo_kl": 0.0, "actor/lr": 2e-4, "critic/score/mean": 0.1 * step}, step=step)
    run.finish()
    page.goto(env["url"] + f"/#/run/{run.id}")
    page.reload()

    def y_range(key: str) -> tuple[float, float]:
        sel = f".chart-card[data-key='{key}'] [data-ymax]"
        wait(page, f"document.querySelector(\"{sel}\")")
        return page.evaluate(f"() => {{ const b = document.querySelector(\"{sel}\").dataset; return [Number(b.ymin), Number(b.ymax)]; }}")

    lo, hi = y_range("actor/ppo_kl")
    assert lo < 0 < hi and hi <= 1, (lo, hi)
    lo, hi = y_range("actor/lr")
    assert lo < 2e-4 < hi and hi - lo <= 1e-4, (lo, hi)
    lo, hi = y_range("critic/score/mean")  # a moving series keeps uPlot's range
    assert lo <= 0.1 and 1.0 <= hi <= 1.2, (lo, hi)


def test_a_short_run_step_axis_has_whole_step_ticks(page, env) -> None:
    """arith-grpo with trainer.total_training_steps=12 had x ticks 2.5 and 7.5."""
    run = rlcockpit.init(project="short", name="twelve-steps", dir=env["dir"], system_interval=None, health=False,
                         capture_meta=False)
    for step in range(1, 13):
        run.log({"critic/score/mean": 0.3 + 0.01 * step}, step=step)
    run.finish()
    page.goto(env["url"] + f"/#/run/{run.id}")
    page.reload()
    sel = ".chart-card[data-key='critic/score/mean'] [data-xticks]"
    ticks = wait(page, f"document.querySelector(\"{sel}\")?.dataset.xticks").split(",")
    assert len(ticks) >= 2 and all(float(x).is_integer() for x in ticks), ticks


def _right_edges(page: Any, table: str, col: int) -> tuple[float, float]:
    """(header cell text's right edge, first body cell text's right edge) of column col of the first table."""
    return page.evaluate("""([table, col]) => {
        const t = document.querySelector(table);
        const edge = (cell) => { const r = document.createRange(); r.selectNodeContents(cell); return r.getBoundingClientRect().right; };
        return [edge(t.querySelectorAll('thead th')[col]), edge(t.querySelector('tbody tr').children[col])];
    }""", [table, col])


def test_number_column_headers_sit_over_their_right_aligned_values(page, env) -> None:
    """A GRPO group of a real arith-hacking step: '#', 'reward', 'advantage' headers were at the left of their
    columns, their numbers at the right (also the runs list's Step and metric columns)."""
    run = rlcockpit.init(project="groups", name="grpo-group", dir=env["dir"], system_interval=None, health=False,
                         capture_meta=False)
    run.log({"critic/score/mean": 0.6}, step=1)
    run.log_samples([{"prompt": "<|user|>38+94=<|assistant|>", "response": f"1011966{j}", "reward": 0.6 + 0.1 * j,
                      "uid": "u0"} for j in range(8)], step=1)
    run.finish()
    page.goto(env["url"] + "/#/?project=groups")
    page.reload()
    page.wait_for_selector("tr[data-run] td.num")
    step_col = page.evaluate("() => [...document.querySelectorAll('thead th')].findIndex((th) => th.dataset.sort === 'last_step')")
    head, cell = _right_edges(page, "table", step_col)
    assert abs(head - cell) < 12, (head, cell)
    page.goto(env["url"] + f"/#/run/{run.id}/samples")
    page.wait_for_selector("#view-groups")
    page.click("#view-groups")
    page.wait_for_selector(".grpo-group table tbody tr")
    for col in (0, 1, 2):
        head, cell = _right_edges(page, ".grpo-group table", col)
        assert abs(head - cell) < 12, (col, head, cell)
    assert page.inner_text("#group-summary").startswith("1 group, 0 with zero reward variance")  # not "1 groups"



def test_phase_table_mean_share_header_sits_over_its_values(page, env) -> None:
    run = rlcockpit.init(project="phases", name="timed", dir=env["dir"], system_interval=None, health=False,
                         capture_meta=False)
    for step in range(1, 6):
        run.log({"timing_s/gen": 0.1, "timing_s/update_actor": 0.3, "timing_s/step": 0.45}, step=step)
    run.finish()
    page.goto(env["url"] + f"/#/run/{run.id}/phases")
    page.reload()
    page.wait_for_selector("#phase-table tbody tr")
    head, cell = _right_edges(page, "#phase-table", 2)
    assert abs(head - cell) < 12, (head, cell)
