"""Logged images in the dashboard (issue 28): sample-table and GRPO-group thumbnails in real Chromium, a click
enlarges; the media route serves only images the run logged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage
from PIL import ImageDraw
from ui_browser_helpers import fresh, needs_chromium, wait
from ui_helpers import base_url, http, running_server

import rlcockpit

COLOURS = ["red", "blue", "green"]


def _shapes(n: int, colour: str) -> PILImage.Image:
    im = PILImage.new("RGB", (64, 64), "white")
    draw = ImageDraw.Draw(im)
    for i in range(n):
        draw.ellipse((4 + 20 * i, 24, 18 + 20 * i, 38), fill=colour)
    return im


def _build(dir: Path) -> dict[str, Any]:
    run = rlcockpit.init(project="vision", name="vlm-run", dir=dir, system_interval=None, capture_meta=False,
                         health=False)
    rows = []
    for g, colour in enumerate(COLOURS):
        image = rlcockpit.Image(_shapes(g + 1, colour), caption=f"{g + 1} {colour}")
        for k in range(2):
            rows.append({"prompt": "<image>How many shapes?", "response": str(g + k), "reward": float(k == 0),
                         "uid": f"g{g}", "images": [image]})
    run.log_samples(rows, step=3)
    run.finish()
    other = rlcockpit.init(project="vision", name="other", dir=dir, system_interval=None, capture_meta=False,
                           health=False)
    other.log_samples([{"prompt": "p", "response": "r", "reward": 0.0, "image": rlcockpit.Image(_shapes(3, "black"))}],
                      step=0)
    other.finish()
    stored = rlcockpit.Api(str(dir))
    foreign = stored.run(other.id).samples(0)[0]["image"]["sha256"]
    return {"run": run.id, "foreign": foreign, "mine": stored.run(run.id).samples(3)[0]["images"][0]["sha256"]}


@pytest.fixture(scope="module")
def browser_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    d = tmp_path_factory.mktemp("ui-images-store")
    ids = _build(d)
    with running_server(d, live_interval_s=0.3) as srv:
        yield {"dir": d, "ids": ids, "server": srv, "url": base_url(srv)}


def test_media_route_serves_only_the_runs_own_images(browser_env) -> None:
    srv, ids = browser_env["server"], browser_env["ids"]
    status, headers, body = http(srv, f"/api/runs/{ids['run']}/media/{ids['mine']}")
    assert status == 200 and headers["content-type"] == "image/png" and body.startswith(b"\x89PNG")
    status, _, body = http(srv, f"/api/runs/{ids['run']}/media/{ids['foreign']}")  # another run's image
    assert status == 404 and b"logged no image" in body
    status, _, body = http(srv, f"/api/runs/{ids['run']}/media/..%2F..%2Fetc%2Fpasswd")
    assert status in (400, 404) and b"root:" not in body


def _loaded_thumbs(page: Any, selector: str) -> list[dict[str, Any]]:
    wait(page, f"[...document.querySelectorAll('{selector}')].length > 0 && "
               f"[...document.querySelectorAll('{selector}')].every((i) => i.complete)")
    return page.eval_on_selector_all(selector, "els => els.map((i) => ({w: i.naturalWidth, h: i.naturalHeight, "
                                               "shown: i.getBoundingClientRect().width, alt: i.alt}))")


@needs_chromium
@pytest.mark.slow
def test_thumbnails_in_the_samples_table_and_group_view_enlarge_on_click(page, browser_env) -> None:
    run = browser_env["ids"]["run"]
    fresh(page, browser_env, f"/run/{run}/samples", "#samples-table")
    thumbs = _loaded_thumbs(page, "#samples-table img.thumb")
    assert len(thumbs) == 6 and all(t["w"] == 64 and t["h"] == 64 and t["shown"] > 0 for t in thumbs)  # none broken
    page.click("#samples-table img.thumb >> nth=0")
    page.wait_for_selector("#lightbox img.lightbox-img")
    big = _loaded_thumbs(page, "#lightbox img.lightbox-img")[0]
    assert big["w"] == 64 and big["shown"] >= 256  # shown enlarged
    page.keyboard.press("Escape")
    wait(page, "!document.getElementById('lightbox')")

    fresh(page, browser_env, f"/run/{run}/samples?view=groups", "#groups-out .grpo-group")
    groups = _loaded_thumbs(page, "#groups-out .grpo-group .group-head img.thumb")
    assert len(groups) == 3 and sorted(g["alt"] for g in groups) == ["1 red", "2 blue", "3 green"]
    assert all(g["w"] == 64 and g["shown"] > 0 for g in groups)
    page.click("#groups-out .grpo-group .group-head img.thumb >> nth=0")
    page.wait_for_selector("#lightbox .lightbox-caption")
    page.click("#lightbox")
    wait(page, "!document.getElementById('lightbox')")
    assert not page.errors, page.errors
