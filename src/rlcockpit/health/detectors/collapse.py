"""What a collapse has in common, whichever detector saw it (KL, entropy, length, reward, samples, held-out
scores): its causes ranked from this run's config and from what moved with it, and the KL / lr / clip / gradient-clip
fixes ranked by the same evidence."""

from __future__ import annotations

from rlcockpit.health.advice import (
    CLIPFRAC,
    ENTROPY,
    GRAD,
    KL,
    PPO_KL,
    clip_action,
    config_causes,
    entropy_action,
    grad_clip_action,
    kl_action,
    lr_action,
    moved,
    rank_actions,
    ranked,
    story_causes,
    update_causes,
)
from rlcockpit.health.base import (
    Detector,
)
from rlcockpit.health.findings import Action, Cause, Finding
from rlcockpit.health.stories import resolve_story


def collapse_causes(det: Detector, finding: Finding) -> list[Cause]:
    """Why the policy ran away from the reference, ranked from this run's config and from what moved together
    with the finding: the gradient norm, the PPO clip fraction / KL, the entropy, the KL itself."""
    causes = story_causes(det.ctx.view, resolve_story("collapse").config)
    causes += update_causes(det.ctx)
    if det.keys[0] != KL:
        k = moved(det.ctx, KL, up=3.0)
        if k is not None:
            causes.append(Cause(f"the policy left the reference: KL rose {k.ratio:.0f}x at the same time", 0.7, k.text))
    e = moved(det.ctx, ENTROPY, up=1.5)
    if e is not None and det.keys[0] != ENTROPY:
        causes.append(Cause("sampling turned to noise: entropy rose with it", 0.6, e.text))
    causes.append(Cause(det.cause or "policy update too large: the policy drifted far from the reference", 0.55))
    return ranked(causes)


def collapse_actions(det: Detector, lr_factor: float = 10.0) -> list[Action]:
    """KL, lr, clip and gradient-clip fixes, ranked by what this run shows: a weak or missing KL in its config
    puts the KL fix first, a gradient-norm jump (or an lr above the norm, a short warm-up) the lr cut, a PPO clip
    fraction / KL jump (or a clip range / epoch count far above the usual) the clip, a gradient clip that bounds
    nothing the gradient clip. Each carries the evidence that ranked it. A collapse fixes all of them at once: a
    run with several settings far outside the norm still collapses when only the headline one is undone."""
    view = det.ctx.view
    cfg = config_causes(view)
    kl, lr = cfg.get("kl"), cfg.get("lr") or cfg.get("warmup")
    grad, clipped = moved(det.ctx, GRAD, up=3.0), moved(det.ctx, CLIPFRAC, up=2.5) or moved(det.ctx, PPO_KL, up=2.5)
    wide, gclip = cfg.get("clip") or cfg.get("epochs") or cfg.get("updates"), cfg.get("grad_clip")
    narrow = cfg.get("entropy_penalty") or cfg.get("temperature")  # exploration settings far outside the usual
    return rank_actions([
        (entropy_action(view, clip_higher=False) if narrow else None, narrow.score if narrow else 0.0,
         narrow.title if narrow else ""),
        (kl_action(view), kl.score if kl else 0.5, kl.title if kl else "the policy left the reference"),
        (lr_action(view, lr_factor), max(lr.score if lr else 0.4, 0.8 if grad else 0.0),
         grad.text if grad else (lr.title if lr else "a smaller step moves the policy less per update")),
        (clip_action(view), max(0.65 if clipped else 0.35, wide.score if wide else 0.0),
         clipped.text if clipped else (wide.title if wide else "bounds each PPO update")),
        (grad_clip_action(view), max(gclip.score if gclip else 0.3, 0.7 if grad and gclip else 0.0),
         " and ".join(t for t in (gclip.title if gclip else "", grad.text if grad else "") if t)
         or "bounds a gradient spike"),
    ])


