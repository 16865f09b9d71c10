"""Sinks (loggers) a run fans out to. Third-party sinks import their library lazily in ``open()``, so
importing their modules here is cheap; a missing library is reported when a run asks for that logger."""

from rlcockpit.tracking.sinks import mlflow_sink, swanlab_sink, tensorboard, wandb_sink  # noqa: F401 - register
from rlcockpit.tracking.sinks.base import (
           SINKS,
           MissingExtra,
           RunInfo,
           Sink,
           SinkBatch,
           finding_text,
           sanitize_key,
)
from rlcockpit.tracking.sinks.local import ConsoleSink, JsonlSink, StoreSink

__all__ = ["SINKS", "ConsoleSink", "JsonlSink", "MissingExtra", "RunInfo", "Sink", "SinkBatch", "StoreSink",
           "finding_text", "sanitize_key"]
