"""Labelled synthetic GRPO/PPO traces: healthy runs of several shapes and one trace per failure class.

Used by ``bench/detection_quality.py`` and the tests. Noise levels follow what real verl runs log: per-step
reward means are averages over hundreds of samples (small noise), KL is multiplicatively noisy, grad norms
are log-normal, system metrics jitter by a few percent. Every failure starts at ``onset`` (drawn per seed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

HEALTHY = ("healthy_grpo", "healthy_short_answer", "healthy_noisy_reward", "healthy_ppo", "healthy_long_reasoning")
FAILURES = ("collapse", "reward_hacking", "entropy_collapse", "loss_divergence", "grad_spike", "oom_creep",
            "low_gpu_util", "rollout_mismatch", "throughput_drop", "length_explosion")
MAX_LEN = 1024


@dataclass
class Trace:
    kind: str
    seed: int
    metrics: list[tuple[int, dict[str, float]]]
    samples: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    onset: int | None = None  # first step of the failure (None for healthy traces)
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return "healthy" if self.kind.startswith("healthy") else self.kind


def _healthy_text(rng: np.random.RandomState, a: int, b: int) -> str:
    forms = [
        f"Let me add {a} and {b}. {a} + {b} = {a + b}. The answer is {a + b}.",
        f"首先计算 {a} 加 {b}，个位相加后进位，结果是 {a + b}。答案是 {a + b}。",
        f"We need {a}+{b}. Adding the tens gives {a // 10 * 10 + b // 10 * 10}, then the units; total {a + b}.",
        f"{a + b}",
        f"计算过程：{a} + {b} = {a + b}，所以最终答案为 {a + b}。",
    ]
    return forms[rng.randint(len(forms))]


def _degenerate_text(rng: np.random.RandomState, kind: str, a: int, b: int) -> str:
    if kind == "collapse":
        options = ["这个这个问题这个问题这个问题这个问题这个问题这个问题这个问题……",
                   "aaaaa bbbbb ccccc aaaaa bbbbb ccccc aaaaa bbbbb ccccc aaaaa bbbbb",
                   "\ufffd\ufffd\x07\x1b的的的的的的的的的的的的的 \x00\x00 \ufffd" * 2,
                   "answer answer answer answer answer answer answer answer answer answer"]
        return options[rng.randint(len(options))]
    if kind == "reward_hacking":
        return (f"The answer is {a + b}. " * rng.randint(20, 40)).strip()
    if kind == "entropy_collapse":
        return f"The answer is {a + b}."
    if kind == "length_explosion":
        return f"Let me think step by step about {a} and {b}. " + "Wait, let me re-check the carry. " * rng.randint(15, 30)
    return _healthy_text(rng, a, b)


def make_trace(kind: str, seed: int = 0, steps: int = 200, sample_every: int = 5, n_samples: int = 16) -> Trace:
    """One labelled trace. ``kind`` is one of :data:`HEALTHY` or :data:`FAILURES`."""
    if kind not in HEALTHY + FAILURES:
        raise ValueError(f"unknown trace kind {kind!r}; known: {', '.join(HEALTHY + FAILURES)}")
    rng = np.random.RandomState(seed * 1009 + sum(map(ord, kind)))
    onset = None if kind in HEALTHY else int(rng.randint(int(steps * 0.4), int(steps * 0.7)))
    short = kind == "healthy_short_answer"
    noisy = kind == "healthy_noisy_reward"
    ppo = kind == "healthy_ppo"
    long_reasoning = kind == "healthy_long_reasoning"
    r0, r1 = rng.uniform(0.1, 0.3), rng.uniform(0.6, 0.85)
    kl_final = rng.uniform(0.3, 0.5) if short else (rng.uniform(0.08, 0.14) if long_reasoning else rng.uniform(0.02, 0.06))
    ent0 = rng.uniform(0.25, 0.4) if short else rng.uniform(0.8, 1.4)
    len0 = rng.uniform(6, 12) if short else rng.uniform(150, 250)
    config = {"algorithm": {"adv_estimator": "gae" if ppo else "grpo", "kl_ctrl": {"kl_coef": 0.001}},
              "actor": {"optim": {"lr": 1e-6, "lr_warmup_steps_ratio": 0.0}, "use_kl_loss": True, "kl_loss_coef": 0.001,
                        "entropy_coeff": 0.0},
              "rollout": {"n": 8, "temperature": 1.0}, "data": {"max_response_length": MAX_LEN},
              "trainer": {"total_training_steps": steps}}
    metrics: list[tuple[int, dict[str, float]]] = []
    samples: dict[int, list[dict[str, Any]]] = {}
    state = {"mem": rng.uniform(55, 68), "loss_scale": 1.0}
    for t in range(steps):
        since = t - onset if onset is not None and t >= onset else -1
        progress = 1 / (1 + math.exp(-(t - steps * 0.3) / (steps * 0.1)))
        reward = r0 + (r1 - r0) * progress + rng.normal(0, 0.12 if noisy else 0.025)
        kl = kl_final * (1 - math.exp(-t / (4 if short else steps * 0.25))) * math.exp(rng.normal(0, 0.2)) + 1e-4
        entropy = ent0 * (1 - 0.35 * t / steps) * math.exp(rng.normal(0, 0.04))
        length = len0 * (1 + (0.8 if long_reasoning else 0.15) * t / steps) * math.exp(rng.normal(0, 0.04))
        clip = max(0.0, rng.normal(0.01, 0.005)) if not short else 0.0
        grad = 0.4 * math.exp(rng.normal(0, 0.3))
        loss = rng.normal(0, 0.02)
        util = float(np.clip(rng.normal(82, 4), 0, 100))
        throughput = 2000 * math.exp(rng.normal(0, 0.05))
        gen, upd, other = 6.0 * math.exp(rng.normal(0, 0.05)), 3.0 * math.exp(rng.normal(0, 0.05)), 1.0
        mismatch = 0.002 * math.exp(rng.normal(0, 0.2))
        degenerate = None
        if since >= 0:
            if kind == "collapse":
                reward = r0 * 0.3 + rng.normal(0, 0.02) if since >= 1 else reward - 0.2
                kl = max(kl, 0.05) * (6 + since * 0.3) * math.exp(rng.normal(0, 0.15))
                entropy *= 2.2
                degenerate = kind
            elif kind == "reward_hacking":
                reward = min(1.0, reward + 0.012 * since) + rng.normal(0, 0.01)
                clip = min(0.8, 0.01 + 0.025 * since)
                length = min(MAX_LEN, length + 40 * since)
                entropy *= max(0.4, 1 - 0.02 * since)
                kl *= 1 + 0.08 * since
                degenerate = kind if rng.rand() < min(0.9, 0.1 + 0.05 * since) else None
            elif kind == "entropy_collapse":
                entropy = ent0 * math.exp(-since / 5) + 0.01 * rng.rand()
                degenerate = kind if rng.rand() < min(1.0, since / 10) else None
            elif kind == "loss_divergence":
                if seed % 2:  # sudden NaN
                    loss = math.nan if since in (0, 1) or since > 3 else loss
                    grad = math.inf if since == 0 else grad * 3
                else:  # exponential divergence, NaN after 25 steps
                    loss = 0.05 * math.exp(since / 3) if since < 25 else math.nan
                    grad *= math.exp(since / 4)
            elif kind == "grad_spike":
                if since in (0, 1, 7, 15):
                    grad *= rng.uniform(20, 60)
            elif kind == "oom_creep":
                state["mem"] = min(99.0, state["mem"] + 0.6)
            elif kind == "low_gpu_util":
                util = float(np.clip(rng.normal(30, 5), 0, 100))
                other = 10.0 * math.exp(rng.normal(0, 0.1))
                throughput *= 0.55
            elif kind == "rollout_mismatch":
                mismatch = rng.uniform(0.02, 0.08)
            elif kind == "throughput_drop":
                throughput *= 0.4
                gen *= 2.5
            elif kind == "length_explosion":
                length = min(MAX_LEN, length * (1.12 ** since))
                clip = min(0.9, max(clip, (length / MAX_LEN) ** 4))
                degenerate = kind if length > 0.5 * MAX_LEN else None
        mem = state["mem"] + rng.normal(0, 0.4)
        row = {
            "critic/score/mean": reward, "critic/score/std": max(0.02, 0.35 + rng.normal(0, 0.02)) * (0.15 if kind == "entropy_collapse" and since > 4 else 1.0),
            "actor/kl_loss": kl, "actor/entropy": entropy, "actor/pg_loss": loss, "actor/grad_norm": grad,
            "actor/ppo_kl": abs(rng.normal(0.0005, 0.0003)), "actor/pg_clipfrac": abs(rng.normal(0.003, 0.001)),
            "actor/lr": 1e-6, "response_length/mean": length, "response_length/clip_ratio": clip,
            "perf/throughput": throughput, "system/gpu/0/utilization": util, "system/gpu/0/memory_percent": mem,
            "system/memory_percent": 30 + rng.normal(0, 0.3), "timing_s/gen": gen, "timing_s/update_actor": upd,
            "timing_s/step": gen + upd + other, "training/rollout_probs_diff_mean": mismatch,
        }
        if ppo:
            row["critic/vf_loss"] = 0.5 * math.exp(-t / 60) + 0.05 + abs(rng.normal(0, 0.01))
            row["critic/vf_explained_var"] = 0.6 * (1 - math.exp(-t / 30)) - 0.2 + rng.normal(0, 0.03)
        metrics.append((t, row))
        if t % sample_every == 0:
            rows = []
            for _i in range(n_samples):
                a, b = rng.randint(10, 99), rng.randint(10, 99)
                deg = degenerate is not None and (degenerate in ("collapse", "entropy_collapse") or rng.rand() < 0.8)
                text = _degenerate_text(rng, degenerate, a, b) if deg else _healthy_text(rng, a, b)
                n_tok = min(MAX_LEN, max(1, int(length * math.exp(rng.normal(0, 0.2))))) if not deg else min(MAX_LEN, len(text))
                if degenerate in ("reward_hacking", "length_explosion") and deg:
                    n_tok = MAX_LEN if rng.rand() < 0.7 else n_tok
                rows.append({"prompt": f"{a} + {b} = ?", "response": text, "ground_truth": str(a + b),
                             "reward": float(rng.rand() < reward), "response_length": n_tok})
            samples[t] = rows
    if kind == "collapse":
        config["algorithm"]["kl_ctrl"]["kl_coef"] = 0.001
        config["algorithm"]["use_kl_in_reward"] = True
        config["actor"]["use_kl_loss"] = False
    return Trace(kind, seed, metrics, samples, onset, config)
