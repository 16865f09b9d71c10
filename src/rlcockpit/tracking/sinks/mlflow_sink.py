"""MLflow sink: metrics via ``log_batch``, config as params.

Default tracking URI: ``sqlite:///<store>/mlflow/mlflow.db`` with artifacts under
``<store>/mlflow/artifacts`` (``mlflow ui --backend-store-uri sqlite:///<store>/mlflow/mlflow.db``).
Options (``logger_options={"mlflow": {...}}``): ``tracking_uri``, ``experiment_name`` (default: the
project), ``artifact_location``, ``synchronous`` (default ``True``).

Why synchronous: the sink already runs on its own thread behind a bounded queue, so training never waits
for MLflow either way. MLflow's async queue would add a second queue that nobody reports on. When the
server hangs, the batches in that queue are lost with no ``data_lost`` record, and its non-daemon workers keep
the process alive after ``finish()`` (tests/faults/test_faults_mlflow_hang.py). Synchronously, the hung
batch is the sink's in-flight one, which ``finish()`` records as ``unwritten_at_exit``.

Keys are kept as they are except where MLflow refuses them: characters outside
``[A-Za-z0-9_-. :/]`` (unicode letters are fine) become ``_``, path-like forms that would resolve to
another name (``a//b``, ``./a``, trailing ``/``) are normalised, and names are cut to 250 chars.
Params come from the flattened config (``a.b.c``), values cut to MLflow's 6000-char limit.
"""

from __future__ import annotations

import inspect
import json
import posixpath
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlcockpit.tracking.media.images import sample_images
from rlcockpit.tracking.runinfo import flatten_config
from rlcockpit.tracking.sinks.base import SINKS, MetricRows, MissingExtra, RunInfo, Sink

MAX_KEY = 250
MAX_PARAM_VALUE = 6000
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100
RUN_ID_TAG = "rlcockpit.run_id"
STATUS = {"finished": "FINISHED", "failed": "FAILED"}
_BAD_CHARS = re.compile(r"[^/\w.\- :]")


def mlflow_key(key: str) -> str:
    """``key`` as MLflow accepts it (unchanged when it already is)."""
    out = _BAD_CHARS.sub("_", key)
    norm = posixpath.normpath(out) if out else "_"
    if norm != out or norm in (".", "..") or norm.startswith("/") or norm.startswith(".."):
        parts = [p if p not in (".", "..") else "_" for p in out.split("/") if p]
        out = "/".join(parts) or "_"
    return out[:MAX_KEY]


