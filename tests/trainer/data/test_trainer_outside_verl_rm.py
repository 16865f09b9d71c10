"""The reward model reads what verl 0.9.1 gives it (docs/qa/verl-inputs.md).

verl's PPO-with-a-reward-model scripts (``examples/ppo_trainer/run_qwen2-7b_rm.sh``,
``examples/grpo_trainer/run_mistral13b_skyworkrm_hhrlhf.sh`` @2681207) on ``full_hh_rlhf.py``'s RL rows
(``prompt`` = one user message, ``reward_model.style: model``): verl 0.9.1's ``RewardLoopWorker.
_preprocess_reward_inputs`` puts the row's ``raw_prompt`` + ``{"role": "assistant", "content": response}``
through the *reward model's* chat template (no generation prompt, the leading BOS stripped as the server adds
it) and scores the last token. rlcockpit scored the policy's rendered prompt text + the response: the RM never
saw its own end-of-turn tokens, and a batch's shorter texts were padded with the EOS the RM scores at.
"""

from __future__ import annotations

import pytest
import torch

from rlcockpit.trainer.config import load_config
from rlcockpit.trainer.data import PromptRow
from rlcockpit.trainer.reward.rewards import RewardManager

# rows in full_hh_rlhf.py's generate_rl_dataset shape
ROWS = [PromptRow(prompt=[{"role": "user", "content": p}], ground_truth=r, data_source="Dahoas/full-hh-rlhf",
                  extra_info={"split": "train", "index": i}, text=f"<|im_start|>user\n{p}<|im_end|>\n"
                  "<|im_start|>assistant\n")
        for i, (p, r) in enumerate([("How do I bake bread?", "Mix flour and water."),
                                    ("What is 2 + 2?", "4"),
                                    ("Tell me a very long story about a dragon who learns to read.", "Once.")])]
RESPONSES = ["Mix flour, water, yeast and salt, knead, let it rise, bake at 230C.", "It is 4.", "No."]


@pytest.fixture(scope="module")
def rm_dir(hf_assets, tmp_path_factory):
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForSequenceClassification

    tok = AutoTokenizer.from_pretrained(hf_assets["models"]["qwen2"])
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, num_labels=1,
                         pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)
    out = tmp_path_factory.mktemp("rm")
    Qwen2ForSequenceClassification(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def verl_score(model, tok, row, response) -> float:
    """verl 0.9.1's reward_loop.py, one item: the RM's chat template, BOS stripped, the server tokenizes it
    (special tokens added) and classifies the last token."""
    text = tok.apply_chat_template([*row.prompt, {"role": "assistant", "content": response}],
                                   add_generation_prompt=False, tokenize=False)
    if tok.bos_token and text.startswith(tok.bos_token):
        text = text[len(tok.bos_token):]
    ids = tok(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        hidden = model.model(input_ids=ids).last_hidden_state
        return float(model.score(hidden)[0, -1, 0])


def test_reward_model_scores_the_text_verl_gives_it(rm_dir):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    cfg = load_config(overrides=[f"reward_model.model.path={rm_dir}", "reward_model.enable=True"], log=None)
    manager = RewardManager.from_config(cfg)  # the trainer's path: PPO with a reward model
    model = AutoModelForSequenceClassification.from_pretrained(rm_dir).eval()
    tok = AutoTokenizer.from_pretrained(rm_dir)
    assert tok.chat_template  # the RM has its own template, as Skywork's and the policy's do
    want = [verl_score(model, tok, row, r) for row, r in zip(ROWS, RESPONSES)]
    got, _ = manager(ROWS, RESPONSES)  # one batch, texts of different lengths
    assert got == pytest.approx(want, abs=1e-4)



def test_a_custom_reward_function_scores_before_the_reward_model(rm_dir, tmp_path, capsys):
    """verl 0.9.1's ``RewardLoopWorker.compute_score``: with ``custom_reward_function.path`` set the function scores
    even when ``reward_model.enable=True`` (a generative RM's function calls the model itself). rlcockpit scored
    with the reward model, loading a generative model as a classifier with a random head."""
    f = tmp_path / "judge.py"
    f.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):\n"
                 "    return float(len(solution_str) > 5)\n")
    cfg = load_config(overrides=["reward_model.enable=True", f"reward_model.model.path={rm_dir}",
                                 f"custom_reward_function.path={f}"], log=None)
    scores, _ = RewardManager.from_config(cfg)(ROWS, RESPONSES)
    assert scores == [1.0, 1.0, 0.0]
    assert "the reward model (" in capsys.readouterr().out

@pytest.mark.slow
def test_grpo_with_the_reward_model_trains_two_steps(hf_assets, rm_dir, tmp_path):
    """run_mistral13b_skyworkrm_hhrlhf.sh's reward settings (``reward_model.enable=True``, ``model.path``,
    ``model.input_tokenizer``) on hh-rlhf-shaped parquet, tiny models built in code."""
    import os
    import subprocess
    import sys

    import pandas as pd

    import rlcockpit

    train = tmp_path / "train.parquet"
    pd.DataFrame([{"data_source": r.data_source, "prompt": r.prompt, "ability": "alignment",
                   "reward_model": {"style": "model", "ground_truth": r.ground_truth}, "extra_info": r.extra_info}
                  for r in ROWS] * 3).to_parquet(train)
    policy = hf_assets["models"]["qwen2"]
    overrides = ["algorithm.adv_estimator=grpo", f"data.train_files={train}", f"data.val_files={train}",
                 "data.train_batch_size=4", "data.max_prompt_length=64", "data.max_response_length=8",
                 f"actor_rollout_ref.model.path={policy}", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
                 "actor_rollout_ref.rollout.n=2", "reward_model.enable=True", f"reward_model.model.path={rm_dir}",
                 f"reward_model.model.input_tokenizer={policy}", "trainer.total_training_steps=2",
                 "trainer.val_before_train=False", "trainer.test_freq=-1", "trainer.logger=[console]",
                 f"trainer.rlcockpit_dir={tmp_path / 'store'}", "trainer.num_threads=1",
                 f"trainer.default_local_dir={tmp_path / 'ckpt'}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "rlcockpit.cli", "train", *overrides], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    (run,) = rlcockpit.Api(str(tmp_path / "store")).runs()
    scores = run.history()["critic/score/mean"].dropna()
    assert run.status == "finished" and len(scores) == 2 and (scores != 0).all()
