"""SwanLab sink, local-first: ``mode="offline"`` by default (``swanlab sync`` uploads later).

Files go to ``<store>/swanlab/<run id>/run-*/`` (one ``run-*.swanlab`` record log per run). The mode
comes from ``logger_options={"swanlab": {"mode": ...}}``, else ``$SWANLAB_MODE``, else ``"offline"``;
other options are passed to ``swanlab.init`` (``workspace``, ``settings``, ``description``...).
Samples are logged per step as ``swanlab.Text`` entries (only that step's rows).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from rlcockpit.tracking.sinks.base import SINKS, MetricRows, MissingExtra, RunInfo, Sink

MAX_SAMPLES_PER_STEP = 64  # SwanLab renders text entries one by one; the store keeps every sample
STATES = {"finished": "success", "failed": "crashed"}


@SINKS.register("swanlab")
class SwanlabSink(Sink):
    name = "swanlab"

    def open(self, run: RunInfo) -> None:
        try:
            import swanlab
        except ImportError:
            raise MissingExtra("swanlab", "swanlab", "swanlab") from None
        self._swanlab = swanlab
        opts = dict(run.options.get(self.name) or {})
        opts.setdefault("mode", os.environ.get("SWANLAB_MODE") or "offline")
        opts.setdefault("log_dir", str(run.sink_dir(self.name)))
        opts.setdefault("project", run.project)
        opts.setdefault("name", run.name)
        opts.setdefault("config", run.config)
        if run.group:
            opts.setdefault("group", run.group)
        if run.tags:
            opts.setdefault("tags", list(run.tags))
        opts.setdefault("reinit", True)
        self.run = swanlab.init(**opts)
        self._last_step = -1

    def log_metrics(self, rows: MetricRows) -> None:
        log = self.run.log
        for step, _, data in rows:
            log(dict(data), step=step)
            if step > self._last_step:
                self._last_step = step

    def log_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        Text = self._swanlab.Text
        texts = []
        for row in rows[:MAX_SAMPLES_PER_STEP]:
            reward = row.get("reward")
            texts.append(Text(json.dumps(dict(row), ensure_ascii=False, default=str),
                              caption=None if reward is None else f"reward={reward}"))
        if texts:
            self.run.log({"samples": texts}, step=max(step, self._last_step))

    def close(self, status: str, exit_code: int | None) -> None:
        state = STATES.get(status, "aborted")
        if state == "crashed":
            self.run.finish(state=state, error=f"rlcockpit run {status} (exit code {exit_code})")
        else:
            self.run.finish(state=state)
