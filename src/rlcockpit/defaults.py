"""The parts every run gets by default: the health monitor as its observer, the alert manager as its
``alerts`` hook — and what health needs to know about the trainer (its config keys), handed down.

Why here, above every concern (like ``cli.py``): tracking must not import health or alerts, yet
``rlcockpit.init(health=True, alerts=...)`` should just work. The factories import their package when a
run first asks for it — a plain import: a broken module fails loudly, it is never skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlcockpit.registry import PROVIDERS
from rlcockpit.tracking.observers import OBSERVERS
from rlcockpit.tracking.parts import RUN_HOOKS


def health_monitor(settings: Mapping[str, Any] | None, run_config: dict[str, Any]) -> Any:
    """A :class:`rlcockpit.health.HealthMonitor` for one run (its detectors, with ``settings``)."""
    from rlcockpit.health.monitor import HealthMonitor

    return HealthMonitor(settings=settings, run_config=run_config)


def attach_alerts(run: Any, section: Any) -> Any:
    """The alert manager of ``run`` (``section``: the ``alerts`` config, or ``True`` for env channels)."""
    from rlcockpit.alerts.manager import attach

    return attach(run, section)


def attach_health_reports(run: Any, reports: Any) -> Any:
    """The scheduled health reports of ``run`` (``health.reports=[1h, 6h, daily, checkpoint]``)."""
    from rlcockpit.alerts.reports import send_report_live
    from rlcockpit.health.schedule import attach_reports

    return attach_reports(run, reports, send=lambda report: send_report_live(run, report))


def trainer_keys() -> list[str]:
    """Every key rlcockpit's trainer config accepts (health's advice keeps only those for our runs)."""
    from rlcockpit.trainer.config import all_keys

    return list(all_keys())


def verl_inactive_reason() -> Any:
    """Advice checks an override against verl's precedence rules before printing it (issue 24)."""
    from rlcockpit.trainer.config.verl import inactive_reason

    return inactive_reason


def trainer_defaults() -> Any:
    """``framework -> {verl path: default}``: what a verl run (verl 0.9.1's defaults) or a run of rlcockpit's
    trainer runs with where its config is silent; advice compares against it."""
    from rlcockpit.trainer.config.load import defaults_table
    from rlcockpit.trainer.config.verl import VERL_DEFAULT_DIFFERENCES, VERL_DEFAULT_VALUES

    def defaults(framework: str) -> dict[str, Any]:
        table = defaults_table()
        if framework == "verl":
            table = {k: v for k, v in table.items() if k not in VERL_DEFAULT_DIFFERENCES}
            table.update(VERL_DEFAULT_VALUES)
        return table

    return defaults


def report_sender() -> Any:
    """``rlcockpit report --send``: the alert channels' sender of a stored run's health report."""
    from rlcockpit.alerts.reports import send_report_now

    return send_report_now


def public_sweep() -> Any:
    """``Api().sweep(path)``: W&B's public ``Sweep`` over the store's sweep tables."""
    from rlcockpit.sweeps.public import public_sweep as make

    return make


def preflight() -> Any:
    """``train`` runs the checks first: (``preflight_gate``, the exception a strict failure raises). Handed down
    so the trainer does not import preflight (which imports the trainer's config, data and models)."""
    from rlcockpit.preflight import PreflightFailed, preflight_gate

    return preflight_gate, PreflightFailed


def preflight_probes() -> Any:
    """What preflight's logging and backup checks read from tracking, the store and alerts, handed down so
    preflight imports none of them: ``logger_name`` (a logger's registered name; ``KeyError`` with a hint),
    ``missing_extra`` (the error a logger without its library raises), ``store_dir`` (where the store of a
    ``trainer.rlcockpit_dir`` is), ``load_alerts_config`` and ``env_webhooks`` (the alert channels),
    ``collect_meta`` (the command line, git state and packages a run records)."""
    from types import SimpleNamespace

    from rlcockpit.alerts.config import ENV_WEBHOOKS, load_alerts_config
    from rlcockpit.store import resolve_dir
    from rlcockpit.tracking.meta import collect_meta
    from rlcockpit.tracking.sinks import SINKS, MissingExtra

    return SimpleNamespace(logger_name=SINKS.canonical, missing_extra=MissingExtra, store_dir=resolve_dir,
                           load_alerts_config=load_alerts_config, env_webhooks=ENV_WEBHOOKS, collect_meta=collect_meta)


def _register(registry: Any, entries: dict[str, Any]) -> None:
    """Add the defaults a registry does not hold yet (a user's own entry under the same name wins)."""
    for name, entry in entries.items():
        if name not in registry:
            registry.add(name, entry)


_register(OBSERVERS, {"health": health_monitor})
_register(RUN_HOOKS, {"alerts": attach_alerts, "health_reports": attach_health_reports})
_register(PROVIDERS, {"public_sweep": public_sweep, "trainer_keys": trainer_keys,
                      "verl_inactive_reason": verl_inactive_reason, "preflight": preflight,
                      "preflight_probes": preflight_probes, "trainer_defaults": trainer_defaults,
                      "report_sender": report_sender})
