"""Sinks: where a run's data fans out to besides its store (console, JSONL, TensorBoard, W&B, MLflow, SwanLab,
your own).

A sink is opened once per run and then only ever called from its own thread (one
:class:`~rlcockpit.tracking.write.fanout.SinkWorker` per sink), in batches, so it may do blocking IO: a sink that
hangs holds up only itself. Each batch it could not take (it raised, or its bounded queue was full while it
hung) is recorded on the run as a ``data_lost`` event naming the sink; a failing sink is reported once per
method, and after :data:`MAX_CONSECUTIVE_FAILURES` failures in a row it is disabled (recorded too) — the
store and the other sinks go on.

Register a sink with ``@SINKS.register("name")``; users enable it with ``init(loggers=[...])`` or
``trainer.logger=[...]``. A sink whose optional library is missing raises :class:`MissingExtra`
from ``open``, which is reported as one line naming the extra to install.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from rlcockpit.paths import confined
from rlcockpit.registry import Registry

MAX_CONSECUTIVE_FAILURES = 5

MetricRows = Sequence[tuple[int, float, Mapping[str, float]]]  # (step, unix time, {key: value})


class RowsPart(NamedTuple):
    rows: list[tuple[int, float, Mapping[str, float]]]


class SamplesPart(NamedTuple):
    step: int
    rows: list[dict[str, Any]]


class EventPart(NamedTuple):
    kind: str
    payload: Mapping[str, Any]
    step: int | None


class FindingPart(NamedTuple):
    finding: Any


@dataclass
class SinkBatch:
    """What one writer drain hands a sink: validated parts in logging order, and the summary when it changed."""

    parts: list[Any] = field(default_factory=list)  # RowsPart | SamplesPart | EventPart | FindingPart
    summary: Mapping[str, Any] | None = None
    nbytes: int = 0
    barrier: Any = None  # an entries.Barrier passed once everything before it was delivered


class MissingExtra(RuntimeError):
    """An optional library a sink needs is not installed."""

    def __init__(self, sink: str, package: str, extra: str) -> None:
        super().__init__(
            f"logger {sink!r} needs the {package!r} package: pip install 'rlcockpit[{extra}]' "
            f"(the other loggers keep running)"
        )


@dataclass
class RunInfo:
    """What a sink knows about the run it writes."""

    id: str
    name: str
    project: str
    group: str | None
    tags: list[str]
    config: dict[str, Any]
    dir: Path  # the store directory; sinks put their own files under dir / <sink> / <run id>
    resumed: bool = False
    options: dict[str, Any] = field(default_factory=dict)  # per-sink options from init(logger_options=...)
    command: list[str] = field(default_factory=list)  # the redacted command line (trackers that record one)
    describe_finding: Any = None  # finding -> console text (the observer's own format), see finding_text

    def sink_dir(self, sink: str) -> Path:
        path = confined(self.dir / sink, self.id, "run id")  # the run id names the folder: never outside it
        path.mkdir(parents=True, exist_ok=True)
        return path


class Sink:
    """Base class: every hook is optional except :meth:`log_metrics`."""

    name = "sink"

    def open(self, run: RunInfo) -> None:  # noqa: B027
        """Prepare to write ``run`` (create files, connect). Raise MissingExtra for a missing library."""

    def log_metrics(self, rows: MetricRows) -> None:
        raise NotImplementedError

    def log_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> None:  # noqa: B027
        """Rollout samples of one step (prompt, response, reward, extra columns)."""

    def log_finding(self, finding: Any) -> None:  # noqa: B027
        """A health finding (``rlcockpit.health.Finding``)."""

    def log_event(self, kind: str, payload: Mapping[str, Any], step: int | None) -> None:  # noqa: B027
        """A run event (guardrail intervention, alert delivery...)."""

    def update_summary(self, summary: Mapping[str, Any]) -> None:  # noqa: B027
        """The run's summary changed."""

    def flush(self) -> None:  # noqa: B027
        """Make everything written so far durable."""

    def close(self, status: str, exit_code: int | None) -> None:  # noqa: B027
        """The run ended with ``status``; flush and release resources."""


SINKS: Registry[type[Sink]] = Registry("logger")


def finding_text(finding: Any, describe: Any = None) -> str:
    """The console text of a finding: its observer's format when the run has one, else a generic line."""
    if describe is not None:
        return describe(finding)
    d = finding.to_dict() if hasattr(finding, "to_dict") else dict(finding)
    return f"[{str(d.get('severity', '?')).upper()}] step {d.get('step')} {d.get('detector')}: {d.get('title')}"


def sanitize_key(key: str, allowed: str = "-_./ ") -> str:
    """Replace characters a tracker refuses by ``_`` (only where that sink requires it)."""
    return "".join(c if c.isalnum() or c in allowed else "_" for c in key)
