"""Building blocks for a detector's advice: config causes, evidence from the run's other metrics, and
the config changes (actions) experts reach for.

Each detector composes its own causes and actions from these (``Detector.advise``), so a detector carries
its knowledge itself and a user-registered detector can reuse the same blocks. Causes come from two places:

* the run's config, consulted like an expert would — "``kl_coef=0.001`` is far below the usual 0.01-0.1",
  "warm-up covers 2% of the steps", "lr 1e-5 is 10x the usual for a 7B model" (:func:`config_causes`);
* the finding's own evidence — what else moved at the same time in this run, measured against the run's
  own recent level ("gradient norm jumped 8x (``grad_norm`` 0.3 -> 2.4)"): :func:`change`.

so two findings of one run rank their causes differently when their evidence differs. Actions carry the exact
overrides in the run's own vocabulary (:func:`~rlcockpit.health.config_view.make_action`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlcockpit.health.base import fmt, median
from rlcockpit.health.config_view import REWARD_KWARGS, RunConfigView, format_value, make_action
from rlcockpit.health.findings import Action, Cause, Finding, checked_last
from rlcockpit.metrics.guide import threshold

if TYPE_CHECKING:
    from rlcockpit.health.base import DetectorContext

# usual peak actor lr for RL post-training by model size (billions of parameters -> upper end of the norm). The
# smallest bucket is measured: the built-in tiny model (~0.004B) trains healthy at 5e-5 (preset arith-grpo) and
# collapses at 1e-4 and above once the PPO update is unbounded (docs/health.md, "Pasted fixes, rerun").
LR_NORMS = ((0.05, 5e-5), (0.2, 2e-5), (1.0, 1e-5), (4.0, 5e-6), (15.0, 2e-6), (1e9, 1e-6))
LR_FAR_ABOVE = 3.0  # an lr more than this many times the norm is a config cause, and its fix goes back to the norm
KL, GRAD, ENTROPY = "actor/kl_loss", "actor/grad_norm", "actor/entropy"
PPO_KL, CLIPFRAC, REWARD, LEN = "actor/ppo_kl", "actor/pg_clipfrac", "critic/score/mean", "response_length/mean"


# ---- config causes -------------------------------------------------------------------------------------

def kl_setup(view: RunConfigView, effective: bool = False) -> tuple[str, float | None]:
    """How the run regularises towards the reference: ("loss"|"reward"|"none"|"unknown", coefficient).
    TRL's GRPO always puts the KL in the loss, weighted by ``beta`` (0 = no reference model at all).
    ``effective``: settings the config leaves out count at the framework's default (what the run runs with,
    for advice that must act); else only what the config says (for causes that quote it)."""
    if view.is_trl:
        beta = view.number("actor.kl_loss_coef")
        if beta is None:
            return "unknown", None
        return ("loss", beta) if beta > 0 else ("none", None)
    get = view.current if effective else view.get
    use_loss, use_reward = _flag(get("actor.use_kl_loss")), _flag(get("algorithm.use_kl_in_reward"))
    if use_loss:
        return "loss", _number(get("actor.kl_loss_coef"))
    if use_reward:
        return "reward", _number(get("algorithm.kl_ctrl.kl_coef"))
    coef = view.number("algorithm.kl_ctrl.kl_coef")
    if use_loss is False and use_reward is False:
        return "none", None
    return ("reward", coef) if coef is not None else ("unknown", None)


def lr_norm(view: RunConfigView) -> float | None:
    """The upper end of the usual actor lr for the run's model size (``None`` when the size is unknown: then
    there is no norm to compare against)."""
    size = view.model_size_b()
    return None if size is None else next(n for limit, n in LR_NORMS if size <= limit)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _flag(value: Any) -> bool | None:
    if value is None:
        return None
    return value.strip().lower() in ("1", "true", "yes", "on") if isinstance(value, str) else bool(value)


def config_causes(view: RunConfigView) -> dict[str, Cause]:
    """Config settings that commonly cause failures, keyed by a short id (memoised with the view's answers:
    every finding of a run asks this)."""
    return dict(view.memo("config_causes", lambda: _config_causes(view)))


def _name(view: RunConfigView, key: str) -> str:
    """How the run's own config spells advice key ``key`` (``beta`` in a TRL run)."""
    return view.key_for(key) or key


