"""Optimisation detectors: loss, KL to the reference, PPO update size, entropy, gradients, the critic.

Every threshold below is a default; override per detector with
``HealthMonitor(settings={"kl_spike": {"critical_ratio": 4.0}})``.
"""

from __future__ import annotations

import math
from itertools import islice

from rlcockpit.health.base import Detector, Track, fmt, median, register_detector, robust
from rlcockpit.health.findings import Finding

LOSS, KL, PPO_KL, CLIPFRAC = "actor/pg_loss", "actor/kl_loss", "actor/ppo_kl", "actor/pg_clipfrac"
ENTROPY, GRAD, VF_LOSS, EV = "actor/entropy", "actor/grad_norm", "critic/vf_loss", "critic/vf_explained_var"


class _Frozen(Detector):
    """A detector whose baseline is the robust median/scale of the trigger metric at warm-up end."""

    base_rel_floor = 0.05

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.base: float | None = None
        self.scale = math.nan

    def on_warm(self) -> None:
        track = self.ctx.tracks[self.keys[0]]
        self.base, self.scale = robust(track.tail(self.warmup, skip=1), self.base_rel_floor)


@register_detector("nonfinite", "loss_nonfinite", "grad_nonfinite", "loss_nan")
class NonFinite(Detector):
    """NaN/Inf in a loss, the gradient norm, KL, entropy or reward: critical at once (no warm-up)."""

    keys = (LOSS, GRAD, VF_LOSS, KL, ENTROPY, "critic/score/mean")
    common = {"enabled": True, "warmup": 0, "cooldown": 50}

    def report(self, step: int, bad: dict[str, float]) -> Finding | None:
        watched = {k: v for k, v in bad.items() if k in self.keys}
        if not watched:
            return None
        names = ", ".join(f"{k}={v}" for k, v in watched.items())
        first = next(iter(watched))
        return self.fire(step, "critical", f"Non-finite value: {names}",
                         "The optimiser has blown up; any further update corrupts the policy.",
                         metric=first, values={k: str(v) for k, v in watched.items()}, extra_keys=(GRAD, LOSS))

    def check(self, step: int) -> Finding | None:
        return None


def zero_centred(values: list[float], base: float, scale: float, band: float = 3.0) -> bool:
    """True for a loss that hovers around zero (a policy-gradient loss: GRPO/RLOO advantages are zero-mean per
    group, so ``pg_loss`` is ~0 +- noise and changes sign). Ratios to earlier values mean nothing for such a
    loss; only deviations measured in the run's own noise scale do."""
    if not values or abs(base) <= band * scale:
        return True
    return min(values) <= 0.0 <= max(values)  # a loss that changes sign is not bounded away from zero


def noise_scale(values: list[float]) -> tuple[float, float]:
    """(median, scale) of a trailing window; scale = the RMS deviation from the median. A GRPO pg_loss is
    spike-and-slab shaped (~1e-9 on steps where every group got one reward, 1e-3..1e-2 on the others), so a MAD
    is ~0 and would make every ordinary non-zero step look like a spike; the RMS keeps the scale at the size of
    the run's ordinary excursions (on real arith-grpo runs the smoothed loss stays within 6 of them). One sort
    and one pass: this runs every ``every`` steps on the writer thread."""
    med = median(values)
    if med != med:
        return med, math.nan
    return med, max(math.sqrt(sum((v - med) ** 2 for v in values) / len(values)), 1e-8)


