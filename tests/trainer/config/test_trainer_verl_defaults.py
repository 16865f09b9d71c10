"""rlcockpit's effective config equals verl 0.9.1's for real example scripts, except where
docs/config-reference.md lists the difference with its reason.

verl's side is verl itself in .venv-verl: Hydra composes verl's ``ppo_trainer.yaml`` with the script's overrides
(verl_effective_config.py). Found before: ``rollout.n`` was a silent 8 for a PPO script that leaves it unset
(run_gemma.sh: 8x the samples), ``clip_ratio_low/high`` were unset so ``clip_ratio`` acted where verl ignores it,
the critic kept token-mean when the actor's ``loss_agg_mode`` changed, and a dozen other defaults differed
(batch sizes, response length, test_freq, total_epochs, resume_mode...).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from verl_effective_config import verl_effective_configs
from verl_scripts import script_overrides

from rlcockpit.trainer.config import flat_values, load_config
from rlcockpit.trainer.config.schema import schema_fields

DOC = Path(__file__).parents[3] / "docs" / "config-reference.md"
# only paths (verl's placeholders under /home/user): rlcockpit needs data files to leave its built-in demo task
PLACEHOLDERS = ["data.train_files=/home/user/data/rlhf/gsm8k/train.parquet",
                "data.val_files=/home/user/data/rlhf/gsm8k/test.parquet",
                "actor_rollout_ref.model.path=/home/user/models/deepseek-llm-7b-chat"]
CASES = {
    "no overrides": PLACEHOLDERS,
    "grpo run_qwen2-7b.sh": script_overrides("run_qwen2-7b.sh"),
    "ppo with critic run_gemma.sh": script_overrides("run_gemma.sh"),
    "dapo recipe test_dapo_7b_math.sh": script_overrides("test_dapo_7b_math.sh"),
    "actor loss_agg_mode reaches the critic": [*PLACEHOLDERS, "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean"],
    "clip_ratio alone": [*PLACEHOLDERS, "actor_rollout_ref.actor.clip_ratio=0.1"],
}


def documented_differences() -> dict[str, str]:
    """``{key: reason}`` from the "Differences from verl's defaults" table of docs/config-reference.md."""
    text = DOC.read_text()
    section = text.split("## Differences from verl's defaults", 1)[1].split("\n## ", 1)[0]
    table = section.split("| key | why rlcockpit's default differs |", 1)[1].split("\n\n", 1)[0]
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| `([^`]+)` \| (.+) \|$", table, re.M)}


def _same(ours: object, theirs: object) -> bool:
    if isinstance(ours, list) and isinstance(theirs, str):
        theirs = [theirs]  # data.train_files: verl takes a path or a list
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)) and not isinstance(ours, bool):
        return float(ours) == float(theirs)
    return ours == theirs


def differences(overrides: list[str], verl: dict[str, object]) -> dict[str, tuple[object, object]]:
    values = flat_values(load_config(overrides=overrides, validate=False, log=None))
    return {key: (values[key], verl[key]) for key, info in schema_fields().items()
            if not info.only_here and key in verl and not _same(values[key], verl[key])}


@pytest.fixture(scope="module")
def verl_configs() -> dict[str, dict[str, object]]:
    return verl_effective_configs(CASES)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_effective_config_is_verls_but_for_documented_differences(case, verl_configs):
    documented = documented_differences()
    found = differences(CASES[case], verl_configs[case])
    undocumented = {k: v for k, v in found.items() if k not in documented}
    assert not undocumented, f"{case}: (rlcockpit, verl) differ, not in docs/config-reference.md: {undocumented}"


@pytest.mark.slow
def test_the_settings_that_change_the_math_are_verls(verl_configs):
    for case, overrides in CASES.items():
        cfg, verl = load_config(overrides=overrides, validate=False, log=None), verl_configs[case]
        for key in ("actor_rollout_ref.rollout.n", "algorithm.adv_estimator", "actor_rollout_ref.actor.clip_ratio_low",
                    "actor_rollout_ref.actor.clip_ratio_high", "critic.loss_agg_mode", "data.train_batch_size",
                    "actor_rollout_ref.actor.ppo_mini_batch_size", "data.max_response_length"):
            assert _same(flat_values(cfg)[key], verl[key]), (case, key)
    gemma = load_config(overrides=CASES["ppo with critic run_gemma.sh"], validate=False, log=None)
    assert (gemma.rollout.n, gemma.algorithm.adv_estimator) == (1, "gae")


def test_every_documented_difference_is_a_schema_key_with_a_reason():
    documented = documented_differences()
    assert "actor_rollout_ref.rollout.n" not in documented and "actor_rollout_ref.actor.clip_ratio_low" not in documented
    fields = schema_fields()
    for key, why in documented.items():
        assert key in fields and len(why) > 20, key


def test_clip_ratio_alone_changes_nothing_and_says_so():
    notes: list[str] = []
    cfg = load_config(overrides=["actor_rollout_ref.actor.clip_ratio=0.1"], log=notes.append)
    assert (cfg.actor.clip_ratio_low, cfg.actor.clip_ratio_high) == (0.2, 0.2)
    assert any("clip_ratio=0.1 has no effect" in n for n in notes)
    both = load_config(overrides=["actor_rollout_ref.actor.clip_ratio=0.1", "actor_rollout_ref.actor.clip_ratio_low=null",
                                  "actor_rollout_ref.actor.clip_ratio_high=null"], log=None)
    from rlcockpit.trainer.algo_args import policy_loss_kwargs

    kw = policy_loss_kwargs(both)
    assert (kw["clip_ratio"], kw["clip_ratio_low"], kw["clip_ratio_high"]) == (0.1, None, None)


def test_a_verl_command_line_without_n_samples_once_and_the_demo_keeps_its_groups():
    user = load_config(overrides=[*PLACEHOLDERS, "data.train_batch_size=8", "actor_rollout_ref.actor.ppo_mini_batch_size=8"],
                       validate=False, log=None)
    assert (user.rollout.n, user.algorithm.adv_estimator, user.trainer.total_training_steps) == (1, "gae", None)
    demo = load_config(log=None)
    assert (demo.rollout.n, demo.algorithm.adv_estimator, demo.data.train_batch_size) == (8, "grpo", 16)
    collapse = load_config(preset="arith-collapse", log=None)
    assert collapse.actor.clip_ratio_low == collapse.actor.clip_ratio_high == 10.0  # still no effective clip


VERL_CONFIG_DIR = Path(__file__).parents[3] / ".venv-verl" / "lib" / "python3.11" / "site-packages" / "verl" / "trainer" / "config"


@pytest.mark.parametrize("name", ["ppo", "ppo_megatron", "ppo_veomni", "ppo_torchtitan"])
def test_every_key_of_verls_generated_configs_is_accepted(name):
    """verl 0.9.1's flattened trainer configs, each loaded whole: the Megatron, VeOmni and TorchTitan ones had
    optimizer keys (lr_decay_style, muon_*, min_lr_factor, optimizer=adam...) refused as unknown."""
    from omegaconf import OmegaConf

    data = OmegaConf.load(VERL_CONFIG_DIR / f"_generated_{name}_trainer.yaml")
    cfg = load_config(base=data, validate=False, log=None)
    assert cfg.algorithm.adv_estimator == "gae" and cfg.rollout.n == 1


def test_keys_of_verl_main_and_the_examples_are_accepted_with_a_warning_where_they_change_the_math():
    """verl main's actor.router_replay.* and the CISPO example's model.torch_dtype were unknown keys."""
    notes: list[str] = []
    cfg = load_config(overrides=["actor_rollout_ref.model.torch_dtype=bfloat16",
                                 "actor_rollout_ref.actor.router_replay.mode=R3",
                                 "actor_rollout_ref.actor.router_replay.record_file=null"], log=notes.append)
    assert cfg.extras["actor_rollout_ref.actor.router_replay.mode"] == "R3"
    warned = [n for n in notes if "warning:" in n]
    assert len(warned) == 2 and any("router_replay.mode='R3'" in n for n in warned)
    quiet: list[str] = []
    load_config(overrides=["actor_rollout_ref.actor.router_replay.mode=disabled"], log=quiet.append)
    assert not [n for n in quiet if "warning:" in n]


@pytest.mark.parametrize("entry", [["-m", "rlcockpit.trainer.main_ppo"], ["-m", "rlcockpit", "train"],
                                   ["-m", "rlcockpit", "preflight"], ["-m", "rlcockpit", "train", "--config"]])
def test_a_config_error_is_one_line_through_every_entry(entry, tmp_path):
    """``python -m rlcockpit.trainer.main_ppo`` printed a 15-line traceback; a loss_mode typo suggested 'ppo'
    (an rlcockpit alias, no verl value)."""
    import subprocess
    import sys

    key = "actor_rollout_ref.actor.policy_loss.loss_mode"
    if entry[-1] == "--config":
        bad = tmp_path / "bad.yaml"
        bad.write_text("actor_rollout_ref:\n  actor:\n    policy_loss:\n      loss_mode: ppoo\n")
        args = [*entry, str(bad)]
    else:
        args = [*entry, f"{key}=ppoo"]
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert key in lines[0] and "Did you mean 'vanilla'?" in lines[0] and "'ppo'" not in lines[0]


def test_verls_precedence_rules_say_which_overrides_change_nothing():
    import rlcockpit.defaults  # noqa: F401 - registers the provider health's advice asks
    from rlcockpit.registry import PROVIDERS
    from rlcockpit.trainer.config.verl import inactive_reason

    assert PROVIDERS.get("verl_inactive_reason")() is inactive_reason
    verl = flat_values(load_config(overrides=PLACEHOLDERS, validate=False, log=None))  # gae, no KL anywhere
    assert "clip_ratio_low" in inactive_reason("actor_rollout_ref.actor.clip_ratio", verl)
    assert "use_kl_loss" in inactive_reason("actor_rollout_ref.actor.kl_loss_coef", verl)
    assert "use_kl_in_reward" in inactive_reason("algorithm.kl_ctrl.kl_coef", verl)
    assert inactive_reason("critic.optim.lr", verl) is None and inactive_reason("actor_rollout_ref.actor.optim.lr", verl) is None
    grpo = flat_values(load_config(overrides=[*PLACEHOLDERS, "algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=4",
                                              "actor_rollout_ref.actor.use_kl_loss=true",
                                              "actor_rollout_ref.actor.clip_ratio_low=null",
                                              "actor_rollout_ref.actor.clip_ratio_high=null"], validate=False, log=None))
    assert inactive_reason("actor_rollout_ref.actor.kl_loss_coef", grpo) is None
    assert inactive_reason("actor_rollout_ref.actor.clip_ratio", grpo) is None  # low/high null: clip_ratio acts
    assert "gae" in inactive_reason("critic.optim.lr", grpo)
    assert "filter_groups.enable" in inactive_reason("algorithm.filter_groups.metric", grpo)
