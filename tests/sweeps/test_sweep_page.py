"""The sweep page in real Chromium: sweeps list, head, best-so-far curve, parallel coordinates, trial table,
importance panel, English and Chinese; plus its JSON API (read-only, 404s)."""

from __future__ import annotations

import json
import math
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rlcockpit
from rlcockpit.ui.server import make_server, serve_in_thread

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"


@pytest.fixture(scope="module")
def sweep_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    d = tmp_path_factory.mktemp("sweep-page")
    old = os.environ.get("RLCOCKPIT_DIR")
    os.environ["RLCOCKPIT_DIR"] = str(d)
    try:
        sweep_id = rlcockpit.sweep({"method": "bayes", "name": "lr-opt", "metric": {"name": "acc", "goal": "maximize"},
                                    "parameters": {"lr": {"distribution": "log_uniform_values", "min": 1e-5, "max": 1e-2},
                                                   "opt": {"values": ["adam", "sgd", "rmsprop"]}}}, project="demo", seed=1)
        calls = []

        def train() -> None:
            run = rlcockpit.init(system_interval=None, health=False, capture_meta=False)
            calls.append(run.id)
            if len(calls) == 4:
                raise RuntimeError("simulated OOM")
            base = {"adam": 0.8, "sgd": 0.5, "rmsprop": 0.65}[run.config["opt"]] - 0.1 * abs(math.log10(run.config["lr"]) + 3)
            for s in range(4):
                run.log({"acc": base * (s + 1) / 4}, step=s)

        rlcockpit.agent(sweep_id, function=train, count=12)
    finally:
        if old is None:
            os.environ.pop("RLCOCKPIT_DIR", None)
        else:
            os.environ["RLCOCKPIT_DIR"] = old
    server = make_server(str(d), port=0)
    serve_in_thread(server)
    host, port = server.server_address[:2]
    try:
        yield {"url": f"http://{host}:{port}", "sweep": sweep_id, "dir": d}
    finally:
        server.shutdown()
        server.server_close()


def get(env: dict[str, Any], path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(env["url"] + path, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_sweep_api(sweep_env: dict[str, Any]) -> None:
    status, data = get(sweep_env, "/api/sweeps")
    assert status == 200 and [s["id"] for s in data["sweeps"]] == [sweep_env["sweep"]]
    assert data["sweeps"][0]["trials"] == 12 and data["sweeps"][0]["counts"]["failed"] == 1
    status, sw = get(sweep_env, f"/api/sweeps/{sweep_env['sweep']}")
    assert status == 200 and len(sw["trials"]) == 12 and sw["trials"][3]["state"] == "failed"
    assert [a["name"] for a in sw["parallel"]["axes"]] == ["lr", "opt", "acc"] and len(sw["parallel"]["lines"]) == 11
    assert sw["best_so_far"][-1]["best"] == sw["best"]["value"]
    status, imp = get(sweep_env, f"/api/sweeps/{sweep_env['sweep']}/importance")
    assert status == 200 and imp["n_used"] == 11 and {p["key"] for p in imp["parameters"]} == {"lr", "opt"}
    status, err = get(sweep_env, "/api/sweeps/nope")
    assert status == 404 and "no sweep" in err["error"]
    _, spec = get(sweep_env, "/api/openapi.json")
    assert "/api/sweeps/{sweep}/importance" in spec["paths"]


@pytest.mark.slow
def test_sweep_page_in_chromium(sweep_env: dict[str, Any]) -> None:
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(sweep_env["url"] + "/")
        page.evaluate("() => { localStorage.clear(); localStorage.setItem('rlcockpit-lang', 'en'); }")
        page.goto(sweep_env["url"] + "/#/sweeps")
        page.reload()
        page.click("#nav-sweeps")
        page.wait_for_selector("#sweeps-table a.sweep-link")
        page.click("#sweeps-table a.sweep-link")
        page.wait_for_selector("#importance-table tbody tr")
        assert "lr-opt" in page.inner_text(".sweep-head") and "acc · maximize" in page.inner_text("#sweep-kv")
        assert "finished 11 · failed 1" in page.inner_text("#sweep-kv")
        assert page.get_attribute("#best-so-far", "data-points") == "11"
        assert page.locator("#best-so-far canvas").count() >= 1
        assert page.get_attribute("#parallel-coords canvas", "data-lines") == "11"
        drawn = page.evaluate("""() => { const c = document.querySelector('#parallel-coords canvas');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
            for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0) n++; return n; }""")
        assert drawn > 2000  # the lines are really drawn
        rows = page.locator("#trials-table tbody tr")
        assert rows.count() == 12 and "simulated OOM" in rows.nth(3).inner_text()
        page.click("#trials-table th[data-sort='best']")  # sort by the metric: best first for maximize
        first = page.locator("#trials-table tbody tr").first
        assert first.get_attribute("data-trial") == str(json.loads(urllib.request.urlopen(
            sweep_env["url"] + f"/api/sweeps/{sweep_env['sweep']}").read())["best"]["number"])
        assert page.locator("#importance-table tbody tr").count() == 2
        assert "permutation" in (page.get_attribute("#importance-table th:nth-child(2)", "title") or "").lower()
        page.fill("#importance-metric", "nope")
        page.press("#importance-metric", "Enter")
        page.wait_for_selector("#importance-error")
        page.screenshot(path=str(SHOTS / "sweep.png"), full_page=True)
        first.locator("a.run-link").click()  # a trial is an ordinary run
        page.wait_for_function("() => location.hash.startsWith('#/run/')")
        page.goto(sweep_env["url"] + f"/#/sweep/{sweep_env['sweep']}")
        page.evaluate("() => localStorage.setItem('rlcockpit-lang', 'zh')")
        page.reload()
        page.wait_for_selector("#importance-table tbody tr")
        text = page.inner_text("body")
        assert "平行坐标图" in text and "超参重要性" in text and "置换重要性" in text
        assert "Parallel coordinates" not in text and "Hyperparameter importance" not in text
        assert not errors, errors
        browser.close()