def corroboration(tracks: dict[str, Track], window: int, grad_ratio: float, kl_ratio: float,
                  kl_floor: float) -> dict[str, float]:
    """Run-relative evidence that an update really went wrong: the gradient norm or the KL to the reference
    jumped against their own trailing medians. A policy-gradient loss spike without either is noise."""
    out: dict[str, float] = {}
    grad = tracks.get(GRAD)
    if grad is not None and len(grad.values) > 5:
        ref = median(grad.tail(window, skip=3))
        if grad.mean_last(2) > grad_ratio * max(ref, 1e-12):
            out["grad_norm_ratio"] = grad.mean_last(2) / max(ref, 1e-12)
    kl = tracks.get(KL)
    if kl is not None and len(kl.values) > 5:
        ref = median(kl.tail(window, skip=3))
        if kl.mean_last(2) > kl_ratio * max(ref, kl_floor):
            out["kl_ratio"] = kl.mean_last(2) / max(ref, kl_floor)
    return out


@register_detector("loss_spike", "loss_rise")
class LossSpike(_Frozen):
    """Sharp loss excursion, judged in one of two modes chosen at warm-up end.

    Zero-centred loss (a policy-gradient ``actor/pg_loss`` hovering around 0): the smoothed loss deviates from
    the median of a trailing ``window`` by more than ``z_warn`` robust noise scales of that window (warning).
    Critical needs ``z_critical`` scales AND corroboration: the gradient norm > ``grad_ratio`` x or the KL to
    the reference > ``kl_ratio`` x their own trailing medians. The reference is refreshed every ``every``
    steps and frozen during an excursion.

    Loss bounded away from zero (SFT-like): warning when the smoothed loss > ``rise_ratio`` x its value
    ``lag`` steps earlier and the rise exceeds ``z_warn`` warm-up scales; critical when ``z_critical``
    warm-up scales above the warm-up median for ``sustain`` steps."""

    keys = (LOSS,)
    defaults = {"lag": 10, "rise_ratio": 1.5, "z_warn": 8.0, "z_critical": 12.0, "smooth": 3, "window": 30,
                "every": 10, "grad_ratio": 5.0, "kl_ratio": 3.0, "kl_floor": 0.01, "sustain": 2}
    common = {"enabled": True, "warmup": 20, "cooldown": 30}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.centred: bool | None = None
        self._ref = math.nan
        self._ref_scale = math.nan
        self._ref_age = 0
        self._onset: int | None = None

    def check(self, step: int) -> Finding | None:
        track = self.ctx.tracks[LOSS]
        if self.centred is None:
            self.centred = zero_centred(track.tail(self.warmup, skip=1), self.base, self.scale)
        return self._check_centred(step, track) if self.centred else self._check_positive(step, track)

    def _check_centred(self, step: int, track: Track) -> Finding | None:
        p = self.p
        s = track.mean_last(p["smooth"])
        if self._streak == 0:
            self._ref_age -= 1
            if self._ref_age <= 0 or self._ref != self._ref:  # refresh the noise scale every few quiet steps
                self._ref, self._ref_scale = noise_scale(track.tail(p["window"], skip=p["smooth"]))
                self._ref_age = p["every"]
        z = abs(s - self._ref) / self._ref_scale
        if z <= p["z_warn"]:
            self._streak = 0
            return None
        if self._streak == 0:
            self._onset = step
        self._streak += 1
        vals = {"loss": s, "trailing_median": self._ref, "noise_scale": self._ref_scale, "z": z}
        if z > p["z_critical"]:
            evidence = corroboration(self.ctx.tracks, p["window"], p["grad_ratio"], p["kl_ratio"], p["kl_floor"])
            if evidence:
                vals |= evidence
                why = " and ".join(f"{k.split('_ratio')[0].replace('_', ' ')} {v:.1f}x its recent level"
                                   for k, v in evidence.items())
                return self.fire(step, "critical", f"Loss excursion {fmt(s)} ({z:.0f}x its noise) with {why}",
                                 "The policy-gradient loss left its noise band while the update itself blew up.",
                                 values=vals, step_start=self._onset, extra_keys=(GRAD, KL))
        return self.fire(step, "warning", f"Loss {fmt(s)} is {z:.0f}x its recent noise ({fmt(self._ref_scale)}) "
                         f"from its median {fmt(self._ref)}", "A policy-gradient loss alone is noisy; look at grad "
                         "norm and KL before acting.", values=vals, step_start=self._onset, extra_keys=(GRAD,))

    def _check_positive(self, step: int, track: Track) -> Finding | None:
        p = self.p
        s = track.mean_last(p["smooth"])
        ref = sum(track.tail(3, skip=p["lag"])) / 3 if track.n > p["lag"] + 3 else self.base
        rise = s - ref
        if rise <= p["z_warn"] * self.scale:
            self._streak = 0
            return None
        z = (s - self.base) / self.scale
        vals = {"loss": s, "loss_lag": ref, "baseline": self.base, "z": z}
        if self.sustained(z > p["z_critical"], p["sustain"]):
            return self.fire(step, "critical", f"Loss diverging: {fmt(s)} vs baseline {fmt(self.base)} ({z:.0f} sigma)",
                             "The loss left its own warm-up range by far.", values=vals, extra_keys=(GRAD,))
        if ref == ref and s > p["rise_ratio"] * abs(ref):
            return self.fire(step, "warning", f"Loss rose sharply: {fmt(ref)} -> {fmt(s)} in {p['lag']} steps",
                             values=vals, extra_keys=(GRAD,))
        return None