def _config_causes(view: RunConfigView) -> dict[str, Cause]:
    out: dict[str, Cause] = {}
    mode, coef = kl_setup(view)
    if mode == "none":
        what = "beta=0" if view.is_trl else "use_kl_loss and use_kl_in_reward are both off"
        out["kl"] = Cause(f"No KL regularisation: {what}", 0.75, "nothing pulls the policy back towards the reference")
    elif mode == "loss" and coef is not None and coef < (least := threshold("actor/kl_coef", "too_small_below")):
        out["kl"] = Cause(f"{_name(view, 'actor.kl_loss_coef')}={format_value(coef)} is below the usual {least:g}", 0.7,
                          "the KL loss is too weak to constrain the policy update")
    elif mode != "loss" and coef is not None and coef < 0.01:
        out["kl"] = Cause(f"kl_coef={format_value(coef)} is far below the usual 0.01-0.1", 0.9 if coef <= 0.002 else 0.7,
                          "the KL penalty is too weak to constrain the policy update")
    ratio = view.number("actor.optim.lr_warmup_steps_ratio")
    if ratio is not None and ratio < 0.1 and not (view.is_trl and ratio >= 1):  # TRL: an int = steps
        out["warmup"] = Cause(f"lr warm-up covers {ratio:.0%} of the steps (rule of thumb: at least 10%)", 0.5,
                              f"{_name(view, 'actor.optim.lr_warmup_steps_ratio')}={format_value(ratio)}")
    lr, norm = view.number("actor.optim.lr"), lr_norm(view)
    if lr is not None and norm is not None and lr > LR_FAR_ABOVE * norm:
        out["lr"] = Cause(f"lr={format_value(lr)} is {lr / norm:.0f}x the usual maximum for a "
                          f"{view.model_size_b():.2g}B model ({norm:g})", 0.8,
                          "large steps move the policy too far per update")
    checks = (
        ("actor.entropy_coeff", lambda v: v < 0, "entropy_penalty", 0.8, "{k}={v} < 0 pays the policy for losing "
                                                                     "entropy"),
        ("actor.entropy_coeff", lambda v: v == 0, "entropy_coeff", 0.5, "{k}=0: nothing rewards exploration"),
        ("rollout.temperature", lambda v: v < 0.7, "temperature", 0.6, "rollout temperature {v} < 0.7 narrows exploration"),
        ("actor.clip_ratio", lambda v: v > 0.3, "clip", 0.6, "{k}={v} allows large policy updates (usual 0.2)"),
        ("actor.clip_ratio_low", lambda v: v > 0.3, "clip", 0.6, "{k}={v} allows large policy updates (usual 0.2)"),
        ("actor.clip_ratio_high", lambda v: v > 0.3, "clip", 0.6, "{k}={v} allows large policy updates (usual "
                                                                  "0.2-0.28)"),
        ("actor.ppo_epochs", lambda v: v > 2, "epochs", 0.5, "{k}={v} reuses each batch many times"),
        ("actor.grad_clip", lambda v: v <= 0 or v > 5, "grad_clip", 0.6, "{k}={v} does not bound gradient spikes"),
        ("rollout.n", lambda v: v < 4, "rollout_n", 0.6, "{k}={v}: small groups often have identical rewards"),
    )
    for key, bad, cid, score, text in checks:
        v = view.number(key)
        if v is not None and bad(v):
            out[cid] = Cause(text.format(k=_name(view, key).rsplit(".", 1)[-1], v=format_value(v)), score)
    batch, count = updates_per_step(view)
    if count is not None and count > MAX_UPDATES_PER_STEP:
        out["updates"] = Cause(f"each batch drives {count:g} optimizer updates (ppo_epochs x train_batch_size / "
                               f"ppo_mini_batch_size; usual at most {MAX_UPDATES_PER_STEP})", 0.6,
                               "many updates on one batch move the policy far from the one that sampled it")
    if view.flag("actor.model.enable_gradient_checkpointing") is False:
        out["ckpt"] = Cause("gradient checkpointing is off", 0.5)
    return out


def story_causes(view: RunConfigView, ids: tuple[str, ...]) -> list[Cause]:
    """The config causes among ``ids`` that apply to this run."""
    cfg = config_causes(view)
    return [cfg[i] for i in ids if i in cfg]


# ---- evidence from the run's other metrics ----------------------------------------------------------------

