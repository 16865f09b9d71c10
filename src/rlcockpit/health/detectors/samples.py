"""Detectors on ``samples/*`` metrics (computed from logged rollout samples by :mod:`samples`).

Samples are logged every few steps, so these detectors count *sample steps* for their warm-up; the first
analysed sample steps are the run's baseline for what its outputs normally look like.
"""

from __future__ import annotations

import math

from rlcockpit.health.advice import policy_unmoved, ranked, story_causes
from rlcockpit.health.base import Detector, fmt, median, register_detector
from rlcockpit.health.detectors.collapse import collapse_actions, collapse_causes
from rlcockpit.health.findings import Action, Cause, Finding
from rlcockpit.metrics.guide import threshold

REPEAT, RUN, DISTINCT2 = "samples/repeat_ngram_rate", "samples/longest_repeat_run", "samples/distinct_2"
EMPTY, NONPRINT = "samples/empty_rate", "samples/nonprintable_rate"
CHAR_RUN, CROSS_DUP = "samples/char_run_rate", "samples/cross_prompt_duplicate_rate"


@register_detector("sample_degeneration", "degenerate_samples", "repetition")
class SampleDegeneration(Detector):
    """Degenerate outputs: repetition, gibberish, empty answers, and short answers gone degenerate. Each signal
    warns past a fixed level and is critical only past that level AND far from the run's first ``warmup``
    sample steps:
    repetition rate > ``repeat_warn`` (critical: also > ``repeat_ratio`` x baseline + 0.1);
    non-printable share > ``nonprint_warn`` (critical: also > ``nonprint_ratio`` x baseline + 0.01);
    empty share > ``empty_warn`` (critical: > ``empty_critical`` and baseline + 0.3);
    share of responses that are mostly one repeated character ("aaaaaaaa", "0000", "1111<eos>": too short
    for repeated 3-grams) > ``char_run_warn`` (critical: also > baseline + ``short_rise``);
    share of the step's prompts answered with the same response > ``cross_dup_warn`` and > baseline +
    ``short_rise`` (critical: > ``cross_dup_critical``, i.e. one answer to (nearly) every prompt). Identical
    answers *within* one prompt's group are not counted: that is how a short-answer task (2-digit arithmetic)
    converges; and a task with few possible answers (yes/no) is judged against its own early steps."""

    keys = (REPEAT, RUN, DISTINCT2, EMPTY, NONPRINT, CHAR_RUN, CROSS_DUP)
    defaults = {"repeat_warn": threshold(REPEAT, "warn_above"), "repeat_ratio": 3.0,
                "nonprint_warn": threshold(NONPRINT, "warn_above"), "nonprint_ratio": 5.0,
                "empty_warn": threshold(EMPTY, "warn_above"), "empty_critical": threshold(EMPTY, "critical_above"), "char_run_warn": 0.5, "cross_dup_warn": 0.8,
                "cross_dup_critical": 0.95, "short_rise": 0.4}
    common = {"enabled": True, "warmup": 1, "cooldown": 30}
    story, role = "collapse", "samples"
    cause = "policy update too large: the policy drifted far from the reference and collapsed"

    @classmethod
    def chain_text(cls, finding: Finding) -> str:
        excerpts = [s.get("response", "") for s in finding.evidence.get("samples", [])[:2]]
        return f"Samples from step {finding.step}: {finding.title}" + (
            " — e.g. " + " | ".join(repr(e[:60]) for e in excerpts) if excerpts else "")

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        if finding.severity == "warning":
            since = self.since_start(finding.evidence.get("values") or {})
            if since:  # the outputs did not change: nothing the training did, no training knob to turn
                return [Cause("the outputs were already like this at the run's first samples: the starting model or "
                              "the decoding setup (tokenizer, chat template, stop tokens), not the training",
                              0.8, "; ".join(since))], [
                    Action("Check the starting model before training: sample it with the run's tokenizer and chat "
                           "template", why="a collapse makes outputs worse than they were; these did not change")]
        unmoved = policy_unmoved(self.ctx, finding.step)
        if unmoved is not None:  # bad from the start: the starting model's outputs, not a collapse
            return [Cause("the starting model writes these samples: no update has moved the policy yet", 0.85,
                          unmoved)], [
                Action("Check the starting model before training: sample it with the run's tokenizer, chat template "
                       "and stop tokens; start from a model that can do the task (SFT first)",
                       why="KL or lr changes act on updates, and no update has happened yet")]
        return collapse_causes(self, finding), collapse_actions(self)

    # (value key, baseline key, how far above its own first samples a signal must be to count as a change)
    SIGNALS = (("repeat_ngram_rate", REPEAT, 0.1), ("nonprintable_rate", NONPRINT, 0.01),
               ("empty_rate", EMPTY, 0.1), ("char_run_rate", CHAR_RUN, 0.1))

    def since_start(self, values: dict) -> list[str]:
        """For a warning whose every signal past its fixed level sits where the run's first samples had it
        (within 1.5x + a small margin): what it was then and now. Empty when something got worse — the run's
        own baseline, not a fixed level, says whether the outputs degenerated."""
        base, out = values.get("baseline") or {}, []
        levels = {"repeat_ngram_rate": self.p["repeat_warn"], "nonprintable_rate": self.p["nonprint_warn"],
                  "empty_rate": self.p["empty_warn"], "char_run_rate": self.p["char_run_warn"]}
        for name, key, margin in self.SIGNALS:
            now, then = values.get(name), base.get(key)
            if not isinstance(now, (int, float)) or now <= levels[name]:
                continue
            if not isinstance(then, (int, float)) or now > 1.5 * then + margin:
                return []
            out.append(f"{name} {then:.1%} at the first samples, {now:.1%} now")
        dup = values.get("cross_prompt_duplicate_rate")
        dup_base = base.get(CROSS_DUP) or 0.0
        if isinstance(dup, (int, float)) and dup > self.p["cross_dup_warn"] and dup > dup_base + self.p["short_rise"]:
            return []  # only ever reported as a rise over the run's own first samples
        return out

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.base: dict[str, float] = {}

    def observe(self, step: int) -> Finding | None:
        self.seen += 1
        if self.seen <= self.warmup:
            return None
        if not self.base:
            for key in (REPEAT, EMPTY, NONPRINT, DISTINCT2, CHAR_RUN, CROSS_DUP):
                t = self.ctx.tracks.get(key)
                self.base[key] = median(t.tail(self.warmup, skip=1)) if t is not None and t.n > 1 else 0.0
        return self.check(step)

    def _now(self, key: str, step: int | None = None) -> float:
        """The latest value of ``key`` (0 if never logged; with ``step``: 0 unless logged at that step)."""
        t = self.ctx.tracks.get(key)
        if t is None or t.last_step < 0 or (step is not None and t.last_step != step):
            return 0.0
        return t.last

    def check(self, step: int) -> Finding | None:
        p, b = self.p, self.base
        rep, bad, empty = self._now(REPEAT), self._now(NONPRINT), self._now(EMPTY)
        runs, dup = self._now(CHAR_RUN, step), self._now(CROSS_DUP, step)
        problems: list[tuple[str, bool]] = []
        if rep > p["repeat_warn"]:
            problems.append((f"repetitive ({rep:.0%} repeated 3-grams, was {b[REPEAT]:.0%})",
                             rep > p["repeat_ratio"] * b[REPEAT] + 0.1))
        if bad > p["nonprint_warn"]:
            problems.append((f"gibberish ({bad:.1%} non-printable characters)", bad > p["nonprint_ratio"] * b[NONPRINT] + 0.01))
        if empty > p["empty_warn"]:
            problems.append((f"empty ({empty:.0%} of responses)", empty > p["empty_critical"] and empty > b[EMPTY] + 0.3))
        if runs > p["char_run_warn"]:
            problems.append((f"one repeated character ({runs:.0%} of responses, was {b[CHAR_RUN]:.0%})",
                             runs > b[CHAR_RUN] + p["short_rise"]))
        if dup > p["cross_dup_warn"] and dup > b[CROSS_DUP] + p["short_rise"]:
            problems.append((f"the same answer to different prompts ({dup:.0%} of prompts, was {b[CROSS_DUP]:.0%})",
                             dup > p["cross_dup_critical"]))
        if not problems:
            return None
        critical = any(c for _, c in problems)
        desc = "; ".join(d for d, _ in problems)
        vals = {"repeat_ngram_rate": rep, "nonprintable_rate": bad, "empty_rate": empty,
                "longest_repeat_run": self._now(RUN), "distinct_2": self._now(DISTINCT2), "char_run_rate": runs,
                "cross_prompt_duplicate_rate": dup, "baseline": dict(b)}
        if critical and policy_unmoved(self.ctx, step) is not None:  # nothing trained yet: not a collapse
            return self.fire(step, "warning", f"Samples look degenerate before any update: {desc}", "The starting "
                             "model's own outputs: no update has moved the policy yet.", metric=REPEAT, values=vals,
                             samples=True)
        if critical:
            return self.fire(step, "critical", f"Samples degenerated: {desc}",
                             "The model is producing degenerate text compared with its own earlier outputs.",
                             metric=REPEAT, values=vals, samples=True)
        return self.fire(step, "warning", f"Samples look degenerate: {desc}", metric=REPEAT, values=vals, samples=True)


