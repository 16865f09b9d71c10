"""Preflight catches each problem it promises to, with the row/field/key named; the demo preset passes."""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest

from rlcockpit.cli import main
from rlcockpit.preflight import (
    check_backup,
    check_batch,
    check_data,
    check_logging,
    check_memory,
    check_reward,
    load_cfg,
    run_preflight,
)


def _row(i: int, gt: str | None = "3", prompt: str | None = None) -> dict:
    return {"prompt": [{"role": "user", "content": prompt or f"{i}+1="}], "data_source": "arith",
            "reward_model": {"style": "rule", "ground_truth": gt}}


def _jsonl(path, rows) -> str:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return str(path)


def _by_name(results, name):
    (r,) = [r for r in results if r.name == name]
    return r


def test_demo_preset_passes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    results = run_preflight(load_cfg(preset="arith-grpo"))
    assert not [r for r in results if r.status == "fail"], [r for r in results if r.status == "fail"]
    assert {r.name.split(":")[0] for r in results} == {"batch", "data", "reward", "model", "memory", "logging", "backup"}


def test_missing_file(tmp_path):
    cfg = load_cfg(overrides=[f"data.train_files=[{tmp_path / 'nope.parquet'}]"])
    r = _by_name(check_data(cfg), "data: files and rows")
    assert r.status == "fail" and "nope.parquet" in r.detail and "not found" in r.detail


def test_bad_row_names_row_and_field(tmp_path):
    rows = [_row(i) for i in range(5)]
    del rows[3]["prompt"]
    cfg = load_cfg(overrides=[f"data.train_files=[{_jsonl(tmp_path / 'train.jsonl', rows)}]"])
    r = _by_name(check_data(cfg), "data: files and rows")
    assert r.status == "fail" and "row 3" in r.detail and "'prompt'" in r.detail


def test_bad_row_in_parquet(tmp_path):
    rows = [_row(i) for i in range(4)]
    rows[2]["reward_model"] = {"style": "rule"}
    path = tmp_path / "train.parquet"
    pd.DataFrame(rows).to_parquet(path)
    # parquet unifies the struct schema, so the missing key reads back as null: the ground-truth check names it
    fails = [r for r in check_data(load_cfg(overrides=[f"data.train_files=[{path}]"])) if r.status == "fail"]
    assert len(fails) == 1 and "row 2" in fails[0].detail and "reward_model.ground_truth" in fails[0].detail


def test_missing_ground_truth_for_rule_reward(tmp_path):
    rows = [_row(i) for i in range(6)]
    rows[4]["reward_model"]["ground_truth"] = ""
    cfg = load_cfg(overrides=[f"data.train_files=[{_jsonl(tmp_path / 't.jsonl', rows)}]"])
    r = _by_name(check_data(cfg), "data: ground truth")
    assert r.status == "fail" and "row 4" in r.detail


def test_prompts_too_long(tmp_path):
    rows = [_row(i, prompt="x" * (10 if i % 2 else 200)) for i in range(10)]
    path = _jsonl(tmp_path / "t.jsonl", rows)
    r = _by_name(check_data(load_cfg(overrides=[f"data.train_files=[{path}]", "data.max_prompt_length=64",
                                                "data.filter_overlong_prompts=true"])), "data: prompt length")
    assert r.status == "warn" and "50.0% would be dropped" in r.detail and r.data["max"] > 200
    # verl's default (data.truncation=error, no filtering) would stop on them: preflight says so first
    r = _by_name(check_data(load_cfg(overrides=[f"data.train_files=[{path}]", "data.max_prompt_length=64"])),
                 "data: prompt length")
    assert r.status == "fail" and "an error" in r.detail
    r = _by_name(check_data(load_cfg(overrides=[f"data.train_files=[{path}]", "data.max_prompt_length=4"])),
                 "data: prompt length")
    assert r.status == "fail" and "100.0%" in r.detail


def _reward_file(tmp_path, body: str) -> str:
    f = tmp_path / "my_reward.py"
    f.write_text(body)
    return f"{f}:compute_score"


