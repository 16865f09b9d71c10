"""Policy detectors: the entropy collapsing or exploding, against the run's own warm-up level.

Every threshold below is a default; override per detector with
``HealthMonitor(settings={"entropy_collapse": {"critical_ratio": 0.05}})``.
"""

from __future__ import annotations

import math
from itertools import islice

from rlcockpit.health.advice import (
    ENTROPY,
    REWARD,
    entropy_action,
    kl_action,
    lr_action,
    moved,
    ranked,
    story_causes,
    update_causes,
)
from rlcockpit.health.base import (
    ADAPT_AT,
    Drift,
    FallBar,
    FrozenBaseline,
    Track,
    count_noise,
    diff_noise,
    fmt,
    median,
    newest_far_above,
    register_detector,
    robust,
    tie_safe,
)
from rlcockpit.health.findings import Action, Cause, Finding
from rlcockpit.health.stories import resolve_story
from rlcockpit.metrics.guide import threshold
from rlcockpit.metrics.score_words import is_correctness

# read once from the metric guide (a guide lookup costs ~2 µs: too much for every logged step)
ENTROPY_FLOOR = threshold(ENTROPY, "collapse_below")  # ... and the least entropy level
NOISE_ABOVE = threshold(ENTROPY, "noise_above")  # ... and the level no language model samples at while it learns
CRITICAL_FROM = threshold(ENTROPY, "critical_from")  # ... and the least reference a critical rise is a multiple of
HELD_OUT_SCORES = ("val-core/", "val/test_score/")  # verl's held-out test scores (higher is better; TRL's: is_held_out_score)
TASK_SCORE_PREFIXES = ("critic/score/", "reward_extra/")  # parts of the reward, fields of its function: same samples


def _gain(track: Track, ref: tuple[float, float], window: int) -> bool:
    """Whether ``track``'s median over its last ``window`` values is above the reference's median ``ref`` by 3 noise
    units of a window median and by 2% of that level."""
    med, scale = ref
    return median(track.tail(window)) - med > max(3 * scale / math.sqrt(window), 0.02 * abs(med))


def is_task_score(key: str) -> bool:
    """A correctness score of the training samples logged beside the reward (``critic/score/<fn>/mean`` or
    ``reward_extra/<name>/mean`` named accuracy, correct...), not a held-out one. (Looked up once per run, when the
    entropy's drift reference is frozen.)"""
    return key.startswith(TASK_SCORE_PREFIXES) and key.endswith("/mean") and is_correctness(key)


def is_held_out_score(key: str) -> bool:
    """A score on held-out data, higher is better: verl's ``val-core/*`` and ``val/test_score/*``, TRL's evaluation
    reward and its parts' means (``eval/reward``, ``eval/rewards/<fn>/mean``). (Looked up when a key first appears.)"""
    return key.startswith(HELD_OUT_SCORES) or key == "eval/reward" or (key.startswith("eval/rewards/")
                                                                       and key.endswith("/mean"))


def reward_climbing(track: Track | None, window: int) -> bool:
    """True while the reward's median over the last ``window`` observations is clearly above the median of the
    ``window`` before them (more than 3 noise units of a window median, and 2% of its level)."""
    if track is None or len(track.values) < 2 * window:
        return False
    before = track.tail(window, skip=window)
    med, scale = robust(before, 0.0, 1e-12)
    now = median(track.tail(window))
    return now - med > max(3 * scale / math.sqrt(window), 0.02 * abs(med))


