"""Outcome detectors: reward (cliff, stagnation, variance collapse, hacking); response length is in detectors_length.

Reward scales differ between tasks (0/1 accuracy, reward-model logits), so every test here is phrased
against the run's own level and noise: robust median/MAD of a trailing window or of the warm-up.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from functools import lru_cache

from rlcockpit.health.advice import (
    ENTROPY,
    GRAD,
    KL,
    kl_action,
    moved,
    ranked,
    story_causes,
)
from rlcockpit.health.base import (
    Detector,
    StartReferenced,
    Track,
    count_noise,
    diff_noise,
    fmt,
    median,
    register_detector,
    robust,
    span,
    tie_safe,
)
from rlcockpit.health.config_view import make_action
from rlcockpit.health.detectors.collapse import collapse_actions, collapse_causes
from rlcockpit.health.findings import Action, Cause, Finding
from rlcockpit.metrics.guide import lookup, threshold
from rlcockpit.metrics.score_words import is_correctness, is_format

REWARD, REWARD_STD, GROUP_STD = "critic/score/mean", "critic/score/std", "critic/score/group_std"
LEN, CLIP = "response_length/mean", "response_length/clip_ratio"
S_REPEAT, S_DISTINCT2, S_AT_LIMIT = "samples/repeat_ngram_rate", "samples/distinct_2", "samples/at_limit_rate"
S_ZERO_STD = "samples/zero_std_group_rate"
LEN_MAX = "response_length/max"
SCORE_MAX, SCORE_MIN = "critic/score/max", "critic/score/min"
FAILURES = "reward/failures"  # the reward calls that raised so far (rlcockpit's trainer scores each such sample 0)
VAL_PREFIXES = ("val-core/", "val/test_score/", "val-aux/", "eval/")
COMPONENT = "critic/score/"  # a part of the reward scored on the same samples (TRL's rewards/<fn>/mean)
EXTRA = "reward_extra/"  # what the reward function returned beside the score, on the same samples (verl)
NOT_A_SCORE = ("/std", "_std", "worst", "/max", "/min", "loss", "length", "token", "time", "clip", "truncat", "kl",
               "entropy", "per_second", "distinct")  # TRL's eval_samples_per_second, eval_reward_std: not verdicts


@lru_cache(maxsize=4096)
def quality_direction(key: str) -> int:
    """How the series ``key`` (canonical) measures quality beside the training reward: +1 when higher is better
    (a held-out score: ``val-core/*``, ``val/*``, ``eval/*``; a reward component ``critic/score/<fn>/mean`` not
    named for format or length; a reward-function field ``reward_extra/<name>/mean`` named accuracy, correct...),
    -1 when lower is better (the metric guide says so: the perplexity of evaluation samples under a frozen model),
    0 when it is no such measure (a format or length component: the policy trading a format bonus for accuracy is
    learning)."""
    info = lookup(key)
    if info is not None and info.direction == "lower" and info.category == "validation":
        return -1
    if key == REWARD or any(x in key for x in NOT_A_SCORE):
        return 0
    if key.startswith((*VAL_PREFIXES, "val/")):
        return 1
    if key.startswith("critic/score/") and key.endswith("/mean") and not is_format(key):
        return 1  # a task score (a format or length component falling while the total holds is a trade)
    if key.startswith("reward_extra/") and is_correctness(key):
        return 1
    return 0


def same_samples(key: str) -> bool:
    """Whether ``key`` is scored on the training batch the reward is: a part of the reward, or a correctness the
    reward function logged beside the score (verl's ``reward_extra/acc/mean``)."""
    return key.startswith(COMPONENT) or (key.startswith(EXTRA) and is_correctness(key))


def task_scores(ctx) -> list[str]:
    """Task scores logged on the reward's own samples (:func:`same_samples`, :func:`quality_direction` > 0)."""
    return [k for k in ctx.tracks if k != REWARD and same_samples(k) and quality_direction(k) > 0]


def new_units(reward: Track, score: Track, since: int, pairs: int, tol: float) -> bool | None:
    """Whether the reward is a task score of the same samples in new units from step ``since`` on: ``c`` x that
    score on each paired logged step since the change (the paired steps from ``since`` on, less the first ones whose
    ratio is still the one before; each ratio within a factor ``tol`` of their median ``c``, the reward 0 where the
    score is 0, the last ``pairs`` judged once there are that many), where on the paired steps before ``since``
    (``4 x pairs`` at most, ``pairs`` at least) the ratio was not ``c`` (outside that factor of it), and the score
    held: its mean since the change is under its mean before by at most ``1 - 1/tol`` of it or 3 noise units of the
    difference (a mean of a few 0/1 scores swings that much by chance). A reward divided by the response length of
    answers all about as long, or a server answering in percent, is the same score in other units: under
    group-scaled advantages the policy gets the same updates, and the level it moved to is no fall and no rise of
    what the policy does. False when it is not: a reward that scores something else on the same samples (labels read
    backwards, shuffled) is no steady multiple of it, and a policy that got worse moves the score with the reward (the
    ratio stays, or the score fell). None while fewer than ``pairs`` paired steps since the change all fit one
    multiple: too early to tell."""
    got = dict(zip(reversed(score.steps), reversed(score.values)))
    now: list[tuple[float, float]] = []
    was: list[tuple[float, float]] = []
    for st, r in zip(reversed(reward.steps), reversed(reward.values)):  # newest first, back to 4 x pairs before since
        v = got.get(st)
        if v is None:
            continue
        if st >= since:
            now.append((r, v))
        elif len(was) < 4 * pairs:
            was.append((r, v))
        else:
            break
    before = sorted(r / v for r, v in was if v != 0.0)
    if len(was) < pairs or not before:
        return False
    c0 = before[len(before) // 2]
    while now and now[-1][1] != 0.0 and c0 / tol < now[-1][0] / now[-1][1] < c0 * tol:
        now.pop()  # the oldest since ``since`` still at the old ratio: the change had not come yet
    last = now[:pairs]
    ratios = sorted(r / v for r, v in last if v != 0.0)
    if not ratios or ratios[0] <= 0.0 or any(v == 0.0 and abs(r) > 1e-9 for r, v in last):
        return False
    c = ratios[len(ratios) // 2]
    if ratios[-1] > tol * c or ratios[0] < c / tol or c / tol < c0 < tol * c:
        return False
    was_scores = [v for _r, v in was]
    level = sum(was_scores) / len(was)
    noise = max(diff_noise(was_scores), count_noise(was_scores)) * math.sqrt(1.0 / len(now) + 1.0 / len(was))
    if level - sum(v for _r, v in now) / len(now) > max(3.0 * noise, (1.0 - 1.0 / tol) * abs(level)):
        return False
    return True if len(last) >= pairs else None


@dataclass
class _Pairing:
    """The reward against one task score scored on the same samples (:class:`RewardCliff`'s fell-under and parted
    rules)."""

    recent: deque  # the last ``under_span`` paired observations since the two parted: (step, score - reward, reward)
    exact: int = 0  # paired observations equal before the first unequal one (-1: not these rules')
    level: float = math.nan  # the reward's level over them (set when they part)
    noise: float = math.nan  # and its noise
    fired: bool = False
    since_parted: int = 0  # paired observations since the two parted, counted up to ``window``
    parted_at: int = -1  # the step they parted at


@register_detector("reward_cliff", "reward_drop")
class RewardCliff(StartReferenced):
    """Sudden reward drop. The smoothed reward (mean of ``smooth``) is compared with the median of a trailing
    ``window`` ending ``gap`` steps earlier, in units of that window's noise (MAD/sqrt(smooth), the MAD at least the
    sampling noise of a mean of 0/1 scores, :func:`~rlcockpit.health.base.count_noise`).
    Warning: ``z_warn`` units and a drop of ``drop_warn`` x the reference level (or the reward span seen), the median
    of the last ``smooth`` rewards ``z_warn`` units down too (one outlying step drags their mean down).
    Critical: ``z_critical`` units and ``drop_critical`` x the level. Either only once the low level held for
    ``hold_steps`` steps or three observations (the reference frozen where the drop began): a dip that recovers
    at once is the run's noise. A drop is opened when the smoothed reward falls 2 deviations under its EMA, and stays
    open for up to ``window`` steps while it is 2 noise units under the frozen reference (the EMA follows the drop
    down and its deviation grows with it: two low steps later it no longer calls a reward that fell 0.44 -> 0.2
    low). The trailing window must hold ``min_reference`` observations or more (the median
    and MAD of a handful of values are no level and no noise: a reward over 36 completions, logged every 2 steps,
    dips 30% for a few steps at step 18 and is back at step 24); before that, only the warm-up test below.

    During warm-up (no trailing window yet) the reference is the run's first logged reward, i.e. the policy
    before any update: critical when each of the last ``smooth`` rewards is below ``early_drop`` x it and the
    fall is more than ``drop_critical`` x the reward's scale (the larger of that first reward and the range of
    individual rewards, ``critic/score/max`` - ``critic/score/min``, when logged; more than ``drop_warn`` x it:
    a warning; less: nothing) (a collapse in the first few steps, as a far too high lr produces, would otherwise
    become the baseline); only a warning when the reward spread was exactly 0 on some step (groups so small that
    one step's mean is noise). Without a logged max/min the range is at least sqrt(2) x the largest logged reward
    spread (``critic/score/std``, TRL's ``reward_std``): a standard deviation of n >= 2 values is at most their
    range / sqrt(2).

    Fell under its task score (warning, once): a task score logged on the reward's own samples (a reward component
    not named for format, the correctness a reward function logs beside the score: TRL's ``rewards/accuracy/mean``
    at weight 0 beside a paid ``reward``) that the reward equalled exactly on its first ``under_exact_min`` paired
    observations or more (the reward *is* that score), and then, over the last ``under_span`` paired observations,
    is above the reward on most of them, while the reward's own mean over them is ``z_under`` of the reward's
    step-to-step noise over the equal stretch (at least the sampling noise of a mean of 0/1 scores; of such a mean)
    under its level over that stretch, and the mean gap is either ``drop_warn`` x that level and ``z_under`` of that
    noise, or, where the score held (the gap is ``under_share`` of the reward's fall or more: the score itself fell
    at most the rest, and it stood at the same level), ``under_min`` x the level: the reward fell and the score it
    stood for did not. Noise cannot open a gap that was exactly 0 for that long, so the fall is seen while the
    reward's own noise still hides it from the cliff test above: the reward itself changed (labels shuffled, a
    reward function or server that no longer scores what it did, a strict grader rolled out to a growing share of
    the samples, a clip bound shrinking), and the policy is now trained on it. A reward that slides off its score
    slowly (a ramp) opens a gap that stays under ``drop_warn`` x the level for a while after the reward has left
    its range; the score holding is the evidence there. A policy that got worse moves both: where the score fell
    with the reward (more than a quarter of the reward's fall at the default share), the larger gap is asked for.

    Parted from its task score both ways (warning, once): a reward that equalled such a score exactly on its first
    ``under_exact_min`` paired observations or more, and then, within ``window`` paired observations of the parting,
    over those since the two parted (the last ``under_span`` at most), is above it on ``part_each`` of them or more and under it on ``part_each``
    or more, the two ``drop_warn`` x the reward's level over the equal stretch apart on average. A bonus added to
    the score only lifts the reward, a penalty or a failed grading call only lowers it; both ways at once, the reward
    is no longer that score plus or minus a term: it scores something else on the same samples (scores cached by
    question rather than by response, another grader, shuffled labels), whatever its level does, and the policy is
    now trained on it. (A term that slides in, a noise or a share of shuffled labels ramping up, parts them both
    ways but by little at first: the gap bar keeps it out, and a reward that slides off later is the fell-under
    rule's.)

    New units (no finding): neither the drop nor the fell-under rule fires while the reward is a steady multiple of
    a task score of the same samples, other than before, with the score held (:func:`new_units`: ``unit_pairs``
    paired steps or more, each ratio within a factor ``unit_tol`` of their median). A reward divided by the response
    length of answers all about as long (a normalisation meant for log-probs) or a reward server answering in a
    hundredth of its units is the same score in other units: under group-scaled advantages the policy is trained
    exactly as before, and the level the reward moved to says nothing about the policy.

    Reward calls failing (warning): the trainer's count of reward calls that raised (``reward/failures``: each such
    sample scored 0, a time-out, a crash on a malformed answer) grew on ``failure_steps`` logged steps within
    ``failure_window`` logged steps. The guide's healthy value is 0 and its alarm a growing count; a single failed
    call is a transient, a count that keeps growing is a grader that fails under load, and the reward the policy is
    trained on is zeroed for those samples before its level shows it."""

    keys = (REWARD, SCORE_MAX, SCORE_MIN, FAILURES)
    defaults = {"window": 20, "gap": 3, "smooth": 3, "z_warn": 5.0, "z_critical": 8.0, "drop_warn": 0.2,
                "drop_critical": threshold(REWARD, "cliff_drop_fraction"), "ema": 0.1, "early_drop": 0.25,
                "hold_steps": 4, "min_reference": 10, "under_exact_min": 50, "under_span": 10, "z_under": 3.0,
                "under_share": 0.75, "under_min": 0.1, "part_each": 3, "failure_steps": 2, "failure_window": 20,
                "unit_pairs": 5, "unit_tol": 1.3}
    story, role = "collapse", "outcome"
    cause = "policy update too large: the policy drifted far from the reference and collapsed"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        if "failures" in finding.evidence["values"]:
            return [Cause("the reward function raises on some samples (a grader timing out under load, a parser "
                          "crashing on some answers): each such sample is scored 0", 0.8)], []
        causes = collapse_causes(self, finding)
        if "above_steps" in finding.evidence["values"]:
            causes.append(Cause("the reward function changed: it no longer scores what the task score beside it "
                                "scores (scores cached by question, another grader, shuffled labels)", 0.8))
            return ranked(causes), collapse_actions(self)
        if not any(moved(self.ctx, k, up=1.5, down=0.67) for k in (KL, GRAD, ENTROPY)):
            causes.append(Cause("the reward itself changed (reward function, reward server or data), not the policy: "
                                "KL, entropy and gradient norm did not move", 0.65))
        return ranked(causes), collapse_actions(self)

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._ema = math.nan
        self._emad = 0.0
        self._lo, self._hi = math.inf, -math.inf
        self._low_since: int | None = None
        self._low_n = 0
        self._frozen = (math.nan, math.nan)
        self._under: dict[str, _Pairing] = {}  # a task score's key -> the reward against it
        # the reward-calls-failing rule: the failure count at the last logged step, the steps it grew at
        self._failed = math.nan
        self._failed_at: deque[tuple[int, int]] = deque(maxlen=max(1, int(self.p["failure_steps"])))
        self._failed_n = 0  # logged failure counts seen
        # the task scores on the reward's samples and the failure count's track, for the key set of ``_n_tracks``
        # tracks (tracks are never removed: a new key is a longer dict)
        self._n_tracks = -1
        self._scores: list[str] = []
        self._failed_track: Track | None = None

    def check_early(self, step: int, track: Track) -> Finding | None:
        k = self.p["smooth"]
        if self._start <= 0 or self.seen <= k:
            return None
        recent = track.tail(k)
        if max(recent) >= self.p["early_drop"] * self._start:
            return None
        s = sum(recent) / k
        spread = self._sample_range()
        if self._start - s <= self.p["drop_warn"] * spread:
            return None  # 0.016 -> 0 on a 0..1 score: 4 right answers of 256 -> none, not a cliff
        vals = {"reward": s, "reward_before": self._start, "drop": self._start - s,
                "relative_drop": 1 - s / self._start}
        std = self.ctx.tracks.get(GROUP_STD) or self.ctx.tracks.get(REWARD_STD)
        # a spread that is exactly 0 on some step: groups so small that one agreeing group moves the mean this far
        small = std is not None and any(v <= 1e-12 for v in std.values)
        big = self._start - s > self.p["drop_critical"] * spread
        of_range = f", {(self._start - s) / spread:.0%} of the reward's range {fmt(spread)}" if spread > self._start else ""
        return self.fire(step, "warning" if small or not big else "critical",
                         f"Reward fell right after the start: {fmt(self._start)} at the first logged step -> {fmt(s)} "
                         f"({1 - s / self._start:.0%} drop{of_range})", "The first updates destroyed what the initial "
                         "policy could do.", values=vals | {"reward_range": spread}, step_start=step - k + 1,
                         extra_keys=("actor/kl_loss", "actor/entropy"), samples=True)

    def _sample_range(self) -> float:
        """The scale a drop of the mean reward is judged on: the larger of the first reward and the range of the
        individual rewards seen so far (``critic/score/max`` - ``critic/score/min``, when the run logs them). A
        mean reward of 0.016 on a 0..1 score has no room to fall off a cliff: its fall to 0 is 1.6% of the range.
        Where the run logs no max/min but a spread of the rewards (``critic/score/std``, TRL's ``reward_std``), the
        range is at least sqrt(2) x the largest spread seen (the sample standard deviation of n >= 2 values is at most
        their range / sqrt(2)): one right answer of 16 on a 0/1 score (mean 0.0625, std 0.25) is no level to fall from."""
        tracks = self.ctx.tracks
        hi, lo = tracks.get(SCORE_MAX), tracks.get(SCORE_MIN)
        span = max(hi.values) - min(lo.values) if hi is not None and lo is not None and hi.n and lo.n else 0.0
        if not span:
            span = math.sqrt(2.0) * max((max(t.values) for t in (tracks.get(REWARD_STD), tracks.get(GROUP_STD))
                                         if t is not None and t.n), default=0.0)
        return max(abs(self._start), span, 1e-12)

    def check(self, step: int) -> Finding | None:
        found = self._cliff(step)
        tracks = self.ctx.tracks
        if len(tracks) != self._n_tracks:  # a new key: what this detector reads beside the reward, looked up again
            self._n_tracks = len(tracks)
            self._scores = self.ctx.per_keyset("reward_cliff.task_scores", task_scores)
            self._failed_track = tracks.get(FAILURES)
        failed = self._failed_track
        if failed is not None and failed.last_step == step:
            found = self._failing(step, failed) or found
        for key in self._scores:
            under = self._fell_under(step, key)
            found = found or under
        return found

    def _failing(self, step: int, track: Track) -> Finding | None:
        """The *reward calls failing* rule (class docstring), O(1) a logged failure count. A count that goes down
        (a resume restarts it) is taken as the new level."""
        p = self.p
        self._failed_n += 1
        v, before = track.last, self._failed
        if before != before:  # the first count this rule sees: the one before it, else none (0)
            before = track.values[-2] if track.n >= 2 else 0.0
        self._failed = v
        if not v > before:
            return None
        grew = self._failed_at
        grew.append((self._failed_n, step))
        if len(grew) < grew.maxlen or grew[-1][0] - grew[0][0] >= p["failure_window"]:
            return None
        start = grew[0][1]
        if self.repeats(step, "warning", start):
            return None
        vals = {"failures": v, "failing_steps": len(grew), "window": int(p["failure_window"])}
        return self.fire(step, "warning",
                         f"Reward calls failing: {track.raw} grew on {len(grew)} logged steps within "
                         f"{int(p['failure_window'])}, {fmt(v)} failed calls so far",
                         "The reward function raises on some samples and the trainer scores each of them 0: the "
                         "policy is trained on a reward zeroed for those samples, before its level shows it.",
                         metric=FAILURES, values=vals, step_start=start)

    def _parted(self, step: int, key: str, score: Track, reward: Track, pair: _Pairing) -> Finding | None:
        """The *parted from its task score both ways* rule (class docstring): over the paired observations since
        the two parted (the last ``under_span`` at most), the reward above its score on ``part_each`` or more and
        under it on ``part_each`` or more. Asked on ``window`` paired observations a score at most."""
        recent = pair.recent
        above = sum(1 for _s, d, _r in recent if d < 0.0)
        below = sum(1 for _s, d, _r in recent if d > 0.0)
        if above < self.p["part_each"] or below < self.p["part_each"]:
            return None
        w = len(recent)
        apart = sum(abs(d) for _s, d, _r in recent) / w
        if apart < self.p["drop_warn"] * abs(pair.level):
            return None  # a term that slides in (a noise or a share of shuffled labels ramping up) parts them a little
        pair.fired = True
        start = next(s for s, d, _r in recent if d != 0.0)
        vals = {"exact_steps": pair.exact, "window": w, "above_steps": above, "below_steps": below, "apart": apart,
                "reward_before": pair.level, "reward": sum(x for _s, _d, x in recent) / w,
                "signals": [f"{reward.raw} - {score.raw}: 0 on {pair.exact} steps, then above on {above} and under "
                            f"on {below} of {w}"]}
        return self.fire(step, "warning",
                         f"Reward parted from {score.raw}: the two were equal, scored on the same samples, on "
                         f"{pair.exact} logged steps in a row; since they parted {reward.raw} was above it on {above} "
                         f"and under it on {below} of {w} logged steps, {fmt(apart)} apart on average",
                         "The reward is no longer that score plus a bonus or minus a penalty: the reward function "
                         "scores something else on the same samples (scores cached by question, another grader, "
                         "shuffled labels), and the policy is being trained on it.", metric=REWARD, values=vals,
                         step_start=start, extra_keys=(key,))

    def _fell_under(self, step: int, key: str) -> Finding | None:
        """The *fell under its task score* rule (class docstring), O(1) a paired step but at the step the two part
        (the reward's level and noise over the equal stretch, once)."""
        reward, score = self.ctx.tracks[REWARD], self.ctx.tracks[key]
        if score.last_step != step:
            return None
        p = self.p
        pair = self._under.get(key)
        if pair is None:
            pair = self._under[key] = _Pairing(deque(maxlen=int(p["under_span"])))
        if pair.exact < 0 or pair.fired:
            return None
        r, v = reward.last, score.last
        if pair.level != pair.level:  # still equal so far
            if abs(r - v) <= 1e-6 * max(1.0, abs(r)):
                pair.exact += 1
                return None
            if pair.exact < p["under_exact_min"]:
                pair.exact = -1  # the reward was not that score for long: a second term, not this rule's
                return None
            equal = reward.tail(min(pair.exact, 200), skip=1)
            pair.level = sum(equal) / len(equal)
            pair.noise = max(diff_noise(equal), count_noise(equal), 1e-9)
            pair.parted_at = step
        recent = pair.recent
        recent.append((step, v - r, r))
        if pair.since_parted < p["window"]:  # the parted rule: within ``window`` paired observations of the parting
            pair.since_parted += 1
            parted = self._parted(step, key, score, reward, pair)
            if parted is not None:
                return parted
        if len(recent) < recent.maxlen:
            return None
        w = len(recent)
        level, noise = pair.level, pair.noise / math.sqrt(w)
        under = sum(d for _s, d, _r in recent) / w
        fall = level - sum(x for _s, _d, x in recent) / w
        if 2 * sum(1 for _s, d, _r in recent if d > 0.0) <= w or fall < p["z_under"] * noise:
            return None
        if (under < p["drop_warn"] * abs(level) or under < p["z_under"] * noise) \
                and (under < p["under_share"] * fall or under < p["under_min"] * abs(level)):
            return None  # a small gap, and the score fell with the reward (the policy, not the reward, moved)
        start = next(s for s, d, _r in recent if d > 0.0)
        if new_units(reward, score, pair.parted_at, int(p["unit_pairs"]), p["unit_tol"]) is not False:
            return None  # the score in other units (class docstring): no fall of what the policy does
        pair.fired = True
        vals = {"reward": level - fall, "reward_before": level, "quality": v, "under": under, "drop": fall,
                "exact_steps": pair.exact, "window": w,
                "signals": [f"{score.raw} - {reward.raw} 0 -> {fmt(under)} over {w} steps"]}
        return self.fire(step, "warning",
                         f"Reward fell under {score.raw}: the two were equal, scored on the same samples, on "
                         f"{pair.exact} logged steps in a row; over the last {w} {reward.raw} was {fmt(under)} under it "
                         f"on average ({reward.raw} {fmt(level)} -> {fmt(level - fall)}, {score.raw} held)",
                         "The reward no longer pays for what the task score counts right: the reward itself changed "
                         "(shuffled or wrong labels, a reward function or server that scores something else), and "
                         "the policy is being trained on it.", metric=REWARD, values=vals, step_start=start,
                         extra_keys=(key,))

    def _new_units(self, reward: Track, since: int) -> bool:
        """Whether the reward is, or may be, a task score of its own samples in new units from ``since`` on
        (:func:`new_units`: true, or too early to tell; class docstring). Asked only on a held drop."""
        tracks, p = self.ctx.tracks, self.p
        return any(new_units(reward, tracks[key], since, int(p["unit_pairs"]), p["unit_tol"]) is not False
                   for key in self._scores)

    def _cliff(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[REWARD]
        v = track.last
        if self._ema != self._ema:
            self._ema = v
        s = track.mean_last(p["smooth"])
        gated = s < self._ema - 2.0 * self._emad
        self._emad += p["ema"] * (abs(v - self._ema) - self._emad)
        self._ema += p["ema"] * (v - self._ema)
        self._lo, self._hi = min(self._lo, v), max(self._hi, v)
        if not gated and self._low_since is not None and step - self._low_since <= p["window"]:
            # a drop under way stays low against the reference frozen where it began: the EMA follows the drop
            # down (and its deviation grows with it), so after two or three low steps it no longer calls them low
            ref, scale = self._frozen
            gated = s < ref - 2.0 * scale / math.sqrt(p["smooth"])
        if not gated:
            self._low_since = None
            return None
        if self._low_since is None:  # the reference is frozen when the drop starts
            ref_vals = track.tail(p["window"], skip=p["gap"])
            if len(ref_vals) < p["min_reference"]:
                return None  # the MAD of five values is no noise level: a run logged every 2 steps, at step 18
            self._low_since, self._low_n = step, 0
            med, scale = tie_safe(ref_vals, 0.01, 1e-9)
            self._frozen = (med, max(scale, count_noise(ref_vals)))  # at least the sampling noise of 0/1 scores
        self._low_n += 1
        ref, scale = self._frozen
        noise = scale / math.sqrt(p["smooth"])
        drop = ref - s
        level = max(abs(ref), self._hi - self._lo, 1e-9)
        z, rel = drop / noise, drop / level
        if z > p["z_warn"] and (ref - median(track.tail(p["smooth"]))) / noise <= p["z_warn"]:
            z = 0.0  # one outlying step drags the mean of the last few down: the median of them must be down too
        vals = {"reward": s, "reward_before": ref, "drop": drop, "z": z, "relative_drop": rel}
        onset = self._low_since - (p["smooth"] - 1) * max(1, track.last_step - track.tail_steps(2)[0])
        held = step - self._low_since >= p["hold_steps"] or self._low_n >= 3  # a dip that recovers is noise
        if not held or self._new_units(track, onset):
            return None
        if z > p["z_critical"] and rel > p["drop_critical"]:
            return self.fire(step, "critical", f"Reward fell off a cliff: {fmt(ref)} -> {fmt(s)} ({rel:.0%} drop)",
                             "A sudden drop, far outside the run's own noise.", values=vals, step_start=onset,
                             extra_keys=("actor/kl_loss", "actor/entropy"), samples=True)
        if z > p["z_warn"] and rel > p["drop_warn"]:
            return self.fire(step, "warning", f"Reward dropped: {fmt(ref)} -> {fmt(s)}", values=vals, step_start=onset)
        return None


@register_detector("reward_stagnation", "reward_plateau")
class RewardStagnation(Detector):
    """Reward not improving: median of the last 30 steps within ``min_gain_z`` noise units of the median
    ``window`` steps earlier, while below ``ceiling`` x the best seen (info; plateaus can be healthy)."""

    keys = (REWARD,)
    defaults = {"window": 100, "min_gain_z": 1.0, "every": 10}
    due_every = "every"  # check runs on one observation in ``every`` (Detector.gate)
    common = {"enabled": True, "warmup": 30, "cooldown": 200}
    cause = "the task is too hard or too easy for the model, or the learning rate is too low"

    def check(self, step: int) -> Finding | None:
        track = self.ctx.tracks[REWARD]
        if track.n < self.p["window"]:
            return None
        old_med, old_scale = robust(track.tail(30, skip=self.p["window"] - 30), 0.01, 1e-9)
        new_med = median(track.tail(30))
        if new_med - old_med < self.p["min_gain_z"] * old_scale / math.sqrt(30) * 3:
            return self.fire(step, "info", f"Reward flat for {self.p['window']} steps ({fmt(old_med)} -> {fmt(new_med)})",
                             values={"before": old_med, "now": new_med}, step_start=step - self.p["window"])
        return None


@register_detector("reward_variance_collapse", "zero_advantage")
class RewardVarianceCollapse(Detector):
    """Reward variance collapsed (every sample gets the same reward -> zero advantage -> no learning signal).
    The spread (``critic/score/std``) counts as low below ``warn_ratio`` x its warm-up mean, and as collapsed
    once low on n consecutive observations, n from :meth:`persistence` (``sustain`` for a run whose spread was
    never low before; up to ``max_sustain`` for a spread over a few samples that is often 0 by chance). Warning
    then; critical when also < ``critical_ratio`` x the warm-up mean and the spread was never low before.
    Saturation (the reward at its best) is reported as info. Also a warning: ``samples/zero_std_group_rate`` >
    ``zero_group_warn``."""

    keys = (REWARD_STD, GROUP_STD, S_ZERO_STD)
    defaults = {"warn_ratio": 0.3, "critical_ratio": 0.1, "zero_group_warn": threshold(S_ZERO_STD, "warn_above"), "sustain": 3, "max_sustain": 30,
                "chance": 0.0001}
    triggers = keys  # whichever spread the run logs
    story = "entropy"
    cause = "every sample of a group gets the same reward (tasks too easy/hard for the model)"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        view = self.ctx.view
        causes = story_causes(view, ("rollout_n", "temperature", "entropy_penalty", "entropy_coeff")) + [Cause(self.cause, 0.6)]
        e = moved(self.ctx, ENTROPY, down=0.5)
        if e is not None:
            causes.append(Cause("the policy stopped exploring: entropy fell with the reward spread", 0.65, e.text))
        n = view.current_number("rollout.n") or 4
        return ranked(causes), [make_action(view, "More and more diverse samples per prompt; drop zero-variance groups",
                                            {"rollout.n": int(n) * 2, "algorithm.filter_groups.enable": True,
                                             # a bound (verl's DAPO scripts use 10): with the default 0 (no limit) a run
                                             # whose groups are all uniform would generate forever
                                             "algorithm.filter_groups.metric": "seq_reward",
                                             "algorithm.filter_groups.max_num_gen_batches": 10})]

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.base: float | None = None
        self._best = -math.inf
        self._obs = 0  # observations of the spread since warm-up began, and how many of them were low
        self._low = 0

    def persistence(self) -> int:
        """Consecutive low observations needed before the spread counts as collapsed. A reward std over one small
        group (TRL with one prompt x 6 completions) is exactly 0 whenever that group agrees; if the run's spread
        was low on a share ``q`` of its earlier steps (with a prior), a run of n low steps happens by chance
        with probability q**n, so n makes that < ``chance`` (between ``sustain`` and ``max_sustain``)."""
        before = self._obs - self._streak
        q = (self._low - self._streak + 1.5) / (before + 4)  # prior: 1.5 low in 4 (nothing known yet)
        n = math.ceil(math.log(self.p["chance"]) / math.log(q))
        return int(min(self.p["max_sustain"], max(self.p["sustain"], n)))

    def check(self, step: int) -> Finding | None:
        tracks = self.ctx.tracks
        # TRL's reward_std is the within-group std (critic/score/group_std): the better signal when logged
        std_t, mean_t = tracks.get(GROUP_STD) or tracks.get(REWARD_STD), tracks.get(REWARD)
        if std_t is not None and std_t.n > self.warmup and std_t.last_step == step:
            if self.base is None:
                warm = std_t.tail(self.warmup, skip=1)
                self.base = sum(warm) / len(warm)  # the mean: a median of a spread that is often 0 is 0
                self._obs = len(warm)
                self._low = sum(1 for v in warm if v < self.p["warn_ratio"] * self.base)
            v = std_t.last
            low = v < self.p["warn_ratio"] * self.base
            self._obs += 1
            self._low += low
            if mean_t is not None and mean_t.n and mean_t.last > self._best:
                self._best = mean_t.last
            if self.sustained(low and self.base > 1e-12, 1) and self._streak >= self.persistence():
                n = min(self._streak, len(std_t.values))
                s = std_t.mean_last(n)
                ratio = s / self.base
                reward = mean_t.mean_last(3) if mean_t is not None and mean_t.n else math.nan
                vals = {"reward_std": s, "baseline_std": self.base, "ratio": ratio, "reward": reward, "steps": n}
                saturated = reward == reward and reward >= self._best - 0.05 * max(abs(self._best), 1e-9)
                if saturated:
                    return self.fire(step, "info", f"Reward variance near zero at the best reward ({fmt(reward)}): task saturated",
                                     values=vals)
                # a spread that was low by chance before (small groups) is not called critical on its own
                chance_before = self._low - self._streak > 0
                sev = "critical" if ratio < self.p["critical_ratio"] and not chance_before else "warning"
                return self.fire(step, sev, f"Reward spread collapsed: {std_t.raw} averaged {fmt(s)} over the last {n} "
                                 f"logged steps, {ratio:.0%} of its warm-up mean {fmt(self.base)}: zero advantages",
                                 "All samples of a group get the same reward, so GRPO has no learning signal.",
                                 values=vals, samples=True, step_start=std_t.steps[-n])
        zt = tracks.get(S_ZERO_STD)
        if zt is not None and zt.last_step == step and zt.last > self.p["zero_group_warn"]:
            return self.fire(step, "warning", f"{zt.last:.0%} of prompt groups have identical rewards (zero advantage)",
                             metric=S_ZERO_STD, values={"zero_std_group_rate": zt.last}, samples=True)
        return None


def falling(values: list[float], windows: tuple[int, ...], z: float) -> tuple[float, float, int] | None:
    """(first third's median, last third's median, window) when one of ``windows`` recent ``values`` falls steadily:
    the medians of its thirds fall, each step by a quarter of the fall or more, by ``z`` noise units of a
    third's median (the mirror of :func:`~rlcockpit.health.base.climb`)."""
    for window in windows:
        if len(values) < window:
            break
        vals = values[-window:]
        third = window // 3
        parts = (vals[:third], vals[third : 2 * third], vals[2 * third :])
        a, b, c = (median(list(part)) for part in parts)
        fall = a - c
        if not (a > b > c) or a - b < 0.25 * fall or b - c < 0.25 * fall:
            continue
        resid = [abs(v - mm) for part, mm in zip(parts, (a, b, c)) for v in part]
        if fall >= z * max(1.4826 * median(resid) / math.sqrt(third), 1e-12):
            return a, c, window
    return None


def reward_level(vals: list[float]) -> tuple[float, float]:
    """(median, noise) of a stretch of the reward, the noise from its step-to-step changes: a reward already rising
    over the stretch must not widen its own noise band."""
    med, scale = robust(vals, 0.05, 1e-9)
    if len(vals) > 3:
        diffs = [abs(b - a) for a, b in zip(vals, vals[1:])]
        scale = max(1.4826 * median(diffs) / math.sqrt(2), 0.01 * abs(med), 1e-9)
    return med, scale


@register_detector("reward_hacking")
class RewardHacking(Detector):
    """Reward rising while sample quality degrades. The reward must be ``gain_z`` warm-up noise units above
    its warm-up level (``gain_z_held_out`` when a held-out score or a reward component is falling: that
    evidence is direct); degradation signals, each relative to the run's own warm-up level:
    repetition (``samples/repeat_ngram_rate`` > max(``repeat_abs``, 2x warm-up)), length at the limit
    (truncation ratio > warm-up + ``limit_rise``), diversity (``samples/distinct_2`` < ``distinct_ratio``
    x warm-up), entropy (< ``entropy_ratio`` x warm-up), KL (> ``kl_band`` and ``kl_ratio`` x warm-up), and
    held-out validation scores (``val-core/*``, ``val/test_score/*``) or per-function reward components falling:
    the median of their last ``val_points`` values ``val_drop`` (relative) and ``val_z`` noise units below the
    three before (a learned reward model being exploited).
    Critical: >= 2 signals, at least one of them repetition, length or validation (identical-but-correct
    samples are an entropy collapse, not hacking). Warning: one such signal. Either only while the reward's rise
    holds: its mean over the last ``rise_hold`` values ``gain_z_held_out`` noise units of such a mean above its
    warm-up level (five lucky steps of a reward over one prompt are not a rise), and every noise (the reward's,
    a held-out score's) floored at the sampling noise of a mean of 0/1 scores.
    The reward's level is re-measured after a change point downwards: when the mean of its last ``rebase_n`` values
    is ``rebase_z`` noise units of such a mean under the level and those values are level themselves (the medians of
    their halves within that many units of each other), they become the level (looked at every ``rebase_every``
    observations while the reward is not up). The reward the run optimises was changed (a reward function swapped
    mid-run, a curriculum stage, a resume with another reward): a rise is judged from where it now stands, and a
    policy that climbs back while its answers run to the length limit is exploiting the new reward before it
    passes the old level."""

    keys = (REWARD,)
    defaults = {"gain_z": 4.0, "repeat_abs": 0.2, "limit_rise": 0.15, "distinct_ratio": 0.6,
                "entropy_ratio": 0.5, "kl_band": 0.1, "kl_ratio": 3.0, "every": 3, "val_points": 2,
                "val_drop": 0.08, "val_z": 4.0, "val_span_steps": 5, "gain_z_held_out": 2.0, "rise_hold": 15,
                "rebase_n": 30, "rebase_z": 4.0, "rebase_every": 10}
    common = {"enabled": True, "warmup": 12, "cooldown": 50}
    prefixes = (*VAL_PREFIXES, "critic/score/")  # held-out scores, and reward components (rewards/<fn>/mean)
    story, role = "hacking", "outcome"
    cause = "the reward function can be satisfied without solving the task (length, keywords, format)"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        view = self.ctx.view
        causes = story_causes(view, ("kl", "entropy_penalty", "entropy_coeff"))
        signals = " ".join(finding.evidence.get("values", {}).get("signals", []))
        if "validation" in signals:
            causes.append(Cause("the (learned) reward model is being exploited: its score rises while held-out "
                                "accuracy falls", 0.85, signals))
        if "repetition" in signals or "length" in signals:
            causes.append(Cause("the reward favours length or repeated phrases", 0.75, signals))
        causes.append(Cause(self.cause, 0.6))
        return ranked(causes), [make_action(view, "Penalise the exploit in the reward (repetition/length penalty, "
                                            "stricter checks, a validation-gated reward model)", {}), kl_action(view)]

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._base: dict[str, tuple[float, float]] = {}
        self._val_scan: int | None = None
        self._val_keys: list[str] = []
        self._val_seen: dict[str, int] = {}
        self._every: int | None = None
        self._val_hit: dict[str, tuple[str, str, float]] = {}
        self._rebased: int | None = None  # the first step of the reward's level after a change point downwards

    def _baseline(self, key: str) -> tuple[float, float] | None:
        if key in self._base:
            return self._base[key]
        track = self.ctx.tracks.get(key)
        if track is None or track.n < 2:
            return None
        k = max(2, min(self.warmup, track.n // 2)) if key.startswith("samples/") else self.warmup
        if track.n <= k and not key.startswith("samples/"):
            return None
        warm = list(track.values)[:k]
        self._base[key] = reward_level(warm) if key == REWARD else robust(warm, 0.05, 1e-9)
        return self._base[key]

    def _rebase(self, track: Track, base: tuple[float, float]) -> None:
        """The reward's level re-measured after a change point downwards (class docstring)."""
        p = self.p
        n = int(p["rebase_n"])
        if self.seen % int(p["rebase_every"]) or track.n < self.warmup + n:
            return
        vals = track.tail(n)
        noise = max(base[1], count_noise(vals)) * p["rebase_z"]
        if base[0] - sum(vals) / n < noise / math.sqrt(n):
            return
        half = n // 2
        if abs(median(vals[half:]) - median(vals[:half])) > noise / math.sqrt(half):
            return  # still moving: no new level yet
        self._base[REWARD] = reward_level(vals)
        self._rebased = track.steps[-n]

    def _validation_falling(self) -> list[tuple[str, str, float]]:
        """Held-out scores (verl's ``val-core/*``, ``val/test_score/*``; per-function reward components such as
        TRL's ``rewards/accuracy/mean``) falling while the training reward rose: the reward (model) is being
        exploited. A fall of ``val_drop`` (relative) that is either sudden — the mean of the values of the last
        ``val_span_steps`` steps (at least ``val_points``, at most 8) ``val_z`` noise units below the mean of the
        twice as many before them, at least three (noise: from the series' own successive differences,
        detrended) — or steady (the medians of the thirds of the last 9 or 24 values falling by ``val_z`` + 1 noise
        units, and by 1.5 x ``val_drop``). One signal, however many such series fall."""
        k0 = int(self.p["val_points"])
        if self._val_scan is None or self.seen - self._val_scan >= 20:  # held-out series appear rarely
            self._val_scan = self.seen
            self._val_keys = [key for key in self.ctx.tracks if (key.startswith(VAL_PREFIXES) or (
                key.startswith("critic/score/") and key.endswith("/mean"))) and quality_direction(key) > 0]
        for key in self._val_keys:
            track = self.ctx.tracks[key]
            if self._val_seen.get(key) == track.n:  # nothing new logged since the last look
                if key in self._val_hit:
                    return [self._val_hit[key]]
                continue
            self._val_seen[key] = track.n
            self._val_hit.pop(key, None)
            component = not key.startswith(VAL_PREFIXES)
            k = span(track, self.p["val_span_steps"], lo=k0, hi=8)  # a series logged every step: 8 points
            m = max(3, 2 * k)
            if track.n < k + m + 1:
                continue
            vals = track.tail(64)
            ref, recent = sum(vals[-(k + m) : -k]) / m, sum(vals[-k:]) / k  # means: the most power per point
            drop = ref - recent
            steady = falling(vals, (9, 24), self.p["val_z"] + 1.0)
            if steady is not None:
                ref, recent, drop = steady[0], steady[1], steady[0] - steady[1]
            need = self.p["val_drop"] * (1.5 if steady is not None else 1.0)  # a slow wobble is not a fall
            if drop <= need * max(abs(ref), 1e-9):
                continue  # the usual look: no fall of that size, so no noise to measure it against
            if component and not self._total_held(k, m, steady[2] if steady is not None else None):
                continue  # the total reward fell with its component: no other component is being gamed
            if steady is None:  # a sudden fall: against the step-to-step changes, their trend taken out
                diffs = [b - a for a, b in zip(vals, vals[1:])]
                mid = median(diffs)
                noise = max(1.4826 * median([abs(d - mid) for d in diffs]) / math.sqrt(2), count_noise(vals))
                sudden = drop > self.p["val_z"] * noise * math.sqrt(1 / k + 1 / m)
            if steady is not None or sudden:
                what = "validation" if not component else "reward component"
                self._val_hit[key] = ("sample", f"{what} {track.raw} {fmt(ref)} -> {fmt(recent)}", recent)
                return [self._val_hit[key]]
        return []

    def _total_held(self, k: int, m: int, window: int | None) -> bool:
        """Whether the total reward did not fall over the window in which a component fell: the mean of its last
        ``k`` values at least that of the ``m`` before (a sudden fall), or the median of the last third of the
        last ``window`` values at least that of the first third (a steady one). A component falling while the
        total holds or rises means another component rose in its place (a format bonus while accuracy falls); a
        component falling with the total is the reward falling, not being gamed."""
        track = self.ctx.tracks[REWARD]
        if window is not None:
            vals, third = track.tail(window), window // 3
            return len(vals) < window or median(vals[-third:]) >= median(vals[:third])
        vals = track.tail(k + m)
        if len(vals) < k + m:
            return True
        return sum(vals[-k:]) / k >= sum(vals[:m]) / m

    def _signals(self) -> list[tuple[str, str, float]]:
        """The degradation signals present now. Runs every ``every`` steps while the reward is up, so the
        metric-side signals (entropy, KL, distinct-2) are only evaluated once a sample-side one (repetition,
        length at the limit) is present: without one there is no finding. Every baseline is still frozen on
        the first evaluation, whichever signals are looked at."""
        p, tracks, out = self.p, self.ctx.tracks, []

        def cur(key: str, k: int = 3) -> float | None:
            t = tracks.get(key)
            return t.mean_last(k) if t is not None and t.n else None

        rep, b = cur(S_REPEAT, 1), self._baseline(S_REPEAT)
        if rep is not None and b and rep > max(p["repeat_abs"], 2 * b[0] + 0.05):
            out.append(("sample", f"repetition {fmt(b[0])} -> {fmt(rep)}", rep))
        for key in (CLIP, S_AT_LIMIT):
            lim, b = cur(key, 1 if key.startswith("samples/") else 3), self._baseline(key)
            if lim is not None and b and lim > b[0] + p["limit_rise"]:
                out.append(("sample", f"responses at the length limit {fmt(b[0])} -> {fmt(lim)}", lim))
                break
        out += self._validation_falling()
        b_d2, b_ent, b_kl = self._baseline(S_DISTINCT2), self._baseline("actor/entropy"), self._baseline("actor/kl_loss")
        if not out:
            return out
        d2 = cur(S_DISTINCT2, 1)
        if d2 is not None and b_d2 and d2 < p["distinct_ratio"] * b_d2[0]:
            out.append(("metric", f"distinct-2 {fmt(b_d2[0])} -> {fmt(d2)}", d2))  # low diversity alone = entropy collapse
        ent = cur("actor/entropy")
        if ent is not None and b_ent and ent < p["entropy_ratio"] * b_ent[0]:
            out.append(("metric", f"entropy {fmt(b_ent[0])} -> {fmt(ent)}", ent))
        kl = cur("actor/kl_loss")
        if kl is not None and b_kl and kl > p["kl_band"] and kl > p["kl_ratio"] * max(b_kl[0], 1e-3):
            out.append(("metric", f"KL {fmt(b_kl[0])} -> {fmt(kl)}", kl))
        return out

    def _rise_held(self, track: Track, base: tuple[float, float]) -> bool:
        """Whether the reward's rise is more than a few lucky steps or a sample or two: its mean over the last
        ``rise_hold`` values ``gain_z_held_out`` noise units of such a mean above its warm-up level, the noise
        floored at the sampling noise of a mean of 0/1 scores (a reward over one prompt's 18 completions, or one
        that is 0 on most steps, has a warm-up spread of 0 and rises by one right answer)."""
        n = int(self.p["rise_hold"])
        vals = track.tail(n)
        scale = max(base[1], count_noise(track.tail(64)))
        return (sum(vals) / len(vals) - base[0]) / (scale / math.sqrt(len(vals))) >= self.p["gain_z_held_out"]

    def check(self, step: int) -> Finding | None:
        if self._every is None:  # every ``every`` steps: every observation of a sparse log
            self._every = span(self.ctx.tracks[REWARD], self.p["every"], lo=1, hi=int(self.p["every"]))
        every = self._every
        if every > 1 and (self.seen + self._phase) % every:  # not self.due(every), inlined
            return None
        base = self._baseline(REWARD)
        if base is None:
            return None
        track = self.ctx.tracks[REWARD]
        s = track.mean_last(5)
        gain_z = (s - base[0]) / (base[1] / math.sqrt(5))
        if gain_z < self.p["gain_z_held_out"] or s < median(track.tail(10, skip=10)) - base[1]:
            self._rebase(track, base)
            return None  # not rising (a falling reward is the cliff detector's business)
        signals = self._signals()
        sample_side = [sig for sig in signals if sig[0] == "sample"]
        held_out = any(sig[1].startswith(("validation", "reward component")) for sig in sample_side)
        if not sample_side or (gain_z < self.p["gain_z"] and not held_out):
            return None
        if not self._rise_held(track, base) or self.repeats(step, "critical" if len(signals) >= 2 else "warning"):
            return None
        desc = "; ".join(sig[1] for sig in signals)
        if self._rebased is not None:
            desc += f" (the reward's level re-measured from step {self._rebased}, after it fell to a new one)"
        vals = {"reward": s, "reward_baseline": base[0], "signals": [sig[1] for sig in signals]}
        keys = ("actor/entropy", "actor/kl_loss", CLIP, LEN, S_REPEAT, S_DISTINCT2, S_AT_LIMIT,
                *(k for k in self.ctx.tracks if k.startswith(VAL_PREFIXES)))
        if len(signals) >= 2:
            return self.fire(step, "critical", f"Reward hacking: reward up {fmt(base[0])} -> {fmt(s)} while {desc}",
                             "The policy is exploiting the reward rather than solving the task.",
                             values=vals, extra_keys=keys, samples=True)
        return self.fire(step, "warning", f"Possible reward hacking: reward up while {desc}", values=vals,
                         extra_keys=keys, samples=True)

