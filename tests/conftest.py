"""Fixtures shared by every test folder: the throwaway PostgreSQL cluster, no run left active, and no W&B session
carried from one test to the next."""

from __future__ import annotations

import os
import sys

import pytest

import pg_support


@pytest.fixture(autouse=True)
def _finish_runs_left_active():
    """After each test: finish the rlcockpit runs it left active. ``init()`` while a run is active returns
    that run (W&B's default), so a run one test leaves open would otherwise be the next test's run."""
    yield
    run_module = sys.modules.get("rlcockpit.tracking.run")
    if run_module is None:
        return
    left = [r for r in run_module._live_runs if getattr(r, "finished", True) is False]
    current = run_module._current
    if current is not None and getattr(current, "finished", True) is False and current not in left:
        left.append(current)
    for run in left:
        try:
            run.finish(timeout=5.0)
        except Exception:  # noqa: BLE001 - a run the test broke on purpose: it is not this test's business
            pass
    run_module._current = None


@pytest.fixture(autouse=True)
def _no_wandb_session_carried_over():
    """After each test that used W&B: tear its process-wide session down. W&B reads its settings (``WANDB_MODE``,
    ``WANDB_DIR``) when that session is set up, so a session one test left would keep its mode for the next test in
    the same process (a TRL script's ``WANDB_MODE=offline`` then asked for a login). With two pytest workers, which
    tests share a process changes from run to run."""
    yield
    wandb = sys.modules.get("wandb")
    if wandb is not None and hasattr(wandb, "teardown"):
        wandb.teardown()


@pytest.fixture(scope="session")
def pg_cluster():
    """A real PostgreSQL server on loopback for this session (started on first use, removed at the end)."""
    c = pg_support.cluster()
    yield c
    pg_support.shutdown()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """A URL to an empty schema of the session's PostgreSQL (dropped after the test)."""
    url, name = pg_support.fresh_schema_url(pg_cluster)
    yield url
    pg_support.drop_schema(pg_cluster, name)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """``make test`` installs every dependency (venvs, Chromium, PostgreSQL), so there a skipped or xfailed
    test is hidden breakage: with ``RLCOCKPIT_NO_SKIPS=1`` (set by ``make test``) it fails the session."""
    if os.environ.get("RLCOCKPIT_NO_SKIPS") != "1":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    hidden = [r for kind in ("skipped", "xfailed") for r in (reporter.stats.get(kind, []) if reporter else [])]
    if hidden and exitstatus == 0:
        for r in hidden:
            print(f"\nRLCOCKPIT_NO_SKIPS: {r.nodeid} was skipped or xfailed: {getattr(r, 'longrepr', '')}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