@register_detector("entropy_collapse")
class EntropyCollapse(FrozenBaseline):
    """Entropy collapse. Critical: smoothed entropy < ``critical_ratio`` x the warm-up level. Warning: halving
    within ``fall_lag`` steps (the mean of the last ``smooth`` values against the same mean ``fall_lag`` steps
    earlier: a 1-prompt run's single high value is no level to halve) while below ``fall_guard`` x warm-up and out
    of the run's own noise: at once when that drop is more than ``fall_now_z`` robust noise units (1.4826 x MAD) of
    the ``fall_window`` values before (a steady entropy halving between two logged steps), else once the fall has
    held: ``fall_k`` of the last ``fall_n`` values under the median of the ``fall_window`` values before them, their
    mean under ``fall_ratio`` x that median and under it by ``fall_z`` noise units of a mean of ``fall_n`` (a
    halving inside the run's own swings is none, and a chance dip of a noisy entropy comes back where a fall holds);
    or < ``warn_ratio`` x warm-up (that mean and the mean of the last ``drift_smooth`` values
    both: a 3-step mean of a noisy entropy settled at a third of its warm-up level dips under a quarter now and
    then, and is no lower than it was) while learning stalls (the reward not climbing over the last 3 x ``fall_lag`` observations and, where logged, the
    reward spread below half its early level). A policy that sharpens gradually onto right answers — how
    short-answer tasks converge — is learning, not collapsing. Slow fall (warning): a downward :class:`Drift`
    (CUSUM, allowance ``drift_k``, alarm ``drift_h`` noise units) against the level of the ``drift_ref``
    observations after the warm-up, once the mean of the last ``drift_smooth`` values is below that level by
    ``drift_drop`` x it and by 2 noise units, while the reward shows no gain over that stretch and the entropy is still
    falling (that mean ``drift_still`` noise units under the mean of the ``drift_smooth`` values ``2 x drift_smooth``
    observations earlier): an entropy that leaves its early range for good and keeps going (a sampling temperature
    lowered step by step) is seen near where it left. One that stepped down and settled (a policy that sharpened a
    little, then held) is not warned of: the mean of its last ``2 x drift_smooth`` values becomes the level a
    further fall is measured from. Where the run logs a correctness score of the same samples beside the reward and
    only the reward gains (its median over the last 3 x ``fall_lag`` observations up on the reference stretch, no
    such score's), a smaller fall counts: that mean ``paid_drop`` x the level and ``paid_z`` noise units of a mean of
    ``drift_smooth`` under it. A reward that pays the policy for its own certainty or for agreeing with itself lowers
    the entropy on purpose; the bar that leaves room for a policy sharpening by itself would see that fall 30 steps
    late. Not
    armed when the reference level is already 2 noise units under the warm-up median (a policy sharpening steadily
    from its first step has no early range to leave). Where the run evaluates on held-out data (``val-core/*``,
    ``val/test_score/*``, TRL's ``eval/reward`` and ``eval/rewards/*/mean``), that score is read first: not raised while it is up since the entropy began to fall (the
    mean of its last two values ``held_out_z`` noise units of the difference above the mean of its values logged by
    the drift's start, at the earliest the reference stretch's end), and raised, whatever the training reward
    gained, while every such score is flat: at, under or at most ``held_out_flat_z`` noise units of the difference
    above that mean (a rise the evaluation cannot tell from its own noise; an evaluation mean of a few prompts moves
    that much either way from one evaluation to the next). A policy sharpening onto answers that are right on data
    it is not trained on is learning, whatever a reward over one prompt's few samples says; one memorising the few
    prompts a stuck data loader feeds it raises its training reward and gets no better on held-out prompts (its
    evaluation reward where it was, inside its noise). A score evaluated once since the drift's start is a verdict
    only at or under that mean (flat: no rise at all, the one thing a single noisy evaluation can say; a run that
    evaluates every 15-50 steps would otherwise leave the fall to a training reward that easier batches raise for
    two evaluation periods); above it, it waits for its second. The reward's gain judges while no held-out score
    has a value by the drift's start and one after it at or under that mean or two after it, or one is up by more
    than ``held_out_flat_z`` and at most ``held_out_z`` noise units (a rise too small to call learning and too large
    to call flat: a held-out score that climbs slowly with the training reward is there between evaluations).
    Sudden fall (warning): ``shift_k`` of the last ``shift_n`` values below the median of the ``shift_window``
    before them by ``shift_z`` robust noise units and by ``shift_drop`` x that median — the entropy stepping out of
    its own range between two logged steps and staying out (a sampling temperature cut at once), which a policy
    sharpening as it learns does over tens of steps, not one. No reward exemption: a sharper policy often scores a
    little better at first. The bar is re-measured every ``shift_every`` observations while the entropy is inside
    it. Held step (warning): the same fall out of range, less deep in noise units and longer held: ``held_k`` of
    the last ``held_n`` values, the newest among them, below the median of the ``shift_window`` before them by
    ``held_z`` robust noise units and by ``shift_drop`` x that median — a noisy entropy (a few prompts, a few
    samples) whose step down by a third is no ``shift_z`` of its own swings, as a setting changed by a resume does,
    and that stays down (a chance dip of such an entropy is one or two values, back within the next few)."""

    keys = (ENTROPY,)
    defaults = {"warn_ratio": 0.25, "critical_ratio": 0.1, "fall_ratio": 0.5, "fall_lag": 10, "fall_guard": 0.6,
                "fall_z": 3.0, "fall_now_z": 6.0, "fall_window": 30, "fall_n": 6, "fall_k": 5,
                "smooth": 3, "sustain": 2, "drift_ref": 40, "drift_k": 0.5, "drift_h": 8.0, "drift_drop": 0.12,
                "drift_smooth": 12, "drift_still": 0.6, "paid_drop": 0.06, "paid_z": 2.0, "held_out_z": 3.0, "held_out_flat_z": 1.0,
                "shift_drop": threshold(ENTROPY, "shift_drop"),
                "shift_z": threshold(ENTROPY, "shift_z"), "shift_window": 30, "shift_min_window": 15, "shift_k": 2,
                "shift_n": 3, "shift_every": 5, "held_z": 4.0, "held_k": 4, "held_n": 5}
    story, role = "entropy", "outcome"
    cause = "the policy sharpened onto a few answers (mode collapse)"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        causes = story_causes(self.ctx.view, resolve_story("entropy").config)
        std = moved(self.ctx, "critic/score/std", down=0.3)
        if std is not None:
            causes.append(Cause("samples of a prompt now agree: the reward spread fell with the entropy", 0.65, std.text))
        causes.append(Cause(self.cause, 0.6))
        return ranked(causes), [entropy_action(self.ctx.view), lr_action(self.ctx.view, 3)]

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._first = math.nan
        self._drift: Drift | None = None
        self._warm_median = math.inf  # the warm-up's median (before the first value may raise the baseline)
        self._reward_ref: tuple[float, float] | None = None  # reward (median, scale) over the drift's reference
        self._task_ref: dict[str, tuple[float, float]] = {}  # ... and each correctness score beside it
        self._ref_end = -1  # the last step of the drift's reference stretch
        p = self.p
        self._held_scan = -1  # held-out score tracks, rescanned when a new key appears
        self._held_tracks: list[Track] = []
        self._held_seen: tuple[int, ...] | None = None  # the anchor and their lengths at the last look, its answer
        self._held_gain: bool | None = None
        self._shift = FallBar(lambda ref: robust(ref, 0.02), window=p["shift_window"], skip=p["shift_n"],
                              min_window=p["shift_min_window"], z=p["shift_z"], drop=p["shift_drop"],
                              every=p["shift_every"])  # the sudden-fall bar
        self._held = FallBar(lambda ref: robust(ref, 0.02), window=p["shift_window"], skip=p["held_n"],
                             min_window=p["shift_min_window"], z=p["held_z"], drop=p["shift_drop"],
                             every=p["shift_every"])  # the held-step bar

    def _sudden(self, step: int, track: Track) -> Finding | None:
        """The sudden-fall rule (class docstring): a comparison per step, a sort every ``shift_every``."""
        if self._shift.above(track):
            return None
        return self._sudden_below(step, track)

    def _sudden_below(self, step: int, track: Track, held: bool = False) -> Finding | None:
        """:meth:`_sudden` on a step whose newest value is under the bar (the held-step bar when ``held``)."""
        p = self.p
        fall, n, k = (self._held, int(p["held_n"]), p["held_k"]) if held else (self._shift, int(p["shift_n"]), p["shift_k"])
        out = [(st, v) for st, v in zip(track.tail_steps(n), track.tail(n)) if v < fall.bar]
        if len(out) < k or self.repeats(step, "warning", out[0][0]):
            return None
        med, scale = fall.ref
        now = sum(v for _s, v in out) / len(out)
        return self.fire(step, "warning", f"Entropy fell out of its range: {track.raw} {fmt(now)} on {len(out)} of "
                         f"the last {n} logged steps, {(med - now) / scale:.0f} typical deviations ({fmt(scale)}) under "
                         f"its median {fmt(med)} over the {int(p['shift_window'])} before", "The policy became much "
                         "sharper between two logged steps and stayed so: a sampling temperature or a setting changed, "
                         "or one update collapsed it.", values={"entropy": now, "reference": med, "noise": scale,
                         "baseline": self.base}, step_start=out[0][0], samples=True)

    def _slow_fall(self, step: int, track: Track) -> Finding | None:
        """The slow-fall rule (class docstring): the entropy, negated, fed to a :class:`Drift` frozen on the
        ``drift_ref`` observations after the warm-up."""
        p = self.p
        if self._drift is None:
            if self.seen == self.warmup + p["drift_ref"]:
                drift = Drift([-v for v in track.tail(p["drift_ref"])], p["drift_k"], p["drift_h"], 0.02, 1e-6)
                if -drift.level < self._warm_median - 2 * drift.noise:  # falling since the warm-up: a steady sharpening
                    return None  # from the start has no early range to leave (the other rules judge it)
                self._drift = drift
                self._ref_end = step
                reward = self.ctx.tracks.get(REWARD)
                self._reward_ref = tie_safe(reward.tail(p["drift_ref"]), 0.0) if reward is not None and reward.n else None
                self._task_ref = {key: tie_safe(t.tail(p["drift_ref"]), 0.0) for key, t in self.ctx.tracks.items()
                                  if is_task_score(key) and t.n >= p["drift_ref"]}
            return None
        d = self._drift
        if not d.update(-track.last, step):
            return None
        level, now = -d.level, track.mean_last(p["drift_smooth"])
        usual = now <= level - max(p["drift_drop"] * abs(level), 2 * d.noise)  # the bar for a fall by itself
        if not usual and not self._paid_fall(level, now, d.noise):
            return None
        held = self._held_out_gained(max(self._ref_end, d.start if d.start is not None else step))
        if held or (held is None and self._gained(3 * p["fall_lag"])) or self.repeats(step, "warning", d.start):
            return None
        n = int(p["drift_smooth"])
        if track.n >= 3 * n and sum(track.tail(n, skip=2 * n)) / n - now < p["drift_still"] * d.noise:
            # not falling any more: the entropy stepped down and settled. That plateau is the run's new level (a
            # policy that sharpened a little, then held); a fall that goes on from it is judged from it. (Only past
            # the usual bar: a paid fall that pauses is not yet a settled level to judge a further fall from)
            if usual:
                d.level, d.cusum.s, d.cusum.start = -track.mean_last(2 * n), 0.0, None
            return None
        return self.fire(step, "warning",
                         f"Entropy drifting down: {track.raw} {fmt(now)} over the last {p['drift_smooth']} logged steps, "
                         f"{(level - now) / d.noise:.0f} typical deviations under its early level {fmt(level)}",
                         values={"entropy": now, "early_level": level, "noise": d.noise, "baseline": self.base},
                         step_start=d.start, samples=True)

    def _paid_fall(self, level: float, now: float, noise: float) -> bool:
        """The smaller fall that counts while only what the reward pays gains (class docstring): the mean of the last
        ``drift_smooth`` values under the early ``level`` by ``paid_drop`` x it and by ``paid_z`` noise units of such
        a mean, while the reward's median over the last 3 x ``fall_lag`` observations is up on its reference stretch
        and no correctness score of the same samples is. A reward that pays the policy for its own certainty, or for
        agreeing with itself, lowers the entropy on purpose: the fall is what the reward buys, not noise to leave room
        for."""
        p = self.p
        n, window = int(p["drift_smooth"]), 3 * int(p["fall_lag"])
        if not self._task_ref or now > level - max(p["paid_drop"] * abs(level), p["paid_z"] * noise / math.sqrt(n)):
            return False
        reward = self.ctx.tracks.get(REWARD)
        if reward is None or self._reward_ref is None or len(reward.values) < window:
            return False
        tracks = self.ctx.tracks
        return _gain(reward, self._reward_ref, window) and not any(
            _gain(tracks[key], ref, window) for key, ref in self._task_ref.items())

    def _gained(self, window: int) -> bool:
        """True when the reward's median over the last ``window`` observations is clearly above its median over the
        drift's reference stretch (3 noise units of a window median and 2% of that level) or the reward is still
        climbing: a policy that sharpens while its reward grows is learning; one that sharpens with no gain is not.
        Where the run logs a correctness score of the same samples beside the reward (TRL's
        ``rewards/accuracy/mean``, verl's ``reward_extra/acc/mean``), that score must show the same gain over the
        same stretch: a policy sharpening onto what the reward pays while the answers get no more right (a
        self-agreement reward, a judge) is collapsing, whatever the paid reward says."""
        reward = self.ctx.tracks.get(REWARD)
        if reward is None or self._reward_ref is None or len(reward.values) < window:
            return False
        if not _gain(reward, self._reward_ref, window) and not reward_climbing(reward, window):
            return False
        tracks = self.ctx.tracks
        return not self._task_ref or any(_gain(tracks[key], ref, window) for key, ref in self._task_ref.items())

    def _held_out_gained(self, anchor: int) -> bool | None:
        """True when a held-out score rose since the entropy began to fall: the mean of its last two values
        ``held_out_z`` noise units (its step-to-step noise or the sampling noise of a mean of 0/1 scores, whichever
        is larger) of the difference of the two means above the mean of its values logged by ``anchor`` (the
        drift's start, at the earliest the end of its reference stretch). False when every held-out score with a
        value by ``anchor`` and two after it is flat: up by at most ``held_out_flat_z`` such noise units (a rise its
        noise explains is none: a training reward's gain without one on held-out data is not learning), and when
        one with a single value after ``anchor`` is at or under that mean (one evaluation says no more). None
        otherwise (none has a verdict yet, or one is up by more than flat and less than a gain): the reward
        judges."""
        tracks = self.ctx.tracks
        if self._held_scan != len(tracks):  # a key logged for the first time: look for new held-out scores
            self._held_scan = len(tracks)
            self._held_tracks = [t for k, t in tracks.items() if is_held_out_score(k)]
        seen = (anchor, *(t.n for t in self._held_tracks))
        if seen != self._held_seen:  # evaluated (or the fall re-anchored) since the last look: look again
            self._held_seen, self._held_gain = seen, self._held_out_gain(anchor)
        return self._held_gain

    def _held_out_gain(self, anchor: int) -> bool | None:
        """The look of :meth:`_held_out_gained`, run only when a held-out score was logged since the last one."""
        verdict, unsure = None, False
        for track in self._held_tracks:
            if track.n < 3 or track.steps[-1] <= anchor:
                continue
            ref = [v for s, v in zip(track.steps, track.values) if s <= anchor]
            if not ref:
                continue
            if track.steps[-2] <= anchor:  # one evaluation since the fall began: flat only at or under the mean
                if track.values[-1] <= sum(ref) / len(ref):
                    verdict = False
                continue
            vals = list(track.values)
            se = max(diff_noise(vals), count_noise(vals), 1e-9) * math.sqrt(0.5 + 1 / len(ref))
            gain = (vals[-1] + vals[-2]) / 2 - sum(ref) / len(ref)
            if gain > self.p["held_out_z"] * se:
                return True
            unsure = unsure or gain > self.p["held_out_flat_z"] * se  # up, not by enough to tell: no verdict
            verdict = False
        return None if unsure else verdict

    def _stalling(self) -> bool:
        """A low entropy is a problem when learning stalls with it: the reward is not climbing and, where the
        run logs a reward spread, the spread collapsed too (identical samples, zero advantages)."""
        tracks = self.ctx.tracks
        if reward_climbing(tracks.get(REWARD), 3 * self.p["fall_lag"]):
            return False
        spread = tracks.get("critic/score/group_std") or tracks.get("critic/score/std")
        if spread is None or spread.n < 2 * self.warmup:
            return True
        early = median(list(islice(spread.values, 0, self.warmup))) if spread.n == len(spread.values) else None
        return early is None or spread.mean_last(5) < 0.5 * early

    def _out_of_noise(self, drop: float, track: Track) -> bool:
        """Whether a fast fall is out of the run's own noise (class docstring): at once when the drop of the 3-step
        mean is more than ``fall_now_z`` robust noise units (1.4826 x MAD) of the ``fall_window`` values before the
        newest (a steady entropy that halves between two logged steps), or once it has held: ``fall_k`` of the last
        ``fall_n`` values under the median of the ``fall_window`` values before them, their mean under
        ``fall_ratio`` x that median and under it by ``fall_z`` noise units of a mean of ``fall_n``. A chance dip of a
        noisy entropy (25% relative noise halves a 3-step mean a few times in a few hundred steps) comes back within
        ``fall_n`` values; a fall holds. Run only on a step the halving of the 3-step mean holds."""
        p = self.p
        window = int(p["fall_window"])
        _med, scale = robust(track.tail(window, skip=1), 0.0)
        if drop > p["fall_now_z"] * scale:
            return True
        n = int(p["fall_n"])
        if track.n < n + window // 2:
            return False
        med, scale = robust(track.tail(window, skip=n), 0.0)
        last = track.tail(n)
        now = sum(last) / n
        return (sum(v < med for v in last) >= p["fall_k"] and now < p["fall_ratio"] * med
                and med - now > p["fall_z"] * scale / math.sqrt(n))

    def observe(self, step: int) -> Finding | None:
        seen = self.seen
        if seen == 0:
            self._first = self.ctx.tracks[ENTROPY].last
        # Detector.observe, inlined (one Python call less a logged entropy)
        seen = self.seen = seen + 1
        if seen <= self.warmup:
            if seen == ADAPT_AT:
                self.adapt_warmup()
            if seen <= self.warmup:
                return None
        if seen == self.warmup + 1:
            self.on_warm()
        return self.check(step)

    def check(self, step: int) -> Finding | None:
        p = self.p
        if self.seen == self.warmup + 1 and self._first == self._first and self.base is not None:
            # the policy before any update is the natural reference: an entropy that collapsed during the
            # warm-up steps must not become the baseline
            self._warm_median = self.base
            self.base = max(self.base, self._first)
        track = self.ctx.tracks[ENTROPY]
        if not self._shift.above(track):  # _sudden's gate, inlined: the usual step is above the bar
            sudden = self._sudden_below(step, track)
            if sudden is not None:
                return sudden
        if not self._held.above(track):  # the held-step rule's gate, as above
            sudden = self._sudden_below(step, track, held=True)
            if sudden is not None:
                return sudden
        s = track.mean_steps(p["smooth"])
        if s >= p["fall_guard"] * self.base:
            self._streak = 0
            return self._slow_fall(step, track)
        ratio = s / max(self.base, 1e-12)
        # the level ``fall_lag`` steps ago, smoothed like ``s``: one high value of a 1-prompt run is no level to halve
        before = track.mean_back(p["fall_lag"], p["smooth"], int(p["smooth"]))
        vals = {"entropy": s, "baseline": self.base, "ratio": ratio, "entropy_lag": before}
        if self.sustained(ratio < p["critical_ratio"], p["sustain"]):
            if self.repeats(step, "critical"):
                return None
            return self.fire(step, "critical", f"Entropy collapsed to {fmt(s)} ({ratio:.0%} of its warm-up level {fmt(self.base)})",
                             "The policy became nearly deterministic: exploration is gone.", values=vals, samples=True, event=True)
        fast = before == before and s < p["fall_ratio"] * before and self._out_of_noise(before - s, track)
        # a low level is what a ``drift_smooth`` mean says: a 3-step mean of a noisy low entropy dips under the bar
        low = ratio < p["warn_ratio"] and track.mean_last(p["drift_smooth"]) < p["warn_ratio"] * self.base
        if fast or (low and self._stalling()):
            return self.fire(step, "warning", f"Entropy falling fast: {fmt(before)} -> {fmt(s)} (warm-up {fmt(self.base)})",
                             values=vals)
        return None


