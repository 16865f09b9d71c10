"""Synthetic traces in verl 0.9's exact key set (``RayPPOTrainer`` + ``compute_data_metrics`` + rollout correction).

Keys follow verl 0.9.1's metric code: ``actor/*`` from the actor update, ``critic/score|rewards|advantages|returns/*``,
``response_length/*`` and ``response_length_non_aborted/*``, ``response/aborted_ratio``, ``prompt_length/*``,
``timing_s/*`` (gen, reward, old_log_prob, ref, adv, update_actor, update_weights, step; testing and
save_checkpoint on their steps), ``timing_per_token_ms/*``, ``perf/*`` incl. ``perf/mfu/actor`` and
``perf/max_memory_allocated_gb`` (no device total: verl does not log one), ``training/global_step``,
``training/rollout_probs_diff_*`` and ``rollout_corr/*`` (when rollout correction is on), ``num_turns/*``
(agent loop runs), ``val-core/<source>/acc/mean@1`` every ``trainer.test_freq`` steps, and W&B's
``system/gpu.N.*`` in the runs that log to wandb.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import numpy as np
from synth_samples import rows as sample_rows
from synth_world import World, apply_failure, healthy_world, round_sig

SOURCE = "verl_synth"
MODELS = ["Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-Math-1.5B", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
          "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-4B", "Qwen/Qwen2.5-3B-Instruct"]


def _stats(prefix: str, mean: float, spread: float, lo: float = -math.inf, hi: float = math.inf) -> dict[str, float]:
    return {f"{prefix}/mean": mean, f"{prefix}/max": min(hi, mean + spread), f"{prefix}/min": max(lo, mean - spread)}


def emit_step(w: World, step: int, opts: dict[str, Any]) -> dict[str, float]:
    """The metrics verl's trainer logs at ``step`` from the latent state."""
    s, p, i, rng = w.s, w.p, w.idx(step), w.rng
    L = p["max_len"]
    m: dict[str, float] = {"training/global_step": float(step), "training/epoch": float(step // opts["steps_per_epoch"])}
    m["actor/entropy"] = float(s["entropy"][i])
    m["actor/pg_loss"] = float(s["pg_loss"][i])
    m["actor/pg_clipfrac"] = float(s["clipfrac"][i])
    m["actor/pg_clipfrac_lower"] = float(s["clipfrac"][i] * 0.05)
    m["actor/ppo_kl"] = float(s["ppo_kl"][i])
    m["actor/grad_norm"] = float(s["grad_norm"][i])
    m["actor/lr"] = float(s["lr"][i])
    if opts["use_kl_loss"]:
        m["actor/kl_loss"] = float(s["kl"][i])
        m["actor/kl_coef"] = opts["kl_coef"]
    if opts["kl_in_reward"]:
        m["actor/reward_kl_penalty"] = float(s["kl"][i])
        m["actor/reward_kl_penalty_coeff"] = opts["kl_coef"]
    sc, sd = float(s["score"][i]), float(s["score_std"][i])
    lo, hi = opts["score_range"]
    m.update(_stats("critic/score", sc, 2.5 * sd, lo, hi))
    m.update(_stats("critic/rewards", sc - (opts["kl_coef"] * float(s["kl"][i]) if opts["kl_in_reward"] else 0), 2.5 * sd, lo - 1, hi))
    m.update(_stats("critic/advantages", float(rng.normal(0, 0.01)), float(rng.uniform(1.5, 3.0))))
    m.update(_stats("critic/returns", float(rng.normal(0, 0.01)), float(rng.uniform(1.5, 3.0))))
    if opts["critic"]:
        m["critic/vf_loss"] = float(s["vf_loss"][i])
        m["critic/vf_clipfrac"] = float(abs(rng.normal(0.02, 0.01)))
        m["critic/vpred_mean"] = float(sc + rng.normal(0, 0.05))
        m["critic/vf_explained_var"] = float(np.clip(0.6 - s["vf_loss"][i], -1, 0.95))
        m.update(_stats("critic/values", float(sc + rng.normal(0, 0.05)), 1.0))
        m["critic/grad_norm"] = float(s["grad_norm"][i] * 3)
    ln = float(min(s["len_mean"][i], L))
    m.update(_stats("response_length", ln, ln * 0.9, 1, L))
    m["response_length/max"] = float(L if s["clip_ratio"][i] > 0.004 else min(L, ln * rng.uniform(2, 4)))
    m["response_length/clip_ratio"] = float(s["clip_ratio"][i])
    m.update({k.replace("response_length", "response_length_non_aborted"): v for k, v in list(m.items())
              if k.startswith("response_length/")})
    m["response/aborted_ratio"] = float(s["aborted"][i])
    pl = opts["prompt_len"]
    m.update(_stats("prompt_length", pl * rng.uniform(0.95, 1.05), pl * 0.6, 1, opts["max_prompt"]))
    m["prompt_length/clip_ratio"] = 0.0
    # timing: phases scale with the step; what no phase accounts for is waiting (data loading, CPU work)
    step_s = float(s["step_s"][i])
    gen = step_s * p["gen_share"]
    rest = step_s - gen
    t = {"gen": gen, "reward": rest * 0.06, "old_log_prob": rest * 0.18, "ref": rest * 0.16 if opts["use_ref"] else 0.0,
         "adv": rest * 0.01, "update_actor": rest * 0.5, "update_weights": rest * 0.06}
    if opts["critic"]:
        t["values"], t["update_critic"] = rest * 0.1, rest * 0.3
    t = {k: v * float(np.exp(rng.normal(0, 0.03))) for k, v in t.items() if v > 0}
    total = sum(t.values()) + float(s["t_other"][i])
    if step in w.eval_steps:
        t["testing"] = step_s * rng.uniform(0.3, 1.5)
        total += t["testing"]
    if step in w.ckpt_steps:
        t["save_checkpoint"] = step_s * rng.uniform(0.2, 0.8)
        total += t["save_checkpoint"]
    m.update({f"timing_s/{k}": v for k, v in t.items()})
    m["timing_s/step"] = total
    ntok = float(opts["batch"] * opts["n"] * (ln + pl))
    tput = float(s["tput"][i]) * (step_s / total)
    m["perf/total_num_tokens"] = ntok
    m["perf/time_per_step"] = total
    m["perf/throughput"] = tput
    m["timing_per_token_ms/gen"] = 1000 * t["gen"] / max(1.0, opts["batch"] * opts["n"] * ln)
    m["timing_per_token_ms/update_actor"] = 1000 * t["update_actor"] / ntok
    m["perf/mfu/actor"] = float(s["mfu"][i])
    m["perf/mfu/actor_infer"] = float(s["mfu"][i] * 0.7)
    m["perf/max_memory_allocated_gb"] = float(s["mem_alloc"][i])
    m["perf/max_memory_reserved_gb"] = float(s["mem_reserved"][i])
    m["perf/cpu_memory_used_gb"] = float(opts["cpu_mem"] + 0.002 * step)
    if opts["rollout_corr"]:
        d = float(s["diff_mean"][i])
        m["training/rollout_probs_diff_valid"] = 1.0
        m["training/rollout_probs_diff_mean"] = d
        m["training/rollout_probs_diff_max"] = min(1.0, d * rng.uniform(40, 120))
        m["training/rollout_probs_diff_std"] = d * rng.uniform(2.5, 4)
        m["training/rollout_actor_probs_pearson_corr"] = float(max(0.0, 1 - 1.2 * d * rng.uniform(0.8, 1.2)))
        kl = d * rng.uniform(0.8, 1.3)
        m["rollout_corr/kl"] = kl
        m["rollout_corr/k3_kl"] = kl * rng.uniform(0.9, 1.0)
        m["rollout_corr/log_ppl_abs_diff"] = d * rng.uniform(1.5, 2.5)
        m["rollout_corr/ppl_ratio"] = float(math.exp(d * rng.uniform(-0.5, 1.5)))
        m["rollout_corr/chi2_token"] = d * rng.uniform(2, 4)
        m["rollout_corr/rollout_is_mean"] = float(1 + rng.normal(0, d))
        m["rollout_corr/rollout_is_eff_sample_size"] = float(max(0.05, 1 - 8 * d))
        m["rollout_corr/training_ppl"] = float(math.exp(s["entropy"][i] * 0.8)) if math.isfinite(s["entropy"][i]) else math.nan
    if p["turns"]:
        tm = float(s["turns"][i])
        m.update({"num_turns/mean": tm, "num_turns/min": 1.0, "num_turns/max": float(math.ceil(tm * 2))})
        m["tool_call_counts/mean"] = max(0.0, tm - 1)
    if step in w.eval_steps:
        m[f"val-core/{opts['data_source']}/acc/mean@1"] = float(s["val_acc"][i])
        m[f"val-core/{opts['data_source']}/reward/mean@1"] = float(s["val_acc"][i])
    if opts["wandb_system"] and (step % opts["sys_every"] == 0):
        for g in range(opts["n_gpus"]):
            m[f"system/gpu.{g}.gpu"] = float(np.clip(s["util"][i] + rng.normal(0, 3), 0, 100))
            m[f"system/gpu.{g}.memoryAllocated"] = float(min(100.0, 100 * s["mem_reserved"][i] / p["mem_total"] + opts["vllm_pct"]))
            m[f"system/gpu.{g}.temp"] = float(55 + s["util"][i] * 0.2 + rng.normal(0, 1))
            m[f"system/gpu.{g}.powerWatts"] = float(120 + 5.5 * s["util"][i] + rng.normal(0, 10))
    return m


def make_trace(cls: str, variant: str, n: int, seed: int) -> dict[str, Any]:
    """One labelled verl trace; ``variant`` picks a shape inside the class (see ``PLAN``)."""
    rng = np.random.default_rng([seed, n, zlib.crc32(cls.encode()), zlib.crc32(variant.encode())])
    cadence = int(rng.choice([1, 1, 1, 1, 2, 5, 10])) if variant != "sparse" else 10
    T = int(rng.integers(120, 360)) * {1: 1, 2: 1, 5: 2, 10: 3}[cadence]
    over: dict[str, Any] = {}
    if variant == "short_answer_kl":
        over.update(kl_regime="short_answer", entropy0=float(rng.uniform(0.15, 0.4)), max_len=256, len_frac0=0.05)
    if variant == "reasoning_growth":
        over.update(max_len=8192, len_frac0=float(rng.uniform(0.08, 0.15)), len_growth=float(rng.uniform(1.0, 2.0)))
    if variant in ("noisy",):
        over.update(score_noise=float(rng.uniform(0.08, 0.15)), grad_noise=0.5, entropy_noise=0.08)
    if variant == "warmup_transient":
        over.update(grad_warm=float(rng.uniform(6, 15)), lr_sched="warmup")
    if variant == "lr_step":
        over.update(lr_sched="step")
    if variant == "high_mismatch_stable":
        over.update(diff0=float(rng.uniform(0.008, 0.015)))
    if variant == "eval_heavy":
        over.update(test_freq=5, save_freq=20)
    w = healthy_world(rng, T, **over)
    opts = _options(rng, w, cls, variant)
    if cls == "reward_hacking":  # validation must be logged often enough to see it fall inside the window
        w.p["test_freq"] = opts["hacking_test_freq"]
        w.eval_steps = list(range(w.p["test_freq"], T + 1, w.p["test_freq"]))
    onset, info = None, {}
    if cls != "healthy":
        k = _onset(rng, T, cls, variant, cadence)
        info = apply_failure(w, cls, k, variant)
        onset = k
    steps = list(range(cadence, T + 1, cadence)) if not (cls == "low_gpu_util" and variant == "from_start") else \
        [1] + list(range(cadence, T + 1, cadence))[int(cadence == 1):]
    metrics = [[st, round_sig(emit_step(w, st, opts))] for st in steps]
    samples = []
    for st in steps:
        if st % opts["sample_every"] == 0:
            strength = 0.0 if onset is None or st < onset else min(1.0, 0.3 + (st - onset) / 15)
            mode = cls if cls in ("collapse", "reward_hacking", "entropy_collapse", "length_explosion") else "healthy"
            samples.append([st, sample_rows(rng, mode, strength, float(np.clip(w.s["val_acc"][w.idx(st)], 0, 1)))])
    tid = f"{SOURCE}-{cls}-{variant}-{n:02d}"
    return {"id": tid, "source": SOURCE, "class": cls, "onset": onset,
            "onset_method": "healthy" if onset is None else
            f"generator: the {cls} model ({variant}) starts acting at this step (logged every {cadence} steps)",
            "split": "tuning", "naming": "verl", "config": _config(w, opts, T),
            "meta": {"generator": "synth_verl", "seed": seed, "variant": variant, "cadence": cadence, "steps": T,
                     "failure": info, "wandb_system_metrics": opts["wandb_system"]},
            "metrics": metrics, "samples": samples}


def _onset(rng: np.random.Generator, T: int, cls: str, variant: str, cadence: int) -> int:
    if cls == "low_gpu_util" and variant == "from_start":
        return 1
    creeping = cls in ("oom_creep", "rollout_mismatch", "length_explosion") and variant in ("leak", "drift", "truncation", "with_length")
    lo, hi = (max(30, T - 120), T - 60) if creeping else (int(0.3 * T), int(0.75 * T))
    k = int(rng.integers(lo, max(lo + 1, hi)))
    return max(cadence, k - k % cadence)


def _options(rng: np.random.Generator, w: World, cls: str, variant: str) -> dict[str, Any]:
    use_kl_loss = bool(rng.random() < 0.6) or variant == "short_answer_kl"
    wandb_system = bool(rng.random() < 0.5) or cls == "low_gpu_util" and variant != "from_start"
    rm = variant == "rm"
    return {"use_kl_loss": use_kl_loss, "kl_in_reward": (not use_kl_loss) and bool(rng.random() < 0.3),
            "kl_coef": float(rng.choice([0.001, 0.01, 0.05])), "use_ref": True,
            "critic": cls == "loss_divergence" and variant == "critic" or bool(rng.random() < 0.15),
            "score_range": (-5.0, 10.0) if rm else (-1.0, 1.0) if rng.random() < 0.3 else (0.0, 1.0),
            "hacking_test_freq": int(rng.choice([2, 5, 5, 10])),
            "batch": int(rng.choice([64, 128, 256, 512])), "n": int(rng.choice([1, 4, 5, 8, 16])),
            "prompt_len": float(rng.uniform(60, 600)), "max_prompt": 1024, "cpu_mem": float(rng.uniform(40, 200)),
            "rollout_corr": bool(rng.random() < 0.5) or cls == "rollout_mismatch" or variant == "high_mismatch_stable",
            "data_source": str(rng.choice(["openai/gsm8k", "lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "aime"])),
            "wandb_system": wandb_system, "n_gpus": int(rng.choice([1, 2, 4])),
            "vllm_pct": float(rng.uniform(0, 30)), "sys_every": int(rng.choice([1, 2, 3])),
            "steps_per_epoch": int(rng.integers(20, 200)), "sample_every": int(rng.choice([5, 10, 20]))}


def _config(w: World, o: dict[str, Any], T: int) -> dict[str, Any]:
    p = w.p
    return {
        "data": {"train_batch_size": o["batch"], "max_prompt_length": o["max_prompt"], "max_response_length": p["max_len"]},
        "actor_rollout_ref": {
            "model": {"path": str(w.rng.choice(MODELS))},
            "actor": {"optim": {"lr": p["lr"]}, "use_kl_loss": o["use_kl_loss"], "kl_loss_coef": o["kl_coef"],
                      "kl_loss_type": "low_var_kl", "entropy_coeff": 0, "ppo_mini_batch_size": max(1, o["batch"] // 4),
                      "clip_ratio": 0.2},
            "rollout": {"name": "vllm", "n": o["n"], "gpu_memory_utilization": 0.6, "temperature": 1.0},
        },
        "algorithm": {"adv_estimator": "gae" if o["critic"] else "grpo", "use_kl_in_reward": o["kl_in_reward"],
                      "kl_ctrl": {"kl_coef": o["kl_coef"]},
                      "rollout_correction": {"rollout_is": "token" if o["rollout_corr"] else None}},
        "trainer": {"n_gpus_per_node": o["n_gpus"], "nnodes": 1, "test_freq": p["test_freq"], "save_freq": p["save_freq"] or -1,
                    "total_training_steps": T, "logger": ["console", "wandb"] if o["wandb_system"] else ["console"],
                    "project_name": "verl_grpo", "experiment_name": "run"},
    }


# (class, variant, how many traces)
PLAN: list[tuple[str, str, int]] = [
    ("healthy", "plain", 4), ("healthy", "short_answer_kl", 3), ("healthy", "noisy", 2), ("healthy", "warmup_transient", 2),
    ("healthy", "lr_step", 2), ("healthy", "sparse", 2), ("healthy", "reasoning_growth", 2), ("healthy", "high_mismatch_stable", 2),
    ("healthy", "eval_heavy", 2),
    ("collapse", "long", 2), ("collapse", "short", 1), ("collapse", "entropy_down", 1),
    ("reward_hacking", "length", 2), ("reward_hacking", "rm", 2), ("reward_hacking", "stuffing", 1),
    ("entropy_collapse", "plain", 3), ("entropy_collapse", "sparse", 1),
    ("loss_divergence", "nan", 2), ("loss_divergence", "pg", 1), ("loss_divergence", "critic", 2),
    ("grad_spike", "plain", 3), ("grad_spike", "sparse", 1),
    ("oom_creep", "leak", 3), ("oom_creep", "with_length", 2),
    ("low_gpu_util", "from_start", 3), ("low_gpu_util", "stall", 2),
    ("rollout_mismatch", "drift", 3), ("rollout_mismatch", "jump", 2),
    ("throughput_drop", "plain", 3), ("throughput_drop", "sparse", 1),
    ("length_explosion", "repetition", 2), ("length_explosion", "truncation", 3),
]


def generate(seed: int = 14) -> list[dict[str, Any]]:
    return [make_trace(cls, variant, n, seed) for cls, variant, count in PLAN for n in range(count)]
