"""A latent model of an RL post-training run, step by step, and the failures that act on it.

Written from how verl/TRL runs behave (reward curves that saturate, entropy that drifts down, KL that grows
slowly, warm-up transients in gradient norm, memory and throughput, eval and checkpoint steps that stretch the
step time), not from any detector. The emitters (``synth_verl``, ``synth_wandb``) turn these latent series into
one framework's key names. Every quantity is a numpy array over steps 1..T; failures edit the arrays from the
fault step on. Randomised per trace: length, scale, baseline, noise, onset, slope, cadence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def round_sig(m: dict[str, float], digits: int = 4) -> dict[str, float]:
    """Values to ``digits`` significant digits: the corpus stays small and no detector can key on float noise."""
    out = {}
    for k, v in m.items():
        out[k] = v if (v == 0 or not math.isfinite(v)) else float(f"{v:.{digits}g}")
    return out


def ar_noise(rng: np.random.Generator, n: int, sigma: float, rho: float = 0.6) -> np.ndarray:
    """AR(1) noise with stationary std ``sigma`` (training curves are correlated step to step)."""
    e = rng.normal(0, sigma * math.sqrt(1 - rho * rho), n)
    out = np.empty(n)
    acc = rng.normal(0, sigma)
    for i in range(n):
        acc = rho * acc + e[i]
        out[i] = acc
    return out


@dataclass
class World:
    """Latent per-step series of one run (index i = step i + 1)."""

    T: int
    rng: np.random.Generator
    p: dict[str, Any]
    s: dict[str, np.ndarray] = field(default_factory=dict)
    eval_steps: list[int] = field(default_factory=list)
    ckpt_steps: list[int] = field(default_factory=list)

    def idx(self, step: int) -> int:
        return max(0, min(self.T - 1, step - 1))


def healthy_world(rng: np.random.Generator, T: int, **over: Any) -> World:
    """A healthy run with randomised scale and shape; ``over`` fixes any parameter (see ``p`` below)."""
    u = rng.uniform
    p: dict[str, Any] = {
        "score0": u(0.05, 0.5), "score_gain": u(0.05, 0.4), "score_tau": u(0.15, 0.6) * T, "score_noise": u(0.01, 0.05),
        "entropy0": math.exp(u(math.log(0.25), math.log(2.2))), "entropy_decay": u(0.0, 0.45),
        "entropy_noise": u(0.01, 0.04), "kl_end": math.exp(u(math.log(0.002), math.log(0.05))), "kl_noise": u(0.05, 0.2),
        "ppo_kl": math.exp(u(math.log(2e-4), math.log(4e-3))), "clipfrac": u(0.0005, 0.01),
        "grad0": math.exp(u(math.log(0.08), math.log(1.5))), "grad_warm": u(1.0, 5.0), "grad_noise": u(0.1, 0.3),
        "lr": 10 ** u(-6.7, -5.5), "lr_sched": rng.choice(["constant", "cosine", "warmup", "step"]),
        "max_len": int(rng.choice([512, 1024, 2048, 4096, 8192])), "len_frac0": u(0.08, 0.35), "len_growth": u(0.0, 0.5),
        "mem_total": float(rng.choice([40.0, 80.0, 80.0, 94.0, 141.0])), "mem_frac": u(0.3, 0.75),
        "tput": math.exp(u(math.log(300), math.log(6000))), "step_s": math.exp(u(math.log(8), math.log(400))),
        "gen_share": u(0.35, 0.65), "util": u(72, 95), "mfu": u(0.2, 0.55),
        "diff0": math.exp(u(math.log(0.0015), math.log(0.006))), "test_freq": int(rng.choice([5, 10, 10, 20, 25, 50])),
        "save_freq": int(rng.choice([0, 20, 50, 100])), "val0": u(0.1, 0.6), "val_gain": u(0.03, 0.25),
        "turns": bool(rng.random() < 0.2), "kl_regime": "normal",
    }
    p.update(over)
    w = World(T=T, rng=rng, p=p)
    t = np.arange(1, T + 1, dtype=float)
    sat = 1 - np.exp(-t / p["score_tau"])
    s = w.s
    s["score"] = p["score0"] + p["score_gain"] * sat + ar_noise(rng, T, p["score_noise"])
    s["score_std"] = np.clip(0.25 + 0.1 * rng.standard_normal(T) * 0.1 + 0.05 * (1 - sat), 0.05, None)
    s["entropy"] = p["entropy0"] * (1 - p["entropy_decay"] * t / T) * (1 + ar_noise(rng, T, p["entropy_noise"]))
    if p["kl_regime"] == "short_answer":  # a short-answer task: per-token KL sits high from early on and stays
        lvl = rng.uniform(0.1, 0.2)
        s["kl"] = lvl * (1 - np.exp(-t / 8)) * (1 + ar_noise(rng, T, 0.12))
    else:
        s["kl"] = p["kl_end"] * (t / T) ** 0.8 * (1 + ar_noise(rng, T, p["kl_noise"])) + 1e-5
    warm = 1 + (p["grad_warm"] - 1) * np.exp(-t / rng.uniform(3, 12))
    s["grad_norm"] = p["grad0"] * warm * np.exp(ar_noise(rng, T, p["grad_noise"], 0.3))
    s["lr"] = _lr_schedule(p, t, rng)
    lr_rel = s["lr"] / p["lr"]
    s["ppo_kl"] = np.abs(p["ppo_kl"] * (0.3 + 0.7 * lr_rel) * np.exp(ar_noise(rng, T, 0.4, 0.3)))
    s["clipfrac"] = np.clip(p["clipfrac"] * (0.3 + 0.7 * lr_rel) * np.exp(ar_noise(rng, T, 0.3, 0.3)), 0, 1)
    s["pg_loss"] = ar_noise(rng, T, 0.02 + 0.05 * p["score_noise"], 0.2)
    s["vf_loss"] = (0.3 * np.exp(-t / (0.3 * T)) + 0.05) * np.exp(ar_noise(rng, T, 0.15))
    L = p["max_len"]
    s["len_mean"] = L * p["len_frac0"] * (1 + p["len_growth"] * sat) * (1 + ar_noise(rng, T, 0.04))
    s["clip_ratio"] = np.clip(_tail_share(s["len_mean"] / L) + np.abs(ar_noise(rng, T, 0.003, 0.2)), 0, 1)
    s["aborted"] = np.where(rng.random(T) < 0.05, rng.uniform(0.0, 0.02, T), 0.0)
    mem_peak = p["mem_total"] * p["mem_frac"]
    s["mem_alloc"] = mem_peak * (0.85 + 0.15 * (1 - np.exp(-t / 3))) + rng.normal(0, 0.004 * mem_peak, T)
    s["mem_alloc"] = np.maximum.accumulate(s["mem_alloc"])  # torch's max_memory_allocated is a running peak
    s["mem_reserved"] = np.maximum.accumulate(s["mem_alloc"] * rng.uniform(1.05, 1.2))
    length_rel = s["len_mean"] / s["len_mean"][: max(3, T // 20)].mean()
    s["step_s"] = p["step_s"] * (0.4 + 0.6 * length_rel) * np.exp(ar_noise(rng, T, 0.05))
    s["t_other"] = p["step_s"] * rng.uniform(0.01, 0.04) * np.exp(ar_noise(rng, T, 0.2))
    s["tput"] = p["tput"] * np.exp(ar_noise(rng, T, 0.05)) * (1 - 0.35 * np.exp(-t / 2.5))
    s["util"] = np.clip(p["util"] + ar_noise(rng, T, 3.0, 0.4), 5, 100)
    s["mfu"] = np.clip(p["mfu"] * (s["util"] / p["util"]) * np.exp(ar_noise(rng, T, 0.04)), 0.005, 0.9)
    s["diff_mean"] = p["diff0"] * np.exp(ar_noise(rng, T, 0.08))
    s["val_acc"] = np.clip(p["val0"] + p["val_gain"] * sat + ar_noise(rng, T, 0.012, 0.3), 0, 1)
    s["turns"] = np.clip(2.5 + ar_noise(rng, T, 0.3), 1, None) if p["turns"] else np.zeros(T)
    w.eval_steps = [x for x in range(p["test_freq"], T + 1, p["test_freq"])]
    w.ckpt_steps = [x for x in range(p["save_freq"], T + 1, p["save_freq"])] if p["save_freq"] else []
    return w


def _lr_schedule(p: dict[str, Any], t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    T = len(t)
    if p["lr_sched"] == "cosine":
        return p["lr"] * 0.5 * (1 + np.cos(math.pi * t / T))
    if p["lr_sched"] == "warmup":
        w = max(2, int(rng.uniform(0.03, 0.15) * T))
        return p["lr"] * np.minimum(1.0, t / w)
    if p["lr_sched"] == "step":  # a planned decay: everything calms down at once (not a failure)
        at = int(rng.uniform(0.4, 0.7) * T)
        return np.where(t < at, p["lr"], p["lr"] * 0.1)
    return np.full(T, p["lr"])


def _tail_share(frac: np.ndarray) -> np.ndarray:
    """Share of responses at the length limit for a mean length ``frac`` of the limit (roughly exponential lengths)."""
    return np.exp(-1.0 / np.clip(frac, 1e-3, None))


# --------------------------------------------------------------------------- failures

def ramp(T: int, start: int, tau: float) -> np.ndarray:
    """0 before ``start`` (a step), then 1 - exp(-(t - start)/tau): how fast an effect sets in."""
    t = np.arange(1, T + 1, dtype=float)
    return np.where(t >= start, 1 - np.exp(-(t - start + 1) / max(tau, 1e-6)), 0.0)


def linear(T: int, start: int) -> np.ndarray:
    t = np.arange(1, T + 1, dtype=float)
    return np.where(t >= start, t - start + 1, 0.0)


def apply_failure(w: World, cls: str, k: int, variant: str) -> dict[str, Any]:
    """Edit ``w`` so ``cls`` begins at step ``k``; returns what was done (for the label's meta)."""
    rng, s, T, p = w.rng, w.s, w.T, w.p
    u = rng.uniform
    info: dict[str, Any] = {"variant": variant}
    i = w.idx(k)
    if cls == "collapse":
        r = ramp(T, k, u(0.5, 2.5))
        keep = u(0.02, 0.3)
        s["score"] = s["score"] * (1 - r * (1 - keep))
        s["val_acc"] = s["val_acc"] * (1 - r * (1 - keep))
        s["kl"] = s["kl"] + r * u(5, 40) * max(s["kl"][i], 0.01) * np.exp(ar_noise(rng, T, 0.3))
        s["ppo_kl"] = s["ppo_kl"] * (1 + r * u(10, 80))
        s["clipfrac"] = np.clip(s["clipfrac"] + r * u(0.1, 0.4), 0, 1)
        s["entropy"] = s["entropy"] * (1 + r * (u(1.5, 4.0) if variant != "entropy_down" else -0.9))
        s["grad_norm"] = s["grad_norm"] * (1 + r * u(3, 20))
        to = u(0.6, 1.0) if variant != "short" else u(0.02, 0.1)
        s["len_mean"] = s["len_mean"] * (1 - r) + r * p["max_len"] * to
        s["clip_ratio"] = np.clip(s["clip_ratio"] * (1 - r) + r * (to if variant != "short" else 0), 0, 1)
        info["score_left"] = round(keep, 3)
    elif cls == "reward_hacking":
        r = ramp(T, k, u(4, 12))
        s["score"] = s["score"] + r * u(0.3, 1.0) * (1.0 if variant != "rm" else u(2, 6))
        s["val_acc"] = s["val_acc"] - r * u(0.35, 0.7) * max(s["val_acc"][i], 0.3)
        if variant in ("length", "rm"):
            s["len_mean"] = s["len_mean"] * (1 + r * u(0.5, 1.5))
            s["len_mean"] = np.minimum(s["len_mean"], p["max_len"] * 0.95)
        info["val_drop"] = "val accuracy falls while the score rises"
    elif cls == "entropy_collapse":
        r = ramp(T, k, u(3, 12))
        floor = u(0.01, 0.08)
        s["entropy"] = s["entropy"] * (1 - r * (1 - floor))
        s["clipfrac"] = s["clipfrac"] * (1 - 0.8 * r)
        s["score_std"] = s["score_std"] * (1 - 0.7 * r)
        s["score"] = s["score"] * (1 - r) + r * s["score"][i]
        info["entropy_floor"] = round(floor, 3)
    elif cls == "loss_divergence":
        if variant == "nan":
            for key in ("pg_loss", "grad_norm", "kl", "ppo_kl", "entropy"):
                s[key] = np.where(np.arange(T) >= i, np.nan, s[key])
        else:
            g = u(0.15, 0.5)
            growth = np.exp(np.minimum(g * linear(T, k), 60))
            key = "vf_loss" if variant == "critic" else "pg_loss"
            s[key] = np.where(np.arange(T) >= i, (np.abs(s[key]) + 0.05) * growth * u(3, 10), s[key])
            s["grad_norm"] = s["grad_norm"] * growth
            nan_at = i + int(u(10, 30))
            if variant != "critic" and nan_at < T:
                s[key][nan_at:] = np.nan
                s["grad_norm"][nan_at:] = np.nan
    elif cls == "grad_spike":
        spikes = [i] + sorted(i + int(x) for x in rng.integers(4, 40, size=int(rng.integers(0, 4))))
        for j in spikes:
            if j < T:
                s["grad_norm"][j] *= u(12, 150)
                s["pg_loss"][j] += u(0.1, 0.6) * rng.choice([-1, 1])
        info["spike_steps"] = [j + 1 for j in spikes if j < T]
    elif cls == "oom_creep":
        grow = u(0.35, 0.7) * s["mem_alloc"][i]  # +35..70 % of the peak by the end of the run
        if variant == "with_length":
            r = ramp(T, k, u(15, 40))
            s["len_mean"] = s["len_mean"] * (1 + r * u(0.8, 1.6))
            s["len_mean"] = np.minimum(s["len_mean"], p["max_len"] * 0.8)
            add = grow * r
        else:
            add = grow * linear(T, k) / max(1, T - i)
        s["mem_alloc"] = np.maximum.accumulate(s["mem_alloc"] + add)
        s["mem_reserved"] = np.maximum.accumulate(np.maximum(s["mem_reserved"], s["mem_alloc"] * 1.04))
        info["growth_gb"] = round(float(grow), 2)
    elif cls == "low_gpu_util":
        if variant == "from_start":
            low = u(12, 40)
            s["util"] = np.clip(low + ar_noise(rng, T, 4.0), 2, 100)
            s["mfu"] = np.clip(p["mfu"] * low / p["util"] * np.exp(ar_noise(rng, T, 0.05)), 0.003, 1)
            s["t_other"] = s["t_other"] + s["step_s"] * u(0.5, 2.0)  # time outside every phase: waiting on data/CPU
        else:
            r = ramp(T, k, u(0.5, 2))
            s["util"] = np.clip(s["util"] * (1 - r * u(0.45, 0.75)), 2, 100)
            s["mfu"] = s["mfu"] * (1 - r * 0.6)
            s["t_other"] = s["t_other"] + r * s["step_s"] * u(0.8, 2.5)  # the data loader stalls every step
    elif cls == "rollout_mismatch":
        if variant == "jump":
            r = ramp(T, k, u(0.5, 1.5))
            s["diff_mean"] = s["diff_mean"] * (1 + r * u(4, 10))
        else:  # 0.003 -> 0.02..0.05 over the rest of the run, no jump anywhere
            end = u(0.02, 0.05)
            frac = linear(T, k) / max(1, T - i)
            s["diff_mean"] = s["diff_mean"] + (end - s["diff_mean"][i]) * np.clip(frac, 0, 1) ** u(0.7, 1.0)
    elif cls == "throughput_drop":
        r = ramp(T, k, u(0.5, 4))
        f = u(0.35, 0.7)
        s["tput"] = s["tput"] * (1 - r * f)
        s["step_s"] = s["step_s"] / (1 - r * f * 0.95)
        info["drop"] = round(f, 2)
    elif cls == "length_explosion":
        L = p["max_len"]
        if variant == "repetition":
            r = ramp(T, k, u(2, 8))
            s["len_mean"] = s["len_mean"] * (1 - r) + r * L * u(0.75, 0.98)
        else:  # truncation creeping: the mean crawls toward the limit, more and more responses are cut
            frac = np.clip(linear(T, k) / max(1, T - i), 0, 1)
            target = u(0.7, 0.92)
            s["len_mean"] = s["len_mean"] + (L * target - s["len_mean"][i]) * frac
        s["clip_ratio"] = np.clip(_tail_share(s["len_mean"] / L) * u(1.0, 1.5) + np.abs(ar_noise(rng, T, 0.004)), 0, 1)
        s["step_s"] = s["step_s"] * np.maximum(1, s["len_mean"] / s["len_mean"][max(0, i - 5)])
    else:
        raise ValueError(f"no failure model for class {cls!r}")
    return info