@register_detector("entropy_explosion")
class EntropyExplosion(FrozenBaseline):
    """Entropy explosion (sampling turning into noise). By ratio: smoothed entropy > ``warn_ratio`` (warning; the
    metric guide's entropy ``rise_factor``) or ``critical_ratio`` (critical) x the warm-up level (at least the
    guide's entropy ``collapse_below``: a ratio to a near-zero warm-up means nothing) for ``sustain`` steps. By
    range (warning): ``k`` of the last ``n`` values above the median of the ``window`` values before them by more
    than ``z`` robust scale units (1.4826 x MAD, at least ``rel_floor`` x that median and the guide's
    ``collapse_below``) and by ``min_rise`` x that median. Why both: a run whose entropy is steady and low-noise
    (a small model on a short-answer task) can triple its spread of answers after a far too large update and stay
    just under twice its warm-up level. The ratio's critical is taken against at least the guide's entropy
    ``critical_from`` (0.3 nats per token, the low end of where a language model samples at temperature 1.0): a
    policy that starts almost greedy (a short-answer SFT model at 0.1) and goes back to a normal spread for a while
    (longer answers, 0.66 nats) has multiplied its entropy without sampling noise; it is warned of, a critical
    needs the entropy at ``critical_ratio`` x that level (0.9 nats) or more, on ``sustain`` consecutive checks of
    its own (magnitude and persistence: a run that rose to 2.8x its warm-up in a learning phase and sat there,
    logged every 10 steps, crosses 3x on one logged value now and then; that is its plateau's noise). Noise (critical, from the first
    logged step, no warm-up): ``sustain`` consecutive values above the guide's entropy ``noise_above`` (nats per token: no language model samples text
    that spread while it learns) and above ``critical_ratio`` x the first logged value (the policy before any
    update; a per-response entropy summed over tokens starts high and only counts once it has multiplied): a run
    that turns into noise within its first steps would otherwise make that noise its warm-up level. A new warning
    after an earlier event ended needs the entropy above that event's peak (:attr:`Detector.recurrence_gate`): a
    run that went up and came back by itself has shown that much as its own noise."""

    keys = (ENTROPY,)
    defaults = {"warn_ratio": threshold(ENTROPY, "rise_factor"), "critical_ratio": 3.0, "smooth": 3, "sustain": 3,
                "window": 50, "k": 3, "n": 4, "z": 8.0, "rel_floor": 0.05, "min_rise": 0.5}
    story = "collapse"
    cause = "updates are destroying the language model (lr too high / corrupted weights)"
    recurrence_gate = True  # a later, smaller episode than one the run recovered from is its own noise

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        causes = story_causes(self.ctx.view, ("lr", "temperature")) + update_causes(self.ctx)
        causes.append(Cause(self.cause, 0.6))
        return ranked(causes), [lr_action(self.ctx.view), kl_action(self.ctx.view)]

    def check(self, step: int) -> Finding | None:
        track = self.ctx.tracks[ENTROPY]
        s = track.mean_steps(self.p["smooth"])
        # a warm-up entropy near 0 (a collapsed or greedy start) makes any ratio to it meaningless: the reference is
        # at least the guide's collapse level
        ref = max(self.base, ENTROPY_FLOOR)
        ratio = s / ref
        if not self.sustained(ratio > self.p["warn_ratio"], self.p["sustain"]):
            self._crit_streak = 0
            return self._out_of_range(step, track)
        # the critical's reference: at least the guide's ``critical_from`` (class docstring); held for ``sustain``
        # checks of its own, as the warning's ratio is
        over = s > self.p["critical_ratio"] * max(ref, CRITICAL_FROM)
        self._crit_streak = self._crit_streak + 1 if over else 0
        sev = "critical" if self._crit_streak >= self.p["sustain"] else "warning"
        level = f"its warm-up median {fmt(self.base)}" if ref == self.base else \
            f"{fmt(ref)} (its warm-up median {fmt(self.base)} is below that)"
        return self.fire(step, sev, f"Entropy exploding: {track.raw} {fmt(s)}, {ratio:.1f}x {level}",
                         values={"entropy": s, "baseline": self.base, "reference": ref, "ratio": ratio}, samples=True)

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._level = math.nan  # slow running mean of the entropy: the cheap gate of the range rule
        self._crit_streak = 0  # consecutive checks with the smoothed entropy above the critical's bar
        self._noise_bar = math.inf  # the noise rule's bar, set on the first logged value
        self._noise_bar_first = math.nan  # ... that value
        self._noisy, self._noisy_start = 0, -1  # the current run of values above it: its length, its first step

    def observe(self, step: int) -> Finding | None:
        track = self.ctx.tracks[ENTROPY]
        last = track.last
        if self.seen == 0:
            self._noise_bar_first = last
            self._noise_bar = max(NOISE_ABOVE, self.p["critical_ratio"] * last)
        if last > self._noise_bar:
            self._noisy += 1
            if self._noisy == 1:
                self._noisy_start = step
        else:
            self._noisy = 0
        noise = self._noise(step, track) if self._noisy >= self.p["sustain"] else None
        # Detector.observe, inlined (one Python call less a logged entropy)
        seen = self.seen = self.seen + 1
        if seen <= self.warmup:
            if seen == ADAPT_AT:
                self.adapt_warmup()
            if seen <= self.warmup:
                return noise
        if seen == self.warmup + 1:
            self.on_warm()
        found = self.check(step)
        return noise if noise is not None else found

    def _noise(self, step: int, track: Track) -> Finding | None:
        """The noise rule (class docstring)."""
        if self.repeats(step, "critical", self._noisy_start):
            return None
        n = int(self.p["sustain"])
        now, first = track.mean_last(n), self._noise_bar_first
        return self.fire(step, "critical",
                         f"Entropy at noise level: {track.raw} {fmt(now)} over the last {n} logged steps, above "
                         f"{fmt(self._noise_bar)} since step {self._noisy_start} (first logged {fmt(first)})",
                         "The policy samples nearly at random: no language model writes text this spread while "
                         "it learns. The updates destroyed it (learning rate far too high, a broken loss sign or "
                         "corrupted weights).",
                         values={"entropy": now, "first": first, "bar": self._noise_bar}, step_start=self._noisy_start, samples=True)

    def _out_of_range(self, step: int, track: Track) -> Finding | None:
        """The range rule (class docstring). Gated on the newest value being well above a slow running mean, so the
        trailing window is sorted only on the rare steps that could fire."""
        p, last = self.p, track.last
        level = self._level = last if self._level != self._level else self._level + 0.05 * (last - self._level)
        if last <= (1 + 0.4 * p["min_rise"]) * level:
            return None
        floor = ENTROPY_FLOOR
        out = newest_far_above(track, p, p["min_rise"], floor, floor, p["rel_floor"])
        if out is None:
            return None
        med, scale, above, now, before, start = out
        return self.fire(step, "warning",
                         f"Entropy far above its range: {track.raw} {fmt(now)} on {len(above)} of the last {p['n']} "
                         f"logged steps, {(now - med) / scale:.0f} typical deviations above its median {fmt(med)} "
                         f"over the {before} logged steps before",
                         values={"entropy": now, "median": med, "scale": scale, "baseline": self.base},
                         step_start=start, samples=True)