def test_reward_that_raises(tmp_path):
    spec = _reward_file(tmp_path, "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                                  "    return 1.0 / (len(solution_str) - len(solution_str))\n")
    r = check_reward(load_cfg(overrides=[f"custom_reward_function.path={spec.split(':')[0]}"]))[0]
    assert r.status == "fail" and "ZeroDivisionError" in r.detail and "row 0" in r.detail


def test_reward_that_returns_non_numbers(tmp_path):
    spec = _reward_file(tmp_path, "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                                  "    return 'correct'\n")
    r = check_reward(load_cfg(overrides=[f"reward.custom_fn={spec}"]))[0]  # the older file:function key
    assert r.status == "fail" and "'correct'" in r.detail and "finite number" in r.detail


def test_reward_unknown_name_and_constant():
    from rlcockpit.trainer.config import ConfigError

    with pytest.raises(ConfigError, match="unknown reward 'arithh'.*Did you mean 'arith'"):
        load_cfg(overrides=["reward.name=arithh"])  # a name is checked against the registry when the config loads
    r = check_reward(load_cfg(overrides=["reward.name=format"]))[0]  # 0 for right and wrong: no signal
    assert r.status == "fail" and "no learning signal" in r.detail and "'arith'" in r.detail


def test_memory_that_does_not_fit_offers_options(tmp_path):
    cfg = load_cfg(preset="arith-grpo")
    ok = check_memory(cfg, capacity_bytes=64 * 2**30)[0]
    assert ok.status == "pass"
    peak = ok.data["estimate"]["peak_bytes"]
    r = check_memory(cfg, capacity_bytes=int(peak * 0.75))[0]  # CPU: ~90 MiB of heap no option removes
    assert r.status == "fail" and "Options:" in r.detail
    assert any("gradient checkpointing" in o for o in r.data["options"])
    assert any("actor.ppo_micro_batch_size=" in o for o in r.data["options"])
    assert any("fits" in o and "still" not in o for o in r.data["options"])
    warn = check_memory(cfg, capacity_bytes=int(peak * 1.1))[0]  # fits, but not with the 20% margin
    assert warn.status == "warn" and "safety margin" in warn.detail


def test_memory_for_a_7b_config_without_weights(tmp_path):
    model_dir = tmp_path / "qwen2-7b"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps({
        "model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,
        "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064, "tie_word_embeddings": False}))
    cfg = load_cfg(overrides=[f"actor.model.path={model_dir}", "actor.model.dtype=bf16", "data.max_response_length=1024",
                              "actor.ppo_micro_batch_size=8"])
    r = check_memory(cfg, capacity_bytes=80 * 2**30, device="cuda")[0]
    assert r.status == "fail" and "7615.6M params" in r.detail
    assert any("LoRA" in o for o in r.data["options"]) and any("offload" in o for o in r.data["options"])


def test_missing_tracker_library(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb -> ImportError, as when not installed
    cfg = load_cfg(overrides=["trainer.logger=[rlcockpit,wandb]", f"trainer.rlcockpit_dir={tmp_path / 's'}"])
    r = _by_name(check_logging(cfg, alerts={"use_env": False}), "logging: loggers")
    assert r.status == "fail" and "pip install 'rlcockpit[wandb]'" in r.detail


def test_unknown_logger_and_bad_alert_channel(tmp_path):
    cfg = load_cfg(overrides=["trainer.logger=[tensorbord]", f"trainer.rlcockpit_dir={tmp_path / 's'}"])
    results = check_logging(cfg, alerts={"channels": [{"type": "feishu", "url": "hooks/no-scheme", "secret": ""}],
                                         "use_env": False})
    assert "Did you mean 'tensorboard'" in _by_name(results, "logging: loggers").detail
    alerts = _by_name(results, "logging: alert channels")
    assert alerts.status == "fail" and "not an http(s) URL" in alerts.detail and "secret is empty" in alerts.detail


@pytest.mark.parametrize("overrides,needle", [
    (["data.train_batch_size=8", "actor.ppo_mini_batch_size=16"], "zero mini-batches"),
    (["actor.ppo_micro_batch_size=0"], "zero gradient-accumulation"),
    (["rollout.n=1"], "needs rollout.n >= 2"),
])
def test_bad_batch_arithmetic(overrides, needle):
    r = check_batch(load_cfg(preset="arith-grpo", overrides=overrides))[0]
    assert r.status == "fail" and needle in r.detail


def test_uneven_batch_arithmetic_warns():
    r = check_batch(load_cfg(preset="arith-grpo", overrides=["actor.ppo_mini_batch_size=6",
                                                               "actor.ppo_micro_batch_size=20"]))[0]
    assert r.status == "warn" and "not a multiple" in r.detail


def test_backup_dir_written(tmp_path):
    cfg = load_cfg(preset="arith-grpo")
    r = check_backup(cfg, backup_dir=tmp_path / "backup")[0]
    assert r.status in ("pass", "warn")
    names = {p.name for p in (tmp_path / "backup").iterdir()}
    assert {"config.yaml", "command.txt", "packages.json", "meta.json"} <= names
    assert "adv_estimator: grpo" in (tmp_path / "backup" / "config.yaml").read_text()
    assert "torch" in json.loads((tmp_path / "backup" / "packages.json").read_text())


def test_cli_exit_codes_and_json(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["preflight", "--preset", "arith-grpo", "--json", "--skip", "backup"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(r["status"] != "fail" for r in rows) and any(r["name"] == "memory: peak estimate" for r in rows)
    assert main(["preflight", "--preset", "arith-grpo", "rollout.n=1", "--skip", "backup"]) == 1
    out = capsys.readouterr().out
    assert "FAILED: 1 failed" in out and "batch: arithmetic" in out
