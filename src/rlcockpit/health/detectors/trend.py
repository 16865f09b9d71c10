"""Slow failures found by their trend against the run's early baseline (issue 29): two series that should move
together parting ways, or one growing in step with another.

- ``reward_divergence``: reward hacking seen as a divergence. The training reward drifts up (a CUSUM against its
  early level) while a held-out score or a second reward falls from its best, or while the reward rises together
  with the response length and the held-out score does not rise (a length bonus being exploited).
- ``length_memory``: memory that grows in step with the response length (a length-driven growth, not a leak).

Each compares against the run's own early level and noise (:class:`~rlcockpit.health.base.Drift`), so it is quiet
on a run whose reward, length and memory wander inside their own noise, and dates its finding from where the
drift began.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from rlcockpit.health.advice import length_pay_knobs, ranked
from rlcockpit.health.base import (
    Detector,
    Drift,
    Track,
    count_noise,
    diff_noise,
    fmt,
    median,
    register_detector,
    smallest_step,
    span,
)
from rlcockpit.health.config_view import make_action
from rlcockpit.health.detectors.memory import ALLOC, GPU_MEM, GPU_USED, RESERVED, RSS
from rlcockpit.health.detectors.reward import (
    COMPONENT,
    LEN,
    REWARD,
    VAL_PREFIXES,
    quality_direction,
    same_samples,
)
from rlcockpit.health.findings import Action, Cause, Finding
from rlcockpit.metrics.guide import threshold
from rlcockpit.metrics.score_words import is_correctness, is_format

VAL_GUIDE = "val-core/<source>/<metric>/mean@<N>"
PERPLEXITY = "eval/perplexity"
HELD_OUT = (*VAL_PREFIXES, "val/")  # held-out scores lag the training reward in a healthy run: only a fall counts
MEMORY_KEYS = (ALLOC, RESERVED, GPU_USED, GPU_MEM, RSS)


def _quality_keys(tracks: dict[str, Track]) -> list[str]:
    """Held-out scores (``val-core/*``, ``val/*``, ``eval/*``), second rewards (``critic/score/<fn>/mean``,
    TRL's ``rewards/<fn>/mean``), correctness fields and the perplexity of evaluation samples: the series a hacked
    reward leaves behind (:func:`~rlcockpit.health.detectors.reward.quality_direction`). Spreads, extremes,
    lengths and losses are not scores."""
    return [k for k in tracks if quality_direction(k) != 0]


def held_out_range(track: Track, hold: int, reference: int, min_reference: int
                   ) -> tuple[list[float], list[float], float, float] | None:
    """(reference values, last ``hold`` values, the reference's median, the noise of one evaluation) of a held-out
    score: the ``reference`` values before the last ``hold`` (None with fewer than ``min_reference``), the noise the
    larger of their step-to-step noise and the sampling noise of a mean of 0/1 scores (floored at 1% of the
    median). The range both held-out rules judge a fall against (``held_out_drop``, ``reward_divergence``)."""
    vals = track.tail(hold + reference)
    ref, recent = vals[:-hold], vals[-hold:]
    if len(ref) < min_reference:
        return None
    med = median(ref)
    return ref, recent, med, max(diff_noise(ref), count_noise(ref), 0.01 * abs(med), 1e-9)


def _paid_weighted(reward: Track, parts: list[Track], before: int, min_points: int) -> bool:
    """Whether ``reward`` is a fixed weighted sum of ``parts`` with every weight above 0 on its steps before
    ``before`` where every part was logged: the least-squares weights over those steps (at least ``min_points``, and
    three more than there are parts, so that an exact fit is evidence, not a solution of as many equations as
    unknowns) reproduce the reward to float rounding (1e-6, relative above 1) on every one of them. A part at weight
    0 (a score logged beside the reward for reference) or a reward that is no such sum (a normaliser, a penalty
    that is not logged): False. Run once a part (the *pulling away* rule's early lead), not a step."""
    k = len(parts)
    at = [dict(zip(t.tail_steps(64), t.tail(64))) for t in parts]
    rows = [([a[s] for a in at], r) for s, r in zip(reward.tail_steps(64), reward.tail(64))
            if s < before and all(s in a for a in at)]
    if len(rows) < max(min_points, k + 3):
        return False
    fit, _res, rank, _sv = np.linalg.lstsq(np.array([xs for xs, _r in rows]), np.array([r for _xs, r in rows]),
                                           rcond=None)
    if rank < k:
        return False  # a part constant at 0, or two parts that moved together: the weights are not determined
    w = fit.tolist()
    return min(w) > 1e-3 and all(abs(r - sum(wi * xi for wi, xi in zip(w, x))) <= 1e-6 * max(1.0, abs(r))
                                 for x, r in rows)


def _mean_between(track: Track, lo: float, hi: float) -> tuple[float, int]:
    """(mean, count) of the values of ``track`` logged at steps in [lo, hi]."""
    total, n = 0.0, 0
    steps, values = track.steps, track.values
    for i in range(len(steps) - 1, -1, -1):  # from the newest back: windows are recent
        s = steps[i]
        if s < lo:
            break
        if s <= hi:
            total += values[i]
            n += 1
    return (total / n, n) if n else (math.nan, 0)


@register_detector("reward_divergence", "reward_quality_divergence")
class RewardDivergence(Detector):
    """Reward hacking as a divergence between the training reward and what it should stand for.

    The reward's drift: a CUSUM of ``critic/score/mean`` (TRL: ``reward``) against its level over the first
    ``warmup`` observations, in units of its own noise (allowance ``k``, alarm ``h``). While it is past its alarm:

    - *held-out falling* (warning): a held-out score or second reward (``val-core/*``, ``val/*``, ``eval/*``,
      ``critic/score/<fn>/mean``) whose mean over its last ``points`` values lies ``drop_z`` of its own noise and
      ``drop_fraction`` (relative) below its best level (the highest median of three consecutive values: one
      outlier is not a best), while the reward rose ``gain_z`` of its own noise since that best; critical once the fall is ``critical_factor`` x as large on both counts.
      Both noises are floored at the sampling noise of a mean of 0/1 scores (:func:`~rlcockpit.health.base.count_noise`):
      a sparse reward that is 0 on most steps, or an accuracy of 4 right of 400, has a step-to-step noise of 0,
      and one more or one fewer right answer is not a divergence;
    - *length bonus* (warning): the response length also drifting up (its own CUSUM), ``bonus_growth`` x its early
      level and grown by half that share over the last ``bonus_span`` steps, while the reward rose ``gain_z`` of its
      noise over those steps, and the held-out score over the last half of them not above its level around where
      they began (by ``flat_z`` noise units of a mean): the reward is bought with length, not with accuracy. Not
      against a score on the same samples that the reward equalled on every step since a quarter window before the
      span (the reward is that score: its rise is the score's).

    - *quality worse than at the start* (a measure where lower is better, the metric guide's ``eval/perplexity``:
      the evaluation samples' perplexity under a frozen model): its newest value ``rise_ratio`` x its early level
      (the mean of its values logged during the reward's warm-up, else its first value) while the reward's mean over
      its last 3 values is ``gain_z`` of that mean's noise above the reward's early level: warning; critical once two successive values are
      ``rise_critical_ratio`` x the early level. A series logged every k steps (an evaluation every 10) is judged
      on each value as it comes, so the first evaluation after the onset can raise it.
    - *correctness flat* (warning): a correctness component of the reward itself (named accuracy, correct,
      pass@k...: ``critic/score/<fn>/mean``, a reward-function field; scored on the same samples, so it cannot lag
      the way a held-out score lags the training reward in a healthy run) whose mean since the reward's drift began
      (``flat_points`` values or more, over ``flat_span`` steps or more) is above its early level by no more than
      ``flat_se_z`` standard errors of the difference of the two means and ``flat_share`` of the reward's rise over
      the same steps (its mean over them against its mean over the same early steps, ``flat_se_z`` standard errors
      up), and below it by no
      more than one (a slide is judged as a fall), while the reward is past its alarm and its
      3-value mean ``flat_gain_z`` of that mean's noise above its early level: the reward climbs, the verdict on
      the answers does not. Not while a format component rose by half the reward's rise (a format being learned).
    - *pulling away* (warning, critical): a task score logged on the same samples as the reward (a reward component, or
      the correctness the reward function logged beside the score, verl's ``reward_extra/acc/mean``; not held out) that
      the reward leaves behind step by step: the mean of the reward's lead over it over the last
      ``gap_span`` steps ``gap_z`` of the lead's own early noise (of such a mean) above that lead during the warm-up,
      the reward itself as far up, for ``gap_hold`` paired observations (:meth:`_paired_gap`); critical once both are
      ``critical_factor`` x as large for as many observations. The difference of
      two series scored on the same prompts is far quieter than either, so a bonus the task does not count is
      seen while the reward's own noise still hides it. Where the lead *moved down* after the warm-up (its mean over
      the ``gap_ref`` paired observations before the last ``gap_span`` steps ``gap_z`` noise units of such a mean
      under the warm-up's lead: a second term came in that pays less), the lead, the reward and the score are
      judged from those observations (their means, and their step-to-step noises) instead of the warm-up: a bonus
      that then lifts the lead back is a rise from where the lead was, though the reward is not yet above its
      warm-up level. Not for a part the reward pays in full (the reward is the
      plain sum of its logged parts, or their sum at fixed weights each above 0) unless it is named for correctness:
      there the others rising is learning.
    - *lead opened* (warning): a task score the reward equalled exactly on its first ``gap_exact_min`` paired
      observations or more (the reward *is* that score: TRL's paid reward beside ``rewards/accuracy/mean``, verl's
      score beside ``reward_extra/acc/mean``), which then, over the last ``gap_span`` paired observations, is still
      exactly the score on half of them or more and leads it on ``gap_hold`` of them by the reward's own
      step-to-step noise or more, or, never under it there, leads it on ``open_many`` of them by one scored item of
      the score or more (its smallest step over the equal stretch: one answer paid that the score counts wrong): on
      those batches the reward paid in full for answers the task score counts wrong (a verifier that passes an empty
      answer, a grader that times out on long answers and fails open), again and again. A grader failing open pays
      one or two answers of a batch at first, under the reward's step-to-step noise, but on batch after batch and
      never less than the score; a fractional bonus (a length bonus ramping in) leads by less than an item. Noise
      cannot open a gap that was exactly 0 for that long, so this needs neither the reward up nor the score down
      (the first exploits pay about what the lost right answers cost). A lead on most batches is a second term of
      the reward (a bonus ramped in, a penalty) and a lead under the reward's noise on a few batches moves nothing
      yet: both are left to the graded rules. Not while a format component rose by half the lead (a format being
      learned).

    - *held-out left its range, reward held* (warning): a held-out score whose last ``left_hold`` values each lie under
      the lowest of the ``left_reference`` values before them (at least ``left_min_reference``), their mean
      ``left_z`` noise units of such a mean under those values' median (the noise: the larger of the series'
      step-to-step noise and the sampling noise of a mean of 0/1 scores), while the training reward's mean over the
      steps since the evaluation before them is not below its mean over the reference's steps by ``left_fall_z``
      standard errors of that difference (the reward's early noise), and a logged part of the reward that is no
      verdict on the task (``critic/score/<fn>/mean``, ``reward_extra/<name>/mean``) rose ``part_z`` standard errors
      over the same steps: the policy got worse on the task while the reward it is paid kept paying, for something
      else (a judge drifting from correctness). A fall with the reward is a collapse, and a fall with no part
      rising in the task's place a held-out dip (``held_out_drop``'s, both).

    - *held-out under its range, reward up* (warning): a held-out score's newest evaluation under the lowest of the
      ``left_reference`` before it (at least ``left_min_reference``), ``under_z`` noise units of one evaluation under
      their median (the noise as above) and ``under_drop`` (relative) under it, while the reward is past its alarm
      (a rise that held, not a bump between two evaluations) and its mean over the steps since the evaluation before
      it is ``under_rise_z`` standard errors of that difference (the reward's early noise, at least the sampling
      noise of a mean of 0/1 scores) above its mean over the reference's steps: the two move apart at this very
      evaluation, the reward up on the batches it trains on and the task down on data it does not (a loader stuck
      on a few prompts it memorises, a reward term). One evaluation under its range is a dip in a healthy run, and a
      reward climbing is learning; both at once, each past its own noise, is the divergence itself, and waiting for a
      second evaluation (the rule above) costs an evaluation interval.

    A run that logs no held-out score or second reward has nothing to diverge from: no finding."""

    keys = (REWARD, LEN)
    prefixes = (*VAL_PREFIXES, "val/", "critic/score/", "reward_extra/")
    defaults = {"k": 0.5, "h": 8.0, "points": 2, "drop_z": 3.0, "critical_factor": 2.0,
                "drop_fraction": threshold(VAL_GUIDE, "divergence_drop_fraction"),
                "bonus_growth": threshold(LEN, "bonus_growth_ratio"), "flat_z": 1.0, "gain_z": 3.0,
                "bonus_span": 20, "rise_ratio": threshold(PERPLEXITY, "divergence_rise_ratio"),
                "rise_critical_ratio": threshold(PERPLEXITY, "divergence_critical_ratio"), "flat_gain_z": 6.0,
                "flat_points": 3, "flat_span": 5, "flat_share": 0.1, "flat_se_z": 2.0,
                "gap_span": 10, "gap_ref": 30, "gap_z": 3.0, "gap_share": 0.5, "gap_hold": 3, "gap_min_early": 5, "gap_exact_min": 50,
                "gap_rise_share": 0.25, "left_hold": 2, "left_reference": 12, "left_min_reference": 6,
                "left_z": 4.0, "left_fall_z": 1.0, "part_z": 2.0, "open_many": 5, "under_z": 2.5, "under_rise_z": 3.0,
                # one evaluation's fall: twice what the held-out-falling rule asks of a mean of ``points`` values
                "under_drop": 2.0 * threshold(VAL_GUIDE, "divergence_drop_fraction")}
    common = {"enabled": True, "warmup": 10, "cooldown": 50}
    story, role = "hacking", "outcome"
    cause = "the reward can be satisfied without solving the task (a learned reward model exploited, a length bonus)"

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._reward: Drift | None = None
        self._length: Drift | None = None
        self._keys: list[str] = []
        self._scan = -1
        self._best: dict[str, tuple[float, int, float]] = {}  # key -> (best mean, its step, reward then)
        self._seen: dict[str, int] = {}
        self._warm_step = 0  # the first step after the reward's warm-up: a quality series' early level is before it
        self._reward_early = 0.0  # the reward's mean over the same steps (the level a correctness is compared with)
        self._early: dict[str, tuple[float, int]] = {}  # key -> (early level, values it is the mean of)
        self._worse: dict[str, int] = {}  # key -> successive values past the critical ratio
        self._format_early: dict[str, float] = {}  # format components' levels over the reward's warm-up
        # key -> the reward's early lead over that score, the score's early mean and noise (None: too few pairs)
        self._gap_early: dict[str, tuple[float, float, float, float] | None] = {}  # + the lead's early noise
        self._gap_run: dict[str, int] = {}  # key -> successive paired observations with the gap open
        # key -> (the score's count when measured, the *lead moved down* reference or None): :meth:`_lead_lower`
        self._gap_ref: dict[str, tuple[int, tuple[float, float, float, float, float, float] | None]] = {}
        self._gap_big: dict[str, int] = {}  # key -> of those, successive ones with lead and rise critical_factor x their bars
        # key -> [paired observations with the lead exactly 0 before the first nonzero one (-1: not exact), whether one
        # was nonzero, the last ``gap_span`` (step, lead)s]
        self._exact: dict[str, list] = {}

    def on_warm(self) -> None:
        p, tracks = self.p, self.ctx.tracks
        self._warm_step = tracks[REWARD].last_step
        early = [v for st, v in zip(tracks[REWARD].steps, tracks[REWARD].values) if st < self._warm_step]
        self._reward_early = sum(early) / len(early) if early else tracks[REWARD].values[0]  # as a score's early level
        self._format_early = {key: sum(t.values) / t.n for key, t in tracks.items()  # (logged from the start)
                              if key.startswith(COMPONENT) and key.endswith("/mean") and is_format(key) and t.n}
        self._reward = Drift(tracks[REWARD].tail(self.warmup, skip=1), p["k"], p["h"], 0.01, 1e-9)
        length = tracks.get(LEN)
        if length is not None and length.n > 3:
            self._length = Drift(length.tail(self.warmup, skip=1), p["k"], p["h"], 0.01, 1e-9)

    def check(self, step: int) -> Finding | None:
        tracks = self.ctx.tracks
        reward = tracks[REWARD]
        up = self._reward.update(reward.last, step)
        length = tracks.get(LEN)
        lengthening = False
        if self._length is not None and length is not None and length.last_step == step:
            lengthening = self._length.update(length.last, step)
        if self._scan < 0 or self.seen - self._scan >= 50:  # held-out series appear rarely
            self._scan = self.seen
            self._keys = _quality_keys(tracks)
        found = None
        for key in self._keys:
            track = tracks[key]
            if self._seen.get(key) == track.n:
                continue
            self._seen[key] = track.n
            if quality_direction(key) < 0:
                found = found or self._worse_than_early(step, key, track, reward)
                continue
            found = found or self._held_out_falling(step, key, track, reward, up)
            if found is None and key.startswith(HELD_OUT):
                found = self._held_out_left(step, key, track, reward) or self._held_out_under_rise(step, track, reward, up)
            paired = track.last_step == reward.last_step == step
            if found is None and paired and same_samples(key):
                found = self._lead_opened(step, key, track, reward)
            if found is None and paired and same_samples(key):
                found = self._paired_gap(step, key, track, reward)
            if found is None and not key.startswith(HELD_OUT) and is_correctness(key):
                found = self._correctness_flat(step, key, track, reward, up)
            if found is None and up and lengthening:
                found = self._length_bonus(step, key, track, reward, length)
        return found

    def _early_level(self, key: str, track: Track) -> float | None:
        """The quality series' level before the reward moved: the mean of its values logged before the end of the
        reward's warm-up (an evaluation of the starting policy at step 0, and any in the first steps), else its
        first value. Frozen on first use; None while the series has nothing after that level to judge."""
        if key not in self._early:
            before = [v for s, v in zip(track.steps, track.values) if s < self._warm_step] or [track.values[0]]
            self._early[key] = (sum(before) / len(before), len(before))
        return self._early[key][0] if track.last_step >= self._warm_step and track.n >= 2 else None

    def _reward_gain(self, reward: Track) -> float:
        """How far the reward's mean over its last 3 values is above its early level, in units of the noise of such
        a mean (a reward bounded at 1 that starts at 0.68 +- 0.12 can rise no more than 2.7 single-step noises)."""
        return (reward.mean_last(3) - self._reward.level) / (self._reward.noise / math.sqrt(3.0))

    def _worse_than_early(self, step: int, key: str, track: Track, reward: Track) -> Finding | None:
        """A lower-is-better quality measure (perplexity under a frozen model) risen ``rise_ratio`` x its early
        level while the reward climbed."""
        p = self.p
        early = self._early_level(key, track)
        if early is None or early <= 0.0:
            return None
        ratio = track.last / early
        worse = self._worse[key] = self._worse.get(key, 0) + 1 if ratio >= p["rise_critical_ratio"] else 0
        if ratio < p["rise_ratio"] or self._reward_gain(reward) < p["gain_z"]:
            return None  # (the reward's own rise is the evidence here, not its CUSUM: an evaluation every 10 steps
            # may come before the sum passes its alarm, and the next one is 10 steps late)
        r_now = reward.mean_last(3)
        crit = worse >= 2
        prev_step = track.steps[-2]
        vals = {"reward": r_now, "reward_baseline": self._reward.level, "quality": track.last,
                "quality_early": early, "ratio": ratio, "signals": [f"{track.raw} {fmt(early)} -> {fmt(track.last)}"]}
        return self.fire(step, "critical" if crit else "warning",
                         f"Reward up while quality falls: {reward.raw} {fmt(self._reward.level)} -> {fmt(r_now)} "
                         f"({self._reward_gain(reward):.0f}x the noise of its early level) while {track.raw} (lower is better) rose "
                         f"from {fmt(early)} at the start to {fmt(track.last)} ({ratio:.2f}x"
                         + (", twice in a row past " + f"{p['rise_critical_ratio']:g}x)" if crit else ")"),
                         "The samples get worse by a measure the policy is not trained on (their perplexity under "
                         "a frozen model) while the reward climbs: the policy is exploiting the reward.",
                         metric=REWARD, values=vals, step_start=prev_step, extra_keys=(key,), samples=True)

    def _paired(self, track: Track, reward: Track, n: int) -> list[tuple[int, float, float]]:
        """(step, reward, score) for the steps among the last ``n`` of ``track`` on which the reward was logged too."""
        at = dict(zip(reward.tail_steps(n + 8), reward.tail(n + 8)))
        return [(s, at[s], v) for s, v in zip(track.tail_steps(n), track.tail(n)) if s in at]

    def _equal_since(self, track: Track, reward: Track, start: int) -> bool:
        """Whether the reward equalled ``track`` (to float rounding) on every step since ``start`` both logged, and
        they logged one or more: the reward is that score over those steps."""
        pairs = [(r, v) for s, r, v in self._paired(track, reward, 64) if s >= start]
        return bool(pairs) and all(abs(r - v) <= 1e-6 * max(1.0, abs(r)) for r, v in pairs)

    def _paired_gap(self, step: int, key: str, track: Track, reward: Track) -> Finding | None:
        """The reward pulling away from a task score logged on the same samples (a reward component not named for
        format: TRL's ``rewards/accuracy/mean`` beside a paid ``reward``, Tinker's correctness ``f`` beside the
        ``g`` it trains on, verl's ``reward_extra/acc/mean`` beside ``critic/score/mean``). Both move with the same prompts' difficulty, so their difference, step by step, is far
        quieter than either: the mean of the reward's lead over the score over the last ``gap_span`` steps
        ``gap_z`` noise units of the lead itself (its step-to-step noise over the warm-up, of such a mean: 0 for a
        reward that was its score) above its lead during the warm-up, while the reward's own mean over those steps is
        ``gap_z`` of the reward's early noise (of such a mean) above its early level and the lead's rise is at least
        ``gap_share`` of the reward's rise (the score did not rise with it); ``gap_hold`` successive paired
        observations. Not while a format component rose as much (a format bonus being learned, not the task given
        up), nor while the score's own mean over those steps is ``gap_z`` of its early noise (of such a mean) under
        its early mean (a score that falls is named as a fall, :meth:`_held_out_falling`) or as far above it and by
        ``gap_rise_share`` of the reward's rise (a reward paying the score with a weight above 1 leads it more as the
        task is learned). The reward's rise must also hold without the one pair of the window with the largest lead
        (over the other ``gap_span`` - 1 pairs, against the same bar): one batch that happened to hold an answer the
        reward pays beside the task (a long answer under a length bonus) stays in the window for ``gap_span`` steps and
        would carry the mean, and the ``gap_hold`` observations, on its own; a divergence is more than one batch.
        Warning; critical once the lead and the reward's rise are each ``critical_factor`` x their
        bars on ``gap_hold`` successive paired observations (the divergence has kept growing: as for a held-out fall)."""
        p = self.p
        if key not in self._gap_early:
            self._gap_early[key] = self._early_lead(track, reward)
        if self._gap_early[key] is None:
            return None
        early_gap, score_early, score_noise, lead_noise = self._gap_early[key]
        w = span(reward, p["gap_span"], lo=3, hi=10)
        r_level, r_noise, since = self._reward.level, self._reward.noise, "early"
        lower = self._lead_lower(key, track, reward, w, early_gap)
        if lower is not None:  # the lead moved down to a new level after the warm-up: judged from there
            early_gap, score_early, score_noise, lead_noise, r_level, r_noise = lower
            since = "before"
        bar = p["gap_z"] * r_noise / math.sqrt(w)
        if reward.mean_last(w) - r_level < bar:  # the usual step: the reward is not up
            self._gap_run[key] = self._gap_big[key] = 0
            return None
        pairs = self._paired(track, reward, w)
        if len(pairs) < w:
            return None
        r_mean = sum(r for _, r, _v in pairs) / w
        gap = sum(r - v for _, r, v in pairs) / w - early_gap
        # the rise without the one pair with the largest lead: a divergence one batch carries is not one yet
        r_top = max(pairs, key=lambda x: x[1] - x[2])[1]
        rise_rest = (r_mean * w - r_top) / (w - 1) - r_level
        rise = r_mean - r_level
        moved = sum(v for *_, v in pairs) / w - score_early  # the score's own move, against its noise
        fell = -moved > p["gap_z"] * score_noise / math.sqrt(w)
        rose = moved > p["gap_z"] * score_noise / math.sqrt(w) and moved >= p["gap_rise_share"] * rise
        if gap < p["gap_z"] * lead_noise / math.sqrt(w) or rise < bar or rise_rest < bar \
                or gap < p["gap_share"] * rise or fell or rose \
                or self._format_rose(w, gap):
            self._gap_run[key] = self._gap_big[key] = 0
            return None
        run = self._gap_run[key] = self._gap_run.get(key, 0) + 1
        cf = p["critical_factor"]
        big = gap >= cf * p["gap_z"] * lead_noise / math.sqrt(w) and rise >= cf * bar
        big_run = self._gap_big[key] = self._gap_big.get(key, 0) + 1 if big else 0
        if run < p["gap_hold"]:
            return None
        crit = big_run >= p["gap_hold"]
        score = r_mean - gap - early_gap
        vals = {"reward": r_mean, "reward_baseline": r_level, "quality": score, "gap": gap + early_gap,
                "gap_early": early_gap, "noise": r_noise,
                "signals": [f"{reward.raw} - {track.raw} {fmt(early_gap)} -> {fmt(gap + early_gap)}"]}
        if lower is not None:
            vals["gap_before"] = early_gap  # (the level the lead moved down to, not the warm-up's)
        return self.fire(step, "critical" if crit else "warning",
                         f"Reward pulling away from {track.raw}: over the last {w} logged steps {reward.raw} averaged "
                         f"{fmt(r_mean)} ({fmt(r_level)} {since}) and its lead over {track.raw}, scored on the "
                         f"same samples, {fmt(gap + early_gap)} ({since} {fmt(early_gap)}; "
                         f"{gap / (r_noise / math.sqrt(w)):.1f}x the reward's noise over {w} steps"
                         + (f"; both the lead and the rise {cf:g}x their bars on {big_run} steps in a row)" if crit else ")"),
                         "The reward rises by what the task score does not count: the policy learns what the reward "
                         "pays for beside the task.", metric=REWARD, values=vals,
                         step_start=pairs[-int(p["gap_hold"])][0], extra_keys=(key,), samples=True)

    def _lead_lower(self, key: str, track: Track, reward: Track, w: int, early_gap: float
                    ) -> tuple[float, float, float, float, float, float] | None:
        """The *lead moved down* reference of :meth:`_paired_gap` (class docstring): (the lead's mean, the score's
        mean and noise, the lead's noise, the reward's mean and noise) over the ``gap_ref`` paired observations
        before the last ``w``, where that mean lead is ``gap_z`` noise units of such a mean under the warm-up's lead;
        else None. Measured again every ``w`` observations of the score (a window mean, not a per-step scan)."""
        p = self.p
        at, ref = self._gap_ref.get(key, (-(10**9), None))
        if track.n - at < w:
            return ref
        n_ref = int(p["gap_ref"])
        pairs = [x for x in self._paired(track, reward, n_ref + w)[:-w] if x[0] >= self._warm_step]
        ref = None
        if len(pairs) >= 0.7 * n_ref:
            leads = [r - v for _s, r, v in pairs]
            lead = sum(leads) / len(leads)
            lead_noise = max(diff_noise(leads), 1e-9)
            if early_gap - lead > p["gap_z"] * lead_noise / math.sqrt(len(leads)):
                rewards, scores = [r for _s, r, _v in pairs], [v for *_, v in pairs]
                ref = (lead, sum(scores) / len(scores), max(diff_noise(scores), count_noise(scores), 1e-9), lead_noise,
                       sum(rewards) / len(rewards), max(diff_noise(rewards), count_noise(rewards), 1e-9))
        self._gap_ref[key] = (track.n, ref)
        return ref

    def _lead_opened(self, step: int, key: str, track: Track, reward: Track) -> Finding | None:
        """The *lead opened* rule (class docstring), O(1) a step: the count of exact pairs, then the last leads."""
        p = self.p
        state = self._exact.setdefault(key, [0, False, deque(maxlen=int(p["gap_span"])), 0.0])
        if state[0] < 0:
            return None
        lead = reward.last - track.last
        tol = 1e-6 * max(1.0, abs(reward.last))  # float rounding of a reward that is its score
        if not state[1]:
            if abs(lead) <= tol:
                state[0] += 1
                return None
            if lead < 0.0 or state[0] < p["gap_exact_min"]:
                state[0] = -1  # the reward was not that score for long, or pays less than it: not this rule's
                return None
            state[1] = True
            state[3] = smallest_step(track.tail(min(state[0], 64), skip=1))  # one scored item of the score
        recent = state[2]
        recent.append((step, lead))
        if len(recent) < recent.maxlen or 2 * sum(1 for _s, x in recent if abs(x) <= tol) < len(recent):
            return None  # a lead on most batches is a second term of the reward: the graded rules' business
        opened = [(s, x) for s, x in recent if x >= max(self._reward.noise, tol)]
        if len(opened) < p["gap_hold"]:  # or, never under the score, an item's worth or more on ``open_many``
            items = [(s, x) for s, x in recent if x >= max(state[3], tol)]
            opened = items if len(items) >= p["open_many"] and min(x for _s, x in recent) >= -tol else []
        if not opened or self._format_rose(len(recent), sum(x for _s, x in recent) / len(recent)):
            return None
        mean = sum(x for _s, x in opened) / len(opened)
        vals = {"reward": reward.last, "quality": track.last, "exact_steps": state[0], "opened": len(opened),
                "window": len(recent), "lead": mean,
                "signals": [f"{reward.raw} - {track.raw} 0 -> {fmt(mean)} on {len(opened)} of {len(recent)} steps"]}
        return self.fire(step, "warning",
                         f"Reward paid beyond {track.raw}: the two were equal, scored on the same samples, on {state[0]} "
                         f"logged steps in a row; then {reward.raw} led it on {len(opened)} of the last {len(recent)} "
                         f"(by {fmt(mean)} on those steps)",
                         "The reward pays for answers the task score does not count, on batch after batch: the "
                         "policy has found what the reward accepts beside the task (a checker that passes an empty "
                         "or malformed answer).", metric=REWARD, values=vals,
                         step_start=opened[0][0], extra_keys=(key,), samples=True)

    def _early_lead(self, track: Track, reward: Track) -> tuple[float, float, float, float] | None:
        """(the reward's mean lead over the score, the score's mean, its noise, the lead's noise) over the pairs
        logged during the reward's warm-up; None with fewer than ``gap_min_early`` of them. The lead's noise is that
        of the difference itself (its step-to-step noise, its median change taken out): both series move with the
        same prompts, so it is far below either's, and 0 where the reward was the score (TRL's paid reward and an
        accuracy logged beside it at weight 0, until a second term comes in)."""
        pairs = [(r, v) for s, r, v in self._paired(track, reward, 64) if s < self._warm_step]
        if len(pairs) < self.p["gap_min_early"]:
            return None
        if not is_correctness(track.key) and self._paid_in_full(reward):
            return None  # the lead over one paid part is the others being learned, not a bonus beside the task
        leads = [r - v for r, v in pairs]
        lead = sum(leads) / len(leads)
        scores = [v for _r, v in pairs]
        noise = max(diff_noise(scores), count_noise(scores), 1e-9)
        # a reward that is its score differs from it by float rounding only: that lead is 0, not -3.3e-08
        return (lead if abs(lead) > 1e-6 else 0.0), sum(scores) / len(scores), noise, diff_noise(leads)

    def _paid_in_full(self, reward: Track) -> bool:
        """Whether the reward is the plain sum of its logged parts (``critic/score/<fn>/mean``) on every warm-up step
        where all were logged (at least ``gap_min_early`` of them): every part is paid at weight 1, none is a score
        logged beside the reward for reference (TRL's accuracy at weight 0, Tinker's ``f`` beside the ``g`` it
        trains on). Then a part the reward leaves behind is one objective among several, and the others rising is
        the policy learning what it is paid for (a healthy 4-function TRL run: a leakage check that always passes).
        Or the weighted sum of them, every weight above 0 (:func:`_paid_weighted`: TRL's ``reward_weights``, an
        accuracy at 0.8 and a width check at 0.2): the same, each part paid at its own weight."""
        tracks = self.ctx.tracks
        parts = [t for key, t in tracks.items() if key.startswith(COMPONENT) and key.endswith("/mean") and key != REWARD]
        if len(parts) < 2:
            return False
        at = [dict(zip(t.tail_steps(64), t.tail(64))) for t in parts]
        sums = [(r, sum(a[s] for a in at)) for s, r in zip(reward.tail_steps(64), reward.tail(64))
                if s < self._warm_step and all(s in a for a in at)]
        if len(sums) >= self.p["gap_min_early"] and all(abs(r - t) <= 1e-6 * max(1.0, abs(r)) for r, t in sums):
            return True
        return _paid_weighted(reward, parts, self._warm_step, int(self.p["gap_min_early"]))

    def _format_rose(self, w: int, gap: float) -> bool:
        """Whether a format or length part of the reward (``critic/score/<fn>/mean`` named for format, logged during
        the reward's warm-up) rose over the last ``w`` observations by half the gap or more from its warm-up level:
        the policy learning a format."""
        for key, early in self._format_early.items():
            track = self.ctx.tracks[key]
            if track.n > w and track.mean_last(w) - early >= 0.5 * gap:
                return True
        return False

    def _correctness_flat(self, step: int, key: str, track: Track, reward: Track, up: bool) -> Finding | None:
        """A correctness measure that stays at its early level while the reward climbs far above its own (the mean of
        its values since the reward's drift began against the mean of those before the reward's warm-up ended)."""
        p = self.p
        early = self._early_level(key, track)
        first = self._reward.start
        if early is None or not up or first is None or self._reward_gain(reward) < p["flat_gain_z"]:
            return None
        pairs = [(s, v) for s, v in zip(track.tail_steps(64), track.tail(64)) if s >= first]
        if len(pairs) < p["flat_points"] or step - first < p["flat_span"]:
            return None
        since = [v for _s, v in pairs]
        now = sum(since) / len(since)
        noise = max(diff_noise(track.tail(32)), 0.05 * abs(early), 1e-3)
        n_early = self._early[key][1]
        se = noise * math.sqrt(1.0 / len(since) + 1.0 / n_early)  # of the difference of the two means
        if now - early > p["flat_se_z"] * se:
            return None  # correctness rose with the reward, by more than its noise
        if early - now > se:
            return None  # it is sliding down: a fall is judged (and named) as a fall from its best
        # the reward's rise over the same steps as the correctness' mean, from its mean over the same early steps: a
        # reward that is its accuracy climbed in its last 3 values, not over the 64 the accuracy is averaged on, and
        # its warm-up median is not the accuracy's early mean (a healthy GSPO run, logged every 2)
        r_since, n_r = _mean_between(reward, pairs[0][0], step)
        r_rise = r_since - self._reward_early  # both rises from the means over the same early steps
        if n_r == 0 or r_rise < p["flat_se_z"] * self._reward.noise * math.sqrt(1.0 / n_r + 1.0 / self.warmup):
            return None  # over those steps the reward did not climb past its own noise either
        if now - early > p["flat_share"] * r_rise:
            return None  # correctness rose with the reward by a share of the reward's rise
        if self._format_rose(int(p["gap_span"]), r_rise):
            return None  # the rise is a format component's: the policy learning a format
        gain = self._reward_gain(reward)
        r_now = reward.mean_last(3)
        vals = {"reward": r_now, "reward_baseline": self._reward.level, "quality": now, "quality_early": early,
                "signals": [f"correctness {track.raw} {fmt(early)} -> {fmt(now)}"]}
        return self.fire(step, "warning",
                         f"Reward up, correctness flat: {reward.raw} {fmt(self._reward.level)} -> {fmt(r_now)} "
                         f"({gain:.0f}x the noise of its early level) while {track.raw} stayed at {fmt(now)} (early {fmt(early)}, "
                         f"noise {fmt(noise)}) on average over steps {first}-{step}",
                         "The reward climbs but the answers are not more often right: the reward pays for something "
                         "else (format, a proxy check, length).", metric=REWARD, values=vals, step_start=first,
                         extra_keys=(key,), samples=True)

    def _held_out_falling(self, step: int, key: str, track: Track, reward: Track, up: bool) -> Finding | None:
        p = self.p
        k = int(p["points"])
        if track.n < k + 2:
            return None
        now = track.mean_last(k)
        r_now = reward.mean_last(3)
        best = self._best.get(key)
        v = track.values
        level = sorted((v[-1], v[-2], v[-3]))[1]  # a best is a level held over three points, not one outlier
        if best is None or level > best[0]:
            self._best[key] = (level, track.last_step, r_now)
            return None
        drop = best[0] - now
        rel = drop / max(abs(best[0]), 1e-9)
        if not up or rel < p["drop_fraction"] or r_now - best[2] < p["gain_z"] * self._reward.noise:
            return None  # the usual case: no fall from the best, or the reward did not rise since it
        if r_now - best[2] < p["gain_z"] * count_noise(reward.tail(32)):
            return None  # a sparse reward (0 on most steps) rose by a sample or two: its warm-up noise was 0
        recent = track.tail(32)
        noise = max(diff_noise(recent), count_noise(recent), 1e-9)
        z = drop / (noise * math.sqrt(2.0 / k))
        if z < p["drop_z"] or rel < p["drop_fraction"] or r_now <= best[2]:
            return None
        crit = z >= p["critical_factor"] * p["drop_z"] and rel >= p["critical_factor"] * p["drop_fraction"]
        what = ("held-out score" if key.startswith(HELD_OUT) else "its correctness part" if is_correctness(key)
                else "another part of the reward")
        vals = {"reward": r_now, "reward_at_best": best[2], "reward_baseline": self._reward.level,
                "held_out": now, "held_out_best": best[0], "held_out_best_step": best[1], "drop_z": z,
                "relative_drop": rel, "signals": [f"validation {track.raw} {fmt(best[0])} -> {fmt(now)}"]}
        return self.fire(step, "critical" if crit else "warning",
                         f"Reward and {what} diverge: {reward.raw} rose {fmt(best[2])} -> {fmt(r_now)} since "
                         f"step {best[1]} while {track.raw} fell from its best {fmt(best[0])} (step {best[1]}) to "
                         f"{fmt(now)} ({rel:.0%}, {z:.1f}x its step-to-step noise)",
                         "The policy is learning what the reward pays for, not the task: a learned reward model being "
                         "exploited, or a reward term the task does not need.", metric=REWARD, values=vals,
                         step_start=best[1], extra_keys=(key,), samples=True)

    def _held_out_left(self, step: int, key: str, track: Track, reward: Track) -> Finding | None:
        """A held-out score below its own range on its last ``left_hold`` evaluations while the reward held."""
        p = self.p
        hold = int(p["left_hold"])
        if track.n <= hold or track.last >= track.values[-hold - 1]:
            return None  # the usual evaluation: not under the one before the last ``hold`` (the newest of the range)
        found = held_out_range(track, hold, int(p["left_reference"]), int(p["left_min_reference"]))
        if found is None or max(found[1]) >= min(found[0]):
            return None  # the usual evaluation: inside the range of those before it
        ref, recent, med, noise = found
        mean = sum(recent) / hold
        z = (med - mean) / (noise / math.sqrt(hold))
        if z < p["left_z"]:
            return None
        steps = track.tail_steps(len(ref) + hold)
        r_now, n_now = _mean_between(reward, steps[-hold - 1] + 1, step)
        r_ref, n_ref = _mean_between(reward, steps[0], steps[-hold - 1])
        if n_now == 0 or n_ref == 0 or \
                r_ref - r_now > p["left_fall_z"] * self._reward.noise * math.sqrt(1.0 / n_now + 1.0 / n_ref):
            return None  # the reward fell with it: a collapse, held_out_drop's business
        part = self._part_rose(reward, steps[0], steps[-hold - 1], step)
        if part is None:
            return None  # no other part of the reward rose in the task's place: a held-out dip (held_out_drop's)
        key_p, p_ref, p_now = part
        part_raw = self.ctx.tracks[key_p].raw
        vals_ = {"reward": r_now, "reward_before": r_ref, "held_out": mean, "held_out_median": med,
                 "held_out_low": min(ref), "noise": noise, "drop_z": z, "part": p_now, "part_before": p_ref,
                 "signals": [f"validation {track.raw} {fmt(med)} -> {fmt(mean)}", f"{part_raw} {fmt(p_ref)} -> {fmt(p_now)}"]}
        return self.fire(step, "warning",
                         f"Held-out score fell below its range while the reward held: {track.raw} averaged {fmt(mean)} "
                         f"on the last {hold} evaluations, under the lowest of the {len(ref)} before ({fmt(min(ref))}; "
                         f"{z:.1f}x the noise of such a mean under their median {fmt(med)}), while {reward.raw} "
                         f"averaged {fmt(r_now)} since step {steps[-hold - 1] + 1} against {fmt(r_ref)} before and its "
                         f"part {part_raw} rose {fmt(p_ref)} -> {fmt(p_now)}",
                         "The policy answers worse on data it is not trained on while the reward it is paid holds, "
                         "earned by another part of it: the reward no longer measures the task (a judge or reward "
                         "model drifting from correctness).",
                         metric=REWARD, values=vals_, step_start=steps[-hold], extra_keys=(key,), samples=True)

    def _held_out_under_rise(self, step: int, track: Track, reward: Track, up: bool) -> Finding | None:
        """The *held-out under its range, reward up* rule (class docstring): the newest evaluation only."""
        p = self.p
        if not up or track.n < 2 or track.last >= track.values[-2]:
            return None  # the usual evaluation: not under the one before it (the newest of its range)
        found = held_out_range(track, 1, int(p["left_reference"]), int(p["left_min_reference"]))
        if found is None or found[1][0] >= min(found[0]):
            return None  # inside the range of the evaluations before it
        ref, _recent, med, noise = found
        z = (med - track.last) / noise
        if z < p["under_z"] or med - track.last < p["under_drop"] * abs(med):
            return None  # within its noise, or a fall too small to matter (a smooth series' noise is tiny)
        steps = track.tail_steps(len(ref) + 1)
        r_now, n_now = _mean_between(reward, steps[-2] + 1, step)
        r_ref, n_ref = _mean_between(reward, steps[0], steps[-2])
        r_noise = max(self._reward.noise, count_noise(reward.tail(32)))
        if n_now == 0 or n_ref == 0:
            return None
        rise = (r_now - r_ref) / (r_noise * math.sqrt(1.0 / n_now + 1.0 / n_ref))
        if rise < p["under_rise_z"]:
            return None  # the reward did not climb past its own noise: a held-out dip (held_out_drop's)
        vals = {"reward": r_now, "reward_before": r_ref, "rise_z": rise, "held_out": track.last,
                "held_out_median": med, "held_out_low": min(ref), "noise": noise, "drop_z": z,
                "signals": [f"validation {track.raw} {fmt(med)} -> {fmt(track.last)}",
                            f"{reward.raw} {fmt(r_ref)} -> {fmt(r_now)}"]}
        return self.fire(step, "warning",
                         f"Held-out score fell below its range while the reward rose: {track.raw} {fmt(track.last)} "
                         f"at step {step}, under the lowest of the {len(ref)} evaluations before ({fmt(min(ref))}; "
                         f"{z:.1f}x the noise of one evaluation under their median {fmt(med)}), while {reward.raw} "
                         f"averaged {fmt(r_now)} since step {steps[-2] + 1} against {fmt(r_ref)} over those "
                         f"evaluations' steps ({rise:.1f} standard errors up)",
                         "The policy answers worse on data it is not trained on while the reward it is trained on "
                         "climbs: it learns what the training batches pay for (prompts it memorises, a reward "
                         "term), not the task.",
                         metric=REWARD, values=vals, step_start=steps[-2] + 1, extra_keys=(track.key,), samples=True)

    def _part_rose(self, reward: Track, first: int, last_ref: int, step: int) -> tuple[str, float, float] | None:
        """(key, mean over the reference steps, mean since) of a logged part of the reward that is not a verdict on the
        task (``critic/score/<fn>/mean``, a reward-function field ``reward_extra/<name>/mean``; not named for
        correctness, not the reward itself) whose mean over the steps after ``last_ref`` is ``part_z`` standard
        errors (its own step-to-step noise) above its mean over [``first``, ``last_ref``]: what the reward now pays for
        in the task's place."""
        for key, track in self.ctx.tracks.items():
            if not (key.startswith((COMPONENT, "reward_extra/")) and key.endswith("/mean")) or key == REWARD \
                    or is_correctness(key) or quality_direction(key) < 0 or abs(track.last - reward.last) < 1e-6:
                continue
            now, n_now = _mean_between(track, last_ref + 1, step)
            ref, n_ref = _mean_between(track, first, last_ref)
            if n_now and n_ref and now - ref > self.p["part_z"] * max(diff_noise(track.tail(64)), 1e-9) \
                    * math.sqrt(1.0 / n_now + 1.0 / n_ref):
                return key, ref, now
        return None

    def _length_bonus(self, step: int, key: str, track: Track, reward: Track, length: Track) -> Finding | None:
        p = self.p
        w = int(p["bonus_span"])
        l_then = length.back(w)
        r_then = _mean_between(reward, step - w - 2, step - w + 2)[0]  # smoothed: one noisy step is no start
        l_now, r_now = length.mean_last(3), reward.mean_last(3)
        growing = l_now >= p["bonus_growth"] * self._length.level and l_now >= (1 + (p["bonus_growth"] - 1) / 2) * l_then
        if not growing \
                or not r_now - r_then >= p["gain_z"] * self._reward.noise:
            return None
        start = step - w
        if same_samples(key) and self._equal_since(track, reward, start - w // 4):
            return None  # the reward is this score on every step: its rise is the score's, nothing paid for length
        after, n_after = _mean_between(track, step - w // 2, step)  # the held-out level now ...
        before, n_before = _mean_between(track, start - w // 4, start + w // 4)  # ... and where the window began
        if n_after < 3 or n_before < 2:  # a held-out score is noisy: a few points on each side
            return None
        noise = max(diff_noise(track.tail(32)), 1e-9)
        if after - before > p["flat_z"] * noise * math.sqrt(1 / n_after + 1 / n_before):
            return None  # the held-out score rose with the reward and the length: learning, not a bonus
        vals = {"reward": r_now, "reward_before": r_then, "length": l_now, "length_before": l_then,
                "length_baseline": self._length.level, "held_out_before": before, "held_out_since": after,
                "signals": [f"validation {track.raw} {fmt(before)} -> {fmt(after)}",
                            f"length {fmt(l_then)} -> {fmt(l_now)}"]}
        return self.fire(step, "warning",
                         f"Reward rising with response length, not with accuracy: over the last {w} steps {reward.raw} "
                         f"{fmt(r_then)} -> {fmt(r_now)} and {length.raw} {fmt(l_then)} -> {fmt(l_now)} "
                         f"({l_now / self._length.level:.2f}x its early level), while {track.raw} averaged {fmt(after)} against {fmt(before)} in "
                         f"the {w} steps before",
                         "A length bonus (or a reward model that prefers long answers) is paying for length.",
                         metric=REWARD, values=vals, step_start=start, extra_keys=(key,), samples=True)

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        view = self.ctx.view
        vals = finding.evidence.get("values", {})
        if "length" in vals:
            causes = [Cause("the reward pays for length: a length bonus, or a reward model that prefers long "
                            "answers", 0.8, "; ".join(vals.get("signals", [])))]
            limit = view.number("data.max_response_length")
            bonus = length_pay_knobs(view)  # the reward function's own length pay: off at the source first
            actions = [*([make_action(view, "Stop paying for length: remove the length bonus", bonus)] if bonus else []),
                       make_action(view, "Stop paying for length: remove the length bonus, or add an overlong "
                                   "penalty", {"reward.overlong_buffer.enable": True}),
                       make_action(view, "Cap the response length", {"data.max_response_length": int(limit * 0.75)}
                                   if limit else {})]
        else:
            causes = [Cause("the (learned) reward model is being exploited: its score rises while held-out accuracy "
                            "falls", 0.85, "; ".join(vals.get("signals", [])))]
            actions = [make_action(view, "Gate the reward on validation, refresh the reward model, or pull the policy "
                                   "closer to the reference", {"actor.kl_loss_coef": 0.01})]
        return ranked(causes + [Cause(self.cause, 0.5)]), actions


@register_detector("length_memory", "memory_with_length")
class LengthMemory(Detector):
    """Memory growing in step with the response length: activation and KV-cache memory scale with the sequence, so
    a run whose answers lengthen needs more memory every step and ends in an out-of-memory kill at the longest
    batch. Both series drift up (a CUSUM each against its level over the first ``warmup`` observations, in units of
    its own noise; allowance ``k``, alarm ``h``), the memory ``growth`` (relative) above its early level, and the
    two move together (a memory sum starts only while the length's is above zero: growth while the length holds is
    a leak, ``memory_growth``'s business): Pearson correlation >= ``min_corr`` over the observations since the memory began to climb
    (at least ``min_points``, the latest ``max_points``; judged on every ``every``-th observation). Warning; the finding names it length-driven, with advice on
    ``data.max_response_length`` and micro-batch sizes."""

    keys = (LEN, *MEMORY_KEYS)
    defaults = {"k": 0.5, "h": 8.0, "growth": threshold(ALLOC, "length_growth_ratio"), "min_corr": 0.7,
                "min_points": 6, "length_growth": 1.1, "every": 2, "max_points": 60}
    common = {"enabled": True, "warmup": 10, "cooldown": 100}
    story, role = "memory", "outcome"
    cause = "memory grows with the response length: longer sequences need more activation and KV-cache memory"

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._length: Drift | None = None
        self._mem: dict[str, Drift] = {}
        self._present: list[str] = []
        self._present_at = -1
        self._busy = False  # some memory sum is running (it drains, or grows, whatever the length does)

    def on_warm(self) -> None:
        self._length = Drift(self.ctx.tracks[LEN].tail(self.warmup, skip=1), self.p["k"], self.p["h"], 0.01, 1e-9)

    def check(self, step: int) -> Finding | None:
        p, tracks = self.p, self.ctx.tracks
        length = tracks[LEN]
        lengthening = self._length.update(length.last, step)
        if self._present_at != len(tracks):  # which memory series this run logs
            self._present_at = len(tracks)
            self._present = [k for k in MEMORY_KEYS if k in tracks]
        flat = self._length.cusum.s <= 0.0
        if flat and not self._busy and len(self._mem) == len(self._present):
            return None  # the usual step: length at its early level and no memory sum running
        found = None
        for key in self._present:
            track = tracks[key]
            if track.last_step != step:
                continue
            drift = self._mem.get(key)
            if drift is None:
                if track.n > self.warmup:  # its early level (past the allocator's first steps)
                    self._mem[key] = Drift(track.tail(self.warmup, skip=1), p["k"], p["h"], 0.001, 1e-9)
                continue
            if flat and drift.cusum.s <= 0.0:
                continue  # memory rising while the length holds is not length-driven (a leak: memory_growth's)
            if drift.update(track.last, step) and lengthening and found is None:
                every = p["every"]
                if every <= 1 or (self.seen + self._phase) % every == 0:  # self.due(every), inlined
                    found = self._judge(step, key, track, length, drift)
        busy = False  # a plain loop: any() over a generator costs more than the look itself, on every step
        for drift in self._mem.values():
            if drift.cusum.s > 0.0:
                busy = True
                break
        self._busy = busy
        return found

    def _judge(self, step: int, key: str, track: Track, length: Track, drift: Drift) -> Finding | None:
        p = self.p
        now, l_now = track.mean_last(3), length.mean_last(3)
        growth = (now - drift.level) / max(abs(drift.level), 1e-12)
        if growth < p["growth"] or l_now < p["length_growth"] * self._length.level:
            return None
        start = drift.start or step  # where the memory began to climb
        pairs = _paired(track, length, start)[-int(p["max_points"]):]
        if len(pairs) < p["min_points"]:
            return None
        corr = _pearson(pairs)
        if corr < p["min_corr"]:
            return None  # memory climbs on its own: a leak, judged by memory_growth
        vals = {"memory": now, "memory_baseline": drift.level, "relative_growth": growth, "length": l_now,
                "length_baseline": self._length.level, "correlation": corr, "drift_start": start}
        return self.fire(step, "warning",
                         f"Memory grows with the response length: {track.raw} {fmt(drift.level)} -> {fmt(now)} "
                         f"({growth:+.0%} over its early level) while {length.raw} rose {fmt(self._length.level)} -> "
                         f"{fmt(l_now)} since step {start} (correlation {corr:.2f}): length-driven memory growth",
                         "Activation and KV-cache memory scale with the sequence length: the longest batch to come "
                         "decides whether the run runs out of memory.", metric=key, values=vals, step_start=start,
                         extra_keys=(LEN,))

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        view = self.ctx.view
        limit = view.number("data.max_response_length")
        mb = view.number("actor.ppo_micro_batch_size")
        cap = make_action(view, "Cap the response length (or penalise overlong answers) so the longest batch fits",
                          {"data.max_response_length": int(limit * 0.75)} if limit else {})
        smaller = make_action(view, "Smaller micro-batches: memory per step follows micro-batch size x sequence length",
                              {"actor.ppo_micro_batch_size": max(1, int(mb) // 2)} if mb and mb > 1 else {})
        return ranked([Cause(self.cause, 0.85, f"correlation {finding.evidence.get('values', {}).get('correlation', 0):.2f}")]), [cap, smaller]


def _paired(track: Track, other: Track, start: int) -> list[tuple[float, float]]:
    """(value, other's value at the same step) for the steps since ``start`` both logged."""
    n = min(len(other.steps), 64)
    at = {s: v for s, v in zip(other.tail_steps(n), other.tail(n)) if s >= start}
    n = min(len(track.steps), 64)
    return [(v, at[s]) for s, v in zip(track.tail_steps(n), track.tail(n)) if s in at]


def _pearson(pairs: list[tuple[float, float]]) -> float:
    n = len(pairs)
    mx = sum(x for x, _ in pairs) / n
    my = sum(y for _, y in pairs) / n
    sxy = sum((x - mx) * (y - my) for x, y in pairs)
    sxx = sum((x - mx) ** 2 for x, _ in pairs)
    syy = sum((y - my) ** 2 for _, y in pairs)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else 0.0
