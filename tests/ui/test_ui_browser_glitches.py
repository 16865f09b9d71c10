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
