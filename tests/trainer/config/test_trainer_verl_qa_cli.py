"""Hydra's ``--config-path DIR --config-name NAME``, as verl's scripts pass them (every
``examples/grpo_trainer/*megatron*.sh`` starts ``main_ppo --config-path=config
--config-name='ppo_megatron_trainer.yaml'``): ``rlcockpit train`` and ``preflight`` refused them as
unrecognized arguments."""

from __future__ import annotations

import json

import pytest
import yaml
from verl_scripts import FIXTURES

from rlcockpit.cli import main


def _config(capsys, *args: str) -> dict:
    assert main(["train", "--print-config", *args]) == 0
    out = capsys.readouterr().out
    return yaml.safe_load(out[out.index("algorithm:"):])


def test_verl_builtin_config_name_stands_for_the_defaults(capsys):
    cfg = _config(capsys, "--config-path=config", "--config-name=ppo_megatron_trainer.yaml",
                  "algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2")
    assert cfg["algorithm"]["adv_estimator"] == "grpo"
    assert cfg["actor_rollout_ref"]["actor"]["megatron"]["tensor_model_parallel_size"] == 2  # stored, no effect


def test_config_path_and_name_load_the_users_file(capsys):
    cfg = _config(capsys, "trainer.total_epochs=2", f"--config-path={FIXTURES}", "--config-name", "dapo_trainer")
    assert cfg["trainer"]["project_name"] == "verl_examples" and cfg["trainer"]["total_epochs"] == 2


def test_missing_config_name_is_named_with_where_it_looked(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["train", "--print-config", f"--config-path={tmp_path}", "--config-name=my_grpo"])
    err = capsys.readouterr().err
    assert f"--config-name=my_grpo: no such config file ({tmp_path}/my_grpo.yaml)" in err


def test_preflight_takes_the_same_hydra_options(tmp_path, capsys):
    code = main(["preflight", f"--config-path={FIXTURES}", "--config-name=dapo_trainer.yaml", "--json",
                 "--skip", "memory", "data", "reward", "model", "backup", "logging"])
    captured = capsys.readouterr()
    rows = json.loads(captured.out)  # --json: stdout is JSON only, the config notes go to stderr
    assert code == 0 and [r["name"] for r in rows] == ["batch: arithmetic"]
    assert "1024 samples/step" in rows[0]["detail"] and "config aliases" in captured.err
