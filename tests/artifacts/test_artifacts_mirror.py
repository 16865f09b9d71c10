"""With the W&B or MLflow logger on, artifacts are also logged there, read back with their own readers."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from artifacts_support import wandb_records

import rlcockpit

pytestmark = pytest.mark.slow


def make_checkpoint(root: Path) -> Path:
    (root / "actor").mkdir(parents=True)
    (root / "actor" / "model.safetensors").write_bytes(os.urandom(4096))
    (root / "actor" / "config.json").write_text('{"model_type": "qwen2"}')
    return root


def test_mirrored_to_mlflow(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    from rlcockpit.tracking.sinks.mlflow_sink import default_tracking_uri

    store = tmp_path / "store"
    run = rlcockpit.init(project="proj", dir=store, loggers=["rlcockpit", "mlflow"], system_interval=None,
                         health=False, capture_meta=False)
    ck = make_checkpoint(tmp_path / "ck")
    run.log_artifact(ck, name="policy", type="model", aliases=["best"])
    mlflow_run = next(s for s in run.sinks if s.name == "mlflow").mlflow_run_id
    run.finish()
    client = MlflowClient(tracking_uri=default_tracking_uri(store))
    listed = [f.path for f in client.list_artifacts(mlflow_run, "policy/v0/actor")]
    assert sorted(listed) == ["policy/v0/actor/config.json", "policy/v0/actor/model.safetensors"]
    local = client.download_artifacts(mlflow_run, "policy/v0/actor/model.safetensors", str(tmp_path / "dl"))
    assert Path(local).read_bytes() == (ck / "actor" / "model.safetensors").read_bytes()
    assert client.get_run(mlflow_run).data.tags["rlcockpit.artifact.policy"] == "policy:v0,best,latest"


def test_mirrored_to_wandb_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    store = tmp_path / "store"
    run = rlcockpit.init(project="proj", dir=store, loggers=["rlcockpit", "wandb"], system_interval=None,
                         health=False, capture_meta=False)
    run.log_artifact(make_checkpoint(tmp_path / "ck"), name="policy", type="model", aliases=["best"],
                     metadata={"step": 5})
    run.finish()
    (run_dir,) = (store / "wandb" / run.id / "wandb").glob("offline-run-*")
    deadline = time.monotonic() + 30
    while True:  # wandb-core may still be writing for a moment after finish() returns
        records = wandb_records(next(run_dir.glob("run-*.wandb")))
        arts = [r.artifact for r in records if r.WhichOneof("record_type") == "artifact"]
        if arts or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    (art,) = arts
    assert art.name == "policy" and art.type == "model" and "best" in list(art.aliases)
    assert sorted(e.path for e in art.manifest.contents) == ["actor/config.json", "actor/model.safetensors"]
    meta = json.loads(art.metadata)
    assert meta["step"] == 5 and meta["rlcockpit_version"] == "policy:v0"