@register_detector("loss_oscillation")
class LossOscillation(_Frozen):
    """Loss oscillating (only for a loss bounded away from zero; a zero-centred policy-gradient loss changes
    sign by design and its outliers are ``loss_spike``'s job): the step-to-step variability over ``window``
    steps is ``warn_ratio`` (warning) or ``critical_ratio`` (critical, on ``sustain`` consecutive checks) times
    the variability at warm-up end. Evaluated every ``every`` steps."""

    keys = (LOSS,)
    defaults = {"window": 30, "warn_ratio": 4.0, "critical_ratio": 10.0, "every": 5, "sustain": 2}
    common = {"enabled": True, "warmup": 20, "cooldown": 50}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.centred: bool | None = None

    def observe(self, step: int) -> Finding | None:
        self.seen += 1
        if self.seen <= self.warmup or self.centred:
            return None
        if self.centred is None:
            warm = self.ctx.tracks[LOSS].tail(self.warmup, skip=1)
            base, scale = robust(warm)
            self.centred = zero_centred(warm, base, scale)
            if self.centred:
                return None
            self.base = self._jitter(warm)
        return self.check(step) if self.due(self.p["every"]) else None

    @staticmethod
    def _jitter(vals: list[float]) -> float:
        """Robust scale of successive differences: variability around the local trend."""
        diffs = [b - a for a, b in zip(vals, vals[1:])]
        med = median(diffs)
        return max(median([abs(d - med) for d in diffs]) * 1.4826, 1e-12) if diffs else 1e-12

    def check(self, step: int) -> Finding | None:
        jitter = self._jitter(self.ctx.tracks[LOSS].tail(self.p["window"]))
        ratio = jitter / max(self.base, 1e-12)
        vals = {"jitter": jitter, "baseline_jitter": self.base, "ratio": ratio}
        if self.sustained(bool(self.p["critical_ratio"]) and ratio > self.p["critical_ratio"], self.p["sustain"]):
            return self.fire(step, "critical", f"Loss oscillating: step-to-step swings {ratio:.1f}x the warm-up level",
                             values=vals, step_start=step - self.p["every"] * self.p["sustain"])
        if ratio > self.p["warn_ratio"]:
            return self.fire(step, "warning", f"Loss oscillating: step-to-step swings {ratio:.1f}x the warm-up level",
                             values=vals, step_start=step - self.p["every"])
        return None


