"""Built-in sinks that need no extra library: the local store, JSONL files and the console."""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rlcockpit.metrics.headline import HEADLINE_KEYS
from rlcockpit.redact import redact_text
from rlcockpit.store.base import Store
from rlcockpit.tracking.sinks.base import SINKS, MetricRows, RunInfo, Sink, finding_text
from rlcockpit.tracking.write.convert import rows_to_columns


@SINKS.register("rlcockpit", "store", "local")
class StoreSink(Sink):
    """The embedded store (always on unless left out of ``loggers``): what the CLI, dashboard and health read.

    A run writes its own store from its writer thread (one transaction per drain, retried while the store
    cannot be written; see :mod:`rlcockpit.tracking.write.storelink`); this class is the name ``rlcockpit`` in
    :data:`SINKS`, and a plain sink for writing a run into *another* store: ``sinks=[StoreSink(store)]``."""

    name = "rlcockpit"

    def __init__(self, store: Store | None = None) -> None:
        self.store = store
        self.run_id = ""

    def open(self, run: RunInfo) -> None:
        if self.store is None:
            from rlcockpit.store import open_store

            self.store = open_store(run.dir)
        self.run_id = run.id

    def log_metrics(self, rows: MetricRows) -> None:
        self.store.append_points(self.run_id, rows_to_columns(rows))

    def log_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        self.store.append_samples(self.run_id, step, rows)

    def log_finding(self, finding: Any) -> None:
        self.store.add_finding(self.run_id, finding)

    def log_event(self, kind: str, payload: Mapping[str, Any], step: int | None) -> None:
        self.store.add_event(self.run_id, kind, payload, step)

    def update_summary(self, summary: Mapping[str, Any]) -> None:
        self.store.update_run(self.run_id, summary=dict(summary))

@SINKS.register("jsonl", "file")
class JsonlSink(Sink):
    """``<dir>/jsonl/<run id>/metrics.jsonl`` in verl's file-logger shape ``{"step": N, "data": {...}}``,
    plus ``samples.jsonl`` and ``findings.jsonl``."""

    name = "jsonl"

    def open(self, run: RunInfo) -> None:
        path = run.options.get("jsonl", {}).get("path", run.options.get("path"))
        self.dir = run.sink_dir("jsonl") if path is None else __import__("pathlib").Path(path)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._metrics = open(self.dir / "metrics.jsonl", "a", encoding="utf-8")
        self._samples: io.TextIOWrapper | None = None
        self._findings: io.TextIOWrapper | None = None

    def log_metrics(self, rows: MetricRows) -> None:
        write = self._metrics.write
        for step, ts, data in rows:
            write(json.dumps({"step": step, "ts": ts, "data": data}, ensure_ascii=False, default=float) + "\n")

    def log_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        if self._samples is None:
            self._samples = open(self.dir / "samples.jsonl", "a", encoding="utf-8")
        for row in rows:
            self._samples.write(json.dumps({"step": step, **row}, ensure_ascii=False, default=str) + "\n")

    def log_finding(self, finding: Any) -> None:
        if self._findings is None:
            self._findings = open(self.dir / "findings.jsonl", "a", encoding="utf-8")
        self._findings.write(json.dumps(finding.to_dict(), ensure_ascii=False, default=str) + "\n")

    def flush(self) -> None:
        for f in (self._metrics, self._samples, self._findings):
            if f is not None:
                f.flush()

    def close(self, status: str, exit_code: int | None) -> None:
        for f in (self._metrics, self._samples, self._findings):
            if f is not None:
                f.close()

# Keys shown by the console view: its label -> the headline slot (first candidate logged wins).
CONSOLE_KEYS = tuple((label, HEADLINE_KEYS[slot]) for label, slot in (
    ("reward", "reward"), ("acc", "val_acc"), ("kl", "kl"), ("entropy", "entropy"), ("pg_loss", "pg_loss"),
    ("clipfrac", "clipfrac"), ("grad", "grad_norm"), ("len", "resp_len"), ("s/step", "step_time")))

@SINKS.register("console")
class ConsoleSink(Sink):
    """A compact view of the key metrics: one line every ``interval`` seconds (default 2 s)."""

    name = "console"

    def open(self, run: RunInfo) -> None:
        opts = run.options.get("console", {})
        self.interval = float(opts.get("interval", run.options.get("console_interval", 2.0)))
        self.stream = opts.get("stream") or run.options.get("stream") or sys.stderr
        self._last_print = 0.0
        self._latest: dict[str, float] = {}
        self._step = -1
        self._label = f"[{run.project}/{run.name}]"
        self._describe = run.describe_finding

    def log_metrics(self, rows: MetricRows) -> None:
        for step, _, data in rows:
            self._latest.update(data)
            self._step = max(self._step, step)
        now = time.monotonic()
        if now - self._last_print >= self.interval:
            self._print()
            self._last_print = now

    def _print(self) -> None:
        parts = [f"{self._label} step {self._step}"]
        for label, keys in CONSOLE_KEYS:
            for k in keys:
                if k in self._latest:
                    parts.append(f"{label} {self._latest[k]:.4g}")
                    break
        print(" | ".join(parts), file=self.stream, flush=True)

    def log_finding(self, finding: Any) -> None:
        print(redact_text(finding_text(finding, self._describe)), file=self.stream, flush=True)

    def close(self, status: str, exit_code: int | None) -> None:
        if self._latest:
            self._print()
        print(f"{self._label} {status}", file=self.stream, flush=True)
