"""Response-length detectors: answers running away, answers cut off at the length limit, answers collapsing.

Healthy reasoning runs lengthen their answers as they learn; what these detectors look for is a length that
*turns* upwards against the run's own trend, and truncation that jumps or creeps against its own level.
"""

from __future__ import annotations

import math

from rlcockpit.health.advice import kl_action, length_action, moved, ranked
from rlcockpit.health.base import (
    Detector,
    Drift,
    FallBar,
    Track,
    climb,
    diff_noise,
    fmt,
    median,
    recent_count,
    register_detector,
    span,
    tie_safe,
    turn_up,
)
from rlcockpit.health.config_view import make_action
from rlcockpit.health.detectors.collapse import collapse_causes
from rlcockpit.health.detectors.reward import CLIP, LEN, LEN_MAX, REWARD, S_REPEAT
from rlcockpit.health.findings import Action, Cause, Finding
from rlcockpit.metrics.guide import threshold

LEN_MIN = "response_length/min"
SLIDE_CAUSE = ("the prompts or their template changed under the policy (a corrupted data shard, a chat template or "
               "tokenizer change), or the updates are wearing the policy down: answers got shorter and less often "
               "right at once")
LEN_ENDED = "response_length/terminated_mean"  # the mean of the answers that ended (TRL: mean_terminated_length)


def quantum(track: Track | None, granular: bool = True) -> float:
    """The step a clip ratio moves in: 1/8 for a run that samples 8 completions a step (the smallest positive ratio
    among the last 32 observations, when every positive one is a whole multiple of it; 0 where nothing was clipped
    or the ratio is not granular, a large batch's). Mind sample size: with 8 completions a step, one answer that
    runs to the limit is 12.5% of them, and a healthy small-batch run has such answers now and then; a change must
    be several of them. ``granular=False``: the smallest positive ratio, granular or not (the creep test's floor)."""
    if track is None:
        return 0.0
    positive = [v for v in track.tail(32) if v > 0]
    if not positive:
        return 0.0
    q = min(positive)
    return q if not granular or all(abs(v / q - round(v / q)) < 0.02 for v in positive) else 0.0


