"""Probable causes and config changes for a finding, consulting the run's config like an expert would.

"``kl_coef=0.001`` is far below the usual 0.01-0.1", "warm-up covers 2% of the steps", "lr 1e-5 is 10x the
usual for a 7B model" — these config causes are ranked above generic ones when they apply, and actions carry
the exact overrides (rlcockpit keys, and verl paths for verl-shaped configs).
"""

from __future__ import annotations

from rlcockpit.health.config_view import RunConfigView, format_value, make_action
from rlcockpit.health.findings import Action, Cause, Finding

# usual peak actor lr for RL post-training by model size (billions of parameters -> upper end of the norm)
LR_NORMS = ((0.05, 5e-4), (0.2, 1e-4), (1.0, 1e-5), (4.0, 5e-6), (15.0, 2e-6), (1e9, 1e-6))


def kl_setup(view: RunConfigView) -> tuple[str, float | None]:
    """How the run regularises towards the reference: ("loss"|"reward"|"none"|"unknown", coefficient)."""
    use_loss, use_reward = view.flag("actor.use_kl_loss"), view.flag("algorithm.use_kl_in_reward")
    if use_loss:
        return "loss", view.number("actor.kl_loss_coef")
    if use_reward:
        return "reward", view.number("algorithm.kl_ctrl.kl_coef")
    coef = view.number("algorithm.kl_ctrl.kl_coef")
    if use_loss is False and use_reward is False:
        return "none", None
    return ("reward", coef) if coef is not None else ("unknown", None)


def config_causes(view: RunConfigView) -> dict[str, Cause]:
    """Config settings that commonly cause failures, keyed by a short id (memoised with the view's answers:
    every finding of a run asks this)."""
    return dict(view.memo("config_causes", lambda: _config_causes(view)))


def _config_causes(view: RunConfigView) -> dict[str, Cause]:
    out: dict[str, Cause] = {}
    mode, coef = kl_setup(view)
    if mode == "none":
        out["kl"] = Cause("No KL regularisation: use_kl_loss and use_kl_in_reward are both off", 0.75,
                          "nothing pulls the policy back towards the reference")
    elif mode == "loss" and coef is not None and coef < 0.001:
        out["kl"] = Cause(f"actor.kl_loss_coef={format_value(coef)} is below verl's usual 0.001", 0.7,
                          "the KL loss is too weak to constrain the policy update")
    elif mode != "loss" and coef is not None and coef < 0.01:
        out["kl"] = Cause(f"kl_coef={format_value(coef)} is far below the usual 0.01-0.1", 0.9 if coef <= 0.002 else 0.7,
                          "the KL penalty is too weak to constrain the policy update")
    ratio = view.number("actor.optim.lr_warmup_steps_ratio")
    if ratio is not None and ratio < 0.1:
        out["warmup"] = Cause(f"lr warm-up covers {ratio:.0%} of the steps (rule of thumb: at least 10%)", 0.5,
                              f"actor.optim.lr_warmup_steps_ratio={format_value(ratio)}")
    lr, size = view.number("actor.optim.lr"), view.model_size_b()
    if lr is not None and size is not None:  # without a known model size there is no norm to compare against
        norm = next(n for limit, n in LR_NORMS if size <= limit)
        if lr > 3 * norm:
            out["lr"] = Cause(f"lr={format_value(lr)} is {lr / norm:.0f}x the usual maximum for a {size:.2g}B model "
                              f"({norm:g})", 0.8, "large steps move the policy too far per update")
    ent = view.number("actor.entropy_coeff")
    if ent is not None and ent <= 0:
        out["entropy_coeff"] = Cause("entropy_coeff=0: nothing rewards exploration", 0.5)
    temp = view.number("rollout.temperature")
    if temp is not None and temp < 0.7:
        out["temperature"] = Cause(f"rollout temperature {temp:g} < 0.7 narrows exploration", 0.6)
    clip = view.number("actor.clip_ratio")
    if clip is not None and clip > 0.3:
        out["clip"] = Cause(f"clip_ratio={clip:g} allows large policy updates (usual 0.2)", 0.6)
    epochs = view.number("actor.ppo_epochs")
    if epochs is not None and epochs > 2:
        out["epochs"] = Cause(f"ppo_epochs={epochs:g} reuses each batch many times", 0.5)
    gclip = view.number("actor.grad_clip")
    if gclip is not None and (gclip <= 0 or gclip > 5):
        out["grad_clip"] = Cause(f"grad_clip={gclip:g} does not bound gradient spikes", 0.6)
    n = view.number("rollout.n")
    if n is not None and n < 4:
        out["rollout_n"] = Cause(f"rollout.n={n:g}: small groups often have identical rewards", 0.6)
    if view.flag("actor.model.enable_gradient_checkpointing") is False:
        out["ckpt"] = Cause("gradient checkpointing is off", 0.5)
    return out


