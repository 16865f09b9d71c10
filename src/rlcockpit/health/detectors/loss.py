"""Optimisation detectors: non-finite values, the policy loss, gradient norms and the critic.

Every threshold below is a default; override per detector with
``HealthMonitor(settings={"loss_spike": {"z_warn": 10.0}})``.
"""

from __future__ import annotations

import math
from collections import deque

from rlcockpit.health.advice import (
    ENTROPY,
    GRAD,
    KL,
    config_causes,
    grad_clip_action,
    lr_action,
    moved,
    ranked,
    story_causes,
)
from rlcockpit.health.base import (
    Detector,
    FrozenBaseline,
    Track,
    fmt,
    log_scale,
    median,
    recent_count,
    register_detector,
    robust,
)
from rlcockpit.health.config_view import format_value, make_action
from rlcockpit.health.detectors.reward import LEN, LEN_MAX, REWARD, REWARD_STD, task_scores
from rlcockpit.health.findings import Action, Cause, Finding
from rlcockpit.health.repeats import MOST, RepeatWatch
from rlcockpit.metrics.guide import threshold

LOSS, VF_LOSS, EV = "actor/pg_loss", "critic/vf_loss", "critic/vf_explained_var"
VALUES, RETURNS = "critic/values/mean", "critic/returns/mean"
SKIPPED = "actor/nonfinite_skipped"
FRAC_ZERO = "critic/score/frac_zero_std"  # share of prompt groups whose rewards all tie (TRL: frac_reward_zero_std)
ADV_MAX, ADV_MIN = "critic/advantages/max", "critic/advantages/min"  # both 0: every advantage of the batch is zero
MIN_VARIED = 5  # values off the median a trailing window needs before its spread means anything
# float32 round-off (eps 1.2e-7) of a sum of up to ~100 O(1) terms: a loss this close to its median has not moved. A
# token-sum loss aggregation (verl's ``token-sum``) sums every response token of the batch, so its tied steps (every
# advantage cancelling) sit at multiples of 1.2e-7 up to a few 1e-6, not at 0 up to 1e-8 as a token-mean loss does
ROUNDOFF = 1e-5
LEN_MIN = "response_length/min"  # TRL: completions/min_length

def divergence_advice(det: Detector, finding: Finding, factor: float = 5.0) -> tuple[list[Cause], list[Action]]:
    """Causes and fixes shared by the divergence detectors: the config's lr/warm-up/clipping, whether the
    gradient norm blew up first in this run, then the detector's generic cause; lower lr, clip gradients."""
    view = det.ctx.view
    causes = story_causes(view, ("lr", "warmup", "grad_clip"))
    g = moved(det.ctx, GRAD, up=3.0)
    if g is not None and det.name != "grad_spike":
        causes.append(Cause(f"the gradient norm blew up first ({g.ratio:.0f}x its recent level)", 0.75, g.text))
    causes.append(Cause(det.cause or "an outlier batch or too large a step made the optimiser diverge", 0.5))
    actions = [lr_action(view, factor)]
    clip = grad_clip_action(view)
    if clip is not None:
        actions.append(clip)
    return ranked(causes), actions


@register_detector("nonfinite", "loss_nonfinite", "grad_nonfinite", "loss_nan")
class NonFinite(Detector):
    """NaN/Inf in a loss, the gradient norm, KL, entropy or reward: critical at once (no warm-up). Also an
    update the trainer skipped because its loss or gradients were non-finite (rlcockpit's
    ``actor/nonfinite_skipped`` > 0: the step then logs no loss at all)."""

    keys = (LOSS, GRAD, VF_LOSS, KL, ENTROPY, "critic/score/mean", SKIPPED)
    triggers = (SKIPPED,)
    common = {"enabled": True, "warmup": 0, "cooldown": 50}
    story, role = "divergence", "outcome"
    cause = "an outlier batch or too large a step made the optimiser diverge"

    def report(self, step: int, bad: dict[str, tuple[str, float]]) -> Finding | None:
        """``bad``: canonical key -> (the name it was logged under, its non-finite value)."""
        watched = {k: rv for k, rv in bad.items() if k in self.keys}
        if not watched:
            return None
        names = ", ".join(f"{raw}={v}" for raw, v in watched.values())
        first = next(iter(watched))
        return self.fire(step, "critical", f"Non-finite value: {names}",
                         "The optimiser has blown up; any further update corrupts the policy.",
                         metric=first, values={raw: str(v) for raw, v in watched.values()}, extra_keys=(GRAD, LOSS), event=True)

    def check(self, step: int) -> Finding | None:
        track = self.ctx.tracks[SKIPPED]
        if track.last_step != step or track.last <= 0:
            return None
        return self.fire(step, "critical", f"Update skipped: non-finite loss or gradients ({track.raw}="
                         f"{fmt(track.last)})", "The optimiser has blown up; the trainer is skipping updates.",
                         metric=SKIPPED, values={track.raw: track.last}, extra_keys=(GRAD, LOSS), event=True)

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        bad = set(finding.evidence.get("values", {})) - {SKIPPED}
        reward_keys = {t.raw for k, t in self.ctx.tracks.items() if k == "critic/score/mean"} | {"critic/score/mean"}
        if bad and bad <= reward_keys:  # only the reward is non-finite: the optimiser is fine so far
            return [Cause("the reward function returned NaN/Inf for some samples", 0.85, ", ".join(sorted(bad)))], [
                make_action(self.ctx.view, "Make the reward function return finite scores (catch its exceptions, "
                            "clip its outputs)", {})]
        return divergence_advice(self, finding)


def zero_centred(values: list[float], base: float, scale: float, band: float = 3.0) -> bool:
    """True for a loss that hovers around zero (a policy-gradient loss: GRPO/RLOO advantages are zero-mean per
    group, so ``pg_loss`` is ~0 +- noise and changes sign). Ratios to earlier values mean nothing for such a
    loss; only deviations measured in the run's own noise scale do."""
    if not values or abs(base) <= band * scale:
        return True
    return min(values) <= 0.0 <= max(values)  # a loss that changes sign is not bounded away from zero


def noise_scale(values: list[float]) -> tuple[float, float]:
    """(median, scale) of a trailing window; scale = the RMS deviation from the median of the values that differ
    from it by more than float round-off (``ROUNDOFF``). A GRPO pg_loss is spike-and-slab shaped: exactly 0 up to
    round-off (~1e-8) on steps where every group got one reward, 1e-3..1e-1 on the others. A MAD is then ~0, and
    so is an RMS over round-off noise, which made every ordinary non-zero step look like a spike ("Loss 0.02 is
    447411 typical deviations"); the RMS of the off-median steps is the size of the run's ordinary excursions. A
    token-sum loss (the sum over the batch's tokens) has a wider slab, a few 1e-6 on its tied steps: ``ROUNDOFF``
    covers it, else its first quiet window's scale (1.5e-6) made its first real steps (0.4-3) a lasting excursion.
    Fewer than ``MIN_VARIED`` such steps: no scale (NaN), nothing to judge against. One sort and one pass: this
    runs every ``every`` steps on the writer thread."""
    med = median(values)
    if med != med:
        return med, math.nan
    tol = ROUNDOFF * max(1.0, abs(med))
    off = [(v - med) ** 2 for v in values if abs(v - med) > tol]
    if len(off) < MIN_VARIED:
        return med, math.nan  # (nearly) constant: a loss exactly 0 for 40 steps has no noise to measure against
    return med, math.sqrt(sum(off) / len(off))


