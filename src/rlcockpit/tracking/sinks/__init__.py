"""Sinks (loggers) a run fans out to; third-party ones register on import of their module."""

from rlcockpit.tracking.sinks.base import SINKS, MissingExtra, RunInfo, Sink, sanitize_key
from rlcockpit.tracking.sinks.local import ConsoleSink, JsonlSink, StoreSink

# Third-party sinks: each module imports its library lazily in open(), so importing is cheap.
for _mod in ("tensorboard", "wandb_sink", "mlflow_sink", "swanlab_sink"):
    try:
        __import__(f"rlcockpit.tracking.sinks.{_mod}")
    except ModuleNotFoundError as _exc:
        if not (_exc.name or "").startswith("rlcockpit"):
            raise

__all__ = ["SINKS", "ConsoleSink", "JsonlSink", "MissingExtra", "RunInfo", "Sink", "StoreSink", "sanitize_key"]
