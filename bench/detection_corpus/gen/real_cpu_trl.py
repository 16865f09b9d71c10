"""Real TRL ``GRPOTrainer`` runs on CPU in settings the rest of the corpus lacks, kept as TRL wrote them.

Settings: one or two prompts per step (so a group's reward std is often exactly 0), long runs (>= 500 steps of a
tiny model), logging every k steps, evaluation every k steps. The models are the random-init GPT-2 / Llama with a
BPE tokenizer from :mod:`real_trainer` (built in code, nothing downloaded). Nothing here labels a run: the run's
``trainer_state.json`` (TRL's own file, written by ``Trainer._save_checkpoint`` at the last step) is copied
gzipped into ``bench/detection_corpus/real/trl_cpu_settings/`` and labelled by reading it (see the README).

    nice python bench/detection_corpus/gen/real_cpu_trl.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/real_cpu_trl.py NAME ...   # only these specs
"""

from __future__ import annotations

import gzip
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from real_trainer import bpe_model_dir, digit_overlap, likes_nines, likes_sevens, longer_is_better

OUT = Path(__file__).resolve().parent.parent / "real" / "trl_cpu_settings"

SPECS: dict[str, dict[str, Any]] = {
    # 1 prompt x 6 completions per step, 500 steps, logging every step
    "gpt2-1prompt-500": {"model": "gpt2", "batch": 6, "num_generations": 6, "steps": 500, "logging_steps": 1,
                         "lr": 5e-5, "seed": 11},
    # 2 prompts x 4 completions, logging every 5 steps, evaluation every 25 steps
    "llama-2prompt-eval-300": {"model": "llama", "batch": 8, "num_generations": 4, "steps": 300, "logging_steps": 5,
                               "eval_steps": 25, "lr": 5e-5, "seed": 12},
    # 1 prompt x 6 completions, the stop token lost at step 120 (TrainerCallback), logging every 2 steps
    "gpt2-1prompt-eos-lost-240": {"model": "gpt2", "batch": 6, "num_generations": 6, "steps": 240, "logging_steps": 2,
                                  "lr": 5e-5, "seed": 13, "max_len": 14, "eos_off_at": 120},
    # 2 prompts x 4 completions, 1000 steps, logging every 10 steps
    "gpt2-2prompt-1000-log10": {"model": "gpt2", "batch": 8, "num_generations": 4, "steps": 1000, "logging_steps": 10,
                                "lr": 5e-5, "seed": 14},
    # 1 prompt x 6 completions, the learning rate x300 from step 250 on, logging every step
    "llama-1prompt-lr-jump-400": {"model": "llama", "batch": 6, "num_generations": 6, "steps": 400, "logging_steps": 1,
                                  "lr": 5e-5, "seed": 15, "lr_jump_at": 250, "lr_factor": 300},
    # 1 prompt x 4 completions, 600 steps, logging every 5, evaluation every 50; the learning rate x30 from step 400.
    # Run once and not stored: only the kl moved (0.04-0.19 -> 0.2-0.8), reward/entropy/length did not (README)
    "gpt2-1prompt-lr30-log5-600": {"model": "gpt2", "batch": 4, "num_generations": 4, "steps": 600,
                                   "logging_steps": 5, "eval_steps": 50, "lr": 5e-5, "seed": 16, "lr_jump_at": 400,
                                   "lr_factor": 30},
    # as above with the learning rate x100 from step 400 (x30 moved only the kl: see the README)
    "gpt2-1prompt-lr100-log5-600": {"model": "gpt2", "batch": 4, "num_generations": 4, "steps": 600,
                                    "logging_steps": 5, "eval_steps": 50, "lr": 5e-5, "seed": 16, "lr_jump_at": 400,
                                    "lr_factor": 100},
    # 2 prompts x 3 completions, 800 steps, logging every 2, evaluation every 100 (healthy, long, sparse eval)
    "llama-2prompt-800-log2": {"model": "llama", "batch": 6, "num_generations": 3, "steps": 800, "logging_steps": 2,
                               "eval_steps": 100, "lr": 5e-5, "seed": 17},
}