def corroboration(tracks: dict[str, Track], window: int, grad_ratio: float, kl_ratio: float,
                  kl_floor: float, z_log: float = 3.0) -> dict[str, float]:
    """Run-relative evidence that an update really went wrong: the gradient norm or the KL to the reference
    jumped against their own trailing medians, on both of the last two logged steps (the lower of the two is
    compared: one noisy batch is not an update that blew up), by ``grad_ratio`` / ``kl_ratio`` and by ``z_log``
    standard errors of their own log spread (both are positive, heavy-tailed series whose ordinary swings are a
    factor: a 1-prompt run's KL moves 50x from one step to the next). A policy-gradient loss spike without
    either is noise."""
    out: dict[str, float] = {}
    for key, name, ratio_min, floor in ((GRAD, "grad_norm_ratio", grad_ratio, 1e-12), (KL, "kl_ratio", kl_ratio, kl_floor)):
        track = tracks.get(key)
        if track is None or len(track.values) <= 5:
            continue
        fit = log_scale(track.tail(window, skip=3))
        if fit is None:
            continue
        ref, spread = max(fit[0], floor), fit[1]
        low = min(track.tail(2))
        if low > ratio_min * ref and math.log(low / ref) > z_log * spread * 0.886:  # 1.2533 / sqrt(2)
            out[name] = low / ref
    return out