@dataclass(frozen=True)
class Change:
    """How a metric moved: the mean of its last few values against the median of the window before them."""

    key: str  # the name the run logged it under
    before: float
    now: float

    @property
    def ratio(self) -> float:
        return self.now / self.before if self.before > 0 else (float("inf") if self.now > 0 else 1.0)

    @property
    def text(self) -> str:
        return f"{self.key} {fmt(self.before)} -> {fmt(self.now)}"


def change(ctx: DetectorContext | None, key: str, recent: int = 3, window: int = 20) -> Change | None:
    """How canonical metric ``key`` moved lately in this run (``None`` when it was not logged or is too short);
    cited under the name the run logged it."""
    track = ctx.tracks.get(key) if ctx is not None else None
    if track is None or len(track.values) < recent + 3:
        return None
    return Change(track.raw, median(track.tail(window, skip=recent)), track.mean_last(recent))


def moved(ctx: DetectorContext | None, key: str, up: float = 0.0, down: float = 0.0, **kw: Any) -> Change | None:
    """The :class:`Change` of ``key`` if it rose ``up``-fold or fell to ``down`` x its earlier level."""
    c = change(ctx, key, **kw)
    if c is None or c.before <= 0:
        return None
    if (up and c.ratio >= up) or (down and c.ratio <= down):
        return c
    return None


EARLY_STEPS = 5


def policy_unmoved(ctx: DetectorContext | None, step: int) -> str | None:
    """Evidence that no update has moved the policy yet (``None`` otherwise), for a finding in the run's first
    ``EARLY_STEPS`` steps: the KL to the reference was exactly 0 at every logged step so far, or, with no KL logged,
    the finding is at step 0 or 1. Outputs that are bad then are the starting model's, and KL or lr overrides cannot
    fix them. (Later, a KL stuck at 0 means a run without a reference, not an untrained policy.)"""
    if step > EARLY_STEPS:
        return None
    track = ctx.tracks.get(KL) if ctx is not None else None
    if track is not None and track.n:
        if max(abs(v) for v in track.values) <= 1e-9 and track.n == len(track.values):
            return f"{track.raw} is 0 at every logged step so far (steps {track.steps[0]}-{track.last_step})"
        return None
    return f"step {step}: no update has been applied yet" if step <= 1 else None


def update_causes(ctx: DetectorContext | None) -> list[Cause]:
    """Evidence that the policy update itself was too large: gradient norm, PPO clip fraction or PPO KL
    jumped against their own recent level."""
    out = []
    g = moved(ctx, GRAD, up=3.0)
    if g is not None:
        out.append(Cause(f"the update was too large: the gradient norm jumped {g.ratio:.0f}x", 0.75, g.text))
    for key, what in ((CLIPFRAC, "clip fraction"), (PPO_KL, "PPO KL")):
        c = moved(ctx, key, up=2.5)
        if c is not None:
            out.append(Cause(f"each PPO update moved the policy far: the {what} rose {c.ratio:.1f}x", 0.65, c.text))
    return out


def ranked(causes: list[Cause]) -> list[Cause]:
    """Highest score first; a cause listed twice (same title) is kept once, with its best score."""
    best: dict[str, Cause] = {}
    for c in causes:
        if c.title not in best or c.score > best[c.title].score:
            best[c.title] = c
    return sorted(best.values(), key=lambda c: -c.score)


# ---- actions -------------------------------------------------------------------------------------------
# Values are relative to what the run has (``view.current``: its config, else the framework's default) and
# fall back to the usual values only where the run's config is unknown; make_action then checks each change
# acts in the run's framework and is not already the run's value.

def _scaled(current: float | None, factor: float, fallback: float, floor: float = 0.0) -> float:
    """``current x factor`` to 3 significant digits (at least ``floor``), or ``fallback`` when unknown."""
    if not current:
        return fallback
    return float(f"{max(current * factor, floor):.3g}")


def kl_action(view: RunConfigView) -> Action:
    mode, coef = kl_setup(view, effective=True)
    usual = threshold("actor/kl_coef", "too_small_below")
    if mode == "loss" or view.is_trl:  # TRL has no KL-in-reward controller: strengthen beta
        return make_action(view, "Strengthen the KL loss towards the reference",
                           {"actor.kl_loss_coef": _scaled(coef, 10, 0.02, max(usual, 0.02))},
                           "a stronger KL term keeps the policy near the reference")
    target = view.current_number("algorithm.kl_ctrl.target_kl")
    changes: dict[str, object] = {"algorithm.kl_ctrl.kl_coef": _scaled(coef, 10, 0.02, 0.02),
                                  "algorithm.kl_ctrl.type": "adaptive",
                                  "algorithm.kl_ctrl.target_kl": min(0.05, target / 2) if target else 0.05}
    if mode != "reward":
        changes = {"algorithm.use_kl_in_reward": True, **changes}
    return make_action(view, "Raise the KL penalty and let an adaptive controller hold KL near its target", changes,
                       "adaptive KL raises the coefficient whenever KL overshoots its target")


