"""Weights & Biases sink (offline by default: no account, no network).

Files go to ``<store>/wandb/<run id>/wandb/offline-run-*/``; ``wandb sync`` uploads them later.
The mode comes from ``logger_options={"wandb": {"mode": ...}}``, else ``$WANDB_MODE``, else
``"offline"``. Other options are passed to ``wandb.init`` (``entity``, ``settings``...).

Samples are logged incrementally: one ``wandb.Table(log_mode="INCREMENTAL")`` per run, each step
appends only that step's rows (W&B writes one small increment file per step) instead of
re-logging a growing table, which costs O(steps²) bytes.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rlcockpit.redact import redact_argv
from rlcockpit.tracking.sinks.base import SINKS, MetricRows, MissingExtra, RunInfo, Sink

SAMPLE_COLUMNS = ("step", "prompt", "response", "reward")
EXIT_CODES = {"finished": 0, "failed": 1}


@SINKS.register("wandb")
class WandbSink(Sink):
    name = "wandb"

    def open(self, run: RunInfo) -> None:
        try:
            import wandb
        except ImportError:
            raise MissingExtra("wandb", "wandb", "wandb") from None
        self._wandb = wandb
        opts = dict(run.options.get(self.name) or {})
        opts.setdefault("mode", os.environ.get("WANDB_MODE") or "offline")
        opts.setdefault("dir", str(run.sink_dir(self.name)))
        opts.setdefault("project", run.project)
        opts.setdefault("name", run.name)
        opts.setdefault("id", run.id)
        opts.setdefault("group", run.group)
        opts.setdefault("tags", list(run.tags) or None)
        opts.setdefault("config", run.config)
        opts.setdefault("resume", "allow" if run.resumed else None)
        opts.setdefault("reinit", "create_new")  # several rlcockpit runs in one process each get their own
        if "settings" not in opts:
            # rlcockpit samples system metrics and captures the environment itself
            opts["settings"] = wandb.Settings(console="off", x_disable_stats=True)
        # W&B records sys.argv in its run file: it sees the command line with secrets masked
        saved = sys.argv
        sys.argv = [saved[0] if saved else "", *redact_argv(saved[1:])]
        try:
            self.run = wandb.init(**opts)
        finally:
            sys.argv = saved
        self._store_dir = run.dir
        self._table: Any = None
        self._columns: list[str] = []
        self._last_step = -1

    def log_metrics(self, rows: MetricRows) -> None:
        log = self.run.log
        for step, _, data in rows:
            log(dict(data), step=step)
            if step > self._last_step:
                self._last_step = step

    def _new_table(self, rows: Sequence[Mapping[str, Any]]) -> Any:
        columns = list(SAMPLE_COLUMNS)
        for row in rows:
            columns.extend(k for k in row if k not in columns)
        self._columns = [*columns, "extra"]
        try:
            return self._wandb.Table(columns=self._columns, log_mode="INCREMENTAL")
        except TypeError:  # wandb < 0.19: no incremental tables; a fresh per-step table is still incremental
            return None

    def log_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        if not rows:
            return
        if not self._columns:
            self._table = self._new_table(rows)
        cols = self._columns
        data = []
        for row in rows:
            extra = {k: v for k, v in row.items() if k not in cols}
            line = [step if c == "step" else row.get(c) for c in cols[:-1]]
            line.append(json.dumps(extra, ensure_ascii=False, default=str) if extra else None)
            data.append(line)
        table = self._table
        if table is None:
            table = self._wandb.Table(columns=cols, data=data)
        else:
            for line in data:
                table.add_data(*line)
        # W&B drops entries whose step went backwards; samples of an older step land on the current one
        self.run.log({"samples": table}, step=max(step, self._last_step))
        self._last_step = max(step, self._last_step)

    def log_event(self, kind: str, payload: Mapping[str, Any], step: int | None) -> None:
        if kind == "artifact":  # a version logged with run.log_artifact: mirrored as a W&B artifact
            from rlcockpit.tracking import artifacts

            artifacts.mirror(self._store_dir, payload, lambda v, root: artifacts.to_wandb(self.run, v, root))

    def log_finding(self, finding: Any) -> None:
        d = finding.to_dict() if hasattr(finding, "to_dict") else dict(finding)
        self.run.summary[f"rlcockpit/finding/{d.get('detector', 'unknown')}"] = d.get("title", "")

    def close(self, status: str, exit_code: int | None) -> None:
        code = EXIT_CODES.get(status, 1) if exit_code is None else exit_code
        self.run.finish(exit_code=code)