@register_detector("loss_spike", "loss_rise")
class LossSpike(FrozenBaseline):
    """Sharp loss excursion, judged in one of two modes chosen at warm-up end.

    Zero-centred loss (a policy-gradient ``actor/pg_loss`` hovering around 0): the smoothed loss deviates from
    the median of a trailing ``window`` by more than ``z_warn`` noise scales of that window (the RMS size of its
    off-median steps, :func:`noise_scale`) on ``sustain`` logged steps, and ``sustain`` of the last ``sustain`` + 1
    logged values each that far out (warning: a smoothed value carries one wild step for ``smooth`` steps, and a
    small-batch run's loss has such steps, gone at the next). Critical needs ``z_critical``
    scales AND corroboration (:func:`corroboration`): the gradient norm > ``grad_ratio`` x or the KL to the
    reference > ``kl_ratio`` x their own trailing medians, on both of the last two steps and beyond their own log
    spread. The reference is refreshed every ``every`` steps and frozen during an excursion. A loss that is a
    fixed multiple of the KL over the trailing ``window`` and now (ratios within ``kl_multiple_tol``: TRL's
    beta x KL on-policy) is left to the KL detectors: its excursion is the KL's. So is a TRL loss whose
    excursion sits on steps where the completions' lengths differ, in a run whose loss is beta x KL on every step
    where they do not (:meth:`_length_weighted`): on-policy, its policy-gradient part is the advantages weighted by
    token counts, exactly 0 when every completion has one length and bounded by ``adv_bound`` x the length spread
    otherwise (a 3-token answer run logs 1e-3 for 30 steps, then -0.3 on the step two answers ran to 8 tokens).

    Loss bounded away from zero (SFT-like): warning when the smoothed loss > ``rise_ratio`` x its value
    ``lag`` steps earlier and the rise exceeds ``z_warn`` scales; critical when ``z_critical`` scales above the
    warm-up median for ``sustain`` steps. The scale is the larger of the warm-up's and the trailing ``window``'s (a
    warm-up of five logged values says little about a loss that is the mean of several micro-batches), and both
    need ``sustain`` of the last ``sustain`` + 1 raw values past their bar: magnitude plus persistence, not one
    batch carried by the smoothing.

    ``sustain`` counts distinct batches: a run that logs each batch's loss on several consecutive steps (TRL's
    ``num_iterations=2``, :mod:`rlcockpit.health.repeats`) needs that many times more logged steps.

    KL coefficient grown (warning, either mode): read only on steps whose completions all have one length
    (``completions/min_length`` equal to ``completions/max_length``) and a KL above ``beta_kl_floor``, where an
    on-policy TRL GRPO loss is exactly beta x KL (the advantages' part is 0, :meth:`_length_weighted`). Once
    ``beta_exact`` such steps in a row gave one multiple (within ``kl_multiple_tol`` of the first; a
    policy-gradient part that is not 0 there, off-policy or clipped, breaks the run and arms nothing), the loss's
    multiple of the KL on ``beta_k`` such steps in a row at ``beta_ratio`` x that multiple or more (x the
    completions' length over its length then: a loss normalised by a fixed token budget grows with the answers)
    says the KL coefficient itself grew (an adaptive controller with a far too low target, a resume with another
    beta): the loss and the gradient grow with it while the KL is pulled to 0. A constant beta, the only one TRL
    has, keeps that multiple exact on every such step, however the KL moves."""

    keys = (LOSS,)
    defaults = {"lag": 10, "rise_ratio": 1.5, "z_warn": 8.0, "z_critical": 12.0, "smooth": 3, "window": 30,
                "every": 10, "grad_ratio": 5.0, "kl_ratio": 3.0, "kl_floor": 0.01, "sustain": 2,
                "kl_multiple_tol": 0.1, "adv_bound": 4.0, "beta_kl_floor": 1e-4, "beta_exact": 15,
                "beta_ratio": 4.0, "beta_k": 2}
    common = {"enabled": True, "warmup": 20, "cooldown": 30}
    story, role = "divergence", "outcome"
    cause = "an outlier batch or too large a step made the optimiser diverge"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        if finding.severity != "critical":  # a loss excursion alone: look before changing anything
            return [Cause("one unusual batch (policy-gradient losses are noisy)", 0.5)], []
        return divergence_advice(self, finding)

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.centred: bool | None = None
        self._ref = math.nan
        self._ref_scale = math.nan
        self._ref_age = 0
        self._onset: int | None = None
        self._repeats = RepeatWatch()  # how many consecutive logged values carry one batch
        # the KL-coefficient rule (class docstring): the loss/KL multiple on equal-length steps, its length, how many
        # such steps in a row gave it (armed at ``beta_exact``), and the steps since at ``beta_ratio`` x it or more
        self._beta = math.nan
        self._beta_len = math.nan
        self._beta_n = 0
        self._beta_out: list[int] = []
        self._lens: tuple[Track, Track, Track] | None = None

    def check(self, step: int) -> Finding | None:
        track = self.ctx.tracks[LOSS]
        if self.centred is None:
            self.centred = zero_centred(track.tail(self.warmup, skip=1), self.base, self.scale)
        lens = self._lens
        if lens is None:
            tracks = self.ctx.tracks
            lo, hi, kl = tracks.get(LEN_MIN), tracks.get(LEN_MAX), tracks.get(KL)
            if lo is not None and hi is not None and kl is not None:
                lens = self._lens = (lo, hi, kl)
        if lens is not None and lens[0].last_step == step and lens[0].last == lens[1].last \
                and lens[2].last_step == step and lens[1].last_step == step and lens[2].last > self.p["beta_kl_floor"]:
            found = self._beta_grown(step, track.last / lens[2].last, lens[0].last)  # the gate: one length
            if found is not None:
                return found
        return self._check_centred(step, track) if self.centred else self._check_positive(step, track)

    def _beta_grown(self, step: int, ratio: float, length: float) -> Finding | None:
        """The KL-coefficient rule (class docstring), on a step whose completions all have one length: ``ratio`` is
        its loss over its KL, ``length`` that length."""
        p, ref = self.p, self._beta
        if ref == ref and abs(ratio - ref) <= p["kl_multiple_tol"] * abs(ref):
            self._beta_n += 1
            self._beta_out = []
            return None
        if self._beta_n < p["beta_exact"] or ref <= 0:
            self._beta, self._beta_len, self._beta_n, self._beta_out = ratio, length, 1, []  # not armed: start over
            return None
        grown = ratio / ref / max(1.0, length / self._beta_len)
        if grown < p["beta_ratio"]:
            self._beta_out = []
            return None
        self._beta_out.append(step)
        if len(self._beta_out) < p["beta_k"] or self.repeats(step, "warning", self._beta_out[0]):
            return None
        return self.fire(step, "warning", f"KL coefficient grown: the loss is {fmt(ratio)} x the KL on the last "
                         f"{len(self._beta_out)} steps whose completions all have one length, {grown:.0f}x the "
                         f"{fmt(ref)} x it gave on {self._beta_n} such steps in a row before",
                         "On those steps the loss is beta x KL exactly: beta itself grew, and the loss and the gradient "
                         "grow with it while the KL is pulled to 0 (an adaptive KL controller with too low a target, "
                         "a resume with another beta).",
                         values={"loss_kl_multiple": ratio, "earlier_multiple": ref, "ratio": grown,
                                 "exact_steps": self._beta_n}, step_start=self._beta_out[0], extra_keys=(KL, GRAD))

    def _check_centred(self, step: int, track: Track) -> Finding | None:
        p = self.p
        s = track.mean_last(p["smooth"])
        if self._streak == 0:
            self._ref_age -= 1
            if self._ref_age <= 0 or self._ref_scale != self._ref_scale:  # refresh the noise scale when quiet
                self._ref, self._ref_scale = noise_scale(track.tail(p["window"], skip=p["smooth"]))
                self._ref_age = p["every"]
        if self._ref_scale != self._ref_scale:
            return None  # the trailing window is (nearly) constant: no noise to judge against yet
        z = abs(s - self._ref) / self._ref_scale
        if z <= p["z_warn"]:
            self._streak = 0
            return None
        if self._streak == 0:
            self._onset = step
        self._streak += 1
        kl = self.ctx.tracks.get(KL)  # distinct batches (a batch logged twice is one), seen on the KL's repeats
        need = p["sustain"] * (self._repeats.of(kl) if kl is not None and kl.last_step == step else 1)
        if self._streak < need:
            return None  # one step outside the band is the run's noise
        bar = p["z_warn"] * self._ref_scale
        if sum(1 for v in track.tail(need + 1) if abs(v - self._ref) > bar) < need:
            return None  # one raw step far out, carried by the smoothing: gone at the next logged step
        if self._kl_multiple(track) or self._length_weighted(track, need, bar):
            return None  # the loss is beta x KL (plus, where lengths differ, the advantages' length weighting)
        vals = {"loss": s, "trailing_median": self._ref, "noise_scale": self._ref_scale, "z": z}
        where = (f"its median {fmt(self._ref)} over the previous {p['window']} logged steps (typical deviation "
                 f"{fmt(self._ref_scale)}), for {self._streak} logged steps")
        if z > p["z_critical"]:
            evidence = corroboration(self.ctx.tracks, p["window"], p["grad_ratio"], p["kl_ratio"], p["kl_floor"])
            if evidence:
                vals |= evidence
                why = " and ".join(f"{k.split('_ratio')[0].replace('_', ' ')} {v:.1f}x its recent level"
                                   for k, v in evidence.items())
                return self.fire(step, "critical", f"Loss excursion: {fmt(s)} is {z:.0f} typical deviations from {where}, "
                                 f"with {why}", "The policy-gradient loss left its noise band while the update itself "
                                 "blew up.", values=vals, step_start=self._onset, extra_keys=(GRAD, KL))
        return self.fire(step, "warning", f"Loss {fmt(s)} is {z:.0f} typical deviations from {where}",
                         "A policy-gradient loss alone is noisy; look at grad norm and KL before acting.",
                         values=vals, step_start=self._onset, extra_keys=(GRAD,))

    def _kl_multiple(self, track: Track) -> bool:
        """Whether the loss is a fixed multiple of the KL to the reference, now as over the trailing window (the
        loss/KL ratios within ``kl_multiple_tol`` of their median, which is positive). TRL's logged loss with
        beta > 0 is beta x KL plus a policy-gradient part that is ~0 on-policy; a 1-prompt run's KL moves 50x
        from one step to the next, and the loss with it. Such an excursion is the KL's, which ``kl_spike`` and
        ``kl_rising`` judge in the KL's own noise; a policy-gradient part that blows up breaks the ratio."""
        kl = self.ctx.tracks.get(KL)
        w = int(self.p["window"])
        if kl is None or kl.last_step != track.last_step or kl.n < w or kl.tail_steps(w) != track.tail_steps(w):
            return False
        ratios = [lo / k for lo, k in zip(track.tail(w), kl.tail(w)) if k > 1e-9]
        if len(ratios) < w // 2:
            return False
        mid = median(ratios)
        tol = self.p["kl_multiple_tol"] * mid
        return mid > 0 and max(abs(r - mid) for r in ratios) <= tol

    def _length_weighted(self, track: Track, need: int, bar: float) -> bool:
        """Whether each of the last ``need`` + 1 logged values that is past ``bar`` is what an on-policy TRL GRPO
        loss is by construction: beta x KL plus ``-sum(A_i L_i) / sum(L_i)``, the batch's advantages weighted by
        their completions' token counts (the token-level normalisation of TRL's default loss types). That second
        part is exactly 0 on a step whose completions all have one length (``completions/min_length`` equal to
        ``completions/max_length``: the advantages are zero-mean per group) and otherwise moves with which answers
        ran longer, by at most the largest advantage x (max - min length) / mean length. Read only on runs whose
        loss is beta x KL on every equal-length step of the trailing ``window`` (at least half of it: the loss/KL
        ratios within ``kl_multiple_tol`` of their median, which is positive; a policy-gradient part that is not 0
        on those, off-policy or with dropout in the training forward, breaks it). A past-bar value is explained
        when it is beta x KL too (the KL's excursion, judged by the KL detectors) or sits on a step whose lengths
        differ and is within ``adv_bound`` x max(1, reward std) x (max - min) / mean length of beta x KL (an
        advantage past ``adv_bound`` is more than a group of up to 17 std-scaled completions can give). A 1-prompt
        run whose 8 answers are 3 tokens on most steps logs ~beta x KL (1e-3) for 30 steps, then -0.3 on the one
        step two answers ran to 8 tokens: a window of equal-length steps has no noise to measure that against."""
        tracks = self.ctx.tracks
        kl, lo, hi, mean = tracks.get(KL), tracks.get(LEN_MIN), tracks.get(LEN_MAX), tracks.get(LEN)
        w = min(int(self.p["window"]), len(track.values))
        if kl is None or lo is None or hi is None or mean is None:
            return False
        steps = track.tail_steps(w)
        if any(t.tail_steps(w) != steps for t in (kl, lo, hi, mean)):
            return False
        loss, kls, los, his, means = track.tail(w), kl.tail(w), lo.tail(w), hi.tail(w), mean.tail(w)
        ratios = [v / k for v, k, a, b in zip(loss, kls, los, his) if a == b and k > 1e-9]
        if len(ratios) < w // 2:
            return False
        mid = median(ratios)
        tol = self.p["kl_multiple_tol"] * mid
        if mid <= 0 or max(abs(r - mid) for r in ratios) > tol:
            return False
        std = tracks.get(REWARD_STD)
        adv = self.p["adv_bound"] * max(1.0, std.last if std is not None and std.n else 1.0)
        ref, weighted = self._ref, False
        for i in range(w - need - 1, w):
            v, k, a, b, m = loss[i], kls[i], los[i], his[i], means[i]
            if abs(v - ref) <= bar or (k > 1e-9 and abs(v / k - mid) <= tol):
                continue  # not past the bar, or beta x KL: the KL's excursion
            if a == b or m <= 0 or abs(v - mid * k) > adv * (b - a) / m:
                return False  # past the bar and not the advantages' length weighting either
            weighted = True
        return weighted  # (an excursion that is beta x KL alone is _kl_multiple's to judge)

    def _check_positive(self, step: int, track: Track) -> Finding | None:
        p = self.p
        s = track.mean_last(p["smooth"])
        ref = sum(track.tail(3, skip=p["lag"])) / 3 if track.n > p["lag"] + 3 else self.base
        rise = s - ref
        if rise <= p["z_warn"] * self.scale:
            self._streak = 0
            return None
        scale = self._positive_scale(track)
        if rise <= p["z_warn"] * scale:
            self._streak = 0
            return None
        z = (s - self.base) / scale
        vals = {"loss": s, "loss_lag": ref, "baseline": self.base, "z": z, "noise_scale": scale}
        kl = self.ctx.tracks.get(KL)  # distinct batches (a batch logged twice is one), seen on the KL's repeats
        need = p["sustain"] * (self._repeats.of(kl) if kl is not None and kl.last_step == step else 1)
        if self._raw_out(track, need, ref + p["z_warn"] * scale) < need:
            self._streak = 0
            return None  # one raw step far out, carried by the smoothing: gone at the next logged step
        if self.sustained(z > p["z_critical"], need) and \
                self._raw_out(track, need, self.base + p["z_critical"] * scale) >= need:
            return self.fire(step, "critical", f"Loss diverging: {fmt(s)} vs baseline {fmt(self.base)} ({z:.0f} sigma)",
                             "The loss left its own warm-up range by far.", values=vals, extra_keys=(GRAD,))
        if ref == ref and s > p["rise_ratio"] * abs(ref):
            return self.fire(step, "warning", f"Loss rose sharply: {fmt(ref)} -> {fmt(s)} in {p['lag']} steps",
                             values=vals, extra_keys=(GRAD,))
        return None

    def _positive_scale(self, track: Track) -> float:
        """The larger of the warm-up scale and the trailing ``window``'s robust scale (before the smoothed values):
        a warm-up of five logged steps (a run logging every 5th of 25 steps) is too few values to say how far the
        loss wanders, and a loss that is the mean of several micro-batches wanders by more than its first values
        show. Sorted only behind the cheap warm-up gate."""
        _med, trailing = robust(track.tail(self.p["window"], skip=self.p["smooth"]), self.base_rel_floor)
        return max(self.scale, trailing) if trailing == trailing else self.scale

    @staticmethod
    def _raw_out(track: Track, need: int, bar: float) -> int:
        """How many of the last ``need`` + 1 logged values are above ``bar``: a critical needs magnitude and
        persistence, not one batch that the 3-step smoothing carries for three steps."""
        return sum(1 for v in track.tail(need + 1) if v > bar)


