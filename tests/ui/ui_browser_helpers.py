"""Browser-test plumbing: a richer store (timings, mismatch metrics, GRPO groups, probes, 260-row steps,
irregular logging, a data_lost record), a real Chromium page, and small polling helpers.

Everything is written through the tracking API (``rlcockpit.init / log / log_samples / log_event /
log_finding``) as a training script would.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_helpers import base_url, build_store, running_server

import rlcockpit
from rlcockpit.health import Finding
from rlcockpit.store import open_store
from rlcockpit.store.batch import DataLoss

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"
needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is absent (make system-deps installs it)")

GRPO_PROMPTS = [f"Compute {i} * 7." for i in range(4)]


def _timing(step: int) -> dict[str, float]:
    gen = 3.0 + 0.2 * math.sin(step / 3)
    return {"timing_s/gen": gen, "timing_s/generate_sequences": gen * 0.95, "timing_s/old_log_prob": 0.8,
            "timing_s/ref": 0.6, "timing_s/adv": 0.05, "timing_s/update_actor": 2.0, "timing_s/update_weights": 0.3,
            "timing_s/step": gen + 0.8 + 0.6 + 0.05 + 2.0 + 0.3 + 0.25,
            "perf/mfu/actor": 0.31 + 0.01 * math.cos(step), "perf/throughput": 2100 + 20 * math.sin(step)}


def _mismatch(step: int) -> dict[str, float]:
    return {"training/rollout_probs_diff_mean": 0.004 + (0.02 if step >= 50 else 0.0),
            "training/rollout_probs_diff_max": 0.3, "rollout_corr/rollout_is_mean": 1.0 + (1.5 if step >= 50 else 0.0),
            "rollout_corr/kl": 0.01, "rollout_corr/rollout_is_eff_sample_size": 0.8}


def build_rich_run(dir: Path) -> dict[str, str]:
    """A GRPO-like run with everything the newer pages read; returns {"rich": id, "sparse": id}."""
    run = rlcockpit.init(project="arith", name="grpo-rich", group="rich", tags=["grpo", "rich"], dir=dir,
                         config={"actor": {"optim": {"lr": 3e-6}}, "rollout": {"n": 4}}, system_interval=None,
                         health=False, capture_meta=False)
    for step in range(60):
        m = {"critic/score/mean": 0.3 + 0.5 * step / 60, "actor/kl_loss": 0.001 * step, "actor/entropy": 1.0 - step / 100,
             "actor/pg_loss": 0.05 * math.sin(step)}
        m.update(_timing(step))
        m.update(_mismatch(step))
        run.log(m, step=step)
        if step in (0, 10, 20, 30, 40, 50):
            rows = []
            for g, prompt in enumerate(GRPO_PROMPTS):
                for j in range(4):
                    reward = 1.0 if g == 0 else float((j + g + step) % 2)  # group 0 has zero variance
                    rows.append({"prompt": prompt, "response": f"{prompt} -> answer {g * 7 + j} (step {step})",
                                 "reward": reward, "uid": f"u{g}", "acc": reward, "format": 0.5 + 0.1 * j,
                                 "response_length": 10 + j})
            if step == 50:  # a big step: paging past 200 rows
                rows += [{"prompt": f"Bulk question {i}", "response": f"bulk answer number {i} needle{i % 7}",
                          "reward": (i % 10) / 10, "uid": f"b{i // 4}", "response_length": i} for i in range(244)]
            run.log_samples(rows, step=step)
        if step % 10 == 0:  # validation: the fixed probe set
            run.log_samples([{"prompt": f"Probe {k}: what is {k} + {k}?", "response": f"{2 * k + (step // 10) % 2}",
                              "reward": float((step // 10) % 2 == 0), "kind": "probe", "split": "val", "probe_id": k}
                             for k in range(3)], step=step)
    run.log_finding(Finding(detector="kl_spike", severity="critical", step=58, metric="actor/kl_loss",
                            title="KL rising late: " + "the policy drifts away from the reference model " * 3))
    run.finish()
    # what the tracker records after a full disk (rlcockpit.store.batch.DataLoss -> a data_lost event + run counter)
    open_store(dir).add_data_loss(run.id, DataLoss(what="metrics", reason="store_unavailable", ranges=[[40, 44]],
                                                   entries=5, points=250, message="disk full for 2.1 s"))
    sparse = rlcockpit.init(project="arith", name="grpo-sparse", group="rich", dir=dir, system_interval=None, health=False,
                            capture_meta=False, config={"actor": {"optim": {"lr": 3e-6}}, "rollout": {"n": 4}})
    for step in range(0, 60, 10):  # logs every 10 steps, no KL at all
        sparse.log({"critic/score/mean": 0.9 - step / 200}, step=step)
    sparse.finish()
    return {"rich": run.id, "sparse": sparse.id}


@pytest.fixture(scope="module")
def browser_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    d = tmp_path_factory.mktemp("ui-browser-store")
    ids = build_store(d)
    ids.update(build_rich_run(d))
    with running_server(d, live_interval_s=0.3) as srv:
        yield {"dir": d, "ids": ids, "server": srv, "url": base_url(srv)}


@pytest.fixture(scope="module")
def page(browser_env) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        ctx = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True, locale="en-US")
        pg = ctx.new_page()
        errors: list[str] = []
        outside: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.on("request", lambda r: outside.append(r.url) if not r.url.startswith(browser_env["url"]) else None)
        pg.errors = errors  # type: ignore[attr-defined]
        yield pg
        assert not outside, f"the dashboard requested non-local URLs: {outside[:5]}"
        browser.close()


def wait(page: Any, expression: str, timeout: float = 10.0) -> Any:
    """Poll a JS expression until truthy and return its value. (Playwright's wait_for_function evaluates
    strings with eval, which the dashboard's CSP rightly forbids; page.evaluate goes through DevTools.)"""
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(f"() => {expression}")
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {expression}")
        page.wait_for_timeout(100)


def open_page(page: Any, env: dict[str, Any], hash_: str, ready: str | None = None, lang: str = "en") -> None:
    page.goto(env["url"] + "/#" + hash_.lstrip("#"))
    page.evaluate(f"() => localStorage.setItem('rlcockpit-lang', '{lang}')")
    if ready:
        page.wait_for_selector(ready)


def fresh(page: Any, env: dict[str, Any], hash_: str, ready: str | None = None) -> None:
    """Open a page with no remembered settings (localStorage cleared), English UI."""
    page.goto(env["url"] + "/")
    page.evaluate("() => { localStorage.clear(); localStorage.setItem('rlcockpit-lang', 'en'); }")
    page.goto(env["url"] + "/#" + hash_.lstrip("#"))
    page.reload()
    if ready:
        page.wait_for_selector(ready)


def ink(page: Any, selector: str, rgb: tuple[int, int, int], tol: int = 40) -> int:
    """Pixels of the canvas under ``selector`` close to colour ``rgb`` (what the chart really drew)."""
    return page.evaluate("""([sel, rgb, tol]) => {
        const c = document.querySelector(sel);
        if (!c) return -1;
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4)
            if (d[i + 3] > 200 && Math.abs(d[i] - rgb[0]) < tol && Math.abs(d[i + 1] - rgb[1]) < tol && Math.abs(d[i + 2] - rgb[2]) < tol) n++;
        return n;
    }""", [selector, list(rgb), tol])


BLUE, ORANGE, RED, YELLOW = (76, 141, 255), (240, 136, 62), (248, 81, 73), (210, 153, 34)


def card(key: str) -> str:
    return f".chart-card[data-key='{key}']"
