"""``rlcockpit import`` for each source, from files written by the real libraries, read back from the store."""

from __future__ import annotations

import json
import math

import pytest
from integrations_support import failure_rows, require_findings

from rlcockpit.cli import main as cli_main
from rlcockpit.integrations.importer import import_run
from rlcockpit.integrations.readers import ImportOptions, detect_kind
from rlcockpit.store import open_store


def _verl_log(path, n=60, cliff=40):
    with open(path, "w") as f:
        for step, data in failure_rows(n, cliff):
            f.write(json.dumps({"step": step, "data": data}) + "\n")


def test_verl_file_log_with_rollouts_via_cli(tmp_path, capsys):
    log, rollouts = tmp_path / "exp.jsonl", tmp_path / "rollouts"
    _verl_log(log)
    rollouts.mkdir()
    for step in (10, 50):
        (rollouts / f"{step}.jsonl").write_text(
            json.dumps({"input": "q", "output": "a", "gts": "a", "score": 0.5, "step": step}) + "\n")
    (tmp_path / "cfg.yaml").write_text("actor_rollout_ref:\n  actor:\n    entropy_coeff: 0.001\n")
    rc = cli_main(["import", str(log), "--rollout-dir", str(rollouts), "--dir", str(tmp_path / "s"),
                   "--config", str(tmp_path / "cfg.yaml"), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "verl" and out["steps"] == 60 and out["sample_rows"] == 2 and out["error"] is None
    store = open_store(tmp_path / "s")
    run = store.get_run(out["run_id"])
    assert run["name"] == "exp" and run["meta"]["imported"] and run["meta"]["framework"] == "verl"
    assert run["config"]["actor_rollout_ref"]["actor"]["entropy_coeff"] == 0.001
    assert store.sample_steps(run["id"]) == [10, 50]
    require_findings(store.findings(run["id"]), "reward_cliff", "kl_spike")


def test_cut_off_verl_log_imports_what_came_before_and_names_file_and_line(tmp_path, capsys):
    log = tmp_path / "cut.jsonl"
    _verl_log(log, n=30)
    with open(log, "a") as f:
        f.write('{"step": 31, "data": {"critic/sco')  # the job was killed mid-write
    rc = cli_main(["import", str(log), "--dir", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert rc == 1 and f"{log}:31" in err and "cut off" in err
    (run,) = open_store(tmp_path / "s").list_runs()
    assert run["last_step"] == 30 and str(log) in run["meta"]["import_error"]
    # a bad line in the middle stops there too, with its line number
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step": 1, "data": {"x": 1}}\n{"step": 2, "data": {"x": 2}}\nGARBAGE\n{"step": 4, "data": {}}\n')
    res = import_run(str(bad), dir=tmp_path / "s")
    assert res.steps == 2 and f"{bad}:3: not valid JSON" in res.error
    # nothing readable: a clear error and no run
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\n")
    with pytest.raises(ValueError, match="cannot tell what"):
        import_run(str(junk), dir=tmp_path / "s2")


def test_tensorboard_event_dir(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    logdir = tmp_path / "tb" / "grpo-run"
    w = SummaryWriter(str(logdir))
    for step, data in failure_rows(60):
        for k, v in data.items():
            w.add_scalar(k, v, step)
    w.add_text("val/generations", "some text", 5)
    w.close()
    assert detect_kind(str(tmp_path / "tb")) == "tensorboard"
    res = import_run(str(logdir), dir=tmp_path / "s")
    assert res.ok and res.kind == "tensorboard" and res.steps == 60 and res.name == "grpo-run"
    store = open_store(tmp_path / "s")
    steps, vals, _ = store.series(res.run_id, "actor/kl_loss")
    assert list(steps) == list(range(1, 61)) and vals[-1] > 0.4
    require_findings(res.findings, "reward_cliff", "kl_spike")


def test_wandb_offline_run(tmp_path, monkeypatch):
    import wandb

    monkeypatch.setenv("WANDB_MODE", "offline")
    run = wandb.init(mode="offline", project="wb-proj", name="wb-run", dir=str(tmp_path),
                     config={"algorithm": {"kl_ctrl": {"kl_coef": 0.001}}, "api_key": "secret-value"})
    for step, data in failure_rows(60):
        run.log({**data, "actor/pg_loss": math.nan if step == 55 else data["actor/pg_loss"]}, step=step)
    run.finish()
    wandb.teardown()  # stop wandb's service process: the run file is complete on disk after this
    wandb_dir = tmp_path / "wandb"
    assert detect_kind(str(wandb_dir)) == "wandb"
    res = import_run(str(wandb_dir), dir=tmp_path / "s")
    assert res.ok, res.error
    assert res.kind == "wandb" and (res.project, res.name) == ("wb-proj", "wb-run") and res.steps == 60, res
    store = open_store(tmp_path / "s")
    stored = store.get_run(res.run_id)
    assert stored["config"]["algorithm"]["kl_ctrl"]["kl_coef"] == 0.001 and stored["config"]["api_key"] == "***"
    steps, vals, _ = store.series(res.run_id, "actor/pg_loss")
    assert list(steps) == list(range(1, 61)) and math.isnan(vals[54])
    require_findings(res.findings, "reward_cliff", "kl_spike")

    # a torn .wandb file: the records before the tear are imported, the error names file and offset
    (wb_file,) = wandb_dir.glob("offline-run-*/run-*.wandb")
    torn = tmp_path / "torn" / "run-torn.wandb"
    torn.parent.mkdir()
    data = wb_file.read_bytes()
    torn.write_bytes(data[: int(len(data) * 0.6)])
    res2 = import_run(str(torn.parent), kind="wandb", dir=tmp_path / "s")
    assert res2.error and str(torn) in res2.error and "byte" in res2.error and 0 < res2.steps < 60


@pytest.mark.slow
def test_mlflow_run_in_sqlite(tmp_path):
    import mlflow
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp_id = client.create_experiment("verl-mlflow")
    run = client.create_run(exp_id, run_name="ml-run")
    rid = run.info.run_id
    # verl's MLflow adapter flattens its config with "/" as params
    client.log_param(rid, "actor_rollout_ref/actor/optim/lr", "1e-06")
    client.log_param(rid, "algorithm/kl_ctrl/kl_coef", "0.001")
    from mlflow.entities import Metric

    metrics = [Metric(k, v, 1_700_000_000_000 + s, s) for s, d in failure_rows(60) for k, v in d.items()]
    for i in range(0, len(metrics), 500):
        client.log_batch(rid, metrics=metrics[i:i + 500])
    client.set_terminated(rid)
    del mlflow
    res = import_run(uri, run_id=rid, dir=tmp_path / "s")
    assert res.ok and res.kind == "mlflow" and (res.project, res.name) == ("verl-mlflow", "ml-run") and res.steps == 60
    store = open_store(tmp_path / "s")
    cfg = store.get_run(res.run_id)["config"]
    assert cfg["actor_rollout_ref"]["actor"]["optim"]["lr"] == 1e-6 and cfg["algorithm"]["kl_ctrl"]["kl_coef"] == 0.001
    assert list(store.series(res.run_id, "critic/score/mean")[0]) == list(range(1, 61))
    require_findings(res.findings, "reward_cliff", "kl_spike")
    # the id alone with --tracking-uri works too, and an unknown id is a clear error
    assert detect_kind(rid, ImportOptions(run_id=rid)) == "mlflow"
    with pytest.raises(KeyError, match="not found"):
        import_run(uri, run_id="0" * 32, dir=tmp_path / "s")


def test_trainer_state_json_written_by_transformers(tmp_path):
    from transformers import TrainerState

    history = []
    for step, data in failure_rows(60):
        history.append({"epoch": step / 60, "step": step, "reward": data["critic/score/mean"],
                        "kl": data["actor/kl_loss"], "entropy": data["actor/entropy"], "grad_norm": 0.5,
                        "learning_rate": 1e-6})
    history.append({"step": 60, "train_runtime": 12.5, "train_loss": 0.1})
    out = tmp_path / "out"
    (out / "checkpoint-60").mkdir(parents=True)
    TrainerState(global_step=60, max_steps=60, log_history=history).save_to_json(
        str(out / "checkpoint-60" / "trainer_state.json"))
    assert detect_kind(str(out)) == "trl"
    res = import_run(str(out), dir=tmp_path / "s")
    assert res.ok and res.kind == "trl" and res.name == "out" and res.steps == 61
    store = open_store(tmp_path / "s")
    assert {"reward", "kl", "entropy", "grad_norm", "learning_rate", "train_runtime"} <= set(store.keys(res.run_id))
    assert store.get_run(res.run_id)["config"]["trainer_state"]["max_steps"] == 60
    require_findings(res.findings, "reward_cliff", "kl_spike")

    # cut the file in the middle of log_history: earlier entries are imported, the error names the line
    text = (out / "checkpoint-60" / "trainer_state.json").read_text()
    cut = tmp_path / "cut" / "trainer_state.json"
    cut.parent.mkdir()
    cut.write_text(text[: len(text) // 2])
    res2 = import_run(str(cut), kind="trl", dir=tmp_path / "s")
    assert res2.error and f"{cut}:" in res2.error and 10 < res2.steps < 60