@register_detector("loss_oscillation")
class LossOscillation(FrozenBaseline):
    """Loss oscillating (only for a loss bounded away from zero; a zero-centred policy-gradient loss changes
    sign by design and its outliers are ``loss_spike``'s job): the step-to-step variability over ``window``
    steps is ``warn_ratio`` (warning) or ``critical_ratio`` (critical, on ``sustain`` consecutive checks) times
    the variability at warm-up end. A warm-up in which the loss stood still (more than a tenth of its steps
    unchanged) has no swings to judge against: the baseline waits for a window that moves. The baseline also
    waits for ``min_values`` observations (a run logging every 5th step has a warm-up of 5 logged values: 4 swings
    are too few to say how much the loss swings). Evaluated every ``every`` steps."""

    keys = (LOSS,)
    defaults = {"window": 30, "warn_ratio": 4.0, "critical_ratio": 10.0, "every": 5, "sustain": 2, "min_values": 12}
    common = {"enabled": True, "warmup": 20, "cooldown": 50}
    story, role = "divergence", "outcome"
    cause = "the learning rate is too high for this loss surface: each step overshoots"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        return divergence_advice(self, finding, 3.0)

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.centred: bool | None = None

    @staticmethod
    def _jitter(vals: list[float]) -> float:
        """Robust scale of successive differences: variability around the local trend."""
        diffs = [b - a for a, b in zip(vals, vals[1:])]
        med = median(diffs)
        return max(median([abs(d - med) for d in diffs]) * 1.4826, 1e-12) if diffs else 1e-12

    def on_warm(self) -> None:
        """Nothing: the baseline here is the loss's jitter, measured in :meth:`check` once the loss moves (not
        :class:`FrozenBaseline`'s level and scale). Its ``observe`` is the base one, so the monitor inlines it."""

    def check(self, step: int) -> Finding | None:
        if self.centred:
            return None
        every = self.p["every"]
        due = every <= 1 or (self.seen + self._phase) % every == 0  # self.due(every), inlined
        if self.centred is None:
            if self.seen > self.warmup + 1 and not due:
                return None  # a retry after a warm-up that stood still: every ``every`` observations
            track = self.ctx.tracks[LOSS]
            if track.n < self.p["min_values"] + 1:
                return None  # too few swings yet to be a baseline
            warm = track.tail(max(self.warmup, int(self.p["min_values"])), skip=1)
            base, scale = robust(warm)
            if zero_centred(warm, base, scale):
                self.centred = True
                return None
            still = 1e-6 * abs(base) + 1e-12
            if sum(1 for a, b in zip(warm, warm[1:]) if abs(b - a) <= still) > len(warm) // 10:
                return None  # a loss that stood still has no swings to judge against: wait for a window that moves
            self.centred, self.base = False, self._jitter(warm)
        if not due:
            return None
        jitter = self._jitter(self.ctx.tracks[LOSS].tail(self.p["window"]))
        ratio = jitter / max(self.base, 1e-12)
        vals = {"jitter": jitter, "baseline_jitter": self.base, "ratio": ratio}
        what = (f"Loss oscillating: step-to-step swings of {fmt(jitter)} over the last {self.p['window']} logged steps, "
                f"{ratio:.1f}x their {fmt(self.base)} at warm-up end")
        if self.sustained(bool(self.p["critical_ratio"]) and ratio > self.p["critical_ratio"], self.p["sustain"]):
            return self.fire(step, "critical", what, values=vals, step_start=step - self.p["every"] * self.p["sustain"])
        if ratio > self.p["warn_ratio"]:
            return self.fire(step, "warning", what, values=vals, step_start=step - self.p["every"])
        return None


