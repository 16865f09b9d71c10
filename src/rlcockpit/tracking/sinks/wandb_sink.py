"""Weights & Biases sink (offline by default: no account, no network).

Files go to ``<store>/wandb/<run id>/wandb/offline-run-*/``; ``wandb sync`` uploads them later.
The mode comes from ``logger_options={"wandb": {"mode": ...}}``, else ``$WANDB_MODE``, else
``"offline"``. Other options are passed to ``wandb.init`` (``entity``, ``settings``...).

Samples are logged incrementally: one ``wandb.Table(log_mode="INCREMENTAL")`` per run, each step
appends only that step's rows (W&B writes one small increment file per step) instead of
re-logging a growing table, which costs O(steps²) bytes.

W&B keeps one current step and silently drops anything logged to an earlier one ("Tried to log to step 1 that
is less than the current step 2"), while rlcockpit accepts rows of an earlier step (a validation pass, metrics
derived from samples on the observer thread). So the sink holds the newest ``HOLD_STEPS`` steps back, merges
what arrives for them, and hands W&B whole steps in order; a row older than everything already handed over is
counted and reported in one warning at the end instead of vanishing (the rlcockpit store has it either way).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rlcockpit.redact import redact_argv
from rlcockpit.tracking.media.images import sample_images
from rlcockpit.tracking.sinks.base import SINKS, MetricRows, MissingExtra, RunInfo, Sink

SAMPLE_COLUMNS = ("step", "prompt", "response", "reward")
HOLD_STEPS = 2  # steps kept back for late rows before W&B gets them (W&B shows them that many steps later)
log = logging.getLogger("rlcockpit")
EXIT_CODES = {"finished": 0, "failed": 1}
_SAMPLE_LINES = "\0samples"  # key of a held step's sample lines (no logged key starts with NUL)


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
        self._sent_step = -1  # the newest step handed to W&B: it drops anything logged below it
        self._pending: dict[int, dict[str, Any]] = {}  # held-back steps -> merged metrics (+ "samples" lines)
        self._late_rows = 0

    def log_metrics(self, rows: MetricRows) -> None:
        for step, _, data in rows:
            if step < self._sent_step:
                self._late_rows += 1
                continue
            self._pending.setdefault(step, {}).update(data)
        self._send(hold=HOLD_STEPS)

    def _log_nulls(self, keys: Mapping[str, Any]) -> None:
        """Put ``key: None`` into each held step it was logged at (a number logged at the same step wins).
        Nothing is sent here: the writer hands the nulls over before the same drain's rows, which send."""
        for key, ranges in keys.items():
            for lo, hi in ranges:
                for step in range(max(int(lo), self._sent_step), int(hi) + 1):
                    self._pending.setdefault(step, {}).setdefault(key, None)
                self._late_rows += max(0, min(int(hi) + 1, self._sent_step) - int(lo))

    def _log_lists(self, values: Mapping[str, Any]) -> None:
        """Put each logged list into its held step (sent with that step, as the nulls are)."""
        for key, logged in values.items():
            for step, value, *_ in logged:
                if int(step) < self._sent_step:
                    self._late_rows += 1
                else:
                    self._pending.setdefault(int(step), {})[key] = value

    def _send(self, hold: int) -> None:
        """Hand W&B, in step order, every held step older than the newest ``hold`` ones."""
        if not self._pending:
            return
        limit = max(self._pending) - hold
        for step in sorted(s for s in self._pending if s <= limit):
            data = self._pending.pop(step)
            lines = data.pop(_SAMPLE_LINES, None)
            if lines:
                data["samples"] = self._table_with(lines)
            self.run.log(data, step=step)
            self._sent_step = step

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
        # held with the step's metrics; samples of a step W&B has passed land on the oldest open step (their
        # own step stays in the table's "step" column)
        at = max(step, self._sent_step)
        self._pending.setdefault(at, {}).setdefault(_SAMPLE_LINES, []).extend(data)
        self._add_images(at, rows)
        self._send(hold=HOLD_STEPS)

    def _add_images(self, at: int, rows: Sequence[Mapping[str, Any]]) -> None:
        """The step's sample images as W&B image galleries ``samples/<column>`` (a list of ``wandb.Image`` in the
        row, as W&B logs a gallery; its tables write an image cell as the text "Image", so the cells keep the
        stored reference and the images go here)."""
        held = self._pending[at]
        for tag, image, ref in sample_images(self._store_dir, rows):
            held.setdefault(tag.rsplit("/", 1)[0], []).append(self._wandb.Image(image, caption=ref.get("caption")))

    def _table_with(self, lines: list[list[Any]]) -> Any:
        table = self._table
        if table is None:
            return self._wandb.Table(columns=self._columns, data=lines)
        for line in lines:
            table.add_data(*line)
        return table

    def log_event(self, kind: str, payload: Mapping[str, Any], step: int | None) -> None:
        if kind == "null_values":  # log({"x": None}): W&B stores a null in that step's row
            self._log_nulls(payload.get("keys") or {})
            return
        if kind == "list_values":  # log({"x": [1, 2, 3]}): W&B keeps the list in that step's row
            self._log_lists(payload.get("values") or {})
            return
        if kind == "artifact":  # a version logged with run.log_artifact: mirrored as a W&B artifact
            from rlcockpit.tracking import artifacts

            artifacts.mirror(self._store_dir, payload, lambda v, root: artifacts.to_wandb(self.run, v, root))

    def log_finding(self, finding: Any) -> None:
        d = finding.to_dict() if hasattr(finding, "to_dict") else dict(finding)
        self.run.summary[f"rlcockpit/finding/{d.get('detector', 'unknown')}"] = d.get("title", "")

    def close(self, status: str, exit_code: int | None) -> None:
        self._send(hold=0)
        if self._late_rows:
            log.warning("rlcockpit: %d metric row(s) arrived for a step W&B had already passed and are not in the "
                        "W&B run (W&B cannot go back a step); the rlcockpit store has them", self._late_rows)
        code = EXIT_CODES.get(status, 1) if exit_code is None else exit_code
        self.run.finish(exit_code=code)