def bimodality_coefficient(values: list[float]) -> float:
    """Sarle's bimodality coefficient (> 0.555 suggests two modes; 1.0 = two spikes)."""
    n = len(values)
    if n < 4:
        return 0.0
    mean = sum(values) / n
    m2 = sum((v - mean) ** 2 for v in values) / n
    if m2 <= 0:
        return 0.0
    m3 = sum((v - mean) ** 3 for v in values) / n
    m4 = sum((v - mean) ** 4 for v in values) / n
    skew, kurt = m3 / m2**1.5, m4 / m2**2 - 3
    return (skew**2 + 1) / (kurt + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))


@register_detector("reward_bimodal", "bimodal_reward")
class RewardBimodal(Detector):
    """Per-sample rewards splitting into two clusters (some prompts exploited, others not). Only for
    continuous rewards (> ``min_distinct`` distinct values; 0/1 accuracy is bimodal by design). Warning when
    the bimodality coefficient of recent rewards exceeds ``bc_warn`` and rose ``bc_rise`` above its value on
    the first evaluation."""

    keys = ("samples/reward_mean",)
    defaults = {"bc_warn": 0.7, "bc_rise": 0.15, "min_samples": 64, "min_distinct": 10}
    common = {"enabled": True, "warmup": 0, "cooldown": 50}
    story = "hacking"
    cause = "some prompts are being exploited while others are not"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        return ranked(story_causes(self.ctx.view, ("kl",)) + [Cause(self.cause, 0.5)]), []

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.first: float | None = None

    def check(self, step: int) -> Finding | None:
        rewards = list(self.ctx.sample_rewards)
        if len(rewards) < self.p["min_samples"] or len(set(rewards)) <= self.p["min_distinct"]:
            return None
        bc = bimodality_coefficient(rewards[-self.p["min_samples"] * 2 :])
        if self.first is None or math.isnan(self.first):
            self.first = bc
            return None
        if bc > self.p["bc_warn"] and bc - self.first > self.p["bc_rise"]:
            return self.fire(step, "warning", f"Reward distribution became bimodal (coefficient {fmt(self.first)} -> {fmt(bc)})",
                             "Some prompts are being exploited while others are not.",
                             values={"bimodality": bc, "first": self.first}, samples=True)
        return None