@register_detector("loss_plateau", "loss_no_decrease")
class LossPlateau(FrozenBaseline):
    """Loss not decreasing over ``window`` steps (info). Only for a positive, SFT-like loss; a policy-gradient
    loss hovers around zero by construction and is never judged this way."""

    keys = (LOSS,)
    defaults = {"window": 100, "min_drop": 0.01, "every": 10}
    due_every = "every"  # check runs on one observation in ``every`` (Detector.gate)
    common = {"enabled": True, "warmup": 20, "cooldown": 200}
    cause = "the learning rate is too low, or the task is too hard for the model at this size"

    def check(self, step: int) -> Finding | None:
        if self.base <= 3 * self.scale:
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



@register_detector("grad_spike", "grad_norm")
class GradSpike(FrozenBaseline):
    """Gradient-norm spike, judged against the run's own spread. The reference is the median of the last ``window``
    steps that had a learning signal, the spread the robust scale of their logs (a noisy run swings by a factor). A
    step without one says nothing about the size of the others: its norm is 0 (every advantage zero) or, where the
    run logs the share of prompt groups whose rewards all tie (``critic/score/frac_zero_std``, TRL's
    ``frac_reward_zero_std``) and every group tied, or where it logs the batch's largest and smallest advantage
    (``critic/advantages/max``/``min``) and both are 0, the KL or entropy term's alone. A sparse reward's norm is
    large exactly at its few steps with a signal; such a step is judged against the others like it, not against the
    tied ones (a step that tied itself is judged against every step with a gradient).
    Warning: > ``warn_ratio`` x the reference and > ``z_log`` spreads above it, or > ``huge_ratio`` x the reference
    and > ``huge_z`` spreads above it (a norm forty times the run's median is a spike even where the norm swings by
    a factor of two from step to step; a warning only). Critical: > ``critical_ratio`` x the reference and a second
    spike (> ``warn_ratio`` x it) among the last ``burst`` logged steps (persistence: a burst; two spikes further
    apart, the norm back at its level between, are two one-off events, each a warning; a second spike over
    ``critical_ratio`` squared x the reference, two orders of magnitude, counts one anywhere in the window), or the
    smoothed norm > ``critical_ratio`` x its warm-up level (the median of its first ``warmup`` steps with a learning
    signal; a sparse reward's, once it has 5) on ``sustain`` observations (steady growth). One spike alone stays a
    warning.

    Shifted to a new level (warning): each of the last ``shift_run`` steps with a learning signal above the
    ``shift_quantile`` quantile of the ``shift_window`` such steps before them (at least ``shift_min`` of them; the
    third largest of 50), and their median over ``shift_ratio`` x those steps' median. A step change held from one
    step on (gradients summed where they should be averaged over micro-batches, a loss or reward multiplied by a
    constant from a resume), too noisy to be a spike on any one step. Noise around a level puts a step there one
    time in 20, four in a row about never; a norm that grows as the policy learns climbs over tens of steps, so the
    steps just before the run are near it and the median stays within ~2.7x (the healthy runs of every
    developed-on source). Gated: judged only when the newest norm and the ``shift_run`` - 1 before it all exceed
    the norm's EMA before the first of them, half of them and the newest twice it (that median is 4x the earlier
    one, and an EMA, a mean, is under 2x a median for any spread the corpus shows). ``shift_run`` counts distinct
    batches: where each generated batch is logged on several consecutive steps (TRL's ``num_iterations=2``: the
    generating step and its reuse step carry nearly the same norm, :mod:`rlcockpit.health.repeats`, seen on the
    KL), the run needs that many times more steps. Two high batches logged twice are two events, not four: a small
    model's norm jumps 4x on one batch in 20 and back.

    Growing with the reward's scale (warning): the smoothed norm (its EMA) over ``scaled_ratio`` x its warm-up level
    while the training reward, which exactly equalled a task score logged on its own samples (a correctness the
    reward function logs beside the score, a reward component not named for format) on ``scaled_equal_min`` paired
    steps or more of the held history, now averages ``scaled_ratio`` x that score or more over the last
    ``scaled_span`` paired steps. The reward was that score and has been multiplied away from it (a reward
    normaliser or a scale that drifts, a bug that multiplies the reward): without a division by the groups' spread
    (Dr. GRPO, REINFORCE) the advantages and the gradient grow with it, slowly enough that no single step is a
    spike. A gradient that grows as the policy learns leaves the reward equal to its score; a reward that pulls away
    from its score while the gradient keeps its size is reward_divergence's."""

    keys = (GRAD, FRAC_ZERO)
    prefixes = (ADV_MAX, ADV_MIN)  # tracked (a prefix each) for the tie test, not cited as evidence
    defaults = {"warn_ratio": 6.0, "critical_ratio": threshold(GRAD, "spike_factor"), "window": 30, "ema": 0.1,
                "z_log": 6.0, "huge_ratio": 30.0, "huge_z": 4.0, "sustain": 3, "burst": 10, "scaled_ratio": 2.0,
                "scaled_equal_min": 50, "scaled_span": 10, "shift_run": 4, "shift_window": 50, "shift_min": 20,
                "shift_ratio": 4.0, "shift_quantile": 0.95}
    story, role = "divergence", "mechanism"
    cause = "an outlier batch or too large a step made the optimiser diverge"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        causes, actions = divergence_advice(self, finding)
        view = self.ctx.view
        ratio, lr = finding.evidence.get("values", {}).get("ratio"), view.number("actor.optim.lr")
        if isinstance(ratio, (int, float)) and lr is not None and "lr" not in config_causes(view):
            # no size-based norm applies (or the lr is within it): phrase the cause relative to this run
            causes.append(Cause(f"at lr={format_value(lr)} this run's gradient norm reached {ratio:.0f}x its own recent "
                                "median: the step is large for this run's loss surface", 0.55))
        return ranked(causes), actions

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._ema = math.nan
        self._warm: float | None = None
        self._early: list[float] = []  # the first norms of steps with a learning signal, until the warm level is set
        self._equal: dict[str, tuple[int, bool]] = {}  # task score -> (reward's count when judged, equalled it)
        self._scaled_at = float(self.p["scaled_ratio"])  # read once: the gate below runs on every step
        self._shift_run = int(self.p["shift_run"])
        # the EMA before each of the last observations (as many as the longest run the shift rule asks for)
        self._emas: deque[float] = deque(maxlen=self._shift_run * MOST)
        self._batches = RepeatWatch()  # how many consecutive logged norms carry one batch (the shift rule's run)

    def on_warm(self) -> None:
        self._early = self._reference(self.warmup, True)
        self._settle_warm()

    def _settle_warm(self) -> None:
        """The warm-up level: the median of the first ``warmup`` steps with a learning signal (a sparse reward may
        have fewer than 5 among the first steps: it is set once it has them)."""
        fit = log_scale(self._early)
        if fit is None:
            return
        self._warm = fit[0]
        self._early = []
        if self._ema != self._ema:
            self._ema = fit[0]

    def _reference(self, k: int, signal: bool) -> list[float]:
        """The norms of the last ``k`` steps before the newest that had a gradient (a norm above 0) and, with
        ``signal`` where the run logs the zero-std share, a reward spread in some group (the share logged last at
        or before the step below 1: several optimiser steps on one generation, or a share logged less often than
        the norm, share the batch it describes), and not every advantage zero (the largest and the smallest logged
        at or before it both 0), oldest first. Every track's steps rise: one walk back pairs them."""
        tracks = self.ctx.tracks
        track = tracks[GRAD]
        tied = tracks.get(FRAC_ZERO) if signal else None
        hi, lo = (tracks.get(ADV_MAX), tracks.get(ADV_MIN)) if signal else (None, None)
        gv, gs = track.values, track.steps
        fv, fs = (tied.values, tied.steps) if tied is not None else ((), ())
        hv, hs = (hi.values, hi.steps) if hi is not None and lo is not None else ((), ())
        lv, ls = (lo.values, lo.steps) if hi is not None and lo is not None else ((), ())
        j, a, b = len(fs) - 1, len(hs) - 1, len(ls) - 1
        out: list[float] = []
        for i in range(len(gv) - 2, -1, -1):
            v = gv[i]
            if v <= 1e-12:
                continue
            s = gs[i]
            if j >= 0:
                while j >= 0 and fs[j] > s:
                    j -= 1
                if j >= 0 and fv[j] >= 1.0 - 1e-9:
                    continue  # every group of the batch in use tied: the KL term's norm
            if a >= 0 and b >= 0:
                while a >= 0 and hs[a] > s:
                    a -= 1
                while b >= 0 and ls[b] > s:
                    b -= 1
                if a >= 0 and b >= 0 and abs(hv[a]) <= 1e-12 and abs(lv[b]) <= 1e-12:
                    continue  # every advantage of the batch in use zero: the KL or entropy term's norm
            out.append(v)
            if len(out) == k:
                break
        out.reverse()
        return out

    def _tied_now(self) -> bool:
        tracks = self.ctx.tracks
        tied = tracks.get(FRAC_ZERO)
        if tied is not None and tied.last >= 1.0 - 1e-9:
            return True
        hi, lo = tracks.get(ADV_MAX), tracks.get(ADV_MIN)
        return hi is not None and lo is not None and abs(hi.last) <= 1e-12 and abs(lo.last) <= 1e-12

    def check(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[GRAD]
        v = track.last
        if self._warm is None and v > 1e-12 and not self._tied_now():
            self._early.append(v)
            self._settle_warm()
        self._emas.append(self._ema)
        ema = self._ema = v if self._ema != self._ema or self._ema <= 0 else self._ema + p["ema"] * (v - self._ema)
        grown = self._warm is not None and v > p["critical_ratio"] * self._warm and \
            recent_count(track, p["sustain"] + 2, p["critical_ratio"] * self._warm) > p["sustain"]
        scaled = None
        if not grown and self._warm is not None and ema > self._scaled_at * self._warm:
            scaled = self._scaled_reward()  # the gate: the norm's level doubled, rare and O(1) to test
        shift = None
        # the gate (rare): the newest above twice the EMA before the first of the last ``k`` observations (under twice
        # the least of them, no ``k`` can pass: the repeat period, measured over 96 values, is not looked up)
        if v > 2.0 * min(self._emas) and not grown and self._warm is not None:
            k = self._shift_steps()
            before = self._emas[-min(k, len(self._emas))]
            # O(k): the last k all above that EMA, half of them twice it
            if v > 2.0 * before and recent_count(track, k, before) >= k \
                    and 2 * recent_count(track, k, 2.0 * before) >= k and not self._tied_now():
                shift = self._shifted(v, k)
        if v <= 0.8 * p["warn_ratio"] * ema and not grown:
            self._streak = 0
            return None if scaled is None and shift is None else self._quiet(step, scaled, shift)
        fit = log_scale(self._reference(p["window"], not self._tied_now()))
        if fit is None:
            return None  # too few steps with a learning signal to know this run's spread
        ref, spread = fit
        ratio = v / ref
        vals = {"grad_norm": v, "trailing_median": ref, "ratio": ratio, "log_spread": spread}
        where = f"its median {fmt(ref)} over the previous {p['window']} logged steps with a gradient"
        if grown:
            return self.fire(step, "critical", f"Gradient norm stays high: {fmt(v)}, {v / self._warm:.0f}x its warm-up "
                             f"median {fmt(self._warm)} on {p['sustain'] + 1} of the last {p['sustain'] + 2} logged steps",
                             "Often the precursor of a NaN loss.", values=vals,
                             step_start=track.steps[-min(p["sustain"] + 2, len(track.steps))], extra_keys=(LOSS,))
        far = ratio > p["warn_ratio"] and math.log(ratio) > p["z_log"] * spread
        if not far and (ratio <= p["huge_ratio"] or math.log(ratio) <= p["huge_z"] * spread):
            return self._quiet(step, scaled, shift)
        span = p["burst"] if ratio <= p["critical_ratio"] ** 2 else p["window"]  # two orders of magnitude: the window
        repeated = recent_count(track, span, p["warn_ratio"] * ref) >= 2
        if far and ratio > p["critical_ratio"] and repeated:
            return self.fire(step, "critical", f"Gradient norm spiked again: {fmt(v)}, {ratio:.0f}x {where}",
                             "Repeated spikes are often the precursor of a NaN loss.", values=vals, extra_keys=(LOSS,))
        return self.fire(step, "warning", f"Gradient norm spike: {fmt(v)}, {ratio:.1f}x {where}",
                         "One spike alone; watch whether it repeats or the loss follows.", values=vals)

    def _quiet(self, step: int, scaled: tuple[str, float, float, float] | None,
               shift: tuple[float, float, float, int, int] | None) -> Finding | None:
        """No spike on this step: the reward-scaled warning, else the level-shift warning, else nothing."""
        if scaled is not None:
            return self._fire_scaled(step, scaled)
        if shift is None:
            return None
        level, ref, top, n_old, k = shift
        track = self.ctx.tracks[GRAD]
        vals = {"grad_norm": track.last, "shift_median": level, "trailing_median": ref, "previous_high": top,
                "ratio": level / ref, "shift_run": k, "shift_window": n_old, "shift_quantile": self.p["shift_quantile"]}
        return self.fire(step, "warning",
                         f"Gradient norm shifted to a new level: the last {k} logged steps with a gradient (median "
                         f"{fmt(level)}) all above {fmt(top)}, the {self.p['shift_quantile']:.0%} quantile of the "
                         f"{n_old} before them, {level / ref:.1f}x their median {fmt(ref)}",
                         "A step change held from one step on, not one outlier batch: gradients summed where they "
                         "should be averaged, or a loss or reward multiplied by a constant.",
                         values=vals, step_start=track.steps[-min(k, len(track.steps))], extra_keys=(LOSS,))

    def _shift_steps(self) -> int:
        """The logged steps the shift rule's run spans: ``shift_run`` distinct batches, each logged as many times
        as the KL repeats (class docstring)."""
        kl = self.ctx.tracks.get(KL)
        return self._shift_run * (self._batches.of(kl) if kl is not None else 1)

    def _shifted(self, v: float, k: int) -> tuple[float, float, float, int, int] | None:
        """(median of the last ``k`` norms with a learning signal, the ``shift_window`` such norms' median before
        them, their ``shift_quantile`` quantile, how many, ``k``: :meth:`_shift_steps`) when each of the last ones is above that quantile
        and their median ``shift_ratio`` x the earlier median (class docstring); None otherwise. ``v``, the newest,
        has a signal."""
        p = self.p
        seq = self._reference(int(p["shift_window"]) + k - 1, True)
        seq.append(v)
        if len(seq) < k + p["shift_min"]:
            return None
        new, old = seq[-k:], sorted(seq[:-k])
        top = old[min(len(old) - 1, int(p["shift_quantile"] * len(old)))]
        if min(new) <= top:
            return None
        level, ref = median(new), median(old)
        if level <= p["shift_ratio"] * ref:
            return None
        return level, ref, top, len(old), k

    def _scaled_reward(self) -> tuple[str, float, float, float] | None:
        """(task score, reward's mean, score's mean, their ratio) over the last ``scaled_span`` paired steps, where
        the reward exactly equalled that score on ``scaled_equal_min`` paired steps or more of the held history and
        now averages ``scaled_ratio`` x it (class docstring); None otherwise. Whether the two were equal is judged
        once a key (again after ``scaled_equal_min`` more rewards when they were not)."""
        tracks, p = self.ctx.tracks, self.p
        reward = tracks.get(REWARD)
        if reward is None:
            return None
        span, need = int(p["scaled_span"]), int(p["scaled_equal_min"])
        for key in self.ctx.per_keyset("reward_cliff.task_scores", task_scores):
            score = tracks[key]
            seen = self._equal.get(key)
            if seen is None or not seen[1] and reward.n - seen[0] >= need:
                by_step = dict(zip(score.steps, score.values))
                equal = sum(1 for s, r in zip(reward.steps, reward.values)
                            if s in by_step and abs(r - by_step[s]) <= 1e-6 * max(1.0, abs(r)))
                seen = self._equal[key] = (reward.n, equal >= need)
            if not seen[1] or score.last_step != reward.last_step or min(score.n, reward.n) < span:
                continue
            r, q = reward.mean_last(span), score.mean_last(span)
            if q > 0.0 and r >= p["scaled_ratio"] * q:
                return key, r, q, r / q
        return None

    def _fire_scaled(self, step: int, scaled: tuple[str, float, float, float]) -> Finding | None:
        key, r, q, factor = scaled
        tracks, p = self.ctx.tracks, self.p
        level = self._ema / self._warm
        reward, score = tracks[REWARD], tracks[key]
        vals = {"grad_norm_level": self._ema, "warm_median": self._warm, "ratio": level, "reward": r,
                "quality": q, "reward_factor": factor,
                "signals": [f"{reward.raw} {fmt(factor)}x {score.raw} over the last {int(p['scaled_span'])} steps"]}
        return self.fire(step, "warning",
                         f"Gradient norm growing with the reward's scale: its level {fmt(self._ema)}, {level:.1f}x its "
                         f"warm-up median {fmt(self._warm)}, while {reward.raw} ({fmt(r)}) is {factor:.1f}x "
                         f"{score.raw} ({fmt(q)}), which it equalled",
                         "The reward has been multiplied away from the score it stood for, and the gradient grows "
                         "with it: without a division by the groups' spread the advantages carry the reward's scale.",
                         values=vals, extra_keys=(REWARD, key))


@register_detector("value_divergence", "vf_loss")
class ValueDivergence(FrozenBaseline):
    """Critic (PPO) value loss diverging, against the run's own level and spread: the median of the last
    ``recent`` values above ``warn_ratio`` x the median of the ``window`` before them and ``z_log`` spreads of
    that window's logs (a converged critic's loss is small and swings by a factor) on ``sustain`` consecutive
    observations: warning. Above ``critical_ratio`` x and held twice as long: critical.
    Also a warning: the critic's mean prediction swinging (a run that logs ``critic/values/mean`` and
    ``critic/returns/mean``): over the last ``swing_window`` logged steps the spread of the mean prediction is
    ``swing_ratio`` x the spread of the mean return it fits and ``swing_ratio`` x its own spread over the
    ``swing_before`` steps before them, on ``swing_sustain`` consecutive checks (one every ``swing_every``
    observations). A critic that tracks its targets moves its batch mean with theirs; one whose step overshoots
    (a learning rate typed too large) jumps past the returns one step and back the next, before its loss's median
    has risen."""

    keys = (VF_LOSS, VALUES, RETURNS)
    triggers = (VF_LOSS,)
    defaults = {"warn_ratio": 3.0, "critical_ratio": 10.0, "window": 30, "recent": 5, "z_log": 4.0, "sustain": 3,
                "every": 5, "swing_ratio": 3.0, "swing_window": 10, "swing_before": 30, "swing_sustain": 2,
                "swing_every": 2}
    story, role = "divergence", "outcome"
    cause = "the critic's learning rate is too high, or the reward scale changed under it"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        view = self.ctx.view
        causes = [Cause(self.cause, 0.5)]
        r = moved(self.ctx, "critic/score/mean", up=2.0, down=0.5)
        if r is not None:
            causes.append(Cause("the reward scale changed under the critic", 0.65, r.text))
        clr = view.current_number("critic.optim.lr")
        return ranked(causes), [make_action(view, "Lower the critic learning rate 3x",
                                            {"critic.optim.lr": float(f"{clr / 3:.3g}") if clr else 1e-6})]

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._ref: tuple[float, float] | None = None
        self._ref_age = 0
        self._onset: int | None = None
        self._swing_seen = self._swing_streak = 0

    def check(self, step: int) -> Finding | None:
        p = self.p
        self._swing_seen += 1
        if self._swing_seen % p["swing_every"] == 0 and VALUES in self.ctx.tracks:  # only runs that log it
            found = self._swing(step)
            if found is not None:
                return found
        track = self.ctx.tracks[VF_LOSS]
        k = int(p["recent"])
        if self._streak == 0:
            if self._ref is not None and track.last <= p["warn_ratio"] * self._ref[0] and self._ref_age < p["every"]:
                self._ref_age += 1
                return None  # the usual step: below the bar of a reference measured a few steps ago
            self._ref, self._ref_age = log_scale(track.tail(p["window"], skip=k)), 0  # frozen while the loss is high
        if self._ref is None:
            return None
        ref, spread = self._ref
        now = median(track.tail(k))
        bar = math.log(now / ref) if now > 0 else -math.inf
        if not self.sustained(now > p["warn_ratio"] * ref and bar > p["z_log"] * spread / math.sqrt(k), p["sustain"]):
            self._onset = None if self._streak == 0 else self._onset
            return None
        if self._onset is None:
            self._onset = track.steps[-min(k, len(track.steps))]
        ratio = now / ref
        vals = {"vf_loss": now, "trailing_median": ref, "log_spread": spread, "ratio": ratio}
        where = (f"the median of the last {k} logged steps is {fmt(now)}, {ratio:.1f}x its median {fmt(ref)} over "
                 f"the {p['window']} steps before")
        if ratio > p["critical_ratio"] and self._streak >= 2 * p["sustain"]:
            return self.fire(step, "critical", f"Value loss diverging: {where}", values=vals, step_start=self._onset)
        return self.fire(step, "warning", f"Value loss rising: {where}", values=vals, step_start=self._onset)

    def _swing(self, step: int) -> Finding | None:
        """The critic's mean prediction swinging past its returns and its own earlier spread (the class
        docstring)."""
        tracks, p = self.ctx.tracks, self.p
        vt, rt = tracks.get(VALUES), tracks.get(RETURNS)
        w, b = int(p["swing_window"]), int(p["swing_before"])
        if vt is None or rt is None or vt.last_step != step or rt.last_step != step or vt.n < w + b or rt.n < w:
            return None
        sd_v, sd_r, sd_0 = _spread(vt.tail(w)), _spread(rt.tail(w)), _spread(vt.tail(b, skip=w))
        r = p["swing_ratio"]
        self._swing_streak = self._swing_streak + 1 if sd_v > r * sd_r and sd_v > r * sd_0 else 0
        if self._swing_streak < p["swing_sustain"]:
            return None
        self._swing_streak = 0
        vals = {"values_spread": sd_v, "returns_spread": sd_r, "values_spread_before": sd_0, "values_mean": vt.last,
                "returns_mean": rt.last}
        return self.fire(step, "warning", f"Critic predictions swinging: {vt.raw} spread {fmt(sd_v)} over the last "
                         f"{w} logged steps, {sd_v / max(sd_r, 1e-12):.1f}x the spread of {rt.raw} ({fmt(sd_r)}) and "
                         f"{sd_v / max(sd_0, 1e-12):.1f}x its own over the {b} steps before ({fmt(sd_0)})",
                         "The critic's updates overshoot its targets: its learning rate is too high.", metric=VALUES,
                         values=vals, step_start=vt.steps[-w], extra_keys=(RETURNS,))


def _spread(values: list[float]) -> float:
    """Population standard deviation."""
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) * (v - m) for v in values) / len(values))