def _kl_action(view: RunConfigView) -> Action:
    mode, coef = kl_setup(view)
    if mode == "loss":
        new = max(0.02, (coef or 0.0) * 10)
        return make_action(view, "Strengthen the KL loss towards the reference", {"actor.kl_loss_coef": new},
                           "a stronger KL term keeps the policy near the reference")
    changes = {"algorithm.kl_ctrl.kl_coef": 0.02, "algorithm.kl_ctrl.type": "adaptive", "algorithm.kl_ctrl.target_kl": 0.05}
    if mode != "reward":
        changes = {"algorithm.use_kl_in_reward": True, **changes}
    return make_action(view, "Raise the KL penalty and let an adaptive controller hold KL near 0.05", changes,
                       "adaptive KL raises the coefficient whenever KL overshoots its target")


def _lr_action(view: RunConfigView, factor: float = 5.0) -> Action:
    lr = view.number("actor.optim.lr")
    changes: dict[str, object] = {"actor.optim.lr": lr / factor if lr else 1e-6}
    ratio = view.number("actor.optim.lr_warmup_steps_ratio")
    if ratio is None or ratio < 0.1:
        changes["actor.optim.lr_warmup_steps_ratio"] = 0.1
    return make_action(view, f"Lower the learning rate {factor:g}x and warm up over 10% of the steps", changes)


def _clip_action(view: RunConfigView) -> Action:
    return make_action(view, "Make PPO updates smaller", {"actor.clip_ratio": 0.1, "actor.ppo_epochs": 1, "actor.target_kl": 0.05},
                       "a tighter clip range and early stopping bound each update")


def _entropy_action(view: RunConfigView) -> Action:
    changes: dict[str, object] = {"actor.entropy_coeff": 0.001, "actor.clip_ratio_high": 0.28}
    temp = view.number("rollout.temperature")
    if temp is not None and temp < 1.0:
        changes["rollout.temperature"] = 1.0
    return make_action(view, "Keep exploration alive (entropy bonus, clip-higher)", changes)


