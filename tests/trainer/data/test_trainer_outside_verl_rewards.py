"""verl inputs nobody here wrote, on the reward side (fixtures/outside/, README there; docs/qa/verl-inputs.md).

* verl's own ReTool reward (``recipe/retool/retool.py``'s ``compute_score``) reads ``extra_info["num_turns"]``:
  verl 0.9.1's naive reward manager sets it (2 for a single-turn rollout) with ``rollout_reward_scores``, and
  the agent loop adds ``turn_scores``, ``tool_rewards`` and ``raw_prompt``. rlcockpit passed the row's
  ``extra_info`` alone: ``KeyError: 'num_turns'`` on every call (every reward 0, the run stopped).
* ``examples/grpo_trainer/run_qwen2-7b_gen_reward.sh`` sets ``reward_model.reward_manager=generative``, a name
  verl 0.9.1 refuses ("Unknown reward manager"); rlcockpit accepted any name and scored with the naive rule.
* verl 0.9.1's own key for the manager, ``reward.reward_manager.name``, was listed as "no effect": a batch
  reward function chosen with it was called once per response and failed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from verl_scripts import replace_values, script_overrides

import rlcockpit
from rlcockpit.trainer.config import ConfigError, load_config
from rlcockpit.trainer.data import PromptRow
from rlcockpit.trainer.reward.rewards import RewardManager

OUTSIDE = Path(__file__).resolve().parents[1] / "fixtures" / "outside"
# the ReTool file imports verl.utils.reward_score.math_dapo; here it is rlcockpit's port of that rule
MATH_DAPO = '''from rlcockpit.trainer.reward.score import dapo_score


class math_dapo:  # verl.utils.reward_score.math_dapo's entry point
    @staticmethod
    def compute_score(solution_str, ground_truth, strict_box_verify=False):
        return dapo_score(solution_str, ground_truth)


'''
PROMPT = [{"role": "user", "content": "Natalia sold 48 clips in April and half as many in May. How many in all?"}]


def retool_reward_file(tmp_path: Path) -> Path:
    f = tmp_path / "retool_reward.py"
    f.write_text(MATH_DAPO + (OUTSIDE / "retool_compute_score.txt").read_text())
    return f


def test_verls_retool_reward_reads_num_turns_as_verl_sets_it(tmp_path):
    cfg = load_config(overrides=[f"custom_reward_function.path={retool_reward_file(tmp_path)}"], log=None)
    manager = RewardManager.from_config(cfg)
    row = PromptRow(prompt=PROMPT, ground_truth="72", data_source="math_dapo", extra_info={"index": 3})
    scores, extras = manager([row, row], ["so \\boxed{72}", "so \\boxed{70}"])
    assert manager.failures == 0, manager.last_error
    # right: +1; wrong: -1 + (num_turns - 2) / 2 * 0.1 = -1 with verl's single-turn num_turns of 2
    assert scores == [1.0, -1.0] and extras[0]["pred"] == "72"


def test_extra_info_is_verls_for_each_manager_and_a_copy(tmp_path):
    f = tmp_path / "seen.py"
    f.write_text("SEEN = []\n\ndef compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                 "    SEEN.append(extra_info)\n    extra_info['mutated'] = True\n    return 1.0\n")
    row = PromptRow(prompt=PROMPT, ground_truth="72", data_source="openai/gsm8k", extra_info={"index": 3})
    # verl 0.9.1: the agent loop's tool_extra_fields are merged by naive/remote/rate_limited, num_turns and
    # rollout_reward_scores added by naive/remote; the DAPO manager passes the row's extra_info alone
    naive = {"index": 3, "turn_scores": [], "tool_rewards": [], "raw_prompt": PROMPT, "num_turns": 2,
             "rollout_reward_scores": {}, "mutated": True}
    for manager, want in ((None, naive), ("naive", naive), ("dapo", {"index": 3, "mutated": True}),
                          ("rate_limited", {"index": 3, "turn_scores": [], "tool_rewards": [], "raw_prompt": PROMPT,
                                            "mutated": True})):
        extra = [f"reward_model.reward_manager={manager}"] if manager else []
        rm = RewardManager.from_config(load_config(overrides=[f"custom_reward_function.path={f}", *extra], log=None))
        rm([row], ["#### 72"])
        (seen,) = rm.fn.__globals__["SEEN"][-1:]
        assert seen == want, manager
    assert row.extra_info == {"index": 3}  # the row's own dict is never handed out


def test_gen_reward_script_names_a_manager_verl_does_not_have():
    overrides = script_overrides("../outside/run_qwen2-7b_gen_reward.sh")
    assert "reward_model.reward_manager=generative" in overrides
    with pytest.raises(ConfigError, match=r"reward_model.reward_manager=generative: not a verl reward manager"):
        load_config(overrides=overrides, log=None)
    with pytest.raises(ConfigError, match=r"^reward.reward_manager.name=generative"):
        load_config(overrides=["reward.reward_manager.name=generative"], log=None)
    # a custom manager class (verl 0.9.1's source=importlib, as public verl-omni scripts set it) is not run here
    with pytest.raises(ConfigError, match=r"custom manager class, reward.reward_manager.source=importlib"):
        load_config(overrides=["reward.reward_manager.name=MultiVisualRewardManager", "reward.reward_manager.source="
                               "importlib", "reward.reward_manager.module.path=pkg://verl_omni.reward_loop"], log=None)


def test_verls_own_manager_key_selects_the_manager(tmp_path):
    f = tmp_path / "batch_reward.py"
    f.write_text("def compute_score(data_sources, solution_strs, ground_truths, extra_infos, **kwargs):\n"
                 "    return [float(s.endswith(g)) for s, g in zip(solution_strs, ground_truths)]\n")
    cfg = load_config(overrides=[f"reward.custom_reward_function.path={f}", "reward.reward_manager.name=batch"],
                      log=None)
    assert cfg.reward_model.reward_manager == "batch"
    rm = RewardManager.from_config(cfg)
    row = PromptRow(prompt=PROMPT, ground_truth="72", data_source="openai/gsm8k")
    assert rm([row, row], ["#### 72", "#### 7"])[0] == [1.0, 0.0] and rm.failures == 0


@pytest.mark.slow
def test_the_manager_names_are_verls():
    """The names rlcockpit takes as verl 0.9.1's are the ones its reward loop resolves; ``generative`` is not."""
    from verl_metric_keys import VERL_PY

    from rlcockpit.trainer.config.schema import VERL_REWARD_MANAGERS

    code = ("import sys\nfrom verl.experimental.reward_loop.reward_manager import get_reward_manager_cls\n"
            "for n in sys.argv[1:]:\n    try:\n        get_reward_manager_cls(n); print(n, 'ok')\n"
            "    except ValueError as e:\n        print(n, e)\n")
    proc = subprocess.run([str(VERL_PY), "-c", code, *VERL_REWARD_MANAGERS, "generative"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()[-len(VERL_REWARD_MANAGERS) - 1:]
    assert lines == [f"{n} ok" for n in VERL_REWARD_MANAGERS] + ["generative Unknown reward manager: generative"]


@pytest.mark.slow
def test_retool_reward_trains_two_steps_on_verl_parquet(hf_assets, tmp_path):
    """The ReTool reward through ``rlcockpit train`` on GSM8K-schema parquet (tiny Qwen2 built in code), with
    data_source rewritten to its math_dapo data: no reward failure."""
    import pandas as pd

    rows = pd.read_parquet(hf_assets["train"])
    rows["data_source"] = "math_dapo"
    train = tmp_path / "train.parquet"
    rows.to_parquet(train)
    new = {"data.train_files": str(train), "data.val_files": str(train),
           "actor_rollout_ref.model.path": str(hf_assets["models"]["qwen2"]),
           "data.max_response_length": 16, "data.train_batch_size": 4, "actor_rollout_ref.rollout.n": 4,
           "actor_rollout_ref.actor.ppo_mini_batch_size": 4, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 4,
           "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 4,
           "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 4, "trainer.logger": "[console]",
           "trainer.total_epochs": 1}
    # run_qwen2-7b.sh's shape with the ReTool reward, verl's own custom_reward_function form
    overrides = [*replace_values(script_overrides("run_qwen2-7b.sh"), new), "trainer.total_training_steps=2",
                 f"custom_reward_function.path={retool_reward_file(tmp_path)}", "custom_reward_function.name=compute_score",
                 "trainer.val_before_train=False", "trainer.test_freq=-1"]
    store = tmp_path / "store"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "rlcockpit.cli", "train", *overrides, f"trainer.rlcockpit_dir={store}",
                           "trainer.num_threads=1", f"trainer.default_local_dir={tmp_path / 'ckpt'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    (run,) = rlcockpit.Api(str(store)).runs()
    hist = run.history()
    assert run.status == "finished" and len(hist["critic/score/mean"].dropna()) == 2
    assert hist["reward/failures"].dropna().max() == 0


@pytest.mark.parametrize("form", ["pkg://{pkg}.rule", "pkg://{pkg}/rule", "file://{pkg}/rule.py"])
def test_verls_module_path_forms_load_the_reward(tmp_path, monkeypatch, form):
    """verl 0.9.1 loads ``custom_reward_function.path`` with ``load_module`` (verl/utils/import_utils.py, whose
    docstring gives these three forms); public scripts write ``reward.custom_reward_function.path=pkg://...``.
    Here each was "file not found: pkg:/..."."""
    pkg = f"outside_rewards_{abs(hash(form)) % 10**6}"
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / pkg / "rule.py").write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):"
                                            "\n    return float(solution_str.endswith(ground_truth))\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the working directory is added, as under python -m
    cfg = load_config(overrides=[f"reward.custom_reward_function.path={form.format(pkg=pkg)}",
                                 "reward.custom_reward_function.name=compute_score"], log=None)
    rm = RewardManager.from_config(cfg)
    row = PromptRow(prompt=PROMPT, ground_truth="72", data_source="openai/gsm8k")
    assert rm([row, row], ["#### 72", "#### 7"])[0] == [1.0, 0.0] and rm.failures == 0
    sys.modules.pop(f"{pkg}.rule", None)
    sys.modules.pop(pkg, None)


def test_a_pkg_path_to_no_module_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    cfg = load_config(overrides=["custom_reward_function.path=pkg://no_such_pkg_here.rewards"], log=None)
    with pytest.raises(ImportError, match=r"pkg://no_such_pkg_here.rewards: no module 'no_such_pkg_here.rewards'"):
        RewardManager.from_config(cfg)