@SINKS.register("mlflow")
class MlflowSink(Sink):
    name = "mlflow"

    def open(self, run: RunInfo) -> None:
        try:
            from mlflow.entities import Metric, Param
            from mlflow.tracking import MlflowClient
        except ImportError:
            raise MissingExtra("mlflow", "mlflow", "mlflow") from None
        self._Metric, self._Param = Metric, Param
        opts = dict(run.options.get(self.name) or {})
        self._store_dir = run.dir
        base = run.dir / "mlflow"
        base.mkdir(parents=True, exist_ok=True)
        self.tracking_uri = opts.get("tracking_uri") or f"sqlite:///{base / 'mlflow.db'}"
        self.client = MlflowClient(tracking_uri=self.tracking_uri)
        exp_name = opts.get("experiment_name") or run.project
        exp = self.client.get_experiment_by_name(exp_name)
        if exp is None:
            location = opts.get("artifact_location") or (base / "artifacts").as_uri()
            exp_id = self.client.create_experiment(exp_name, artifact_location=location)
        else:
            exp_id = exp.experiment_id
        self.mlflow_run_id = self._find_run(exp_id, run.id) if run.resumed else None
        if self.mlflow_run_id is None:
            tags = {RUN_ID_TAG: run.id, **({"group": run.group} if run.group else {})}
            tags.update({f"tag.{t}": "true" for t in run.tags})
            created = self.client.create_run(exp_id, run_name=run.name, tags=tags)
            self.mlflow_run_id = created.info.run_id
            self._log_params(run.config)
        else:
            self.client.update_run(self.mlflow_run_id, status="RUNNING")
        supports_async = "synchronous" in inspect.signature(self.client.log_batch).parameters
        self._batch_kw = {"synchronous": bool(opts.get("synchronous", True))} if supports_async else {}
        self._pending: list[Any] = []
        self._keys: dict[str, str] = {}

    def _find_run(self, exp_id: str, run_id: str) -> str | None:
        found = self.client.search_runs([exp_id], filter_string=f"tags.`{RUN_ID_TAG}` = '{run_id}'", max_results=1)
        return found[0].info.run_id if found else None

    def _log_params(self, config: Mapping[str, Any]) -> None:
        params = []
        for k, v in flatten_config(config).items():
            text = v if isinstance(v, str) else json.dumps(v, default=str)
            params.append(self._Param(mlflow_key(k), text[:MAX_PARAM_VALUE]))
        seen: set[str] = set()
        params = [p for p in params if not (p.key in seen or seen.add(p.key))]  # sanitising may collide
        for lo in range(0, len(params), MAX_PARAMS_PER_BATCH):
            self.client.log_batch(self.mlflow_run_id, params=params[lo : lo + MAX_PARAMS_PER_BATCH])

    def _key(self, key: str) -> str:
        out = self._keys.get(key)
        if out is None:
            out = self._keys[key] = mlflow_key(key)
        return out

    def _send(self, metrics: list[Any]) -> None:
        for lo in range(0, len(metrics), MAX_METRICS_PER_BATCH):
            op = self.client.log_batch(self.mlflow_run_id, metrics=metrics[lo : lo + MAX_METRICS_PER_BATCH],
                                       **self._batch_kw)
            if op is not None:
                self._pending.append(op)

    def log_metrics(self, rows: MetricRows) -> None:
        Metric, key = self._Metric, self._key
        metrics = [Metric(key(k), float(v), int(ts * 1000), step) for step, ts, data in rows for k, v in data.items()]
        self._send(metrics)

    def log_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        text = "".join(json.dumps({"step": step, **r}, ensure_ascii=False, default=str) + "\n" for r in rows)
        self.client.log_text(self.mlflow_run_id, text, f"samples/step_{step:08d}.jsonl")
        for tag, image, ref in sample_images(self._store_dir, rows):  # images as MLflow images
            self.client.log_image(self.mlflow_run_id, image, f"{tag}/step_{step:08d}_{ref['sha256'][:12]}.png")

    def log_event(self, kind: str, payload: Mapping[str, Any], step: int | None) -> None:
        if kind == "artifact":  # a version logged with run.log_artifact: mirrored as MLflow run artifacts
            from rlcockpit.tracking import artifacts

            artifacts.mirror(self._store_dir, payload,
                             lambda v, root: artifacts.to_mlflow(self.client, self.mlflow_run_id, v, root))

    def log_finding(self, finding: Any) -> None:
        d = finding.to_dict() if hasattr(finding, "to_dict") else dict(finding)
        name = f"findings/{d.get('detector', 'unknown')}_{d.get('step')}_{int(time.time() * 1000)}.json"
        self.client.log_text(self.mlflow_run_id, json.dumps(d, default=str, indent=1), mlflow_key(name))

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        for op in pending:
            op.wait()

    def close(self, status: str, exit_code: int | None) -> None:
        self.flush()
        self.client.set_terminated(self.mlflow_run_id, status=STATUS.get(status, "KILLED"))


def default_tracking_uri(store_dir: str | Path) -> str:
    """The URI the sink uses for a store (for ``mlflow ui --backend-store-uri`` and tests)."""
    return f"sqlite:///{Path(store_dir).resolve() / 'mlflow' / 'mlflow.db'}"
