"""Why a run ended is stored (a ``run_stopped`` event, ``stop_reason``/``stop_kind`` in the summary) and
printed by ``rlcockpit show`` and ``rlcockpit diagnose``; a config that cannot start leaves no run behind."""

from __future__ import annotations

import pytest

import rlcockpit
from rlcockpit.cli import main
from rlcockpit.trainer.config import ConfigError, load_config
from rlcockpit.trainer.loop import build, train


def test_reward_failure_is_stored_and_shown(tiny_cfg, tmp_path, capsys):
    f = tmp_path / "broken.py"
    f.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                 "    raise KeyError('label')\n")
    # preflight would refuse this function; skip it to see what the loop does with a reward that breaks mid-run
    result = train(tiny_cfg(f"custom_reward_function.path={f}", "trainer.preflight=off", "trainer.test_freq=0"))
    assert result.status == "stopped" and "KeyError" in result.reason
    store = str(tmp_path / "store")
    run = rlcockpit.Api(store).run(result.run_id)
    assert run.status == "stopped" and run.summary["stop_kind"] == "reward_failure"
    assert "failed on" in run.summary["stop_reason"]
    assert run.events("run_stopped")[0]["payload"]["kind"] == "reward_failure"
    capsys.readouterr()
    assert main(["show", result.run_id, "--dir", store]) == 0
    assert "stopped (reward_failure): reward" in capsys.readouterr().out
    assert main(["diagnose", result.run_id, "--dir", store]) == 0
    assert "Stopped (reward_failure)" in capsys.readouterr().out


def test_nonfinite_stop_is_stored(tiny_cfg, tmp_path):
    cfg = tiny_cfg("trainer.total_training_steps=4", "trainer.max_consecutive_nonfinite=1", "trainer.test_freq=0")
    st = build(cfg)

    def poison(module, args, out):
        if module.training:
            out.logits = out.logits * float("nan")
        return out

    st.actor.register_forward_hook(poison)
    result = train(cfg, state=st)
    run = rlcockpit.Api(str(tmp_path / "store")).run(result.run_id)
    assert run.summary["stop_kind"] == "nonfinite" and "non-finite" in run.summary["stop_reason"]


def test_finished_run_says_so_and_bad_config_leaves_no_run(tiny_cfg, tmp_path):
    result = train(tiny_cfg("trainer.total_training_steps=1", "trainer.test_freq=0"))
    run = rlcockpit.Api(str(tmp_path / "store")).run(result.run_id)
    assert run.summary["stop_kind"] == "finished"
    with pytest.raises(ConfigError, match="adv_estimator"):
        load_config(overrides=["algorithm.adv_estimator=grpoo", f"trainer.rlcockpit_dir={tmp_path / 'other'}"], log=None)
    assert not (tmp_path / "other").exists()  # refused before anything was created


def test_article_flags_on_the_train_command_line(tiny_overrides, tiny_cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RLCOCKPIT_CACHE", tiny_cache)
    store = tmp_path / "store"
    code = main(["train", *tiny_overrides, f"trainer.rlcockpit_dir={store}", f"trainer.default_local_dir={tmp_path / 'ck'}",
                 "--save_policy_model", "True", "--exp_name", "ppo-qwen2-7b-debug", "--project=verl-rlhf-experiments",
                 "--group", "qwen2-series", "--kl_coef", "0.01", "--use_wandb", "False"])
    assert code == 0
    (run,) = rlcockpit.Api(str(store)).runs()
    assert (run.project, run.name, run.group) == ("verl-rlhf-experiments", "ppo-qwen2-7b-debug", "qwen2-series")
    assert run.config["algorithm"]["kl_ctrl"]["kl_coef"] == pytest.approx(0.01) and "wandb" not in run.config["trainer"]["logger"]
    assert (tmp_path / "ck" / "global_step_2" / "actor" / "config.json").is_file()  # saved although save_freq=-1
    assert "exp_name -> trainer.experiment_name" in capsys.readouterr().out
