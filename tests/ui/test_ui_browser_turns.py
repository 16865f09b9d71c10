"""A multi-turn verl rollout dump in the samples view, turn by turn, in real Chromium.

The dump comes from tests/integrations/verl_v1_job.py (verl's own decode and dump writer, in .venv-verl),
watched into a store. Before: the response column showed the whole conversation as one string, tool-call JSON
and role headers included.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ui_browser_helpers import ARGS, CHROMIUM, fresh, needs_chromium
from ui_helpers import base_url, running_server

from rlcockpit.integrations.watch import VerlWatcher

pytestmark = [pytest.mark.slow, needs_chromium]
REPO = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def turns_env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ui-turns")
    rollouts, log = tmp / "rollouts", tmp / "log.jsonl"
    job = REPO / "tests" / "integrations" / "verl_v1_job.py"
    proc = subprocess.run([str(REPO / ".venv-verl" / "bin" / "python"), str(job), "--scenario", "stale", "--steps", "2",
                           "--rollout-dir", str(rollouts)], capture_output=True, text=True, timeout=600, cwd=tmp,
                          env={**os.environ, "VERL_FILE_LOGGER_PATH": str(log), "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    w = VerlWatcher(file_log=log, rollout_dir=rollouts, dir=tmp / "store", project="agent", name="tools", health=False)
    w.poll_once()
    w.poll_once()
    w.close()
    with running_server(tmp / "store") as srv:
        yield {"url": base_url(srv), "run": w.run.id}


def test_multi_turn_samples_show_messages_tool_calls_and_results(turns_env):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        fresh(page, turns_env, f"/run/{turns_env['run']}/samples", "#samples-table .turns")
        roles = page.eval_on_selector_all("#samples-table tbody tr:first-child .turn", "els => els.map(e => e.dataset.role)")
        assert roles == ["assistant", "tool", "assistant"]
        calls = page.eval_on_selector_all("#samples-table .tool-call", "els => els.map(e => e.textContent)")
        assert calls and all(c.startswith("→ calc({\"expr\":") for c in calls)
        assert any("⇒ error: division by zero" in c for c in calls) and any(c.endswith("⇒ 9") for c in calls)  # step 2: 3*3
        assert not errors, errors
        browser.close()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