@register_detector("explained_variance", "negative_explained_var")
class ExplainedVariance(Detector):
    """Critic explains nothing, judged on the median of the last ``window`` values of ``critic/vf_explained_var``
    (one batch's value from a few responses swings to -1000 and back: a mean of such values is noise). Critical:
    that median < 0 on ``sustain`` checks in a row after it had reached ``good_level`` (a critic that had learned
    and lost it). Warning: median < ``warn_below`` on ``sustain`` checks while the window's values are precise,
    their robust spread (1.4826 x MAD) under ``precise_spread``: a batch large enough that its explained variance
    is a measurement, and the critic clearly worse than predicting the batch's mean return. A critic fitted on 1-4
    responses a step has a median of -1 to -0.1 for hundreds of steps and a spread of 0.15-0.8 while it learns,
    and one that has not learned yet sits at ~0 (-0.05, spread 0.03): neither is a finding. Checked every
    ``every`` observations after the warm-up."""

    keys = (EV,)
    defaults = {"good_level": 0.3, "window": 25, "sustain": 3, "precise_spread": 0.1,
                "warn_below": threshold(EV, "warn_below"), "every": 2}
    due_every = "every"  # check runs on one observation in ``every`` (Detector.gate)
    common = {"enabled": True, "warmup": 20, "cooldown": 50}
    cause = "the critic cannot predict returns (critic lr too low or too high, reward scale changed)"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        view = self.ctx.view
        clr = view.current_number("critic.optim.lr")
        return [Cause(self.cause, 0.5)], [make_action(view, "Tune the critic learning rate",
                                                      {"critic.optim.lr": clr * 2 if clr else 1e-5})]

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.best = -math.inf

    def check(self, step: int) -> Finding | None:
        p = self.p
        vals = self.ctx.tracks[EV].tail(p["window"])
        med = median(vals)
        self.best = max(self.best, med)
        spread = 1.4826 * median([abs(v - med) for v in vals])
        lost = self.best >= p["good_level"]
        bad = med < 0 if lost else med < p["warn_below"] and spread < p["precise_spread"]
        if not self.sustained(bad, p["sustain"]):
            return None
        what = (f"Critic explained variance negative: median {fmt(med)} over the last {len(vals)} logged steps "
                f"(best median so far {fmt(self.best)})")
        return self.fire(step, "critical" if lost else "warning", what,
                         values={"explained_var_median": med, "window": len(vals), "best": self.best,
                                 "spread": spread})
