"""Policy detectors: KL to the reference and the PPO update size.

Every threshold below is a default; override per detector with
``HealthMonitor(settings={"kl_spike": {"critical_ratio": 4.0}})``.
"""

from __future__ import annotations

import math
from collections import deque

from rlcockpit.health.advice import (
    CLIPFRAC,
    ENTROPY,
    GRAD,
    KL,
    PPO_KL,
    clip_action,
    kl_action,
    lr_action,
    ranked,
    story_causes,
)
from rlcockpit.health.base import (
    Detector,
    StartReferenced,
    Track,
    fmt,
    log_scale,
    median,
    median_diff_noise,
    newest_far_above,
    register_detector,
    robust,
    versus,
)
from rlcockpit.health.config_view import make_action
from rlcockpit.health.detectors.collapse import collapse_actions, collapse_causes
from rlcockpit.health.detectors.system import LR
from rlcockpit.health.findings import Action, Cause, Finding
from rlcockpit.health.repeats import RepeatWatch
from rlcockpit.metrics.guide import threshold
from rlcockpit.metrics.headline import HEADLINE_KEYS

# read once from the metric guide (a guide lookup costs ~2 µs: too much for every logged step)
KL_FLOOR = threshold(KL, "healthy_low")  # the least KL level a ratio is taken against
KL_COEF = "actor/kl_coef"
# verl's task score and the reward its advantages are computed from (the score less an in-reward KL penalty)
REWARD, TRAIN_REWARD = HEADLINE_KEYS["reward"][:2]
# the most a per-token entropy can be: ln of a 262,144-token vocabulary (the largest in use is ~256k). A logged
# ``actor/entropy`` that never came under it is no per-token mean but a sum over the batch's tokens (verl's
# ``token-sum`` loss aggregation logs its per-token series so), and the KL logged beside it is such a sum too
ENTROPY_SUM_ABOVE = math.log(2.0**18)