def lr_action(view: RunConfigView, factor: float = 5.0) -> Action:
    """``factor`` x below the run's lr; an lr far above the norm for the model's size (:data:`LR_FAR_ABOVE`) goes
    back to the norm instead when that is lower: a 60x excess cut 10x still collapses (the collapse preset's
    3e-3 cut to 3e-4 did; at the norm, 5e-5, it trains like the healthy preset)."""
    lr, norm = view.current_number("actor.optim.lr"), lr_norm(view)
    target, how = _scaled(lr, 1 / factor, 1e-6), f"{factor:g}x"
    if lr and norm and lr > LR_FAR_ABOVE * norm and target > norm:
        target, how = norm, f"to the usual maximum for the model's size ({lr / norm:.0f}x lower)"
    changes: dict[str, object] = {"actor.optim.lr": target}
    ratio = view.current_number("actor.optim.lr_warmup_steps_ratio")
    if ratio is None or ratio < 0.1:
        changes["actor.optim.lr_warmup_steps_ratio"] = 0.1
    return make_action(view, f"Lower the learning rate {how} and warm up over 10% of the steps", changes)


def clip_action(view: RunConfigView) -> Action:
    """Half the run's clip range on both sides, never above the usual 0.2 (a run at 10 gets 0.2, not 5), written
    as ``clip_ratio_low/high``: verl (0.9.1 sets both to 0.2) and rlcockpit read those before ``clip_ratio``, and
    TRL's ``epsilon_high`` bounds the upper side once set."""
    base = view.current_number("actor.clip_ratio")
    low = view.current_number("actor.clip_ratio_low") or base
    high = view.current_number("actor.clip_ratio_high") or low
    changes: dict[str, object] = {"actor.clip_ratio_low": min(_scaled(low, 0.5, 0.1), 0.2),
                                  "actor.clip_ratio_high": min(_scaled(high, 0.5, 0.1), 0.2),
                                  "actor.ppo_epochs": 1, "actor.target_kl": 0.05}
    batch, count = updates_per_step(view)
    if count is not None and count > MAX_UPDATES_PER_STEP:  # one optimizer step per batch, as the healthy preset
        changes["actor.ppo_mini_batch_size"] = batch
    return make_action(view, "Make PPO updates smaller", changes,
                       "a tighter clip range, one pass over each batch and early stopping bound each update")


MAX_UPDATES_PER_STEP = 4  # verl's defaults: 1 epoch x train_batch_size 1024 / ppo_mini_batch_size 256


def updates_per_step(view: RunConfigView) -> tuple[int | None, float | None]:
    """(train batch size, optimizer updates each batch drives: ``ppo_epochs x train_batch / ppo_mini_batch``);
    ``None`` where the config does not tell. The collapse preset's 4 x 16/4 = 16 kept collapsing at 4 (one epoch)
    and trained like the healthy preset at 1 (mini-batch = batch: 0.805 vs 0.785 at step 40, seed 42)."""
    batch, mini = view.current_number("data.train_batch_size"), view.current_number("actor.ppo_mini_batch_size")
    epochs = view.current_number("actor.ppo_epochs") or 1.0
    if not batch or not mini or mini <= 0:
        return None, None
    return int(batch), epochs * max(1.0, batch / mini)


def entropy_action(view: RunConfigView, clip_higher: bool = True) -> Action:
    """Double the entropy bonus (a negative one, which pays for losing entropy, becomes a small bonus), sample
    at temperature 1 again and, with ``clip_higher``, widen the upper clip (DAPO). A collapse's fix leaves the
    clip to :func:`clip_action`, which tightens it."""
    coeff = view.current_number("actor.entropy_coeff")
    changes: dict[str, object] = {"actor.entropy_coeff": _scaled(coeff, 2, 0.001) if coeff and coeff > 0 else 0.001}
    high = view.current_number("actor.clip_ratio_high")
    if clip_higher and (high is None or high < 0.28):  # DAPO's clip-higher; never narrow a wider one
        changes["actor.clip_ratio_high"] = 0.28
    temp = view.current_number("rollout.temperature")
    if temp is not None and temp < 1.0:
        changes["rollout.temperature"] = 1.0
    return make_action(view, "Keep exploration alive (entropy bonus, clip-higher)", changes)