@register_detector("loss_plateau", "loss_no_decrease")
class LossPlateau(_Frozen):
    """Loss not decreasing over ``window`` steps (info). Only for a positive, SFT-like loss; a policy-gradient
    loss hovers around zero by construction and is never judged this way."""

    keys = (LOSS,)
    defaults = {"window": 100, "min_drop": 0.01, "every": 10}
    common = {"enabled": True, "warmup": 20, "cooldown": 200}

    def check(self, step: int) -> Finding | None:
        if not self.due(self.p["every"]) or self.base <= 3 * self.scale:
            return None
        track = self.ctx.tracks[LOSS]
        if track.n < self.p["window"]:
            return None
        old = median(track.tail(20, skip=self.p["window"] - 20))
        new = median(track.tail(20))
        if new >= old * (1 - self.p["min_drop"]):
            return self.fire(step, "info", f"Loss has not decreased in {self.p['window']} steps ({fmt(old)} -> {fmt(new)})",
                             values={"old": old, "new": new}, step_start=step - self.p["window"])
        return None


@register_detector("kl_rising", "kl_drift", "kl_band")
class KLRising(Detector):
    """KL to the reference rising out of the usual band. Warning: smoothed KL > ``band_high`` and
    ``rise_ratio`` x its median ``lag`` steps earlier. Critical: also > ``critical_ratio`` x that median and
    > 2 x ``band_high``. A KL above the band but stable (short answers give a high per-token KL) is info."""

    keys = (KL,)
    defaults = {"band_high": 0.1, "lag": 30, "rise_ratio": 1.5, "critical_ratio": 3.0, "smooth": 5}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._noted_stable = False

    def check(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[KL]
        s = track.mean_last(p["smooth"])
        if s <= p["band_high"]:
            return None
        hist = track.values
        end = len(hist) - p["lag"]
        lo = self.warmup if track.n == len(hist) else 0  # KL starts at 0 by definition: skip the initial ramp
        ref = median(list(islice(hist, max(end - 20, lo), max(end, lo + 5))))
        ratio = s / max(ref, 1e-9)
        vals = {"kl": s, "kl_before": ref, "ratio": ratio, "band_high": p["band_high"]}
        if ratio > p["critical_ratio"] and s > 2 * p["band_high"]:
            return self.fire(step, "critical", f"KL to reference rising fast: {fmt(ref)} -> {fmt(s)} ({ratio:.1f}x)",
                             "The policy is moving away from the reference much faster than before.", values=vals)
        if ratio > p["rise_ratio"]:
            return self.fire(step, "warning", f"KL to reference {fmt(s)} rising above the usual 0.01-0.1 band",
                             values=vals)
        if not self._noted_stable:
            self._noted_stable = True
            return self.fire(step, "info", f"KL to reference {fmt(s)} is above 0.1 but stable for this run",
                             "Short-answer tasks give a high per-token KL; judged against the run's own level.",
                             values=vals)
        return None


@register_detector("kl_spike")
class KLSpike(Detector):
    """Sudden KL jump. Warning (seed rule): KL > ``warn_abs`` right after < ``prev_abs``. Critical: KL >
    ``critical_ratio`` x the trailing ``window`` median (floored at ``min_abs``) and ``z`` robust scales above
    it, for ``sustain`` consecutive steps. During warm-up the reference is the first logged KL (the policy
    before any update, ~0): critical when the last ``sustain`` values all exceed ``early_abs`` and
    ``early_ratio`` x that start (a policy that left the reference within the first steps)."""

    keys = (KL,)
    defaults = {"warn_abs": 0.2, "prev_abs": 0.1, "critical_ratio": 3.0, "window": 20, "min_abs": 0.01,
                "z": 6.0, "sustain": 2, "early_abs": 1.0, "early_ratio": 10.0}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._ref = math.nan
        self._ref_scale = math.nan
        self._onset: int | None = None
        self._start = math.nan

    def observe(self, step: int) -> Finding | None:
        self.seen += 1
        if self.seen <= self.warmup:
            return self._check_early(step)
        return self.check(step)

    def _check_early(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[KL]
        if self._start != self._start:
            self._start = track.last
            return None
        recent = track.tail(p["sustain"])
        if len(recent) < p["sustain"] or self.seen <= p["sustain"]:
            return None
        bar = max(p["early_abs"], p["early_ratio"] * abs(self._start))
        if min(recent) <= bar:
            return None
        v = track.last
        return self.fire(step, "critical", f"KL to reference jumped to {fmt(v)} within {self.seen} steps of the start "
                         f"({fmt(self._start)})", "The first updates moved the policy far from the reference.",
                         values={"kl": v, "kl_before": self._start, "ratio": v / max(abs(self._start), 1e-9)},
                         step_start=step - p["sustain"] + 1, extra_keys=("critic/score/mean",))

    def check(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[KL]
        v, prev = track.last, track.ago(1)
        if self._streak == 0:  # freeze the reference at the start of a candidate spike
            gate = v > p["warn_abs"] or v > 0.8 * p["critical_ratio"] * max(prev, p["min_abs"] / p["critical_ratio"])
            if not gate:
                return None
            self._ref, self._ref_scale = robust(track.tail(p["window"], skip=1), 0.1)
            self._onset = step
        ref = max(self._ref, p["min_abs"])
        hit = v > p["critical_ratio"] * ref and v - self._ref > p["z"] * self._ref_scale
        vals = {"kl": v, "kl_before": self._ref, "ratio": v / max(self._ref, 1e-9)}
        if self.sustained(hit, p["sustain"]):
            return self.fire(step, "critical", f"KL spiked to {fmt(v)}, {v / ref:.1f}x its level before ({fmt(self._ref)})",
                             "A sudden jump of the policy away from the reference; often the start of a collapse.",
                             values=vals, step_start=self._onset, extra_keys=("critic/score/mean",))
        if v > p["warn_abs"] and prev < p["prev_abs"]:
            return self.fire(step, "warning", f"KL jumped from {fmt(prev)} to {fmt(v)}", values=vals)
        return None


@register_detector("kl_stuck", "kl_zero")
class KLStuck(Detector):
    """KL to the reference stays below ``eps`` for ``window`` steps after warm-up: the policy is not moving
    (learning rate too low, zero advantages). Warning only."""

    keys = (KL,)
    defaults = {"eps": 1e-4, "window": 30, "every": 10}
    common = {"enabled": True, "warmup": 30, "cooldown": 200}

    def check(self, step: int) -> Finding | None:
        if not self.due(self.p["every"]):
            return None
        recent = self.ctx.tracks[KL].tail(self.p["window"])
        if recent and max(abs(v) for v in recent) < self.p["eps"]:
            return self.fire(step, "warning", f"KL to reference stuck near zero (< {self.p['eps']:g}) for {len(recent)} steps",
                             "The policy is not moving away from the reference: learning is not happening.",
                             values={"kl_max": max(recent)}, step_start=step - len(recent))
        return None


@register_detector("update_size", "ppo_kl", "clipfrac")
class UpdateSize(Detector):
    """PPO updates too large: ``actor/ppo_kl`` > ``ppo_kl_warn`` or ``actor/pg_clipfrac`` > ``clipfrac_warn``
    (warning); critical when also > ``critical_ratio`` x the warm-up level (floored at ``ppo_kl_floor`` /
    ``clipfrac_floor``) for ``sustain`` steps."""

    keys = (PPO_KL, CLIPFRAC)
    defaults = {"ppo_kl_warn": 0.05, "clipfrac_warn": 0.3, "critical_ratio": 5.0, "ppo_kl_floor": 0.005,
                "clipfrac_floor": 0.05, "sustain": 3}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._base: dict[str, float] = {}

    def check(self, step: int) -> Finding | None:
        p = self.p
        hits = []
        for key, warn, floor in ((PPO_KL, p["ppo_kl_warn"], p["ppo_kl_floor"]),
                                 (CLIPFRAC, p["clipfrac_warn"], p["clipfrac_floor"])):
            track = self.ctx.tracks.get(key)
            if track is None or track.n <= self.warmup:
                continue
            if key not in self._base:
                self._base[key] = median(track.tail(self.warmup, skip=1))
            s = track.mean_last(3)
            if s > warn:
                hits.append((key, s, s > p["critical_ratio"] * max(self._base[key], floor)))
        critical = self.sustained(any(h[2] for h in hits), p["sustain"])
        if not hits:
            return None
        desc = ", ".join(f"{k}={fmt(v)}" for k, v, _ in hits)
        vals = {k: v for k, v, _ in hits} | {f"{k}_baseline": b for k, b in self._base.items()}
        if critical:
            return self.fire(step, "critical", f"PPO updates far larger than earlier in the run: {desc}", values=vals)
        return self.fire(step, "warning", f"PPO updates too large: {desc}", values=vals)


@register_detector("entropy_collapse")
class EntropyCollapse(_Frozen):
    """Entropy collapse. Critical: smoothed entropy < ``critical_ratio`` x the warm-up level. Warning: <
    ``warn_ratio`` x warm-up, or halving within ``fall_lag`` steps while below ``fall_guard`` x warm-up."""

    keys = (ENTROPY,)
    defaults = {"warn_ratio": 0.25, "critical_ratio": 0.1, "fall_ratio": 0.5, "fall_lag": 10, "fall_guard": 0.6,
                "smooth": 3, "sustain": 2}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._first = math.nan

    def observe(self, step: int) -> Finding | None:
        if self.seen == 0:
            self._first = self.ctx.tracks[ENTROPY].last
        return super().observe(step)

    def check(self, step: int) -> Finding | None:
        p = self.p
        if self.seen == self.warmup + 1 and self._first == self._first and self.base is not None:
            # the policy before any update is the natural reference: an entropy that collapsed during the
            # warm-up steps must not become the baseline
            self.base = max(self.base, self._first)
        track = self.ctx.tracks[ENTROPY]
        s = track.mean_last(p["smooth"])
        if s >= p["fall_guard"] * self.base:
            self._streak = 0
            return None
        ratio = s / max(self.base, 1e-12)
        before = track.ago(p["fall_lag"])
        vals = {"entropy": s, "baseline": self.base, "ratio": ratio, "entropy_lag": before}
        if self.sustained(ratio < p["critical_ratio"], p["sustain"]):
            return self.fire(step, "critical", f"Entropy collapsed to {fmt(s)} ({ratio:.0%} of its warm-up level {fmt(self.base)})",
                             "The policy became nearly deterministic: exploration is gone.", values=vals, samples=True)
        if ratio < p["warn_ratio"] or (before == before and s < p["fall_ratio"] * before):
            return self.fire(step, "warning", f"Entropy falling fast: {fmt(before)} -> {fmt(s)} (warm-up {fmt(self.base)})",
                             values=vals)
        return None


@register_detector("entropy_explosion")
class EntropyExplosion(_Frozen):
    """Entropy explosion (sampling turning into noise): smoothed entropy > ``warn_ratio`` (warning) or
    ``critical_ratio`` (critical) x the warm-up level for ``sustain`` steps."""

    keys = (ENTROPY,)
    defaults = {"warn_ratio": 2.0, "critical_ratio": 3.0, "smooth": 3, "sustain": 3}

    def check(self, step: int) -> Finding | None:
        s = self.ctx.tracks[ENTROPY].mean_last(self.p["smooth"])
        ratio = s / max(self.base, 1e-12)
        if not self.sustained(ratio > self.p["warn_ratio"], self.p["sustain"]):
            return None
        sev = "critical" if ratio > self.p["critical_ratio"] else "warning"
        return self.fire(step, sev, f"Entropy exploding: {fmt(s)} ({ratio:.1f}x its warm-up level)",
                         values={"entropy": s, "baseline": self.base, "ratio": ratio}, samples=True)


def _trailing_ratio(track: Track, window: int, value: float) -> tuple[float, float]:
    ref = median(track.tail(window, skip=1))
    return ref, value / max(ref, 1e-12)


@register_detector("grad_spike", "grad_norm")
class GradSpike(_Frozen):
    """Gradient-norm spike. Warning: > ``warn_ratio`` x the trailing ``window`` median. Critical: >
    ``critical_ratio`` x that median, or smoothed > ``critical_ratio`` x the warm-up level (steady growth)."""

    keys = (GRAD,)
    defaults = {"warn_ratio": 6.0, "critical_ratio": 10.0, "window": 30, "ema": 0.1}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._ema = math.nan

    def check(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[GRAD]
        v = track.last
        ema = self._ema = v if self._ema != self._ema else self._ema + p["ema"] * (v - self._ema)
        s = track.mean_last(3)
        if v <= 0.8 * p["warn_ratio"] * ema and s <= p["critical_ratio"] * self.base:
            return None
        ref, ratio = _trailing_ratio(track, p["window"], v)
        vals = {"grad_norm": v, "trailing_median": ref, "ratio": ratio, "baseline": self.base}
        if ratio > p["critical_ratio"] or s > p["critical_ratio"] * self.base:
            return self.fire(step, "critical", f"Gradient norm spiked to {fmt(v)} ({ratio:.0f}x its recent median {fmt(ref)})",
                             "Often the precursor of a NaN loss.", values=vals, extra_keys=(LOSS,))
        if ratio > p["warn_ratio"]:
            return self.fire(step, "warning", f"Gradient norm spike: {fmt(v)} ({ratio:.1f}x its recent median)",
                             values=vals)
        return None


@register_detector("value_divergence", "vf_loss")
class ValueDivergence(_Frozen):
    """Critic (PPO) value loss diverging: smoothed > ``warn_ratio`` (warning) / ``critical_ratio`` (critical)
    x the trailing ``window`` median or the warm-up level."""

    keys = (VF_LOSS,)
    defaults = {"warn_ratio": 3.0, "critical_ratio": 10.0, "window": 30}

    def check(self, step: int) -> Finding | None:
        track = self.ctx.tracks[VF_LOSS]
        s = track.mean_last(3)
        if s <= self.p["warn_ratio"] * self.base and s <= 2 * track.ago(3):
            return None
        ref = median(track.tail(self.p["window"], skip=3))
        ratio = s / max(min(ref, self.base), 1e-12)
        vals = {"vf_loss": s, "trailing_median": ref, "baseline": self.base, "ratio": ratio}
        if ratio > self.p["critical_ratio"]:
            return self.fire(step, "critical", f"Value loss diverging: {fmt(s)} ({ratio:.0f}x its earlier level)", values=vals)
        if ratio > self.p["warn_ratio"]:
            return self.fire(step, "warning", f"Value loss rising: {fmt(s)} ({ratio:.1f}x its earlier level)", values=vals)
        return None


@register_detector("explained_variance", "negative_explained_var")
class ExplainedVariance(Detector):
    """Critic explains nothing: smoothed ``critic/vf_explained_var`` < 0 for ``sustain`` checks (warning);
    critical when it had reached ``good_level`` earlier in the run (a relative drop)."""

    keys = (EV,)
    defaults = {"good_level": 0.3, "smooth": 5, "sustain": 5}
    common = {"enabled": True, "warmup": 20, "cooldown": 50}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.best = -math.inf

    def check(self, step: int) -> Finding | None:
        s = self.ctx.tracks[EV].mean_last(self.p["smooth"])
        self.best = max(self.best, s)
        if not self.sustained(s < 0, self.p["sustain"]):
            return None
        sev = "critical" if self.best >= self.p["good_level"] else "warning"
        return self.fire(step, sev, f"Critic explained variance negative ({fmt(s)}; best so far {fmt(self.best)})",
                         values={"explained_var": s, "best": self.best})