def run(name: str, spec: dict[str, Any], out: Path = OUT) -> Path:
    """Run one spec and store the run's own ``trainer_state.json`` under ``out/name``."""
    import torch
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from rlcockpit.trainer.config import BuiltinDataConfig
    from rlcockpit.trainer.data import arith_rows

    torch.set_num_threads(1)
    rng = random.Random(spec["seed"])
    train, test = arith_rows(BuiltinDataConfig())
    rng.shuffle(train)

    def rows(items: list[dict[str, Any]], n: int) -> Any:
        return prompt_dataset(items[:n])

    paying = {"fn": digit_overlap}  # what train_reward pays; a spec's reward_switch_at swaps in longer_is_better

    def train_reward(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
        return [paying.get("scale", 1.0) * paying["fn"]("arith", c, g) for c, g in zip(completions, ground_truth)]

    # with a reward switch, the training reward and the accuracy (weight 0: logged, never optimised) are separate
    reward_funcs = [train_reward, accuracy] if spec.get("reward_switch_at") else [accuracy]
    if spec.get("reward_scale_steps"):  # a scale bug in the reward on some steps: the training reward is scaled
        reward_funcs = [train_reward]
    if spec.get("reward_funcs"):  # a spec's own reward functions (fn(completions, ground_truth, **kw)), with weights
        reward_funcs = list(spec["reward_funcs"])
    weights = spec.get("reward_weights") or ([1.0, 0.0] if len(reward_funcs) == 2 else None)

    def cut_temperature(t: float) -> None:
        """Sample and score at temperature ``t`` from now on: TRL bakes the temperature into the fused LM head at
        init, so the head is patched again (its plain forward still reaches the model's own) with the new value."""
        from trl.trainer.utils import add_fused_lm_head

        trainer.temperature = t
        trainer.generation_config.temperature = t
        add_fused_lm_head(trainer.model, temperature=t, cast_lm_head_to_fp32=trainer.args.cast_lm_head_to_fp32,
                          outputs=("log_probs", "entropy"))
        if trainer.ref_model is not None:
            add_fused_lm_head(trainer.ref_model, temperature=t, cast_lm_head_to_fp32=trainer.args.cast_lm_head_to_fp32)

    class Fault(TrainerCallback):
        """Switches a fault on at ``on_step_begin`` of its step (``global_step + 1`` is the step being run)."""

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            step = state.global_step + 1
            if spec.get("eos_off_at") == step:
                trainer.eos_token_ids = [-7]
                trainer.generation_config.eos_token_id = -7
            if spec.get("reward_switch_at") == step:
                to = spec.get("reward_switch_to", "")
                paying["fn"] = to if callable(to) else {"likes_nines": likes_nines, "likes_sevens": likes_sevens}.get(
                    to, longer_is_better)
            if spec.get("reward_scale_steps"):
                paying["scale"] = spec["reward_scale"] if step in spec["reward_scale_steps"] else 1.0
            if spec.get("clip_off_at") == step:  # gradient clipping off: Trainer reads max_grad_norm every step
                args.max_grad_norm = 1e9
            if spec.get("entropy_coef_at") == step:  # TRL decides at init whether the entropy term is computed
                trainer.entropy_coef = spec["entropy_coef"]
                trainer._entropy_bonus_enabled = True
            if spec.get("temperature_at") == step:
                cut_temperature(spec["temperature"])
            if spec.get("each_step") is not None:  # a change applied at every step (sixth pass: ramps)
                spec["each_step"](trainer, args, step, kw)
            if spec.get("lr_jump_at") == step:
                sched = kw["lr_scheduler"]
                sched.base_lrs = [b * spec["lr_factor"] for b in sched.base_lrs]
                for g in kw["optimizer"].param_groups:
                    g["lr"] *= spec["lr_factor"]

    evaluate = "eval_steps" in spec
    with tempfile.TemporaryDirectory(prefix="corpus-cpu-trl-") as tmp:
        args = GRPOConfig(output_dir=f"{tmp}/out", max_steps=spec["steps"], per_device_train_batch_size=spec["batch"],
                          per_device_eval_batch_size=spec["batch"], num_generations=spec["num_generations"],
                          max_completion_length=spec.get("max_len", 8), logging_steps=spec["logging_steps"],
                          learning_rate=spec["lr"], report_to=[], use_cpu=True, bf16=False,
                          save_strategy="steps", save_steps=spec["steps"], save_only_model=True,
                          eval_strategy="steps" if evaluate else "no", eval_steps=spec.get("eval_steps"),
                          log_completions=False, seed=spec["seed"], run_name=name,
                          reward_weights=weights, **{"beta": 0.04, **spec.get("config", {})})
        trainer = GRPOTrainer(model=bpe_model_dir(spec["model"], spec.get("model_seed", 0)), reward_funcs=reward_funcs, args=args,
                              train_dataset=spec["train_dataset"](4096) if spec.get("train_dataset") else rows(train, 4096), eval_dataset=rows(test, 16) if evaluate else None,
                              callbacks=[Fault()])
        t0 = time.time()
        trainer.train()
        print(f"[cpu-trl] {name}: {spec['steps']} steps in {time.time() - t0:.0f}s", flush=True)
        state = Path(tmp) / "out" / f"checkpoint-{spec['steps']}" / "trainer_state.json"
        dest = out / name / "trainer_state.json.gz"
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(state, "rb") as src, open(dest, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            shutil.copyfileobj(src, gz)
    return dest


def arith_training_rows(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The built-in arithmetic task's training rows shuffled by ``seed``, and its test rows (a pass's dataset
    drivers start from these)."""
    from rlcockpit.trainer.config import BuiltinDataConfig
    from rlcockpit.trainer.data import arith_rows

    rows, test = arith_rows(BuiltinDataConfig())
    random.Random(seed).shuffle(rows)
    return rows, test


def prompt_dataset(rows: list[dict[str, Any]], transform: Any = None) -> Any:
    """A ``datasets.Dataset`` of the rows' prompt and ground truth, served through ``transform`` when one is given
    (a driver's hook changes what the transform serves from a step on)."""
    from datasets import Dataset

    ds = Dataset.from_dict({"prompt": [r["prompt"][0]["content"] for r in rows],
                            "ground_truth": [r["reward_model"]["ground_truth"] for r in rows]})
    if transform is not None:
        ds.set_transform(transform, output_all_columns=False)
    return ds


class FromStep:
    """A fault that a pass's reward function or callback switches on at step ``start``: ``on`` is set by the
    training-step hook :func:`run` calls (``hook``) before the step's rollouts are scored."""

    def __init__(self, start: int) -> None:
        self.start, self.on = start, False

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.on = step >= self.start


def accuracy(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
    """The task's accuracy (digit overlap with the true answer)."""
    return [digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]


def main(specs: dict[str, dict[str, Any]], out: Path, not_stored: Collection[str] = ()) -> None:
    """Run the specs named on the command line, or else every spec not stored yet (a pass's ``__main__``)."""
    names = sys.argv[1:] or [n for n in specs
                             if n not in not_stored and not (out / n / "trainer_state.json.gz").exists()]
    for n in names:
        print(run(n, specs[n], out=out), flush=True)


if __name__ == "__main__":
    main(SPECS, OUT)
