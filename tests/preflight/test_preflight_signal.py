"""Preflight proves a learning signal and loadable inputs before training, and a FAIL stops ``train`` cleanly."""

from __future__ import annotations

import json

import pytest

import rlcockpit
from rlcockpit.cli import main
from rlcockpit.preflight import check_data, check_model, check_reward, load_cfg


def _gsm8k(i: int, gt="7", content=None) -> dict:
    return {"data_source": "openai/gsm8k", "ability": "math",
            "prompt": [{"role": "user", "content": f"Q{i}: 3 + 4? Let's think step by step" if content is None else content}],
            "reward_model": {"style": "rule", "ground_truth": gt}, "extra_info": {"index": i}}


def _jsonl(path, rows) -> str:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return str(path)


def test_default_reward_on_gsm8k_has_a_signal_and_arith_does_not(tmp_path):
    data = _jsonl(tmp_path / "gsm8k.jsonl", [_gsm8k(i) for i in range(5)])
    ok = check_reward(load_cfg(overrides=[f"data.train_files={data}"]))[0]
    assert ok.status == "pass" and "openai/gsm8k" in ok.detail
    # the defect this catches: GSM8K answers ("... #### 7") scored by exact match get 0, right or wrong
    bad = check_reward(load_cfg(overrides=[f"data.train_files={data}", "reward.name=arith"]))[0]
    assert bad.status == "fail" and "reward.name=arith" in bad.detail and "'openai/gsm8k'" in bad.detail


def test_a_reward_that_prefers_wrong_answers_and_an_unknown_source_fail(tmp_path):
    f = tmp_path / "r.py"
    f.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                 "    return 0.0 if ground_truth in solution_str else 1.0\n")
    data = _jsonl(tmp_path / "d.jsonl", [_gsm8k(i) for i in range(3)])
    r = check_reward(load_cfg(overrides=[f"data.train_files={data}", f"custom_reward_function.path={f}"]))[0]
    assert r.status == "fail" and "a wrong answer scores 1, above the ground truth" in r.detail and str(f) in r.detail
    rows = [{**_gsm8k(0), "data_source": "my_lab/task"}]
    r = check_reward(load_cfg(overrides=[f"data.train_files={_jsonl(tmp_path / 'u.jsonl', rows)}"]))[0]
    assert r.status == "fail" and "no built-in reward for data_source 'my_lab/task'" in r.detail


def test_empty_prompts_and_null_ground_truth_fail(tmp_path):
    rows = [_gsm8k(0), _gsm8k(1, content="   "), _gsm8k(2, gt=None)]
    results = check_data(load_cfg(overrides=[f"data.train_files={_jsonl(tmp_path / 'd.jsonl', rows)}"]))
    by = {r.name: r for r in results}
    assert by["data: prompts"].status == "fail" and "row 1" in by["data: prompts"].detail
    assert by["data: ground truth"].status == "fail" and "row 2" in by["data: ground truth"].detail


def test_model_directory_without_weights_or_tokenizer_fails(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    r = check_model(load_cfg(overrides=[f"actor_rollout_ref.model.path={d}"]))[0]
    assert r.status == "fail" and "no weights" in r.detail and "no tokenizer" in r.detail
    r = check_model(load_cfg(overrides=[f"actor_rollout_ref.model.path={tmp_path / 'nope'}"]))[0]
    assert r.status == "fail" and "not a local directory" in r.detail
    assert check_model(load_cfg())[0].status == "pass"  # the built-in tiny model


def test_preflight_fail_stops_train_cleanly_and_is_recorded(tmp_path, capsys):
    data = _jsonl(tmp_path / "d.jsonl", [_gsm8k(i) for i in range(4)])
    store = tmp_path / "store"
    args = ["train", f"data.train_files={data}", "reward.name=arith", f"trainer.rlcockpit_dir={store}",
            f"trainer.default_local_dir={tmp_path / 'ck'}"]
    assert main(args) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    assert "stopped before training" in out.out and "reward.name=arith" in out.out
    (run,) = rlcockpit.Api(str(store)).runs()  # marked as stopped by preflight, with the reason
    assert run.status == "stopped" and run.summary["stop_kind"] == "preflight"
    assert "learning signal" in run.summary["stop_reason"]
    assert rlcockpit.Api(str(store)).run(run.id).events("run_stopped")[0]["payload"]["kind"] == "preflight"
    assert not (tmp_path / "ck").exists()


def test_preflight_accepts_the_same_flags_as_train(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["preflight", "--preset", "arith-grpo", "--use_wandb", "False", "--exp_name", "x y",
                 "rollout.n=4", "--json", "--skip", "backup", "--kl_coef=0.02"]) == 0
    captured = capsys.readouterr()
    err, out = captured.err, captured.out
    assert "exp_name -> trainer.experiment_name" in err and "use_wandb" in err  # the flags were read as aliases
    rows = json.loads(out)  # --json: stdout is the JSON alone (the alias notes went to stderr)
    assert rows and not [r for r in rows if r["status"] == "fail"] and not any(r["name"].startswith("backup") for r in rows)


@pytest.mark.slow
def test_preflight_warn_continues(tmp_path):
    from rlcockpit.trainer.config import load_config
    from rlcockpit.trainer.loop import train

    data = _jsonl(tmp_path / "d.jsonl", [{**_gsm8k(i), "data_source": "arith"} for i in range(8)])
    cfg = load_config(overrides=[f"data.train_files={data}", "reward.name=format", "trainer.preflight=warn",
                                 "trainer.total_training_steps=1", "trainer.test_freq=0", "data.train_batch_size=2",
                                 "actor_rollout_ref.actor.ppo_mini_batch_size=2", "actor_rollout_ref.rollout.n=2",
                                 "data.max_prompt_length=64", "data.max_response_length=2",
                                 "actor_rollout_ref.model.tiny.hidden_size=32", "actor_rollout_ref.model.tiny.num_layers=1",
                                 "actor_rollout_ref.model.tiny.num_heads=2", "actor_rollout_ref.model.tiny.intermediate_size=64",
                                 "actor_rollout_ref.model.tiny.sft_steps=2", "actor_rollout_ref.model.tiny.sft_slip_steps=0",
                                 "actor_rollout_ref.model.tiny.sft_batch_size=4", "trainer.logger=[rlcockpit]",
                                 "actor_rollout_ref.model.tiny.cache=false", f"trainer.rlcockpit_dir={tmp_path / 's'}",
                                 f"trainer.default_local_dir={tmp_path / 'ck'}"], log=None)
    assert train(cfg, log=lambda *_: None).status == "finished"