def _memory_action(view: RunConfigView) -> Action:
    mb = view.number("actor.ppo_micro_batch_size")
    changes: dict[str, object] = {"actor.model.enable_gradient_checkpointing": True}
    if mb and mb > 1:
        changes["actor.ppo_micro_batch_size"] = max(1, int(mb) // 2)
    return make_action(view, "Cut activation memory", changes, "keep total usage under 80% of the device")


def advise(finding: Finding, view: RunConfigView) -> tuple[list[Cause], list[Action]]:
    """Ranked causes and actions for ``finding`` (generic knowledge plus the run's config)."""
    view.revalidate()
    cfg = config_causes(view)
    d = finding.detector
    causes: list[Cause] = []
    actions: list[Action] = []

    def pick(*ids: str) -> None:
        causes.extend(cfg[i] for i in ids if i in cfg)

    if d in ("kl_spike", "kl_rising", "reward_cliff", "sample_degeneration"):
        pick("kl", "lr", "warmup", "clip", "epochs")
        causes.append(Cause("policy update too large: the policy drifted far from the reference and collapsed", 0.55))
        actions += [_kl_action(view), _lr_action(view, 10), _clip_action(view)]
    elif d == "update_size":
        pick("clip", "epochs", "lr")
        causes.append(Cause("each PPO update moves the policy too far", 0.6))
        actions += [_clip_action(view), _lr_action(view, 2)]
    elif d == "kl_stuck":
        causes.append(Cause("learning rate too low or advantages all zero: the policy is not updating", 0.6))
        lr = view.number("actor.optim.lr")
        actions.append(make_action(view, "Raise the learning rate", {"actor.optim.lr": lr * 3 if lr else 1e-6}))
    elif d == "reward_hacking":
        pick("kl", "entropy_coeff")
        causes.append(Cause("the reward function can be satisfied without solving the task (length, keywords, format)", 0.8))
        actions += [make_action(view, "Penalise the exploit in the reward (repetition/length penalty, stricter checks)", {}),
                    _kl_action(view)]
    elif d in ("entropy_collapse",):
        pick("entropy_coeff", "temperature", "lr", "kl")
        causes.append(Cause("the policy sharpened onto a few answers (mode collapse)", 0.6))
        actions += [_entropy_action(view), _lr_action(view, 3)]
    elif d == "entropy_explosion":
        pick("lr", "temperature")
        causes.append(Cause("updates are destroying the language model (lr too high / corrupted weights)", 0.6))
        actions += [_lr_action(view), _kl_action(view)]
    elif d in ("grad_spike", "nonfinite", "loss_spike", "value_divergence", "loss_oscillation"):
        pick("lr", "warmup", "grad_clip")
        vals = finding.evidence.get("values", {}) if finding.evidence else {}
        ratio, lr = vals.get("ratio"), view.number("actor.optim.lr")
        if d == "grad_spike" and isinstance(ratio, (int, float)) and lr is not None and "lr" not in cfg:
            # no size-based norm applies (or the lr is within it): phrase the cause relative to this run
            causes.append(Cause(f"at lr={format_value(lr)} this run's gradient norm reached {ratio:.0f}x its own recent "
                                "median: the step is large for this run's loss surface", 0.55))
        causes.append(Cause("an outlier batch or too large a step made the optimiser diverge", 0.5))
        actions.append(_lr_action(view))
        gclip = view.number("actor.grad_clip")
        if gclip is None or gclip <= 0 or gclip > 1.0:
            actions.append(make_action(view, "Clip gradients", {"actor.grad_clip": 1.0}))
    elif d == "explained_variance":
        causes.append(Cause("the critic cannot predict returns (critic lr too low/high, reward scale changed)", 0.5))
        clr = view.number("critic.optim.lr")
        actions.append(make_action(view, "Tune the critic learning rate", {"critic.optim.lr": clr * 2 if clr else 1e-5}))
    elif d == "reward_variance_collapse":
        pick("rollout_n", "temperature", "entropy_coeff")
        causes.append(Cause("every sample of a group gets the same reward (tasks too easy/hard for the model)", 0.6))
        n = view.number("rollout.n") or 4
        actions.append(make_action(view, "More and more diverse samples per prompt; drop zero-variance groups",
                                   {"rollout.n": int(n) * 2, "algorithm.filter_groups.enable": True}))
    elif d in ("length_explosion", "truncation"):
        causes.append(Cause("responses run to the length limit (looping, or the reward favours length)", 0.6))
        limit = view.number("data.max_response_length")
        actions.append(make_action(view, "Give responses room or penalise overlong ones",
                                   {"data.max_response_length": int(limit * 2)} if limit else {}))
        actions.append(_kl_action(view))
    elif d in ("gpu_memory", "memory_growth"):
        pick("ckpt")
        causes.append(Cause("activation/cache memory grows with batch and sequence length, or leaks", 0.5))
        actions.append(_memory_action(view))
    elif d == "host_memory":
        causes.append(Cause("host memory leak (growing buffers, dataloader workers, cached samples)", 0.5))
        # rlcockpit's trainer loads data in-process (no worker knob): the override is verl's only
        actions.append(make_action(view, "Check for growing buffers (cached samples, logged tensors); in verl, "
                                   "fewer dataloader workers", {"data.dataloader_num_workers": 2}))
    elif d in ("gpu_utilization", "throughput_drop", "bottleneck"):
        label = str(finding.evidence.get("values", {}).get("bottleneck") or "")
        if "data" in label:
            causes.append(Cause("data loading / host work stalls the GPU (data-bound)", 0.7))
            actions.append(make_action(view, "More dataloader workers (verl; rlcockpit's trainer has no worker "
                                       "knob: look at reward functions and host-side work)",
                                       {"data.dataloader_num_workers": 8}))
        elif "generation" in label:
            causes.append(Cause("rollout generation dominates the step (generation-bound)", 0.7))
            actions.append(make_action(view, "Give the rollout engine more memory for KV cache (verl's vLLM/SGLang "
                                       "rollout; rlcockpit's HF rollout has no such knob)",
                                       {"rollout.gpu_memory_utilization": 0.7}))
        elif "update" in label:
            causes.append(Cause("the policy update dominates the step (update-bound)", 0.6))
            actions.append(make_action(view, "Larger micro-batches (if memory allows)", {}))
        else:
            causes.append(Cause("small batches, communication or I/O waits leave the GPU idle", 0.4))
    elif d == "lr_schedule":
        causes.append(Cause("the scheduler is not the one configured (resumed state, wrong total steps)", 0.5))
        actions.append(make_action(view, "Check the scheduler; warm up over 10% of the steps",
                                   {"actor.optim.lr_warmup_steps_ratio": 0.1}))
    elif d == "rollout_mismatch":
        causes.append(Cause("rollout engine and trainer compute different log-probs (dtype, kernels, temperature, "
                            "stale weights after sync)", 0.7))
        actions.append(make_action(view, "Use the same dtype and sampling params in rollout and trainer; "
                                   "check the weight sync", {}))
    causes.sort(key=lambda c: -c.score)
    return causes, actions
