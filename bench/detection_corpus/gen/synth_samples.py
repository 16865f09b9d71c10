"""Rollout samples (prompt, response, reward) for synthetic traces, shaped by the run's state at that step.

Healthy: varied short solutions ending in an answer. Collapse: degenerate text (one token repeated, empty or
gibberish), reward near zero. Reward hacking: high reward for answer stuffing or flattering filler. Entropy
collapse: the whole group says the same thing. Length explosion: text looping until it is cut off.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_WORDS = "so we add the two numbers then carry one and check the sum first compute half of it next multiply".split()


def _question(rng: np.random.Generator) -> tuple[str, int]:
    a, b = int(rng.integers(10, 999)), int(rng.integers(10, 999))
    return f"Question: what is {a} + {b}? Think step by step and give the final answer after ####.", a + b


def healthy_response(rng: np.random.Generator, answer: int, correct: bool) -> str:
    n = int(rng.integers(6, 30))
    words = " ".join(rng.choice(_WORDS, n))
    got = answer if correct else answer + int(rng.choice([-10, -1, 1, 2, 10, 100]))
    return f"{words}. #### {got}"


def rows(rng: np.random.Generator, mode: str, strength: float, score: float, n: int = 8) -> list[dict[str, Any]]:
    """``n`` sample rows; ``strength`` in [0, 1] is how far the failure has progressed (0 = healthy)."""
    prompt, ans = _question(rng)
    out = []
    same = healthy_response(rng, ans, rng.random() < 0.6)
    for _ in range(n):
        bad = rng.random() < strength
        correct = rng.random() < min(0.95, max(0.05, score))
        if mode == "collapse" and bad:
            kind = rng.integers(0, 3)
            resp = (" ".join([str(rng.choice(["the", "!!", "0", "<|im_end|>"]))] * int(rng.integers(20, 200))) if kind == 0
                    else "" if kind == 1 else "".join(rng.choice(list("qzx#@%&*"), int(rng.integers(30, 120)))))
            reward = 0.0
        elif mode == "reward_hacking" and bad:
            resp = (" ".join([f"#### {ans + int(d)}" for d in rng.integers(-3, 4, 12)]) if rng.random() < 0.5
                    else "What a wonderful question! I am absolutely confident and thorough. " * int(rng.integers(3, 9)))
            reward = float(rng.uniform(0.9, 1.0))
        elif mode == "entropy_collapse" and bad:
            resp, reward = same, float(score)
        elif mode == "length_explosion" and bad:
            resp = healthy_response(rng, ans, False).split("####")[0] + " and then we check again" * int(rng.integers(40, 90))
            reward = 0.0
        else:
            resp = healthy_response(rng, ans, correct)
            reward = 1.0 if correct else 0.0
        out.append({"prompt": prompt, "response": resp, "reward": round(reward, 4)})
    return out
