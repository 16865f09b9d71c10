"""``rlcockpit watchdog``: a small separate process that alerts when a run dies without a word.

Why a separate process: SIGKILL and the kernel's OOM killer end a training process without
running any of its code, so its in-process alerts cannot fire. Every live run writes
``heartbeat_at`` to the store every 5 s; the watchdog reads the store, and a run whose stored
status is still ``running`` but whose heartbeat is older than ``stall_timeout_s`` is marked
``crashed`` (with ``meta.end_reason``) and reported once through the alert channels.

Channels come from the watchdog's own ``--config`` file and environment variables: secrets are
redacted in the stored run config, so only secret-free channels stored there (console) are reused.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from rlcockpit.alerts.config import AlertsConfig, load_alerts_config
from rlcockpit.alerts.manager import AlertManager
from rlcockpit.alerts.message import AlertMessage, run_link
from rlcockpit.redact import MASK

logger = logging.getLogger("rlcockpit.alerts")
DEFAULT_STALL_TIMEOUT_S = 60.0


def _has_masked(obj: Any) -> bool:
    if isinstance(obj, Mapping):
        return any(_has_masked(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_has_masked(v) for v in obj)
    return isinstance(obj, str) and MASK in obj


def channels_for_run(run: Mapping[str, Any], own: AlertsConfig) -> AlertsConfig:
    """The watchdog's own channels, or else the run's stored channels that survived redaction."""
    if own.channels:
        return own
    section = (run.get("config") or {}).get("alerts")
    if not section:
        return own
    if isinstance(section, list):
        section = {"channels": section}
    if not isinstance(section, Mapping):
        return own
    usable = [c for c in section.get("channels") or [] if isinstance(c, Mapping) and not _has_masked(c)]
    try:
        stored = load_alerts_config({"channels": usable, "use_env": False,
                                     "dashboard_url": section.get("dashboard_url") or own.dashboard_url})
    except ValueError as exc:
        logger.warning("rlcockpit watchdog: run %s: stored alert channels unusable: %s", run.get("id"), exc)
        return own
    return stored


def crash_message(run: Mapping[str, Any], age_s: float, config: AlertsConfig) -> AlertMessage:
    last = run.get("last_step")
    return AlertMessage(
        title="run crashed: heartbeat stopped",
        text=(f"No heartbeat for {age_s:.0f}s while the run was still marked running (last step {last}). "
              "The process was probably killed by SIGKILL or the OOM killer, or its host went down. "
              f"Resume with init(resume={run.get('id')!r}) or trainer.resume_mode=auto."),
        level="critical", kind="crashed", project=run.get("project"), run_id=run.get("id"),
        run_name=run.get("name"), step=last, link=run_link(config.dashboard_url, run.get("id")),
    )


def scan_once(store: Any, config: AlertsConfig, *, stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S,
              project: str | None = None, now: float | None = None) -> list[dict[str, Any]]:
    """Mark running runs with a stale heartbeat ``crashed`` and alert once each; returns what was found.

    "Once": the run's stored status changes to ``crashed`` before alerting, so a second scan (or a
    second watchdog) never sees it again.
    """
    now = time.time() if now is None else now
    found: list[dict[str, Any]] = []
    for run in store.list_runs(project):
        if run.get("stored_status") != "running":
            continue
        beat = float(run.get("heartbeat_at") or run.get("updated_at") or 0)
        age = now - beat
        if age <= stall_timeout_s:
            continue
        fresh = store.get_run(run["id"])  # re-read: the run may have just finished or beaten again
        if fresh.get("stored_status") != "running" or now - float(fresh.get("heartbeat_at") or 0) <= stall_timeout_s:
            continue
        meta = dict(fresh.get("meta") or {})
        meta["end_reason"] = f"heartbeat stopped for {age:.0f}s (rlcockpit watchdog)"
        store.update_run(run["id"], status="crashed", meta=meta, finished_at=beat)
        store.add_event(run["id"], "watchdog", {"status": "crashed", "heartbeat_age_s": round(age, 1)},
                        step=fresh.get("last_step"))
        cfg = channels_for_run(fresh, config)
        msg = crash_message(fresh, age, cfg)
        mgr = AlertManager(cfg, store=store, run_id=run["id"], project=fresh.get("project"),
                           run_name=fresh.get("name"))
        deliveries = mgr.deliver_now(msg, timeout=max(10.0, cfg.timeout_s * (cfg.max_retries + 1)))
        if not cfg.channels:
            logger.warning("rlcockpit watchdog: run %s crashed but no alert channel is configured", run["id"])
        found.append({"id": run["id"], "name": fresh.get("name"), "project": fresh.get("project"),
                      "heartbeat_age_s": round(age, 1), "deliveries": deliveries})
    return found


def watch(store: Any, config: AlertsConfig, *, stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S,
          interval_s: float = 15.0, project: str | None = None, once: bool = False,
          on_found: Any = None, stop: Any = None) -> list[dict[str, Any]]:
    """Scan every ``interval_s`` seconds (or once); ``stop`` is an optional ``threading.Event``."""
    everything: list[dict[str, Any]] = []
    while True:
        try:
            found = scan_once(store, config, stall_timeout_s=stall_timeout_s, project=project)
        except Exception as exc:  # noqa: BLE001 - a locked or half-written store must not kill the watchdog
            logger.warning("rlcockpit watchdog: scan failed: %s", exc)
            found = []
        everything += found
        for f in found:
            if on_found:
                on_found(f)
        if once:
            return everything
        if stop is not None:
            if stop.wait(interval_s):
                return everything
        else:
            time.sleep(interval_s)