@register_detector("kl_rising", "kl_drift", "kl_band")
class KLRising(Detector):
    """KL to the reference rising out of the usual band *faster and faster*. A healthy run's KL climbs from 0
    and levels off (each stretch of the run adds less than the one before), and on short-answer tasks it sits
    at 0.1-0.2 per token for the whole run; a run that is drifting away accelerates. Compared are the medians
    ``a``, ``b``, ``c`` of three consecutive windows of ``span`` observations (``c`` the newest). Warning: ``c`` >
    ``band_high``, ``c`` > ``rise_ratio`` x ``a``, and the last window's rise (above the higher of ``a`` and ``b``:
    a KL that dipped and came back has not risen) exceeds ``accel`` x the rise before it (``b - a``) plus ``z``
    standard errors of a difference of window medians (the noise pooled over the three windows; the test runs
    every ``every`` steps all run long, so ``z`` is that of a repeated test), and by ``z`` such standard errors of
    the logs too (a KL is positive and its noise multiplicative: a 1-2 prompt run's KL swings by a factor from one
    step to the next, and a ten-step bump from 0.2 to 0.6 is within that), on ``warn_hold`` consecutive checks (a 1-4
    completion run's KL comes in bursts: 0.15-0.3 for 12 logged steps over a median of 0.05, then back; one that
    keeps accelerating holds), and ``c`` above the median of every ``span`` observations among the ``range_window``
    before the three windows (a KL that was that high a moment ago and came back is bursting within its own range,
    as a ``num_iterations`` run's KL does when the passes over one generation pile up). Critical: also ``c`` > ``critical_ratio`` x ``a`` and
    > 2 x ``band_high``, on ``critical_hold`` consecutive checks (magnitude plus persistence: a KL in the reward
    that climbs slowly over a long healthy run, or a value logged twice per step by TRL's ``num_iterations=2``,
    meets it on a check or two and then not), and still climbing when the hold is met: ``c`` above the ``c`` of
    the hold's first check, or the newer half of the newest window above its older half (a KL that jumped and then
    settled within the hold, 0.25 -> 0.9 and back to 0.7 while the model learns, has found a new level and is no
    longer accelerating: a warning; a collapse keeps going). A KL above the band that is not accelerating is reported once as info.

    Also a warning, inside or below the band: the KL *left its own range for good*. Judged in log units (a small
    batch's KL swings by a factor): the mean log of the last ``range_n`` batches (trimmed by a fifth at each end: a
    blip of 10-300x for a batch or two is no new level) above the median log of the
    ``range_window`` batches before them (floored at the guide's ``healthy_low``: a ratio to a KL of ~0 means
    nothing) by ``range_ratio`` and by ``range_z`` standard errors of such a mean (1.1 x the robust scale of those
    logs, floored at 0.1, / sqrt(``range_n``)), on ``range_hold`` consecutive checks (every ``every`` batches), where the
    reference window itself was level (its newer half's median within sqrt(``range_ratio``) of its older half's: a
    KL still climbing from 0 in the first hundred steps has no range yet). A learning rate that ramps up lifts a
    1-2 prompt run's KL from 0.02-0.05 to 0.1-0.2 and keeps it there, under the band and without the acceleration
    that the rule above needs. Where the run logs its learning rate and the newest one is ``lr_raise`` x its mean
    over the reference window (the lr was raised after the range was measured: a ramp, a restart, a resumed
    scheduler; not while the lr still rose over the reference's first half, a warm-up), the factor is sqrt(``range_ratio``) (and the gate's half of it): the
    cause of a KL rise is already in sight, and the KL follows a raised lr by a factor over tens of steps before it
    passes the full one (the ``range_z`` and ``range_hold`` persistence stay). Checked only while a fast running mean of the log KL (updated every ``every``
    observations) is above a slow one by half that factor; the reference's statistics are measured again every
    ``range_n`` batches (a counter per step otherwise); while checks that found the KL out of it are being held, a
    re-measured reference keeps the level verdict of the one the KL left (the KL's first steps out, taken into its
    newer half, would make it look not level and reset the hold; its median and spread are re-measured). A reference
    measured not level leaves the last level one in place, for at most ``range_window`` batches, where that was the
    second or later level one in a row: a KL that starts to leave a range it held (a bump before, or its own first
    steps out, in the newer half of every window measured after) is judged against that range; the first level
    window of a KL still climbing early is a lull, not a range. A range warning does not take the check of the
    accelerating-rise rule: its critical still comes on the same step.

    Critical from the range rule: the KL that left its range *kept climbing*, its trimmed mean ``range_ratio`` x the
    level it had when the departure was warned, on ``range_hold`` checks in a row while the departure holds
    (magnitude plus persistence, measured against the warning's own level: a KL that moves to a new level settles
    there, one whose policy is collapsing keeps going; a climb at a steady or slowing pace, 0.35 -> 1.4 -> 2.2 over
    20 steps, never meets the accelerating-rise rule's test in log units). A gap of a check or two in the departure
    is the same departure (its warned level stays).

    Also a warning, whatever the KL does: the KL *coefficient runs away* (a KL penalty in the reward, an adaptive
    controller). The coefficient (``actor/kl_coef``) rose on every logged step for ``coef_steps`` or more and by
    ``coef_factor`` x its value before the first rise, and the penalty it pays out now takes ``coef_share`` of the
    task score or more: the score (``critic/score/mean``) minus the reward the advantages are computed from
    (``critic/rewards/mean``), over the last ``coef_span`` paired steps, against the score's mean over them. An
    adaptive controller moves its coefficient both ways around its target, a few percent a step; one that rises on
    every step by an order of magnitude is saturated (a KL it cannot bring to target, an error with its sign upside
    down), and once the penalty is a quarter of what the task pays, the reward the policy is trained on is turning
    into the KL estimate scaled by a growing factor."""

    keys = (KL, KL_COEF, TRAIN_REWARD)
    defaults = {"band_high": threshold(KL, "healthy_high"), "span": 10, "rise_ratio": 1.5, "accel": 1.5, "critical_ratio": 3.0,
                "every": 2, "z": 3.0, "critical_hold": 4, "warn_hold": 4,
                "range_n": 10, "range_window": 60, "range_ratio": 2.5, "range_z": 4.0, "range_hold": 3,
                "lr_raise": 2.0, "coef_steps": 10, "coef_factor": 10.0, "coef_share": 0.25, "coef_span": 10}
    story = "collapse"
    cause = "the policy is drifting away from the reference faster than it learns"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        if finding.severity == "info":
            return [Cause("a high but stable per-token KL is normal for short answers", 0.5)], []
        return collapse_causes(self, finding), [kl_action(self.ctx.view), lr_action(self.ctx.view, 3)]

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._noted_stable = False
        self._crit_held = 0  # consecutive checks (every ``every`` steps) that met the critical's magnitude
        self._crit_first = math.inf  # the newest window's median on the first of them
        self._warn_held = 0  # ... and that met the warning's
        self._fast = self._slow = math.nan  # running means of the log KL (~10 and ~50 batches): the range rule's gate
        self._range_held = 0  # consecutive checks that found the KL out of its own range
        self._range_start: int | None = None  # the step of the first of them
        self._warned_now = math.inf  # the trimmed mean log KL when the held departure was warned
        self._climb_held = 0  # consecutive checks since, with the KL ``range_ratio`` x above that
        self._out_last = -(10**9)  # the last step the departure held (a gap of a check or two is the same departure)
        self._repeats = RepeatWatch()  # how many consecutive logged values carry one batch
        self._blowups: deque[int] = deque(maxlen=512)  # the KL's observation count at each blow-up (burst rule)
        self._blowup_episode = False  # the burst rule fired and the count has not fallen under ``burst_k`` since
        self._log_ratio = math.log(self.p["range_ratio"])
        self._gate = 0.5 * self._log_ratio
        self._ref: tuple[float, float, int, bool] | None = None  # the reference's (median, scale, size, level?)
        self._ref_lr = math.inf  # the lr's mean over the reference window (inf: none logged, or rising)
        self._ref_lr_at = -(10**9)  # ... measured when the KL track had this many values
        self._ref_at = -(10**9)  # ... measured when the track had this many values
        self._level_at = -(10**9)  # ... the last reference found level was measured then
        self._level_run = 0  # ... and how many references in a row had been found level then
        self._every = self._tick = int(self.p["every"])  # observations until the range rule's gate is updated
        self._coef_rises = 0  # consecutive logged rises of the KL coefficient
        self._coef_base = math.nan  # ... its value before the first of them
        self._coef_step = -1  # the coefficient's step last counted
        self._coef_steps, self._coef_factor = int(self.p["coef_steps"]), float(self.p["coef_factor"])

    def _been_there(self, track: Track, c: float, span: int) -> bool:
        """Whether a median of ``span`` consecutive observations among the ``range_window`` before the three compared
        windows was already at ``c`` or above: the KL went that high a moment ago and came back, so a rise to it is a
        burst within the run's own range, not a drift away (asked only when the warning would fire)."""
        before = track.tail(int(self.p["range_window"]), skip=3 * span)
        return any(median(before[i:i + span]) >= c for i in range(len(before) - span, -1, -span))

    def check(self, step: int) -> Finding | None:
        track = self.ctx.tracks[KL]
        found = None
        tick = self._tick = self._tick - 1
        if tick <= 0:  # the range rule's gate, every ``every`` observations
            self._tick = self._every
            found = self._range_gate(step, track, track.last)
        rising = self._rising(step, track)  # counted on every check, whether the range rule fired or not
        coef = self.ctx.tracks.get(KL_COEF)
        runaway = None
        if coef is not None and coef.last_step != self._coef_step:  # the coefficient's rises, counted inline
            self._coef_step = coef.last_step
            vals = coef.values
            if len(vals) > 1 and vals[-1] > vals[-2]:
                if not self._coef_rises:
                    self._coef_base = vals[-2]
                self._coef_rises += 1
                if self._coef_rises >= self._coef_steps and vals[-1] >= self._coef_factor * self._coef_base > 0.0:
                    runaway = self._runaway(step, coef)
            else:
                self._coef_rises = 0
        if found is None or (rising is not None and rising.severity == "critical"):
            return rising or runaway
        return found

    def _runaway(self, step: int, coef: Track) -> Finding | None:
        """The coefficient-runaway rule (class docstring), asked once the coefficient rose ``coef_factor`` x on
        each of ``coef_steps`` logged steps or more (counted in :meth:`check`): the penalty's share."""
        p, base, now = self.p, self._coef_base, coef.last
        tracks, span = self.ctx.tracks, int(p["coef_span"])
        paid, score = tracks.get(TRAIN_REWARD), tracks.get(REWARD)
        if paid is None or score is None or paid.last_step != score.last_step or min(paid.n, score.n) < span:
            return None
        q = score.mean_last(span)
        penalty = q - paid.mean_last(span)
        if penalty < p["coef_share"] * abs(q) or penalty <= 0.0:
            return None
        n = self._coef_rises
        vals_ = {"kl_coef": now, "kl_coef_before": base, "factor": now / base, "rises": n, "penalty": penalty,
                 "quality": q, "share": penalty / max(abs(q), 1e-12)}
        return self.fire(step, "warning",
                         f"KL coefficient running away: {coef.raw} {fmt(base)} -> {fmt(now)} ({now / base:.0f}x), up "
                         f"on each of the last {n} logged steps; the KL penalty now takes {fmt(penalty)} of "
                         f"{score.raw} {fmt(q)} ({penalty / max(abs(q), 1e-12):.0%}, {paid.raw} over the last {span})",
                         "The KL controller pushes its coefficient one way on every step, far beyond the few percent "
                         "a step of a controller that follows its target: the reward the policy is trained on is "
                         "turning into the KL estimate times a growing factor.", values=vals_,
                         step_start=coef.steps[-min(n + 1, len(coef.steps))], extra_keys=(REWARD,))

    def _rising(self, step: int, track: Track) -> Finding | None:
        """The accelerating-rise rule (class docstring)."""
        p = self.p
        last = track.last
        if last <= p["band_high"]:
            self._crit_held = self._warn_held = 0
            return None
        every = p["every"]
        if every > 1 and (self.seen + self._phase) % every:  # not self.due(every), inlined
            return None
        span = int(p["span"])
        vals = track.tail(3 * span)
        if len(vals) < 3 * span:
            return None
        parts = (vals[:span], vals[span : 2 * span], vals[2 * span :])
        a, b, c = (median(part) for part in parts)
        if c <= p["band_high"]:
            return None
        last = parts[2]
        noise = median_diff_noise(parts, (a, b, c))  # pooled over the three windows: one noisy window is no trend
        accelerating = c - max(a, b) > p["accel"] * max(b - a, 0.0) + p["z"] * noise  # a dip and back is no rise
        if accelerating and a > 0 and b > 0 and c > 0 and min(vals) > 0:  # ... and a factor beyond the KL's own
            logs = [math.log(v) for v in vals]  # multiplicative noise (a small batch's KL swings by a factor)
            lparts = (logs[:span], logs[span : 2 * span], logs[2 * span :])
            la, lb, lc = (median(part) for part in lparts)
            accelerating = lc - max(la, lb) > p["z"] * median_diff_noise(lparts, (la, lb, lc))
        ref = max(a, KL_FLOOR)  # a ratio to a KL of ~0 means nothing (and changes no decision:
        ratio = c / ref  # c is above band_high = 10 x healthy_low)
        info = {"kl": c, "kl_before": a, "kl_middle": b, "ratio": ratio, "band_high": p["band_high"]}
        mid = 0.5 * (b + c)  # the event starts where the newest window left the middle one's level
        start = next((st for st, v in zip(track.tail_steps(span), last) if v > mid), step)
        crit = accelerating and ratio > p["critical_ratio"] and c > 2 * p["band_high"]
        self._crit_held = self._crit_held + 1 if crit else 0
        if self._crit_held == 1:
            self._crit_first = c  # the newest median on the hold's first check
        h = span // 2  # still climbing: above the hold's first newest median, or rising within the newest window
        if (crit and self._crit_held >= p["critical_hold"]
                and (c > self._crit_first or median(last[h:]) > median(last[:h]))):
            return self.fire(step, "critical", f"KL to reference rising fast: {fmt(a)} -> {fmt(b)} -> {fmt(c)} "
                             f"({ratio:.1f}x {versus(ref, a, 'first median')})", "The policy is moving away from the reference faster and faster.",
                             values=info, step_start=start)
        self._warn_held = self._warn_held + 1 if accelerating and ratio > p["rise_ratio"] else 0
        if self._warn_held >= p["warn_hold"] and not self._been_there(track, c, span):
            return self.fire(step, "warning", f"KL to reference {fmt(c)} above the usual 0.01-0.1 band and "
                             f"accelerating ({fmt(a)} -> {fmt(b)} -> {fmt(c)}; {ratio:.1f}x {versus(ref, a, 'first median')})",
                             values=info, step_start=start)
        if not self._noted_stable:
            self._noted_stable = True
            return self.fire(step, "info", f"KL to reference {fmt(c)} is above 0.1 but not accelerating",
                             "Short-answer tasks give a high per-token KL; judged against the run's own trend.",
                             values=info)
        return None


    def _range_gate(self, step: int, track: Track, last: float) -> Finding | None:
        """Running means of the log KL over ~10 and ~50 batches (updated every ``every`` observations, with the newest
        value); the range rule looks only while the fast one is above the slow one by half its factor."""
        fast, slow = self._fast, self._slow
        if last > 1e-12:
            x = math.log(last)
            if fast != fast:
                fast = slow = x
            self._fast = fast = fast + 0.36 * (x - fast)
            self._slow = slow = slow + 0.08 * (x - slow)
        gap = fast - slow  # half the factor the rule applies (a quarter of it where the lr was raised)
        if gap > self._gate or (gap > 0.5 * self._gate and self._lr_raised(track)):
            return self._left_range(step, track)
        self._range_held = 0
        return None

    def _left_range(self, step: int, track: Track) -> Finding | None:
        """The range rule (class docstring): the last ``range_n`` batches against the ``range_window`` before."""
        p = self.p
        period = self._repeats.of(track)
        n, w = int(p["range_n"]) * period, int(p["range_window"]) * period
        if track.n < n + w:
            return None
        if track.n - self._ref_at >= n:  # the reference's statistics, measured again every ``range_n`` batches
            self._ref_at = track.n
            ref = [math.log(v) for v in track.tail(w, skip=n) if v > 1e-12]
            if len(ref) < 0.7 * w:
                self._ref = None
            else:
                half, (mid, scale) = len(ref) // 2, robust(ref, 0.0, 0.1)
                level = median(ref[half:]) - median(ref[:half]) < 0.5 * self._log_ratio
                if self._range_held and self._ref is not None:  # a departure being held keeps the level verdict of
                    level = self._ref[3]  # the reference it left: its own first steps out make the new one climb
                if level or self._ref is None or self._level_run < 2 or track.n - self._level_at >= w:
                    self._ref = (mid, scale, len(ref), level)
                    self._level_run = self._level_run + 1 if level else 0
                    if level:
                        self._level_at = track.n
                # else the last level reference (the second or later in a row: a range that held, not a lull in
                # the early climb), under ``range_window`` batches old, stays: a KL that starts to leave its range
                # makes the newer half of the next window climb (no range), and is judged against the range it had
        new = [math.log(v) for v in track.tail(n) if v > 1e-12]
        if self._ref is None or len(new) < 0.7 * n:
            self._range_held = 0
            return None
        mid, scale, n_ref, level_ref = self._ref
        level = max(mid, math.log(KL_FLOOR))
        cut = len(new) // 5  # a trimmed mean: one or two batches of a 10-300x blip in ten are no new level
        kept = sorted(new)[cut : len(new) - cut]
        now = sum(kept) / len(kept)
        se = 1.1 * scale / math.sqrt(max(len(new) // period, 1))  # (1.1: the trimmed mean's efficiency)
        raised = self._lr_raised(track)
        out = level_ref and now - level > max(self._log_ratio * (0.5 if raised else 1.0), p["range_z"] * se)
        if not out:
            self._range_held = 0
            return None
        self._range_held += 1
        if self._range_held == 1:
            self._range_start = step
        if self._range_held < p["range_hold"]:
            return None
        if self._range_held == p["range_hold"] and step - self._out_last > self.quiet_span():
            self._warned_now, self._climb_held = now, 0  # the level a new departure is warned at
        self._out_last = step
        climbed = now - self._warned_now
        self._climb_held = self._climb_held + 1 if climbed >= self._log_ratio else 0
        ratio = math.exp(now - level)
        if self._climb_held >= p["range_hold"]:
            return self.fire(step, "critical", f"KL to reference still climbing after it left its range: {track.raw} "
                             f"averaged {fmt(math.exp(now))} (trimmed geometric mean) over the last {len(new)} logged "
                             f"steps, {math.exp(climbed):.1f}x the {fmt(math.exp(self._warned_now))} it had when it left "
                             f"its range and {ratio:.1f}x {versus(math.exp(level), math.exp(mid), 'median')}, on "
                             f"{self._climb_held} checks in a row",
                             "The policy keeps moving away from the reference after it left its range: a collapse "
                             "under way, most often a learning rate that grew too large.",
                             values={"kl": math.exp(now), "kl_warned": math.exp(self._warned_now),
                                     "climb": math.exp(climbed), "kl_median": math.exp(mid), "ratio": ratio,
                                     "log_spread": scale}, step_start=self._range_start)
        over = f" over the {n_ref} logged steps before (where it swung by a factor of {math.exp(scale):.1f})"
        lr = self.ctx.tracks.get(LR)
        why = (f", while {lr.raw} rose to {fmt(lr.last)}, {lr.last / self._ref_lr:.1f}x its mean in that stretch"
               if raised and lr is not None else "")
        return self.fire(step, "warning", f"KL to reference left its range: {track.raw} averaged {fmt(math.exp(now))} "
                         f"(trimmed geometric mean) over the last {len(new)} logged steps, {ratio:.1f}x "
                         f"{versus(math.exp(level), math.exp(mid), 'median', over)}, on {self._range_held} checks in a "
                         f"row{why}",
                         "The policy settled further from the reference than it had been: often a learning rate that "
                         "grew too large, the start of a collapse.",
                         values={"kl": math.exp(now), "kl_median": math.exp(mid), "ratio": ratio,
                                 "log_spread": scale}, step_start=self._range_start)


    def _lr_raised(self, track: Track) -> bool:
        """Whether the newest learning rate is ``lr_raise`` x its mean over the KL's reference window (that mean
        measured again every ``range_n`` batches)."""
        lr = self.ctx.tracks.get(LR)
        if lr is None:
            return False
        if track.n - self._ref_lr_at >= self.p["range_n"]:
            self._ref_lr_at = track.n
            period = self._repeats.period  # as the range rule last measured it (measuring it costs a scan)
            self._ref_lr = self._lr_before(track, int(self.p["range_window"]) * period, int(self.p["range_n"]) * period)
        return lr.last > self.p["lr_raise"] * self._ref_lr

    def _lr_before(self, track: Track, w: int, n: int) -> float:
        """The learning rate's mean over the steps of the KL's reference window (``w`` values before the newest
        ``n``; a schedule is smooth: no outlier to trim); inf where the run logs none there, or where it was still
        rising over the first half of that window (a warm-up: the KL rises with it, and no lr had been raised above
        what the schedule meant). Walks back from the newest lr only as far as the window's first step."""
        lr = self.ctx.tracks.get(LR)
        if lr is None or not lr.n or len(track.steps) < n + w:
            return math.inf
        first, last = track.steps[-(n + w)], track.steps[-(n + 1)]
        vals = []
        for st, v in zip(reversed(lr.steps), reversed(lr.values)):
            if st < first:
                break
            if st <= last:
                vals.append(v)
        if len(vals) < 3 or vals[len(vals) // 2] > vals[-1]:  # (newest first: vals[-1] is the window's first)
            return math.inf
        return sum(vals) / len(vals)


@register_detector("kl_spike")
class KLSpike(StartReferenced):
    """Sudden KL jump that holds. The KL to the reference is a positive, heavy-tailed series (one batch's estimate
    over a few completions swings by a factor), so it is judged in log units against the trailing ``window``:
    reference = the median of its positive values (floored at ``min_abs``), spread = the robust scale of their
    logs (floored at ``log_floor``; see :func:`~rlcockpit.health.base.log_scale`). Persistence is part of the
    test: what is compared is the lower median of the last k logged values (k = ``sustain`` for a critical, 2 for
    a warning), in units of the standard error of such a median (spread x 1.2533 / sqrt(k)): one noisy batch
    moves the median of three values not at all.

    Warning: each of the last ``warn_hold`` values above ``warn_abs`` and ``warn_ratio`` x the reference, their
    median ``z_warn`` units above it, right after a value below ``prev_abs`` (a small-batch run's k3 KL estimate
    jumps 10-300x for one or two logged steps and is back at the next: that is not a jump that holds) (the seed article's rule, judged against the run's own
    level and noise). Critical: each of the last ``sustain`` values above ``critical_ratio`` x the reference and
    one log spread above it, and nearer their median than the reference, in log units (above the geometric midpoint
    of the two: the jump held at its level; 0.15, 1.07, 1.2 against a median of 0.04 is a two-batch blip after a
    value at the run's level, not three batches of a jump), and their median ``z`` units above it and above ``warn_abs`` (the warning's absolute
    bar: a 2-prompt run's KL held at 0.1-0.2, 4x its median 0.03, is a healthy level), and the value logged just before these
    ``sustain`` values nearer the reference than that median, in log units (a jump from the run's level; a KL logged every 7
    steps that climbed 0.11 -> 0.27 -> 0.42 -> 0.54 over 60 steps is a rise, judged by ``kl_rising``). The reference is frozen where a candidate spike
    starts, for at most ``sustain`` + 2 observations (a jump is sudden; a KL that drifted up is measured afresh).
    Both need each of the held values (not only their median) above all but ``tail_allow`` of the window's values: a
    heavy-tailed KL (sequence-level importance ratios, a few completions a batch) that reached 0.5 and 1.0 as single
    batches within its last 20 logged steps has shown that level as its own noise, and three such batches in a row
    (0.78, 0.27, 0.45 against a median of 0.08) are no jump out of its range; nor are three batches whose lowest is
    at a level the window's single batches passed more than ``tail_allow`` times (0.44, 0.22, 0.45 where 4 of the
    last 20 were 0.25-0.37: a run whose batches pass 0.22 one time in five meets three in a row by chance every
    hundred-odd steps). The same share of the last ``tail_memory`` logged values counts too (5 of 100): 20 steps
    hold one of a run's one-in-thirteen batches, or none, by chance (0.43, 0.18, 0.28 against a median of 0.04
    where 9 of the first 119 batches passed 0.18, and one of the 20 before). Nor are they at or under a level the
    KL held for ``sustain`` - 1 batches in a row among those ``tail_memory`` values and came back from (the lower of
    each such run): a small batch's KL comes in bursts, and a third batch at a level two held before is the tail of
    its bursts, not a jump (0.55, 0.53, 0.98 against a median of 0.07, where 2.0 and 0.61 came back to back 32
    steps before, and 4 of the 84 batches before passed 0.53).
    During warm-up the reference is the first logged KL (the policy before any update, ~0): critical when the last ``sustain``
    values all exceed ``early_abs`` and ``early_ratio`` x that start (a policy that left the reference within
    the first steps), unless every entropy the run logged so far is above the most a per-token entropy can be (ln of
    a 262,144-token vocabulary, 12.5 nats): such a run logs its per-token series as sums over the batch's tokens
    (verl's token-sum aggregation: an entropy of 54-66 on 36 tokens), its KL a sum too, which ``early_abs``, a per-token
    level, does not measure (0.45, 1.5, 0.9, 1.8, 1.9, 2.0 in the first steps of a healthy such run from 0: 0.05 a
    token), and so, until the reference window holds ``window`` batches, does each held value of a spike or
    a jump (a dozen batches have not shown a small batch's KL its bursts). Persistence counts distinct batches: a run that logs each batch's KL on several consecutive
    steps (TRL's ``num_iterations=2``: the generating step and the reuse step, see :mod:`rlcockpit.health.repeats`)
    needs ``sustain`` / ``warn_hold`` batches, the reference is taken over the last ``window`` batches, and a
    median's standard error is that of the batches it holds.

    Blow-ups recurring (warning): ``burst_k`` or more of the last ``burst_n`` batches, the newest among them, each
    a blow-up (above the guide's KL ``severe_above`` and ``burst_ratio`` x the median of the ``burst_ref`` batches
    before those ``burst_n``), where the run's blow-ups so far, counted from ``burst_ref`` + 10 batches in up to
    the ``burst_n`` before, came at a share p (at least ``burst_share``) that makes that many in ``burst_n`` a
    chance of under ``burst_p`` (binomial tail). A small batch's KL estimate jumps 10-300x for one batch and is back
    at the next, so one blow-up, or two in a row, is no news, and the rules above wait for a jump that holds; but a
    run whose batches blow up one in three, where it had done so one in fifty or less, is being trained on samples
    the policy no longer fits (prompts out of its distribution, a reward that pays the wrong thing): its KL's median
    may stay at its level for tens of steps while the blow-ups pile up. A run whose KL was as bursty from the start
    has that share as its own rate. Checked only on a batch above ``severe_above`` (a median of ``burst_ref``
    values there and then); raised once per episode (until the count falls under ``burst_k`` again)."""

    keys = (KL,)
    defaults = {"warn_abs": threshold(KL, "spike_above"), "prev_abs": threshold(KL, "healthy_high"), "warn_ratio": 2.0, "z_warn": 4.0, "critical_ratio": 3.0,
                "warn_hold": 3, "tail_allow": 1, "tail_memory": 100,
                "window": 20, "min_abs": KL_FLOOR, "z": 4.0, "log_floor": 0.1, "sustain": 3,
                "early_abs": threshold(KL, "severe_above"),
                "early_ratio": 10.0, "burst_abs": threshold(KL, "severe_above"), "burst_ratio": 10.0, "burst_n": 20,
                "burst_k": 5, "burst_ref": 60, "burst_share": 0.02, "burst_p": 1e-5}
    story = "collapse"
    cause = "policy update too large: the policy drifted far from the reference"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        return collapse_causes(self, finding), collapse_actions(self)

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._ref = math.nan
        self._level = math.nan
        self._spread = math.nan
        self._onset: int | None = None
        self._before = math.nan  # the KL logged just before the candidate spike
        self._tail = math.nan  # the window's value ranked ``tail_allow`` + 1 from the top
        self._long_tail = math.nan  # the same rank's share of the last ``tail_memory`` values (NaN: not taken yet)
        self._burst_top = -math.inf  # ... and the highest level they held for ``sustain`` - 1 batches in a row
        self._onset_n = self._window_n = 0  # the KL's observation count at the candidate's start, the window's size
        self._repeats = RepeatWatch()  # how many consecutive logged values carry one batch
        self._blowups: deque[int] = deque(maxlen=512)  # the KL's observation count at each blow-up (burst rule)
        self._blowup_episode = False  # the burst rule fired and the count has not fallen under ``burst_k`` since

    def check_early(self, step: int, track: Track) -> Finding | None:
        p = self.p
        recent = track.tail(p["sustain"])
        if len(recent) < p["sustain"] or self.seen <= p["sustain"]:
            return None
        bar = max(p["early_abs"], p["early_ratio"] * abs(self._start))
        if min(recent) <= bar or self._summed():
            return None
        v = track.last
        return self.fire(step, "critical", f"KL to reference jumped to {fmt(v)} within {self.seen} steps of the start "
                         f"({fmt(self._start)})", "The first updates moved the policy far from the reference.",
                         values={"kl": v, "kl_before": self._start, "ratio": v / max(abs(self._start), 1e-9)},
                         step_start=step - p["sustain"] + 1, extra_keys=("critic/score/mean",))

    def _summed(self) -> bool:
        """The run logs its per-token series as sums over the batch's tokens: every entropy it logged so far above
        the most a per-token entropy can be (:data:`ENTROPY_SUM_ABOVE`). Read only where the warm-up rule would fire."""
        ent = self.ctx.tracks.get(ENTROPY)
        return ent is not None and ent.n > 0 and min(ent.values) > ENTROPY_SUM_ABOVE

    def _held(self, track: Track, k: int, period: int = 1) -> tuple[float, float]:
        """(lower median of the last ``k`` values, its distance above the reference in standard errors of a median
        of the ``k / period`` batches they carry)."""
        vals = sorted(track.tail(k))
        low = vals[(len(vals) - 1) // 2]
        if low <= 0.0:
            return low, -math.inf
        se = self._spread * 1.2533 / math.sqrt(max(len(vals) // period, 1))
        return low, math.log(low / self._ref) / se

    def _young_bar(self, period: int) -> float:
        """The bar each held value must also clear where the candidate's reference window held fewer than ``window``
        batches (the run just past its warm-up): the warm-up's own, ``early_abs`` and ``early_ratio`` x the first
        logged KL; -inf once the window is full. A dozen batches have not shown a small batch's KL its bursts yet
        (0.35, 0.24, 0.25 at steps 11-13 against a median of 0.04 over the ten before, where 0.3-0.5 came back
        every few steps for the rest of the run): a jump out of so short a window is judged as the warm-up is."""
        if self._window_n >= self.p["window"] * period:
            return -math.inf
        return max(self.p["early_abs"], self.p["early_ratio"] * abs(self._start))

    def _beyond_memory(self, track: Track, low: float) -> bool:
        """Whether ``low`` is above the same share of the last ``tail_memory`` logged values before the candidate
        spike as ``tail_allow`` is of ``window`` (5 of 100): a level the run's single batches pass one time in
        thirteen is met by a 20-step window once or not at all, by chance; and above every level those values held
        for ``sustain`` - 1 batches in a row (the lower of two back to back): a burst that long at that level, which
        came back, is one the run's KL makes. Taken once per candidate, and only where every other test passed (a
        sort of 100 values on the rare step that would fire)."""
        if self._long_tail != self._long_tail:
            p = self.p
            longer = track.tail(int(p["tail_memory"]) * self._repeats.period, skip=track.n - self._onset_n + 1)
            allow = int(p["tail_allow"] * len(longer) / max(self._window_n, 1))
            ok = len(longer) > self._window_n and len(longer) > allow
            self._long_tail = sorted(longer)[-allow - 1] if ok else -math.inf
            k = (int(p["sustain"]) - 1) * self._repeats.period  # the values ``sustain`` - 1 batches fill
            self._burst_top = max((min(longer[i:i + k]) for i in range(len(longer) - k + 1)),
                                  default=-math.inf) if k > 0 else -math.inf
        return low > self._long_tail and low > self._burst_top

    def check(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[KL]
        v, prev = track.last, track.ago(1)
        burst = self._burst(step, track) if v > p["burst_abs"] else None  # the burst rule's gate: a blow-up's size
        if self._streak == 0:  # freeze the reference at the start of a candidate spike
            gate = v > p["warn_abs"] or v > 0.8 * p["critical_ratio"] * max(prev, p["min_abs"] / p["critical_ratio"])
            if not gate:
                return burst
            window = track.tail(p["window"] * self._repeats.of(track), skip=1)  # the last ``window`` batches
            fit = log_scale(window, p["log_floor"])
            self._level = fit[0] if fit else median(window)  # the run's own level, as the title states it
            self._ref, self._spread = max(self._level, p["min_abs"]), fit[1] if fit else p["log_floor"]
            self._onset, self._before = step, prev
            top = sorted(window)[-int(p["tail_allow"]) - 1:] if len(window) > p["tail_allow"] else [0.0]
            self._tail = top[0]
            self._long_tail, self._onset_n, self._window_n = math.nan, track.n, len(window)
        self._streak += 1
        period = self._repeats.period
        n = int(p["sustain"]) * period
        held, z = self._held(track, n, period)
        vals = {"kl": v, "kl_before": self._ref, "ratio": v / self._ref, "log_spread": self._spread}
        # each value beyond one spread too, and nearer the held median than the reference (the jump held at its level)
        floor = self._ref * max(p["critical_ratio"], math.exp(self._spread), math.sqrt(max(held, 0.0) / self._ref))
        over = f" over the {p['window'] * period} steps before"
        # from the reference level, not from a KL that had climbed most of the way (kl_rising's business): the value
        # logged before the held ones nearer the reference than their median, in log units
        sudden = track.n <= n or track.ago(n) <= math.sqrt(max(held, 0.0) * self._ref)
        # a critical clears the warning's absolute bar too: a KL held at 0.1-0.2 is a healthy run's level, however
        # small the median it is measured against (a 2-prompt run's KL wanders 0.006-0.2 between logged steps)
        # above the run's own tail: a level its single batches reached more than ``tail_allow`` times in the window
        # is one it wanders to (a heavy-tailed KL visits 0.3-1 now and then), three such batches in a row no jump;
        # judged on the lowest of them: each held batch must be beyond what the window's single batches reached
        low = min(track.tail(n))
        if track.n > n and self._streak >= n and low > floor and z > p["z"] and sudden \
                and held > p["warn_abs"] and low > self._tail and low > self._young_bar(period) \
                and self._beyond_memory(track, low):
            vals |= {"held": held, "z": z}
            return self.fire(step, "critical", f"KL spiked to {fmt(v)} and held: the median of its last {n} logged "
                             f"values is {fmt(held)}, {held / self._ref:.1f}x "
                             f"{versus(self._ref, self._level, 'median', over)}", "A sudden jump of the policy away from the reference; often "
                             "the start of a collapse.", values=vals, step_start=self._onset,
                             extra_keys=("critic/score/mean",))
        k = int(p["warn_hold"]) * period
        both, z2 = min(track.tail(k)), self._held(track, k, period)[1]
        if self._streak >= k and both > p["warn_abs"] and both > p["warn_ratio"] * self._ref and z2 > p["z_warn"] \
                and self._before < p["prev_abs"] and both > self._tail and both > self._young_bar(period) \
                and self._beyond_memory(track, both):
            return self.fire(step, "warning", f"KL jumped from {fmt(self._before)} to {fmt(v)} and stayed there "
                             f"for {k} logged steps (at least {both / self._ref:.1f}x "
                             f"{versus(self._ref, self._level, 'median', over)})", values=vals | {"held": both, "z": z2},
                             step_start=self._onset)
        if self._streak >= n + 2 * period or (v <= p["warn_abs"] and v <= 0.8 * p["critical_ratio"] * self._ref):
            self._streak = 0  # back to the usual level, or not a sudden jump: the next one measures afresh
        return burst

    def _burst(self, step: int, track: Track) -> Finding | None:
        """The blow-ups-recurring rule (class docstring), on a batch above ``burst_abs``: whether it is a blow-up
        (against the median of the ``burst_ref`` batches before the last ``burst_n``), and if so whether the last
        ``burst_n`` batches hold more than the run's own share of them explains."""
        p = self.p
        period = self._repeats.period
        n_win, ref_n, now = int(p["burst_n"]) * period, int(p["burst_ref"]) * period, track.n
        start = ref_n + 10 * period  # blow-ups are counted from here (a reference to measure them against)
        if now <= start:
            return None
        ref = track.tail(ref_n, skip=n_win)
        if not ref or track.last <= p["burst_ratio"] * max(median(ref), 1e-4):
            return None
        blowups = self._blowups
        blowups.append(now)
        recent = sum(1 for i in blowups if i > now - n_win) // period
        if recent < p["burst_k"]:
            self._blowup_episode = False
            return None
        past_n = (now - n_win - start) // period  # the batches the run's own share is taken over
        if self._blowup_episode or past_n < 30:
            return None
        past = sum(1 for i in blowups if i <= now - n_win) // period
        share = max(p["burst_share"], past / past_n)
        batches = int(p["burst_n"])
        chance = sum(math.comb(batches, i) * share ** i * (1 - share) ** (batches - i) for i in range(recent, batches + 1))
        if chance >= p["burst_p"]:
            return None
        self._blowup_episode = True
        med = median(ref)
        first = next((s for s, i in zip(track.tail_steps(n_win), range(now - n_win + 1, now + 1)) if i in blowups), step)
        return self.fire(step, "warning", f"KL blowing up again and again: {recent} of the last {batches} batches "
                         f"above {fmt(max(p['burst_ratio'] * med, p['burst_abs']))} (at least {fmt(p['burst_ratio'])}x "
                         f"its median {fmt(med)} before them), where {past} of {past_n} batches were before",
                         "The policy's KL estimate now jumps by a factor of ten and more on batch after batch: its "
                         "training samples are ones it no longer fits (prompts out of its distribution, a reward "
                         "paying the wrong answers, an lr too high); the median KL follows later.",
                         values={"kl": track.last, "kl_median": med, "blowups": recent, "share_before": past / past_n,
                                 "chance": chance}, step_start=first)


@register_detector("kl_stuck", "kl_zero")
class KLStuck(Detector):
    """KL to the reference stays below ``eps`` for ``window`` steps after warm-up: the policy is not moving
    (learning rate too low, zero advantages). Warning only."""

    keys = (KL,)
    defaults = {"eps": 1e-4, "window": 30, "every": 10}
    due_every = "every"  # check runs on one observation in ``every`` (Detector.gate)
    common = {"enabled": True, "warmup": 30, "cooldown": 200}
    cause = "learning rate too low or advantages all zero: the policy is not updating"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        view = self.ctx.view
        std = self.ctx.tracks.get("critic/score/std")
        if std is not None and std.n and std.mean_last(5) < 1e-6:
            return [Cause("every sample gets the same reward: the advantages are all zero", 0.75,
                          f"{std.raw} = {fmt(std.mean_last(5))}")], []
        lr = view.current_number("actor.optim.lr")
        return [Cause(self.cause, 0.6)], [make_action(view, "Raise the learning rate 3x",
                                                      {"actor.optim.lr": float(f"{lr * 3:.3g}") if lr else 1e-6})]

    def check(self, step: int) -> Finding | None:
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
    ``clipfrac_floor``) for ``sustain`` steps. A signed estimate (negative values in its warm-up: the k1 mean of old
    minus new log-probs) counts only when the median of its last 3 values is beyond ``critical_ratio`` x its warm-up
    median magnitude: its sign-flipping noise is no update. So does a ``ppo_kl`` whose warm-up median is already past
    ``ppo_kl_warn`` / ``critical_ratio``, against that median: a floor it had from its first step, before any update
    could be large (the gap between the pass that scored the old log-probs and the training forward: dropout on in
    train mode puts a GPT-2's at 0.02-0.07 on the first mini-batch, wandering to 0.16), is not the size of an update,
    whether or not its warm-up happened to dip below 0. Also a warning below those levels: the clip fraction far above its
    own range (``k`` of the last ``n`` values more than ``z`` robust scale units, at least a tenth of
    ``clipfrac_floor`` each, above the median of the ``window`` before them, and above it by ``rise`` x that median
    and by ``clipfrac_floor``), where no more than ``prior_share`` of the ``window`` values were past that bar: a run
    whose updates clipped 1% of tokens and now clip 10% took a far larger step than it ever did. (A clip fraction that
    is 0 on most steps has a median and a spread of 0; one that was past the bar on a third of the window before,
    as on the later passes over each generation of a ``num_iterations`` run, does nothing new by being past it on 3
    of 4 steps.)

    Clipping stopped (warning): a clip fraction that was above 0 on a share ``q`` of at least ``stop_share`` of the
    ``window`` logged values before it, then exactly 0 on every value since, for more values than a run with that
    share would go without one clipped token by chance (``q`` taken as the chance of each, independently, with
    half a clipped and half an unclipped value added to the window's counts so that a window clipped throughout
    does not make a single unclipped value impossible: (1 - q)^run below ``stop_alpha``) and longer than any stretch of zeros the run had before, while the learning
    rate is at least half the highest of its recent logged values (those the monitor keeps: a decaying schedule
    makes the updates small enough to stay inside the clip range). The trust region no longer limits the update:
    the clip range was widened (a clip epsilon of 10), or the ratio is no longer taken against the policy that
    sampled the batch. The updates it held back before are now taken whole, and the policy drifts off before its KL
    shows it.

    Updates stopped (warning): the gradient norm (``actor/grad_norm``, TRL's ``grad_norm``) exactly 0 on every
    logged step of a run of ``zero_grad_min`` or more, after ``zero_grad_history`` logged values or more of which
    a share ``q`` were exactly 0 (a group whose samples tie has no advantage; with Laplace's one-in-two added), for
    longer than a run with that share would go by chance (q^run below ``zero_grad_alpha``) and longer than any run
    of zeros before, unless the reward over the run is at the best of its recent logged values before the run (a
    task learnt to the ceiling ties every group). No sample carries a learning signal any more: every group's
    rewards tie (rollouts made greedy or deterministic, a reward that no longer varies) or the loss no longer
    reaches the weights. The policy stops learning while its reward, entropy and length can stay where they were."""

    keys = (PPO_KL, CLIPFRAC, GRAD)  # the grad norm read by the updates-stopped rule, on the steps these are logged
    defaults = {"ppo_kl_warn": threshold(PPO_KL, "abs_above"), "clipfrac_warn": threshold(CLIPFRAC, "warn_above"),
                "critical_ratio": 5.0, "ppo_kl_floor": 0.005,
                "clipfrac_floor": 0.05, "sustain": 3, "window": 50, "k": 3, "n": 4, "z": 8.0, "rise": 1.0,
                "prior_share": 0.1, "stop_share": 0.2, "stop_alpha": 1e-4, "zero_grad_min": 8,
                "zero_grad_history": 30, "zero_grad_alpha": 1e-6}
    triggers = keys[:2]  # either metric alone is enough (TRL logs only the clip ratio)
    story = "collapse"
    cause = "each PPO update moves the policy too far"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        if "grad_zero_steps" in finding.evidence["values"]:
            return [Cause("every sample of a group gets the same reward, so every advantage is 0 (rollouts made "
                          "greedy or deterministic: do_sample off or temperature 0; a reward that no longer varies)",
                          0.7),
                    Cause("the loss no longer reaches the weights (parameters frozen, a detached loss)", 0.4)], []
        causes = story_causes(self.ctx.view, ("clip", "epochs", "lr")) + [Cause(self.cause, 0.6)]
        return ranked(causes), [clip_action(self.ctx.view), lr_action(self.ctx.view, 2)]

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._base: dict[str, float] = {}
        self._signed: dict[str, bool] = {}
        self._level = math.nan  # slow running mean of the clip fraction: the cheap gate of the range rule
        # the clipping-stopped rule: clipped (1) or not (0) for the ``window`` values before the current run of
        # zeros, how many of them were clipped, that run's length and the longest run before it
        self._clipped: deque[int] = deque(maxlen=int(self.p["window"]))
        self._n_clipped = 0
        self._zeros = 0
        self._longest_zeros = 0
        self._clip_n = 0  # the clip track's observation count when it was last taken in
        # the updates-stopped rule: logged grad norms before the current run of exact zeros and the zeros among them
        # (those logged on a step this detector checked), that run's length and first step, the longest run before
        # it, the reward summed over the run and its best before it (NaN: not looked up yet)
        self._g_n = self._g_zeros = self._g_run = self._g_longest = self._g_start = 0
        self._g_base = 0  # grad norms logged before the first check (warm-up): counted neither as values nor zeros
        self._g_rsum, self._g_rn, self._g_best = 0.0, 0, math.nan

    def on_warm(self) -> None:
        grad = self.ctx.tracks.get(GRAD)
        if grad is not None:
            self._g_base = max(0, grad.n - 1)  # (this step's value, when logged, is the first the rule counts)

    def check(self, step: int) -> Finding | None:
        p = self.p
        hits = []
        for key, warn, floor in ((PPO_KL, p["ppo_kl_warn"], p["ppo_kl_floor"]),
                                 (CLIPFRAC, p["clipfrac_warn"], p["clipfrac_floor"])):
            track = self.ctx.tracks.get(key)
            if track is None or track.n <= self.warmup:
                continue
            if key not in self._base:
                early = track.tail(self.warmup, skip=1)
                # a signed estimate (the k1 mean of old minus new log-probs goes below zero): its median sits near 0
                # whatever the noise, so its level is its median magnitude, and only the middle of its last 3 values
                # far beyond that (one heavy-tailed sample moves a mean of 3, not their median) is a large update
                self._signed[key] = any(v < 0.0 for v in early)
                self._base[key] = median([abs(v) for v in early] if self._signed[key] else early)
            bar = p["critical_ratio"] * max(self._base[key], floor)
            # a KL estimate whose warm-up level is already past warn / critical_ratio: that level is the run's floor
            # (the gap between the old-log-prob pass and the training forward), not the size of an update
            relative = self._signed[key] or (key == PPO_KL and p["critical_ratio"] * self._base[key] > warn)
            s = median(track.tail(3)) if relative else track.mean_last(3)
            if s > warn and (s > bar or not relative):
                hits.append((key, s, s > bar))
        stopped = self._clip_stopped(step)
        grad = self.ctx.tracks.get(GRAD)  # the updates-stopped rule, on a grad norm logged now that is 0 or ends zeros
        if grad is not None and grad.last_step == step and (grad.last == 0.0 or self._g_run):
            zero_run = self._grad_stopped(step, grad)  # always called: it keeps the counts of zeros
            stopped = stopped or zero_run
        if not hits:  # the usual step (sustained(False) would only reset the streak)
            self._streak = 0
            return self._out_of_range(step) or stopped
        critical = self.sustained(any(h[2] for h in hits), p["sustain"])
        desc = ", ".join(f"{self.ctx.tracks[k].raw}={fmt(v)}" for k, v, _ in hits)
        raw = {k: self.ctx.tracks[k].raw for k in self._base}  # evidence in the run's own names
        vals = {raw[k]: v for k, v, _ in hits} | {f"{raw[k]}_baseline": b for k, b in self._base.items()}
        if critical:
            return self.fire(step, "critical", f"PPO updates far larger than earlier in the run: {desc}", values=vals)
        return self.fire(step, "warning", f"PPO updates too large: {desc}", values=vals)

    def _clip_stopped(self, step: int) -> Finding | None:
        """The clipping-stopped rule (class docstring), O(1) a logged clip fraction: the zeros since the last clipped
        value are counted and join the reference window only once a clipped value ends them."""
        track = self.ctx.tracks.get(CLIPFRAC)
        if track is None or track.n == self._clip_n:
            return None
        self._clip_n = track.n
        p, ref = self.p, self._clipped
        if track.last > 0.0:
            if self._zeros:  # the run of zeros ends: its values enter the window, each once
                self._longest_zeros = max(self._longest_zeros, self._zeros)
                for _ in range(self._zeros):
                    if len(ref) == ref.maxlen:
                        self._n_clipped -= ref[0]
                    ref.append(0)
                self._zeros = 0
            if len(ref) == ref.maxlen:
                self._n_clipped -= ref[0]
            ref.append(1)
            self._n_clipped += 1
            return None
        self._zeros += 1
        if len(ref) < ref.maxlen or self._zeros <= self._longest_zeros:
            return None  # (no full reference yet; or the run has gone this long without a clipped token before)
        q = self._n_clipped / len(ref)
        # the chance of an unclipped value from the window's counts with half a count of each added (a window
        # clipped on every value does not make one unclipped value impossible: 1 - q is then 0.5 / (window + 1))
        q_chance = (self._n_clipped + 0.5) / (len(ref) + 1)
        if q < p["stop_share"] or (1.0 - q_chance) ** self._zeros >= p["stop_alpha"]:
            return None
        lr = self.ctx.tracks.get(LR)
        if lr is not None and lr.n and lr.last < 0.5 * max(lr.values):  # (only on a step that would warn)
            return None  # a decaying learning rate: the updates got small enough to stay inside the clip range
        start = (track.tail_steps(self._zeros) or [step])[0]
        return self.fire(step, "warning",
                         f"PPO clipping stopped: {track.raw} exactly 0 on the last {self._zeros} logged steps, where it "
                         f"was above 0 on {q:.0%} of the {len(ref)} before (the longest run of zeros before: "
                         f"{self._longest_zeros})",
                         "The clip range no longer limits the update (a widened clip epsilon, or a ratio no longer "
                         "taken against the policy that sampled the batch), while the learning rate held: updates "
                         "the clip held back before are now taken whole.",
                         values={track.raw: track.last, "clipped_share_before": q, "zero_steps": self._zeros,
                                 "window": len(ref),
                                 "longest_zero_run_before": self._longest_zeros}, step_start=start)

    def _grad_stopped(self, step: int, track: Track) -> Finding | None:
        """The updates-stopped rule (class docstring) on a grad norm logged at ``step`` that is 0 or ends a run of
        zeros (:meth:`check` asks nothing more on the others), O(1); the reward's best before a run of zeros is looked
        up once, when the run is first long enough to warn."""
        if track.last != 0.0:  # a run of zeros ends: it joins the counts
            self._g_longest = max(self._g_longest, self._g_run)
            self._g_zeros += self._g_run
            self._g_run, self._g_rsum, self._g_rn, self._g_best = 0, 0.0, 0, math.nan
            return None
        self._g_run += 1
        if self._g_run == 1:
            self._g_start, self._g_n = track.last_step, track.n - 1 - self._g_base
        reward = self.ctx.tracks.get(REWARD)
        if reward is not None and reward.last_step == track.last_step:
            self._g_rsum += reward.last
            self._g_rn += 1
        p, run = self.p, self._g_run
        if run < p["zero_grad_min"] or run <= self._g_longest or self._g_n < p["zero_grad_history"]:
            return None
        q = (self._g_zeros + 1) / (self._g_n + 2)
        if q ** run >= p["zero_grad_alpha"]:
            return None
        start = self._g_start
        if self.repeats(step, "warning", start):
            return None
        if self._g_best != self._g_best and reward is not None:  # once a run: the best reward before it
            before = [v for s, v in zip(reward.steps, reward.values) if s < start]
            self._g_best = max(before) if before else -math.inf
        held = self._g_rsum / self._g_rn if self._g_rn else math.nan
        best = self._g_best
        if -math.inf < best and held >= best - 0.02 * max(abs(best), 1e-9):
            return None  # the reward at its best: a task learnt to the ceiling ties every group
        vals = {"grad_zero_steps": run, "grad_logged_before": self._g_n, "grad_zeros_before": self._g_zeros,
                "grad_longest_zero_run_before": self._g_longest, "reward": held, "reward_best": best}
        return self.fire(step, "warning",
                         f"Updates stopped: {track.raw} exactly 0 on the last {run} logged steps, where it was 0 on "
                         f"{self._g_zeros} of the {self._g_n} before (the longest run of zeros before: "
                         f"{self._g_longest})",
                         "No sample carries a learning signal: every group's rewards tie (greedy or deterministic "
                         "rollouts, a reward that no longer varies), or the loss no longer reaches the weights. The "
                         "policy has stopped learning.", metric=GRAD, values=vals, step_start=start,
                         extra_keys=(REWARD,))

    def _out_of_range(self, step: int) -> Finding | None:
        """The clip fraction's range rule (class docstring), gated on its newest value being above the floor and
        twice a slow running mean (the window is sorted only on steps that could fire)."""
        p, track = self.p, self.ctx.tracks.get(CLIPFRAC)
        if track is None or track.last_step != step or track.n <= self.warmup:
            return None
        last = track.last
        level = self._level = last if self._level != self._level else self._level + 0.05 * (last - self._level)
        if last <= max(p["clipfrac_floor"], 2.0 * level):
            return None
        out = newest_far_above(track, p, p["rise"], p["clipfrac_floor"], 0.1 * p["clipfrac_floor"])
        if out is None:
            return None
        med, scale, above, now, before, start = out
        bar = med + max(p["z"] * scale, p["rise"] * med, p["clipfrac_floor"])
        window = track.tail(p["window"], skip=p["n"])
        if sum(1 for v in window if v > bar) > p["prior_share"] * len(window):
            return None  # values past the bar were common before: nothing the run had not done (a sparse series)
        return self.fire(step, "warning",
                         f"PPO updates far larger than before: {track.raw} {fmt(now)} on {len(above)} of the last "
                         f"{p['n']} logged steps, {now / max(med, 1e-12):.1f}x its median {fmt(med)} over the "
                         f"{before} logged steps before" if med > 0 else
                         f"PPO updates far larger than before: {track.raw} {fmt(now)} on {len(above)} of the last "
                         f"{p['n']} logged steps, where it was 0 on most of the {before} logged steps before",
                         values={track.raw: now, f"{track.raw}_median": med, "scale": scale}, step_start=start)

