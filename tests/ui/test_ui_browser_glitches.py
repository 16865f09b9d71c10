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
    from rlcockpit.trainer.config_schema import TrainerConfig
    from rlcockpit.trainer.data import PromptRow
    from rlcockpit.trainer.metrics import sample_rows
    from rlcockpit.trainer.rollout import RolloutOutput

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