@register_detector("length_explosion", "response_length")
class LengthExplosion(Detector):
    """Response length running away. Warning: the length *turned* upwards — over the last window of
    ``span_steps`` steps its median rose ``turn_ratio`` x above the window before, faster (``accel`` x plus ``z``
    noise units) than in the window before that. Reasoning runs whose answers lengthen steadily as they learn do
    not turn; a lost stop token or a length-loving reward does. The turn must also move the mean by more than
    ``few_answers`` answers a step running to the longest length seen (a small batch's single long answer moves
    it 1.2x; see :func:`quantum`). Critical: > ``critical_ratio`` x the warm-up
    level and (truncation > ``clip_critical`` or length within ``limit_frac`` of ``data.max_response_length``), on
    ``sustain`` consecutive checks (one logged value between shorter ones is a passing episode, not yet a runaway).
    The turn is not warned of where the run logs the mean length of the answers that ended (TRL's
    ``completions/mean_terminated_length``), it is above 0 and it stayed within ``turn_ratio`` of its level over
    the window before the turn: the answers that end are as long as before, the mean rose only by answers cut at the
    limit, which is ``truncation``'s event (judged on their share), told once by it."""

    keys = (LEN, LEN_ENDED)
    defaults = {"critical_ratio": 3.0, "clip_critical": 0.2, "limit_frac": 0.9, "span_steps": 10, "turn_ratio": 1.2,
                "accel": 2.0, "z": 3.0, "few_answers": 2, "sustain": 2}
    story, role = "length", "outcome"
    cause = "responses run to the length limit (looping, or the reward favours length)"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        causes = [Cause(self.cause, 0.55)]
        rep = moved(self.ctx, S_REPEAT, up=2.0)
        if rep is not None:
            causes.append(Cause("the model loops: repetition rose with the length", 0.75, rep.text))
        r = moved(self.ctx, REWARD, up=1.1)
        if r is not None:
            causes.append(Cause("the reward favours longer answers: it rose with the length", 0.65, r.text))
        return ranked(causes), [length_action(self.ctx.view, self.ctx), kl_action(self.ctx.view)]

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.base: float | None = None
        self._w, self._w_at = 3, 0

    def check(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[LEN]
        if self.base is None:
            self.base = max(median(track.tail(self.warmup, skip=1)), 1e-9)
        s = track.mean_last(3)
        ratio = s / self.base
        if self._w_at <= 0:  # the window in observations follows the logging cadence: re-measured now and then
            self._w, self._w_at = span(track, p["span_steps"], lo=3), 16
        self._w_at -= 1
        w = self._w
        before = (track.ago(w) + track.ago(w + 1) + track.ago(w + 2)) / 3
        rising = s >= p["turn_ratio"] * before or before != before  # cheap gate
        if ratio <= p["critical_ratio"] and not rising:
            self._streak = 0
            return None
        clip = self.ctx.tracks.get(CLIP)
        clip_now = clip.mean_last(3) if clip is not None and clip.n else 0.0
        limit = self.ctx.max_response_length()
        near_limit = limit is not None and s >= p["limit_frac"] * limit
        vals = {"length": s, "baseline": self.base, "ratio": ratio, "clip_ratio": clip_now, "max_response_length": limit}
        if self.sustained(ratio > p["critical_ratio"] and (clip_now > p["clip_critical"] or near_limit)
                          and s >= track.ago(1), p["sustain"]):
            return self.fire(step, "critical", f"Response length exploded: {fmt(self.base)} -> {fmt(s)} ({ratio:.1f}x), "
                             "hitting the limit", values=vals, extra_keys=(CLIP,), samples=True)
        if not rising:
            return None
        logs = [math.log(max(v, 1e-9)) for v in track.tail(6 * w)]  # the older half: the run's noise only
        turned = turn_up(logs, w, math.log(p["turn_ratio"]), p["accel"], p["z"], diff_noise(logs))
        if turned is None:
            return None
        a, b, c, _noise = (math.exp(x) for x in turned)
        floor = self._few_answers(max(a, b))
        if c - max(a, b) <= floor or self._ended_as_before(w):
            return None
        vals |= {"before": b, "now": c, "trend_before": b / a}
        return self.fire(step, "warning", f"Response length turned upwards: {fmt(b)} -> {fmt(c)} in {w} logged steps "
                         f"(it had moved {b / a - 1:+.0%} before)", values=vals, extra_keys=(CLIP,),
                         step_start=track.tail_steps(w)[0])


    def _ended_as_before(self, w: int) -> bool:
        """Whether the answers that ended are as long as before the turn (class docstring): the mean of the last
        ``w`` logged terminated-mean values above 0 and within ``turn_ratio`` of the mean of the ``w`` before."""
        ended = self.ctx.tracks.get(LEN_ENDED)
        if ended is None or len(ended.values) < 2 * w:
            return False
        now, before = ended.tail(w), ended.tail(w, skip=w)
        n, b = sum(now) / w, sum(before) / w
        return min(now) > 0 and b > 0 and 1 / self.p["turn_ratio"] <= n / b <= self.p["turn_ratio"]

    def _few_answers(self, level: float) -> float:
        """How far ``few_answers`` answers a step running to the longest length seen move the mean length from
        ``level`` (0 where nothing was clipped): in a batch of 8, one answer that runs from 3 tokens to an 8-token
        limit moves the mean from 3 to 3.6, a turn of 1.2x that a healthy small-batch run shows now and then."""
        clip, top = self.ctx.tracks.get(CLIP), self.ctx.tracks.get(LEN_MAX)
        q = quantum(clip)
        if not q or top is None or not top.n:
            return 0.0
        share = min(self.p["few_answers"] * q, 1 / 3)  # (a batch of 1-4 answers: a third of it)
        return share * max(max(top.values) - level, 0.0)


@register_detector("truncation", "clip_ratio")
class Truncation(Detector):
    """Responses truncated at the length limit. Warning: the smoothed ``response_length/clip_ratio`` (TRL:
    ``completions/clipped_ratio``) above ``warn_abs``; or jumped — its median over the last ``span_steps`` steps
    ``jump`` above the trailing ``window`` and ``jump_z`` of that window's noise, to above ``jump_min``; or creeping — climbing steadily (see ``climb``: medians of
    thirds of one of ``windows`` recent observations rising by ``z_warn`` noise units) to ``rise_warn`` above its
    warm-up level and above ``min_abs``; or the mean length within ``near_frac`` of the limit
    (``data.max_response_length``, or the ``response_length/max`` the run keeps hitting while some answers are cut:
    :meth:`limit`) after growing
    ``len_growth`` x since warm-up; or drifting — a CUSUM of the clip ratio against its level over its first ``creep_warmup`` observations, in units of
    its warm-up noise (floored at ``creep_noise``; allowance ``creep_k``, alarm at ``creep_h``), past its alarm
    while the ratio (smoothed, and on 3 of the last 5 observations) is ``creep_rise`` (and three of its smallest positive values: a small batch's ratio moves in steps of
    1/completions) above that level and ``creep_ratio`` x it, within ``creep_span`` steps of where the drift began (healthy runs wander a
    point or two over hundreds of steps): a creep from a low level is seen near where it began, and
    dated from there. Critical: > ``critical_abs`` and > warm-up + ``critical_rise``, unless the ratio came back
    (:meth:`_comes_back`: ``back_k`` of the last ``persist_n`` logged ratios at the warm-up level, at most one answer
    of the batch above it, after one above ``critical_abs``): long answers that come and go in a small batch (7 of 12
    cut, then 1) stay a warning, where a runaway keeps running into the limit once it started. The warning and the critical
    above ``warn_abs`` / ``critical_abs`` also need ``persist_k`` of the last ``persist_n`` logged ratios above the bar
    and above ``persist_quanta`` - 0.5 answers of the batch (see :func:`quantum`; at most half of it), and a jump or
    a climb must be two answers a step: a smoothed ratio carries one step of 7 of 8 answers cut for three steps. A ratio above ``warn_abs``
    that was already there over the warm-up (the first logged steps) and has not risen ``standing_rise`` above
    that level is a standing setting (the limit is short for this model), reported once as info, unless the share of
    answers that still fit the limit halved (a rise of ``standing_rise`` / 2 at least: 80% -> 90% cut). Leaving zero
    (warning, once): a ratio exactly 0 on all but ``zero_share`` of its last ``zero_reference`` observations, then
    above 0 on ``zero_k`` of the last ``zero_n`` with their mean ``creep_rise`` or more (:meth:`_leaving_zero`); or on
    ``far_k`` of the last ``far_n`` (the same mean) where the limit is ``far_ratio`` x or more the median length over that
    reference: answers running on to a limit several times as long as the run's answers, not a few tokens past their
    usual length (:meth:`_far_enough`). A
    new warning after an earlier event ended needs the clip ratio above that event's peak
    (:attr:`Detector.recurrence_gate`): a run whose answers ran to the limit and came back by itself has shown that
    much as its own noise."""

    keys = (CLIP, LEN, LEN_MAX)
    recurrence_gate = True  # a later, smaller episode than one the run recovered from is its own noise
    defaults = {"warn_abs": threshold(CLIP, "warn_above"), "critical_abs": threshold(CLIP, "critical_above"),
                "critical_rise": 0.25, "sustain": 2, "rise_warn": 0.05,
                "min_abs": 0.08, "z_warn": 5.0, "windows": (9, 24, 60), "near_frac": 0.75, "len_growth": 1.3,
                "jump": 0.02, "jump_min": 0.04, "jump_z": 6.0, "span_steps": 10, "window": 30,
                "creep_rise": threshold(CLIP, "creep_rise"), "creep_noise": 0.003, "creep_k": 0.5, "creep_h": 8.0,
                "creep_span": 40, "creep_ratio": 2.0, "creep_warmup": 20, "standing_rise": 0.1,
                "persist_k": 3, "persist_n": 5, "back_k": 1, "persist_quanta": 3, "zero_k": 4, "zero_n": 6, "zero_share": 0.05,
                "zero_reference": 100, "zero_min_reference": 30, "far_k": 3, "far_n": 10, "far_ratio": 3.0}
    story = "length"
    cause = "responses run to the length limit (looping, or the reward favours length)"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        view = self.ctx.view
        causes = [Cause(self.cause, 0.55)]
        rep = moved(self.ctx, S_REPEAT, up=2.0)
        if rep is not None:
            causes.append(Cause("the model loops until the limit: repetition rose too", 0.75, rep.text))
        actions = [length_action(view, self.ctx)]
        if view.is_trl:
            actions.append(make_action(view, "Leave truncated completions out of the loss", {"actor.mask_truncated_completions": True}))
        return ranked(causes), actions

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.base: float | None = None
        self._drift: Drift | None = None
        self._noted_standing = False
        self._left_zero = False
        self._zero_next = [0, 0]  # per leaving-zero rule: the observation count before which its reference cannot be clean

    def limit(self) -> float | None:
        """The response length limit: the config's, else the maximum length the run keeps hitting, while answers
        are cut there: a clip ratio of exactly 0 over the same last 20 observations says every answer ended by
        itself, the longest ones included (that maximum is how long the answers are, not where they stop)."""
        limit = self.ctx.max_response_length()
        if limit:
            return limit
        top = self.ctx.tracks.get(LEN_MAX)
        if top is None or top.n < 3:
            return None
        cap = max(top.values)
        hits = sum(1 for v in top.tail(20) if v >= cap)
        if hits < 3:
            return None
        clip = self.ctx.tracks.get(CLIP)
        return None if clip is not None and clip.n >= 3 and not any(clip.tail(20)) else cap

    def check(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[CLIP]
        if self.base is None:
            self.base = median(track.tail(self.warmup, skip=1))
            self._len_base = self._median_of(LEN)
        if self._drift is None and self.seen > p["creep_warmup"]:  # the early level, once the first steps settled
            self._drift = Drift(track.tail(p["creep_warmup"], skip=1), p["creep_k"], p["creep_h"], 0.0, p["creep_noise"])
        s = track.mean_last(3)
        drifting = self._drift is not None and self._drift.update(track.last, step)
        if drifting and s <= p["warn_abs"] and s > p["creep_ratio"] * self._drift.level \
                and s - self._drift.level > p["creep_rise"] \
                and s - self._drift.level > 3 * quantum(track, granular=False) \
                and recent_count(track, 5, self._drift.level + p["creep_rise"]) >= 3 \
                and step - self._drift.start <= p["creep_span"]:  # one blip is not a creep, a slow wander neither
            return self._drifted(step, track, s)
        if track.last > 0.0 and s <= p["warn_abs"] and not self._left_zero:
            left = self._leaving_zero(track)
            if left is not None:
                return self._left(step, track, *left)
        if s <= p["warn_abs"] and s <= p["jump_min"] and s <= p["min_abs"]:  # the usual step: below every bound
            self._streak = 0
            return self._near_limit(step)
        if self.sustained(s > p["warn_abs"], p["sustain"]):
            if self.base > p["warn_abs"] and s <= self.base + p["standing_rise"] and not self._fitting_halved(s):
                return self._standing(step, track, s)
            if not self._persists(track, p["warn_abs"]):
                return None  # a smoothed value carrying one wild step: not the jumps or creeps below either
            if s > p["critical_abs"] and s > self.base + p["critical_rise"] and self._persists(track, p["critical_abs"]) \
                    and not self._comes_back(track):
                return self.fire(step, "critical", f"{s:.0%} of responses truncated (was {self.base:.0%})",
                                 values={"clip_ratio": s, "baseline": self.base}, extra_keys=(LEN,), samples=True)
            if self.repeats(step, "warning"):
                return None
            return self.fire(step, "warning", f"{s:.0%} of responses truncated at the length limit",
                             values={"clip_ratio": s, "baseline": self.base}, extra_keys=(LEN,))
        jumped = self._jump(track)
        if jumped is not None:
            ref, now = jumped
            return self.fire(step, "warning", f"Truncation jumped: {ref:.1%} -> {now:.1%} of responses cut at the "
                             "length limit", "Answers that no longer fit get no reward and bias the update.",
                             values={"clip_ratio": s, "baseline": self.base, "before": ref, "now": now}, extra_keys=(LEN,),
                             step_start=track.tail_steps(span(track, p["span_steps"]))[0])
        if s > p["min_abs"] and s - self.base > p["rise_warn"] and s - self.base > 2 * quantum(track):
            found = climb(track, tuple(p["windows"]), p["z_warn"], 0.002, self.warmup // 2)
            if found is not None:
                vals = {"clip_ratio": s, "baseline": self.base, "window": found[3], "noise": found[4]}
                return self.fire(step, "warning", f"Truncation creeping up: {self.base:.1%} -> {s:.1%} of responses "
                                 "cut at the length limit", "Answers that no longer fit get no reward and bias the "
                                 "update.", values=vals, step_start=track.tail_steps(found[3] // 3)[0],
                                 extra_keys=(LEN,))
        return self._near_limit(step)

    def _leaving_zero(self, track: Track) -> tuple[int, int, int, float, dict[str, float]] | None:
        """(nonzero observations among the last ``zero_n``, that window, observations before them, their nonzero
        share, extra values) when a clip ratio that was exactly 0 on all but ``zero_share`` of its last
        ``zero_reference`` observations (at least ``zero_min_reference``) is above 0 on ``zero_k`` of the last
        ``zero_n``, their mean ``creep_rise`` or more: truncation leaving zero for good. A small batch's single long
        answer is one nonzero step now and then; four of six, after a hundred steps of none, is answers starting to
        run into the limit (a stop token losing ground, a length-loving reward), seen before the ratio is large
        enough for the bounds above. Or ``far_k`` of the last ``far_n`` where the limit is far above the usual
        length (:meth:`_far_enough`)."""
        p = self.p
        found = self._nonzero_after_zero(track, int(p["zero_n"]), int(p["zero_k"]), 0)
        if found is not None:
            return (*found, {})
        found = self._nonzero_after_zero(track, int(p["far_n"]), int(p["far_k"]), 1)
        if found is None:
            return None
        far = self._far_enough(found[1], int(p["far_n"]))
        return None if far is None else (*found, far)

    def _nonzero_after_zero(self, track: Track, n: int, k: int, rule: int) -> tuple[int, int, int, float] | None:
        """(nonzero observations among the last ``n``, ``n``, reference size, its nonzero share) when ``k`` of the
        last ``n`` are above 0 with their mean ``creep_rise`` or more, after a reference that was 0 (above)."""
        if track.n < self._zero_next[rule]:
            return None
        p = self.p
        hits = recent_count(track, n, 0.0)
        if hits < k or track.mean_last(n) < p["creep_rise"]:
            return None
        size = int(p["zero_reference"])
        ref = track.tail(size, skip=n)
        if len(ref) < p["zero_min_reference"]:
            return None
        allowed, nonzero = int(p["zero_share"] * len(ref)), 0
        for back in range(len(ref)):  # newest first: stops at the first few nonzero values of a series seldom 0
            if ref[-1 - back] > 0.0:
                nonzero += 1
                if nonzero > allowed:
                    if len(ref) == size:  # those values stay in the full reference for size - 1 - back more
                        self._zero_next[rule] = track.n + size - back  # observations: it cannot be clean before then
                    return None
        return hits, n, len(ref), nonzero / len(ref)

    def _far_enough(self, n_ref: int, n: int) -> dict[str, float] | None:
        """The limit and the median response length over the leaving-zero reference (the ``n_ref`` observations
        before the last ``n``) when the limit is ``far_ratio`` x that median or more: an answer cut there ran on
        several times as long as the run's answers (a stop token losing ground), where a limit a token or two above
        the usual length (3-token answers under an 8-token limit) is reached now and then by a healthy small batch."""
        length, limit = self.ctx.tracks.get(LEN), self.limit()
        if length is None or not limit or length.n < n + n_ref:
            return None
        usual = median(length.tail(n_ref, skip=n))
        if usual <= 0 or limit < self.p["far_ratio"] * usual:
            return None
        return {"limit": limit, "usual_length": usual, "far_ratio": limit / usual}

    def _left(self, step: int, track: Track, hits: int, n: int, n_ref: int, share: float,
              far: dict[str, float]) -> Finding | None:
        self._left_zero = True
        now = track.mean_last(n)
        start = next((s for s, v in zip(track.tail_steps(n), track.tail(n)) if v > 0.0), step)
        vals = {"clip_ratio": now, "baseline": share, "nonzero": hits, "window": n, "reference": n_ref} | far
        limit = (f", answers cut at the {fmt(far['limit'])}-token limit, {far['far_ratio']:.1f}x the usual "
                 f"{fmt(far['usual_length'])}") if far else ""
        return self.fire(step, "warning", f"Truncation leaving zero: {track.raw} above 0 on {hits} of the last {n} "
                         f"logged steps (mean {now:.1%}){limit}, after {share:.0%} of the {n_ref} before", "Answers start to "
                         "run into the length limit step after step: a stop token losing ground, or a reward that "
                         "pays for length. Truncated answers earn no reward and bias the update.", values=vals,
                         step_start=start, extra_keys=(LEN,))

    def _standing(self, step: int, track: Track, s: float) -> Finding | None:
        """Truncation that was this high from the run's first logged steps and has not risen: the length limit is
        short for this model and task (a setting to look at), not a failure developing in training. Info, once."""
        if self._noted_standing:
            return None
        self._noted_standing = True
        return self.fire(step, "info", f"{s:.0%} of responses truncated at the length limit, as from the first "
                         f"logged steps ({track.raw} {self.base:.0%} then): the limit is short for this model and task",
                         "Not a change during training; truncated answers earn no reward, so a longer limit (or "
                         "shorter answers) may help.", values={"clip_ratio": s, "baseline": self.base},
                         extra_keys=(LEN,))

    def _fitting_halved(self, s: float) -> bool:
        """Whether a standing ratio's complement, the share of answers that still end within the limit, is half what
        it was over the warm-up or less, the ratio risen ``standing_rise`` / 2 or more (near 1 the answers that fit
        are what is left to lose: 80% -> 90% cut halves them; 95% -> 97.5% is within a batch's noise)."""
        p = self.p
        return 1.0 - s <= 0.5 * (1.0 - self.base) + 1e-9 and s - self.base >= 0.5 * p["standing_rise"] - 1e-9

    def _persists(self, track: Track, bound: float) -> bool:
        """Whether ``persist_k`` of the last ``persist_n`` logged ratios are above ``bound`` and above
        ``persist_quanta`` - 0.5 quanta (:func:`quantum`): one long answer a step in a batch of 8 is 12.5%, and
        one step's 87.5% is gone at the next; a 3-step mean carries such a step for three steps."""
        p = self.p
        bar = max(bound, min((p["persist_quanta"] - 0.5) * quantum(track), 0.5))  # (a 1-2 answer batch: half)
        return recent_count(track, p["persist_n"], bar) >= p["persist_k"]

    def _comes_back(self, track: Track) -> bool:
        """Whether ``back_k`` or more of the last ``persist_n`` logged ratios are back at the warm-up level (at most
        one answer of the batch above it, :func:`quantum`) after one above ``critical_abs``: long answers that run
        to the limit one step and end by themselves the next come and go (a healthy small batch); a runaway (a stop
        token lost, a reward that pays for length, a collapsing policy) keeps running into the limit once it has
        started. Only the steps after the first high one count: the warm-up zeros before a jump are not a return."""
        p = self.p
        bar, top = self.base + quantum(track) + 1e-9, p["critical_abs"]
        v = track.values
        high, low = False, 0
        for i in range(min(int(p["persist_n"]), len(v)), 0, -1):  # oldest first: a low step counts after a high one
            if v[-i] > top:
                high = True
            elif high and v[-i] <= bar:
                low += 1
        return low >= p["back_k"]

    def _drifted(self, step: int, track: Track, s: float) -> Finding | None:
        d = self._drift
        vals = {"clip_ratio": s, "baseline": d.level, "baseline_noise": d.noise, "cusum": d.cusum.s,
                "drift_start": d.start}
        return self.fire(step, "warning", f"Truncation creeping up since step {d.start}: {track.raw} {d.level:.1%} -> "
                         f"{s:.1%} (from its level over the first {self.p['creep_warmup']} logged steps, noise {d.noise:.1%} a step)", "Answers that no longer fit get "
                         "no reward and bias the update.", values=vals, step_start=d.start, extra_keys=(LEN,))

    def _jump(self, track: Track) -> tuple[float, float] | None:
        """(before, now) when the clip ratio of the last ``span_steps`` steps rose ``jump`` above the trailing
        ``window`` and ``jump_z`` of that window's noise (of a median), to above ``jump_min``."""
        p = self.p
        now3 = track.mean_last(3)
        if now3 <= p["jump_min"] or (self.base is not None and now3 - self.base <= p["jump"]):
            return None  # the usual case, at the cost of two comparisons
        k = span(track, p["span_steps"])
        ref_vals = track.tail(p["window"], skip=k)
        if len(ref_vals) < 5:
            return None
        ref, now = median(ref_vals), median(track.tail(k))
        noise = 1.4826 * median([abs(v - ref) for v in ref_vals]) / math.sqrt(k)
        if now > p["jump_min"] and now - ref > max(p["jump"], p["jump_z"] * noise) and now - ref > 2 * quantum(track):
            return ref, now
        return None

    def _median_of(self, key: str) -> float | None:
        t = self.ctx.tracks.get(key)
        return median(t.tail(self.warmup, skip=1)) if t is not None and t.n > 2 else None

    def _near_limit(self, step: int) -> Finding | None:
        length = self.ctx.tracks.get(LEN)
        if length is None or not length.n or not self._len_base:
            return None
        s = length.mean_last(3)
        if s < self.p["len_growth"] * self._len_base:  # the usual step: no growth, no limit to look up
            return None
        limit = self.limit()
        if not limit or s < self.p["near_frac"] * limit:
            return None
        return self.fire(step, "warning", f"Mean response length {fmt(s)} is {s / limit:.0%} of the {fmt(limit)}-token "
                         f"limit (was {fmt(self._len_base)})", "Longer answers will soon be cut off.", metric=LEN,
                         values={"length": s, "limit": limit, "baseline_length": self._len_base})



@register_detector("length_collapse", "empty_responses")
class LengthCollapse(Detector):
    """Responses collapsing: the mean response length (``response_length/mean``, TRL's
    ``completions/mean_length``) falling to a small share of the run's own level, or to (nearly) nothing.

    The reference is the median of the first ``warmup`` observations (the starting model's answers), judged from the
    observation after them. Warning: below ``warn_ratio`` x that reference on ``sustain`` consecutive observations.
    Critical: below ``critical_ratio`` x it on ``sustain`` observations while the reference was at least
    ``min_reference`` tokens, or at most ``empty_tokens`` tokens on ``sustain`` observations and at most
    ``empty_share`` of that reference (answers of one token or none where they used to be longer: an unambiguous
    collapse; a task whose answers were two tokens from the first step is not one). A run whose answers shorten as
    it learns to be concise stays well above these shares.

    Shrinking towards empty (warning), judged against the run's own range rather than a share of it: a run whose
    answers are a few tokens long has no room to fall to a quarter, and a stop token gaining ground takes a 3-token
    answer to 2.5, then 2. The mean length on ``shrink_k`` of the last ``shrink_n`` observations (and their mean)
    below the median of the ``shrink_window`` observations before them by ``shrink_z`` of their robust noise
    (:func:`tie_safe`: a mean over a few answers takes few values) and by ``shrink_drop`` of that median (at least
    ``shrink_min_window`` of them), while the shortest answer
    (``response_length/min``, TRL's ``completions/min_length``) is at most ``empty_tokens`` on one of them: answers
    becoming empty, which a run learning to be concise never shows (its shortest answer stays long). And the shift
    must hold: ``shrink_hold`` of the last ``shrink_hold_n`` observations below that median (a small batch's mean
    dips when two answers stop early, and is back at the next step). Without a logged minimum this rule stays
    silent. The bar is re-measured every ``shrink_every`` observations while the length is inside it.

    Sliding with the reward (warning, once a run): the mean length and the training reward both drifting down
    from their early level, each judged in its own noise — a downward :class:`Drift` (CUSUM, allowance
    ``slide_k``, alarm ``slide_h`` noise units) per series, frozen on the ``slide_ref`` observations after the first
    ``slide_skip`` (the early range the run leaves), and the mean of the last ``slide_smooth`` values under that
    level by ``slide_z`` noise units of such a mean and by ``slide_len_drop`` (length) / ``slide_reward_drop``
    (reward) of the level — on the same logged step. Either alone is a healthy run's doing: answers get concise
    as a policy learns (its reward rises), and a reward sags when batches get harder (the answers keep their
    length). Shorter *and* less often right at once is a policy losing what it could do: a corrupted shard or
    template feeding it broken prompts, answers cut short and wrong."""

    keys = (LEN, LEN_MIN)
    defaults = {"warn_ratio": 0.25, "critical_ratio": 0.1, "empty_tokens": 2.0, "empty_share": 0.5,
                "min_reference": 20.0, "sustain": 3,
                "shrink_drop": threshold(LEN, "shrink_drop"), "shrink_z": threshold(LEN, "shrink_z"),
                "shrink_window": 60, "shrink_min_window": 50, "shrink_k": 2, "shrink_n": 3, "shrink_every": 10,
                "shrink_hold": 8, "shrink_hold_n": 9, "slide_skip": 10, "slide_ref": 40, "slide_k": 0.5,
                "slide_h": 8.0, "slide_smooth": 8, "slide_z": 3.0, "slide_len_drop": 0.05, "slide_reward_drop": 0.1}
    common = {"enabled": True, "warmup": 3, "cooldown": 50}
    story, role = "collapse", "outcome"
    cause = "the policy collapsed to (nearly) empty answers: the stop token became the likeliest first token"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        causes = collapse_causes(self, finding)
        if "reward_early" in finding.evidence["values"]:  # the slide rule: shorter and less often right at once
            causes.append(Cause(SLIDE_CAUSE, 0.6))
            return ranked([c for c in causes if c.title != self.cause]), [kl_action(self.ctx.view)]
        r = moved(self.ctx, REWARD, up=1.1)
        if r is not None:
            causes.append(Cause("the reward favours short answers (a length penalty, or a format check an empty "
                                "answer passes): it rose while the answers shrank", 0.7, r.text))
        return ranked(causes), [kl_action(self.ctx.view)]

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.base: float | None = None
        p = self.p
        self._shrink = FallBar(lambda ref: tie_safe(ref, 0.0), window=p["shrink_window"], skip=p["shrink_n"],
                               min_window=p["shrink_min_window"], z=p["shrink_z"], drop=p["shrink_drop"],
                               every=p["shrink_every"])  # the own-range bar of the shrink rule
        self._n = 0  # length observations seen: the slide rule's reference is frozen at slide_skip + slide_ref
        self._slides: tuple[Drift, Drift] | None = None  # (length, reward) drifts, negated: a fall is a rise
        self._slid = False  # the slide rule warns once a run

    def adapt_warmup(self) -> None:
        """The reference is the starting model's answers: the first observations, whatever the log cadence."""

    def check(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[LEN]
        if self.base is None:
            self.base = median(track.tail(self.warmup, skip=1))
        v = track.last
        if v > p["warn_ratio"] * self.base and (v > p["empty_tokens"] or v > p["empty_share"] * self.base):
            # the usual step: neither a quarter of the reference nor empty next to it
            self._streak = 0
            return self._shrinking(step, track) or (None if self._slid else self._sliding(step, track))
        n = int(p["sustain"])
        if not self.sustained(True, n):
            return None
        recent = track.tail(n)
        now = max(recent)
        empty = now <= p["empty_tokens"] and now <= p["empty_share"] * self.base
        if not empty and now > p["warn_ratio"] * self.base:
            return None
        ratio = now / max(self.base, 1e-9)
        vals = {"length": now, "reference": self.base, "ratio": ratio}
        start = track.tail_steps(n)[0]
        what = (f"{track.raw} at most {now:.0f} on the last {n} logged steps, from a median of {self.base:.0f} "
                f"on the first {self.warmup}")
        if empty or (ratio < p["critical_ratio"] and self.base >= p["min_reference"]):
            return self.fire(step, "critical", f"Responses collapsed{' to (nearly) empty' if empty else ''}: {what}",
                             "An answer of a token or none earns nothing and teaches nothing.", values=vals,
                             step_start=start, extra_keys=(REWARD, CLIP), samples=True, event=True)
        return self.fire(step, "warning", f"Responses shrinking: {what}", values=vals, step_start=start,
                         extra_keys=(REWARD, CLIP), samples=True)

    def _sliding(self, step: int, track: Track) -> Finding | None:
        """The slide rule of the class docstring: two :class:`Drift` updates per logged length, the reward's only on
        a step it was logged with the length."""
        p = self.p
        reward = self.ctx.tracks.get(REWARD)
        self._n += 1
        if self._slides is None:
            ref = int(p["slide_ref"])
            if self._n != int(p["slide_skip"]) + ref:
                return None
            if reward is None or reward.n < ref:
                self._slid = True  # no reward beside the length from early on: not this rule's run
                return None
            self._slides = tuple(Drift([-x for x in t.tail(ref)], p["slide_k"], p["slide_h"], 0.02, 1e-6)
                                 for t in (track, reward))
            return None
        if reward is None or reward.last_step != step:
            return None
        d_len, d_rew = self._slides
        # both updates run on every such step: each CUSUM must see every value, whatever the other says
        if not (d_len.update(-track.last, step) & d_rew.update(-reward.last, step)):
            return None
        n = int(p["slide_smooth"])
        z = p["slide_z"] / math.sqrt(n)
        len_now, rew_now = track.mean_last(n), reward.mean_last(n)
        len_lvl, rew_lvl = -d_len.level, -d_rew.level
        if len_lvl - len_now < max(p["slide_len_drop"] * abs(len_lvl), z * d_len.noise) \
                or rew_lvl - rew_now < max(p["slide_reward_drop"] * abs(rew_lvl), z * d_rew.noise):
            return None
        self._slid = True
        start = min(s for s in (d_len.start, d_rew.start, step) if s is not None)
        vals = {"length": len_now, "length_early": len_lvl, "length_noise": d_len.noise, "reward": rew_now,
                "reward_early": rew_lvl, "reward_noise": d_rew.noise}
        return self.fire(step, "warning",
                         f"Responses and reward sliding down together: {track.raw} {fmt(len_now)} and {reward.raw} "
                         f"{fmt(rew_now)} over the last {n} logged steps, from early levels {fmt(len_lvl)} and "
                         f"{fmt(rew_lvl)} ({(len_lvl - len_now) / d_len.noise:.1f} and "
                         f"{(rew_lvl - rew_now) / d_rew.noise:.1f}x the noise of one step)",
                         "Answers got shorter and less often right at once: the policy is losing what it could do "
                         "(broken prompts from a shard or template, answers cut short), not learning to be concise.",
                         values=vals, step_start=start, extra_keys=(REWARD,), samples=True)

    def _shrinking(self, step: int, track: Track) -> Finding | None:
        """The shrink rule of the class docstring; a comparison per step, a sort every ``shrink_every``."""
        if self._shrink.above(track):
            return None
        p = self.p
        n = int(p["shrink_n"])
        bar = self._shrink.bar
        below = n - recent_count(track, n, bar)
        low = self.ctx.tracks.get(LEN_MIN)
        if below < p["shrink_k"] or track.mean_last(n) >= bar or low is None or low.last_step != track.last_step \
                or min(low.tail(n)) > p["empty_tokens"]:
            return None
        med, scale = self._shrink.ref
        held = sum(1 for x in track.tail(int(p["shrink_hold_n"])) if x < med)
        if held < p["shrink_hold"]:
            return None  # a few short batches among ordinary ones: a dip, not a shift
        now = track.mean_last(n)
        start = next((s for s, x in zip(track.tail_steps(n), track.tail(n)) if x <= bar), step)
        vals = {"length": now, "reference": med, "range_low": bar, "noise": scale, "shortest": min(low.tail(n)),
                "ratio": now / max(med, 1e-9)}
        return self.fire(step, "warning", f"Responses shrinking towards empty: {track.raw} {fmt(now)} over the last "
                         f"{n} logged steps, {fmt(med - now)} under its median {fmt(med)} over the "
                         f"{int(p['shrink_window'])} before (the bar: {p['shrink_z']:g}x their noise of {fmt(scale)} and "
                         f"{p['shrink_drop']:.0%} of the median); {low.raw} down to {fmt(min(low.tail(n)))}",
                         "Some answers are now the stop token alone: a stop token gaining ground in sampling, or a "
                         "reward an empty answer does not lose.", values=vals,
                         step_start=start, extra_keys=(LEN_MIN, REWARD), samples=True)
