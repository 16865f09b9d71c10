"""Headline metrics: which logged key fills each summary slot (reward, KL, entropy, ...), in every vocabulary.

The console sink's line, the trainer's progress bar and the dashboard's runs list and charts all show the same
few numbers. Each slot lists its candidate keys, best first: verl's canonical key, then the TRL and seed-article
spellings of it. A reader takes the first candidate a run logged. This is the one table of them
(``tests/structure/test_structure_one_home.py`` fails if a copy appears elsewhere in ``src``).
"""

from __future__ import annotations

HEADLINE_KEYS: dict[str, tuple[str, ...]] = {
    "reward": ("critic/score/mean", "critic/rewards/mean", "objective/scores", "reward", "train/reward"),
    # the KL to the reference policy as verl (the KL loss, the in-reward KL penalty), TRL and the articles log it
    "kl": ("actor/kl_loss", "actor/reward_kl_penalty", "objective/kl", "kl", "train/kl_div", "kl/divergence"),
    # rlcockpit's trainer's own estimates, after "kl" in its progress bar: old-vs-reference, then the per-update
    # ppo_kl only without a reference (it stays ~0 through a collapse whose KL to the reference is large)
    "kl_estimate": ("actor/ref_kl", "actor/ppo_kl"),
    "entropy": ("actor/entropy", "actor/entropy_loss", "objective/entropy", "entropy", "train/entropy"),
    "resp_len": ("response_length/mean", "completions/mean_length", "train/response_length"),
    "pg_loss": ("actor/pg_loss", "train/loss", "loss"),
    "clipfrac": ("actor/pg_clipfrac",),
    "grad_norm": ("actor/grad_norm", "grad_norm"),
    "step_time": ("timing_s/step", "perf/time_per_step"),
    "val_acc": ("val-core/arith/acc/mean@1",),  # the built-in arithmetic task's validation accuracy
}
