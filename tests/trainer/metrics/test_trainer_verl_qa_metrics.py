"""Validation metric names as verl 0.9.1 writes them (``RayPPOTrainer._val_metrics_update``): per data source,
only the core variable is ``val-core`` — ``acc`` (verl's reward loop sets ``acc`` to the score when the function
returns a float) — and everything else, the score itself included, is ``val-aux``. rlcockpit logged
``val-core/<src>/reward/mean@N``, a key verl never writes, so dashboards and sweeps keyed on verl's names missed it.
"""

from __future__ import annotations

from trainer_batches import ByteTokenizer, EchoEngine

from rlcockpit.trainer.collect import validate
from rlcockpit.trainer.config import load_config
from rlcockpit.trainer.data import PromptRow
from rlcockpit.trainer.reward.rewards import RewardManager


def _rows(source: str) -> list[PromptRow]:
    return [PromptRow([], "7", source, input_ids=list(f"q->#### {a}".encode())) for a in ("7", "8")]


def test_val_metric_sections_follow_verl(tmp_path):
    cfg = load_config(overrides=[], log=None)
    rows = _rows("openai/gsm8k")
    metrics, _ = validate(cfg, EchoEngine(), ByteTokenizer(), RewardManager.from_config(cfg), rows)
    assert metrics == {"val-core/openai/gsm8k/acc/mean@1": 0.5, "val-aux/openai/gsm8k/reward/mean@1": 0.5}


def test_dict_rewards_keep_acc_core_and_other_keys_aux(tmp_path):
    f = tmp_path / "r.py"
    f.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                 "    ok = solution_str.endswith(ground_truth)\n"
                 "    return {'score': 2.0 if ok else -1.0, 'acc': ok, 'fmt': 1.0}\n")
    cfg = load_config(overrides=[f"custom_reward_function.path={f}"], log=None)
    metrics, _ = validate(cfg, EchoEngine(), ByteTokenizer(), RewardManager.from_config(cfg), _rows("mine"))
    assert metrics == {"val-core/mine/acc/mean@1": 0.5, "val-aux/mine/reward/mean@1": 0.5,
                       "val-aux/mine/fmt/mean@1": 1.0}


def test_kl_in_reward_logs_verls_coefficient_key(tiny_cfg):
    """verl's apply_kl_penalty logs ``actor/reward_kl_penalty`` and ``actor/reward_kl_penalty_coeff`` (checked
    with examples/rloo_trainer/run_qwen2-7b.sh's KL-in-reward settings: already right, kept as a guard)."""
    import rlcockpit
    from rlcockpit.trainer.loop import train

    cfg = tiny_cfg("algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.kl_coef=0.001", "trainer.total_training_steps=1",
                   "trainer.val_before_train=false", "trainer.test_freq=0")
    result = train(cfg, log=lambda *_: None)
    hist = rlcockpit.Api(cfg.trainer.rlcockpit_dir).run(result.run_id).history()
    assert hist["actor/reward_kl_penalty_coeff"].dropna().tolist() == [0.001]
    assert "actor/reward_kl_penalty" in hist.columns
