"""In-process verl integration: ``trainer.logger=['console','rlcockpit']``.

verl's ``verl.utils.tracking.Tracking`` builds its backends from a fixed list and has no plugin
point, so :func:`install` adds one: ``"rlcockpit"`` joins ``Tracking.supported_backend``,
``Tracking.__init__`` creates an rlcockpit run (config = verl's OmegaConf config, with
``framework: verl``) when the backend is requested, ``Tracking.finish`` finishes it, and
``ValidationGenerationsLogger.log`` stores ``val/generations`` samples. Everything else verl does is
untouched; the other backends are built by verl's own code.

How to enable it, in the process that creates ``Tracking`` (verl's TaskRunner, a Ray actor):

* installed rlcockpit registers the ``verl.plugins`` entry point ``rlcockpit`` (verl >= 0.6 imports
  those in every process that imports verl) — nothing to do; or
* ``VERL_USE_EXTERNAL_MODULES=rlcockpit.integrations.verl_plugin`` in the job's environment; or
* call ``rlcockpit.integrations.verl.install()`` in your own entry point before the trainer starts.

Store location and options come from the environment: ``RLCOCKPIT_DIR``, ``RLCOCKPIT_ALERTS`` (alerts
yaml/json file), ``RLCOCKPIT_HEALTH=0`` to disable the detectors.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

logger = logging.getLogger("rlcockpit")

BACKEND = "rlcockpit"
SUPPORTED = ((0, 4), (0, 99))  # verl releases whose Tracking shape we patch: 0.4 up to (not incl.) 1.0
_PATCHED = "_rlcockpit_patched"


class VerlVersionError(RuntimeError):
    """The installed verl is one this integration does not know how to patch."""


def _version_tuple(text: str) -> tuple[int, int]:
    parts = []
    for piece in str(text).split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return (parts + [0, 0])[0], (parts + [0, 0])[1]


def check_version(version: str) -> None:
    lo, hi = SUPPORTED
    v = _version_tuple(version)
    if not (lo <= v <= hi):
        raise VerlVersionError(
            f"rlcockpit's verl integration supports verl {lo[0]}.{lo[1]} to {hi[0]}.x; found verl {version}. "
            "Follow the job's file log instead: trainer.logger=['console','file'] and "
            "`rlcockpit watch --verl-file $VERL_FILE_LOGGER_PATH`.")


class CockpitBackend:
    """The object verl's ``Tracking.log`` calls: ``log(data=..., step=...)`` and ``finish()``."""

    def __init__(self, project_name: str, experiment_name: str, config: Any = None) -> None:
        import rlcockpit
        from rlcockpit.integrations.verl_files import load_config_file, verl_config
        from rlcockpit.tracking.compat.reinit import OWN_RUN
        from rlcockpit.tracking.runinfo import config_to_dict

        cfg = verl_config(config_to_dict(config) if config is not None else None)
        alerts_file = os.environ.get("RLCOCKPIT_ALERTS")
        alerts = None
        if alerts_file:
            data = load_config_file(alerts_file)
            alerts = data.get("alerts", data)
        health = os.environ.get("RLCOCKPIT_HEALTH", "1") not in ("0", "false", "no")
        self.run = rlcockpit.init(project=project_name, name=experiment_name, config=cfg, health=health,
                                  alerts=alerts, resume=os.environ.get("RLCOCKPIT_RESUME") or None, reinit=OWN_RUN)
        meta = dict(self.run.store.get_run(self.run.id).get("meta") or {})
        meta["framework"] = "verl"
        self.run.store.update_run(self.run.id, meta=meta)

    def log(self, data: Mapping[str, Any], step: int) -> None:
        self.run.log(data, step=step)

    def log_generations(self, samples: Sequence[Sequence[Any]], step: int, source: str = "val/generations") -> None:
        """verl's validation samples: ``(input, output, score)`` tuples."""
        rows = []
        for s in samples:
            s = list(s)
            rows.append({"prompt": s[0] if s else None, "response": s[1] if len(s) > 1 else None,
                         "reward": s[2] if len(s) > 2 else None, "source": source})
        if rows:
            self.run.log_samples(rows, step=step)

    def finish(self, exit_code: int = 0) -> None:
        self.run.finish(exit_code)


