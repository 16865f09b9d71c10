"""A held-out score falling below its own range for good while training goes on (issue 29): the quality drop on
data the policy is not trained on, the collapse users care about most, whatever the training reward does.
(A held-out score falling while the reward rises is ``reward_divergence``'s and ``reward_hacking``'s business.)
"""

from __future__ import annotations

import math

from rlcockpit.health.advice import ranked
from rlcockpit.health.base import Detector, Track, fmt, register_detector
from rlcockpit.health.detectors.collapse import collapse_actions, collapse_causes
from rlcockpit.health.detectors.reward import REWARD, quality_direction
from rlcockpit.health.detectors.trend import HELD_OUT, held_out_range
from rlcockpit.health.findings import Action, Cause, Finding


@register_detector("held_out_drop", "validation_drop")
class HeldOutDrop(Detector):
    """A held-out score (verl's ``val-core/*``, ``val/*``, ``val-aux/*``, ``eval/*``: higher is better) whose last
    ``hold`` values each lie below its own range: under the lowest of the ``reference`` values before them (at
    least ``min_reference`` of them) by more than that range's width and ``z`` / 2 noise units under their median,
    and whose mean lies ``z`` noise units of such a mean (noise / sqrt(``hold``)) under that median; the noise the
    larger of the series' step-to-step noise and the sampling noise of a mean of 0/1 scores
    (:func:`~rlcockpit.health.base.count_noise`: an accuracy on 300 questions moves by 0.03 between two
    evaluations of the same policy). Warning: one evaluation below the range is a bad draw; two in a row, with the
    values before them steady, is a policy that got worse on data it is not trained on. (The mean of the two is what
    is tested against the noise: requiring each one ``z`` noise units down asks a real drop of 0.13 followed by 0.08
    on 600 scores to be two separate 4-sigma events, and dated the lr-ramp collapse never.) One evaluation is
    enough when it lies under the range's floor by its width and ``z`` noise units under the median (the full ``z``,
    not ``z`` / sqrt(``hold``)) and the training reward fell with it: the mean of its last ``reward_span`` values
    under the lowest mean of any ``reward_span`` in a row of the up to ``reward_history`` before them (at least
    ``reward_min_history``). A bad draw of the held-out set leaves the training batches alone; a policy that broke
    (a layer overwritten, an update too large) scores worse on both at once, and waiting for the next evaluation
    dates it one evaluation late."""

    keys = (REWARD,)
    prefixes = HELD_OUT
    defaults = {"hold": 2, "reference": 12, "min_reference": 6, "z": 4.0, "reward_span": 10, "reward_history": 150,
                "reward_min_history": 40}
    common = {"enabled": True, "warmup": 10, "cooldown": 100}
    story, role = "collapse", "outcome"
    cause = "the policy got worse on held-out data: an update too large, or the policy overfitting its training prompts"

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._keys: list[str] = []
        self._scan = -1
        self._seen: dict[str, int] = {}

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        causes = collapse_causes(self, finding)
        causes.append(Cause("the policy overfits its few training prompts: the reward holds while held-out accuracy "
                            "falls", 0.5))
        return ranked(causes), collapse_actions(self)

    def check(self, step: int) -> Finding | None:
        tracks = self.ctx.tracks
        if self._scan < 0 or self.seen - self._scan >= 50:  # held-out series appear rarely
            self._scan = self.seen
            self._keys = [k for k in tracks if k.startswith(HELD_OUT) and quality_direction(k) > 0]
        for key in self._keys:
            track = tracks[key]
            if self._seen.get(key) == track.n:
                continue
            self._seen[key] = track.n
            found = self._below_range(step, key, track)
            if found is not None:
                return found
        return None

    def _below_range(self, step: int, key: str, track: Track) -> Finding | None:
        p = self.p
        hold = int(p["hold"])
        # the usual evaluation first, without the noise (a sort or three): newest values not under the range's floor
        # (its lowest less its width), the rule below says no whatever the noise is
        vals = track.tail(hold + int(p["reference"]))
        ref = vals[:-hold]
        if len(ref) < int(p["min_reference"]) or not ref or max(vals[-hold:]) >= min(ref) - (max(ref) - min(ref)):
            # the one-evaluation rule's floor is under the two values before the newest, less their gap: a
            # comparison that leaves most evaluations out before any slice or sort
            if len(vals) < 3 or vals[-1] >= vals[-2] - abs(vals[-2] - vals[-3]):
                return None
            return self._one_with_reward(step, key, track, vals)
        found = held_out_range(track, hold, int(p["reference"]), int(p["min_reference"]))
        if found is None:
            return None
        ref, recent, med, noise = found
        lo, hi = min(ref), max(ref)
        worst = max(recent)  # each of the recent values must be under the bar: the highest of them decides
        mean = sum(recent) / hold
        if worst >= lo - (hi - lo) or med - worst < 0.5 * p["z"] * noise \
                or med - mean < p["z"] * noise / math.sqrt(hold):
            return None
        first = track.steps[-hold]
        vals_ = {"held_out": worst, "held_out_mean": mean, "reference_median": med, "reference_low": lo,
                 "reference_high": hi, "noise": noise, "drop_z": (med - mean) / noise}
        return self.fire(step, "warning",
                         f"Held-out score fell below its range: {track.raw} averaged {fmt(mean)} (at most {fmt(worst)}) "
                         f"on the last {hold} evaluations, against {fmt(lo)}-{fmt(hi)} (median {fmt(med)}) on the "
                         f"{len(ref)} before ({(med - mean) / noise:.1f}x the noise of one evaluation, {fmt(noise)}; "
                         f"{(med - mean) / max(abs(med), 1e-9):.0%} lower)",
                         "The policy answers worse on data it is not trained on: a collapse starting, or "
                         "overfitting.", metric=key, values=vals_, step_start=first, extra_keys=(key, REWARD))

    def _one_with_reward(self, step: int, key: str, track: Track, vals: list[float]) -> Finding | None:
        """The newest evaluation alone under the range, the training reward fallen with it (class docstring);
        ``vals`` the newest ``hold`` + ``reference`` values, already read."""
        p = self.p
        vals = vals[-1 - int(p["reference"]):]
        ref = vals[:-1]
        if len(ref) < int(p["min_reference"]) or vals[-1] >= min(ref) - (max(ref) - min(ref)):
            return None  # the gate: the newest value under the floor less the width (a comparison or two)
        fell = self._reward_fell()  # before the noise (a sort or two): the reward has not fallen on most steps
        if fell is None:
            return None
        found = held_out_range(track, 1, int(p["reference"]), int(p["min_reference"]))
        if found is None:
            return None
        ref, recent, med, noise = found
        now = recent[0]
        if med - now < p["z"] * noise:
            return None
        r_now, r_low = fell
        lo, hi = min(ref), max(ref)
        vals_ = {"held_out": now, "reference_median": med, "reference_low": lo, "reference_high": hi,
                 "noise": noise, "drop_z": (med - now) / noise, "reward_recent": r_now, "reward_lowest_before": r_low}
        return self.fire(step, "warning",
                         f"Held-out score fell below its range with the training reward: {track.raw} {fmt(now)} against "
                         f"{fmt(lo)}-{fmt(hi)} (median {fmt(med)}) on the {len(ref)} evaluations before "
                         f"({(med - now) / noise:.1f}x the noise of one evaluation, {fmt(noise)}), the reward's last "
                         f"{int(p['reward_span'])} steps averaging {fmt(r_now)}, under any such stretch before "
                         f"(lowest {fmt(r_low)})",
                         "The policy answers worse on held-out data and on its training prompts at once: it broke, "
                         "not a bad draw of the evaluation.", metric=key, values=vals_, step_start=track.steps[-1],
                         extra_keys=(key, REWARD))

    def _reward_fell(self) -> tuple[float, float] | None:
        """(mean of the training reward's last ``reward_span`` values, the lowest mean of ``reward_span`` values in a
        row before them) when the first is under the second, else None."""
        p = self.p
        w = int(p["reward_span"])
        reward = self.ctx.tracks.get(REWARD)
        if reward is None or len(reward.values) < w + int(p["reward_min_history"]) \
                or reward.mean_last(w) >= sum(reward.tail(w, skip=w)) / w:
            return None  # not under the stretch just before, so not under the lowest one: no scan
        vals = reward.tail(w + int(p["reward_history"]))
        if any(v != v for v in vals):
            return None
        now = sum(vals[-w:]) / w
        before = vals[:-w]
        run = sum(before[:w])
        low = run
        for i in range(w, len(before)):
            run += before[i] - before[i - w]
            low = min(low, run)
        low /= w
        return (now, low) if now < low else None