def grad_clip_action(view: RunConfigView) -> Action | None:
    gclip = view.current_number("actor.grad_clip")
    if gclip is not None and 0 < gclip <= 1.0:
        return None  # already clipped tightly
    return make_action(view, "Clip gradients", {"actor.grad_clip": 1.0}, "bounds a single update's size "
                       "whatever the gradient spike (verl's default, 1.0)")


def memory_action(view: RunConfigView) -> Action:
    mb = view.current_number("actor.ppo_micro_batch_size")
    changes: dict[str, object] = {"actor.model.enable_gradient_checkpointing": True}
    if mb and mb > 1:
        changes["actor.ppo_micro_batch_size"] = max(1, int(mb) // 2)
    return make_action(view, "Cut activation memory", changes, "keep total usage under 80% of the device")


def pays_for_length(ctx: DetectorContext | None) -> Change | None:
    """The reward's rise when it rose with the response length (``None`` otherwise): answers cut at the limit
    score nothing on a task reward, so a reward rising while they grow pays for the length itself."""
    length, reward = moved(ctx, LEN, up=1.5), change(ctx, REWARD)
    if length is None or reward is None or reward.now - reward.before < 0.1 * max(1.0, abs(reward.before)):
        return None
    return reward


def length_pay_knobs(view: RunConfigView) -> dict[str, float]:
    """The reward function's own pay for length — a positive keyword argument named for length and a bonus or
    reward (``length_bonus``, ``len_reward``) — each set to 0. A penalty on top (the overlong buffer) only moves
    where the paid length stops: the arith-hacking preset's answers settled at 10-14 of 16 tokens under it."""
    home = REWARD_KWARGS.get(view.framework)
    kwargs = view.get(home) if home else None
    out: dict[str, float] = {}
    for name, value in (kwargs.items() if isinstance(kwargs, dict) else ()):
        low = str(name).lower()
        if ("length" in low or low.startswith("len_")) and ("bonus" in low or "reward" in low) and _number(value):
            out[f"{home}.{name}"] = 0.0
    return out


def length_action(view: RunConfigView, ctx: DetectorContext | None = None) -> Action:
    """Double the length limit, unless the reward rose with the length (:func:`pays_for_length`): more room
    then feeds the exploit, and the overlong penalty (DAPO's soft punishment near the limit) stops the pay."""
    paid = pays_for_length(ctx)
    if paid is not None:
        bonus = length_pay_knobs(view)
        if bonus:  # the reward's own length pay: turning it off removes the exploit at its source
            return make_action(view, "Stop paying for length: remove the length bonus", bonus,
                               f"the reward rose with the length ({paid.text})")
        return make_action(view, "Stop paying for length: penalise answers that run to the limit",
                           {"reward.overlong_buffer.enable": True}, f"the reward rose with the length ({paid.text})")
    limit = view.current_number("data.max_response_length")
    return make_action(view, "Give responses room or penalise overlong ones",
                       {"data.max_response_length": int(limit * 2)} if limit else {})


def rank_actions(candidates: list[tuple[Action | None, float, str]]) -> list[Action]:
    """Candidate actions ``(action, score, evidence)`` best first (stable for equal scores), each carrying the
    evidence that put it there; ``None`` candidates (nothing to change) are left out, and an action whose every
    change was checked out (a no-op in the run's framework, or already set) goes last, its reasons shown."""
    kept = sorted((c for c in candidates if c[0] is not None), key=lambda c: -c[1])
    for action, _score, evidence in kept:
        action.evidence = evidence  # type: ignore[union-attr]
    return checked_last([a for a, _s, _e in kept if a is not None])


def advise(finding: Finding, view: RunConfigView) -> tuple[list[Cause], list[Action]]:
    """Ranked causes and actions for ``finding`` by its detector's own advice, without the run's other
    metrics (for a finding read back from the store; live findings carry advice made with them)."""
    from rlcockpit.health.base import DETECTORS, DetectorContext

    view.revalidate()
    cls = DETECTORS.get(finding.detector)
    detector = cls(None, DetectorContext(view))
    return detector.advise(finding)