_active: list[CockpitBackend] = []


def _requested(default_backend: Any) -> list[str]:
    if default_backend is None:
        return []
    if isinstance(default_backend, str):
        return [default_backend]
    return [str(b) for b in default_backend]


def _patch_tracking(Tracking: type) -> None:
    supported = getattr(Tracking, "supported_backend", None)
    if isinstance(supported, list):
        if BACKEND not in supported:
            supported.append(BACKEND)
    elif isinstance(supported, (tuple, set, frozenset)):
        Tracking.supported_backend = type(supported)([*supported, BACKEND])  # type: ignore[attr-defined]

    orig_init = Tracking.__init__
    sig = inspect.signature(orig_init)
    if "default_backend" not in sig.parameters:
        raise VerlVersionError("verl's Tracking.__init__ has no default_backend parameter; this verl is not supported")

    @functools.wraps(orig_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        backends = _requested(bound.arguments.get("default_backend"))
        ours = BACKEND in backends
        if ours:  # verl builds the others; an empty list is fine for it
            bound.arguments["default_backend"] = [b for b in backends if b != BACKEND]
        orig_init(*bound.args, **bound.kwargs)
        if ours:
            backend = CockpitBackend(bound.arguments.get("project_name"), bound.arguments.get("experiment_name"),
                                     bound.arguments.get("config"))
            if not isinstance(getattr(self, "logger", None), dict):
                self.logger = {}
            self.logger[BACKEND] = backend
            _active.append(backend)

    Tracking.__init__ = __init__

    orig_finish = getattr(Tracking, "finish", None)
    if orig_finish is not None:
        @functools.wraps(orig_finish)
        def finish(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = orig_finish(self, *args, **kwargs)
            backend = (getattr(self, "logger", None) or {}).get(BACKEND)
            if backend is not None:
                code = kwargs.get("exit_code", args[0] if args else 0)
                backend.finish(int(code or 0))
            return out

        Tracking.finish = finish


def _patch_generations(GenLogger: type) -> None:
    orig_log = GenLogger.log

    @functools.wraps(orig_log)
    def log(self: Any, loggers: Any, samples: Any, step: int, *args: Any, **kwargs: Any) -> Any:
        out = orig_log(self, loggers, samples, step, *args, **kwargs)
        if BACKEND in _requested(loggers) and _active:
            _active[-1].log_generations(samples, step)
        return out

    GenLogger.log = log


def install() -> None:
    """Register the ``rlcockpit`` backend in verl's ``Tracking`` (idempotent).

    Raises :class:`VerlVersionError` for a verl release outside the supported range, ``ImportError``
    when verl is not installed.
    """
    try:
        import verl
        from verl.utils import tracking
    except ImportError as exc:
        raise ImportError(f"rlcockpit.integrations.verl.install(): verl is not importable ({exc})") from exc
    version = getattr(verl, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("verl")
    check_version(version)
    Tracking = getattr(tracking, "Tracking", None)
    if Tracking is None:
        raise VerlVersionError(f"verl {version} has no verl.utils.tracking.Tracking; this verl is not supported")
    if getattr(Tracking, _PATCHED, False):
        return
    _patch_tracking(Tracking)
    GenLogger = getattr(tracking, "ValidationGenerationsLogger", None)
    if GenLogger is not None and hasattr(GenLogger, "log"):
        _patch_generations(GenLogger)
    Tracking._rlcockpit_patched = True  # type: ignore[attr-defined]
    logger.debug("rlcockpit: verl %s Tracking patched: trainer.logger may include 'rlcockpit'", version)


def active_runs() -> list[Any]:
    """The rlcockpit runs created by verl ``Tracking`` objects in this process (newest last)."""
    return [b.run for b in _active]
