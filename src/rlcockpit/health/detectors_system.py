"""Resource and pipeline detectors: memory, GPU utilisation, throughput, bottlenecks, lr schedule, rollout
log-prob mismatch.

Per-GPU metrics (``system/gpu/<i>/utilization``, ``system/gpu/<i>/memory_percent``) are aggregated by the
monitor into ``system/gpu/utilization`` (mean over devices) and ``system/gpu/memory_percent`` (max).
"""

from __future__ import annotations

import math

from rlcockpit.health.base import Detector, Track, fmt, median, register_detector
from rlcockpit.health.findings import Finding

GPU_UTIL, GPU_MEM = "system/gpu/utilization", "system/gpu/memory_percent"
HOST_MEM, RSS = "system/memory_percent", "system/proc_rss_gb"
ALLOC, THROUGHPUT, STEP_TIME = "perf/max_memory_allocated_gb", "perf/throughput", "timing_s/step"
LR, MISMATCH = "actor/lr", "training/rollout_probs_diff_mean"


def creep(track: Track, window: int, min_rise: float = 0.0) -> tuple[float, float, float] | None:
    """Medians of three consecutive thirds of the last ``window`` values when they rise monotonically (by more
    than ``min_rise`` in all: the medians lie within the window's range, so a narrower range skips the sorts)."""
    if track.n < window:
        return None
    third = window // 3
    vals = track.tail(window)
    if max(vals) - min(vals) <= min_rise:
        return None
    a, b, c = median(vals[:third]), median(vals[third : 2 * third]), median(vals[2 * third :])
    if not (a < b < c):
        return None
    rise = c - a
    if b - a < 0.25 * rise or c - b < 0.25 * rise:
        return None  # one jump, not a creep
    return a, b, c


class _Memory(Detector):
    """Shared logic: a percent-of-capacity metric above ``warn_percent`` (warning), creeping by more than
    ``creep_points`` over ``window`` steps (warning, with an ETA to 100%), critical when above
    ``critical_percent`` AND ``critical_rise`` points above its warm-up level (the run's own baseline)."""

    defaults = {"warn_percent": 80.0, "critical_percent": 90.0, "critical_rise": 10.0, "window": 12,
                "creep_points": 3.0, "every": 3}
    label = "memory"

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.base: float | None = None

    def check(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[self.keys[0]]
        if self.base is None:
            self.base = median(track.tail(self.warmup, skip=1))
        s = track.mean_last(3)
        if s > p["critical_percent"] and s - self.base > p["critical_rise"]:
            return self.fire(step, "critical", f"{self.label} at {s:.0f}% (was {self.base:.0f}%): OOM imminent",
                             values={"percent": s, "baseline": self.base})
        if self.due(p["every"]):
            trend = creep(track, p["window"], p["creep_points"])
            if trend and trend[2] - trend[0] > p["creep_points"]:
                slope = (trend[2] - trend[0]) / (2 * (p["window"] // 3))
                eta = (100.0 - s) / slope if slope > 0 else math.inf
                vals = {"percent": s, "baseline": self.base, "slope_per_step": slope, "steps_to_full": eta}
                return self.fire(step, "warning", f"{self.label} creeping up: {trend[0]:.0f}% -> {trend[2]:.0f}% (full in ~{eta:.0f} steps)",
                                 values=vals, step_start=step - p["window"])
        if s > p["warn_percent"]:
            return self.fire(step, "warning", f"{self.label} at {s:.0f}% (above the 80% safety margin)",
                             values={"percent": s, "baseline": self.base})
        return None


@register_detector("gpu_memory", "oom_risk")
class GPUMemory(_Memory):
    __doc__ = "Device memory (max over GPUs of ``system/gpu/<i>/memory_percent``). " + _Memory.__doc__
    keys = (GPU_MEM,)
    label = "GPU memory"


@register_detector("host_memory", "host_memory_creep")
class HostMemory(_Memory):
    __doc__ = "Host memory (``system/memory_percent``). " + _Memory.__doc__
    keys = (HOST_MEM,)
    label = "Host memory"
    defaults = {**_Memory.defaults, "window": 30}


@register_detector("memory_growth", "rss_creep")
class MemoryGrowth(Detector):
    """Absolute memory series (``perf/max_memory_allocated_gb``, ``system/proc_rss_gb``) growing monotonically
    by > ``growth_ratio`` over ``window`` steps (warning; a leak). With ``device_memory_gb`` set, allocated
    memory above 80% of it is a warning too."""

    keys = (ALLOC, RSS)
    defaults = {"window": 30, "growth_ratio": 0.15, "device_memory_gb": None, "every": 5}

    def check(self, step: int) -> Finding | None:
        if not self.due(self.p["every"]):
            return None
        for key in self.keys:
            track = self.ctx.tracks.get(key)
            if track is None or track.last_step != step:
                continue
            dev = self.p["device_memory_gb"]
            if key == ALLOC and dev and track.last > 0.8 * float(dev):
                return self.fire(step, "warning", f"Device memory {fmt(track.last)} GB > 80% of {fmt(float(dev))} GB",
                                 metric=key, values={"gb": track.last})
            trend = creep(track, self.p["window"])
            if trend and trend[2] > (1 + self.p["growth_ratio"]) * max(trend[0], 1e-9):
                return self.fire(step, "warning", f"{key} growing steadily: {fmt(trend[0])} -> {fmt(trend[2])} GB",
                                 "Memory that only grows is a leak (cached tensors, growing buffers).",
                                 metric=key, values={"from": trend[0], "to": trend[2]}, step_start=step - self.p["window"])
        return None


@register_detector("gpu_utilization", "low_gpu_util")
class GPUUtilization(Detector):
    """GPU under-used: median of the last ``window`` samples of ``system/gpu/utilization`` below ``low``
    percent (warning), or below ``drop_ratio`` x its warm-up level (warning; a pipeline stall)."""

    keys = (GPU_UTIL,)
    defaults = {"low": 50.0, "drop_ratio": 0.6, "window": 5}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.base: float | None = None

    def check(self, step: int) -> Finding | None:
        track = self.ctx.tracks[GPU_UTIL]
        if self.base is None:
            self.base = median(track.tail(self.warmup, skip=1))
        if track.mean_last(self.p["window"]) >= max(self.p["low"], self.p["drop_ratio"] * self.base):
            return None
        m = median(track.tail(self.p["window"]))
        if m >= self.p["low"] and m >= self.p["drop_ratio"] * self.base:
            return None
        label, shares = attribute_bottleneck(self.ctx.tracks)
        vals = {"utilization": m, "baseline": self.base, "bottleneck": label, "shares": shares}
        return self.fire(step, "warning", f"GPU utilisation {m:.0f}% (was {self.base:.0f}%)" + (f"; {label}" if label else ""),
                         values=vals, extra_keys=(THROUGHPUT, STEP_TIME))


@register_detector("throughput_drop", "throughput")
class ThroughputDrop(Detector):
    """``perf/throughput`` (median of 3) below ``warn_ratio`` x the median of a trailing ``window`` ending
    ``gap`` steps earlier: a warning (a temporary dip, e.g. another process stealing CPU cores, is worth a look,
    no more). Critical only when the drop is both large and lasting: below ``critical_ratio`` x the level
    before the dip for ``sustain`` consecutive steps. The reference is frozen while the dip lasts, so a long
    drop is measured against the speed before it, not against itself."""

    keys = (THROUGHPUT,)
    defaults = {"warn_ratio": 0.6, "critical_ratio": 0.35, "window": 30, "gap": 3, "sustain": 20}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._ref = math.nan
        self._ref_step = -10**9
        self._low = 0  # consecutive steps below warn_ratio (the reference stays frozen meanwhile)
        self._onset: int | None = None

    def check(self, step: int) -> Finding | None:
        track = self.ctx.tracks[THROUGHPUT]
        if self._low == 0 and (step - self._ref_step >= 5 or self._ref != self._ref):  # refresh every 5 steps
            self._ref, self._ref_step = median(track.tail(self.p["window"], skip=self.p["gap"])), step
        if track.last >= self.p["warn_ratio"] * self._ref:
            self._low = self._streak = 0
            return None
        s = median(track.tail(3))
        ratio = s / max(self._ref, 1e-12)
        if ratio >= self.p["warn_ratio"]:
            self._low = self._streak = 0
            return None
        if self._low == 0:
            self._onset = step
        self._low += 1
        lasting = self.sustained(ratio < self.p["critical_ratio"], self.p["sustain"])
        label, shares = attribute_bottleneck(self.ctx.tracks)
        vals = {"throughput": s, "before": self._ref, "ratio": ratio, "bottleneck": label, "shares": shares,
                "steps_low": self._low}
        where = f"; {label}" if label else ""
        if lasting:
            return self.fire(step, "critical", f"Throughput down to {ratio:.0%} of its earlier level for {self._low} steps "
                             f"({fmt(self._ref)} -> {fmt(s)}){where}", values=vals, step_start=self._onset,
                             extra_keys=(STEP_TIME, GPU_UTIL))
        return self.fire(step, "warning", f"Throughput dropped to {ratio:.0%} of its recent level ({fmt(self._ref)} -> "
                         f"{fmt(s)}){where}", "A dip that recovers (e.g. another process on the same cores) is harmless.",
                         values=vals, step_start=self._onset, extra_keys=(STEP_TIME, GPU_UTIL))


PHASES = {
    "generation": ("timing_s/gen", "timing_s/generate", "timing_s/rollout"),
    "update": ("timing_s/update_actor", "timing_s/update_critic", "timing_s/update"),
    "inference": ("timing_s/old_log_prob", "timing_s/ref", "timing_s/values", "timing_s/reward", "timing_s/adv"),
    "data": ("timing_s/data", "timing_s/dataloader", "timing_s/data_loading"),
}


def attribute_bottleneck(tracks: dict[str, Track], bound: float = 0.5) -> tuple[str, dict[str, float]]:
    """Which phase dominates ``timing_s/step``: ``"generation-bound"``, ``"update-bound"``, ``"data-bound"``
    (data loading or unaccounted host time) or ``""``; plus each phase's share of the step."""
    step_t = tracks.get(STEP_TIME)
    if step_t is None or not step_t.n:
        return "", {}
    total = max(step_t.mean_last(3), 1e-9)
    shares: dict[str, float] = {}
    for phase, keys in PHASES.items():
        t = sum(tracks[k].mean_last(3) for k in keys if k in tracks and tracks[k].n)
        shares[phase] = t / total
    shares["other"] = max(0.0, 1.0 - sum(shares.values()))
    top = max(shares, key=shares.get)
    if shares[top] < bound:
        return "", shares
    label = {"generation": "generation-bound", "update": "update-bound", "data": "data-bound",
             "other": "data-bound (unaccounted host time)", "inference": "inference-bound (ref/old log-prob)"}[top]
    return label, shares


@register_detector("bottleneck")
class Bottleneck(Detector):
    """Info: which phase of ``timing_s/*`` dominates the step (more than ``bound`` of ``timing_s/step``);
    reported once and again whenever the attribution changes. Evaluated every ``every`` steps."""

    keys = (STEP_TIME,)
    prefixes = ("timing_s/",)
    defaults = {"bound": 0.6, "every": 20}
    common = {"enabled": True, "warmup": 10, "cooldown": 0}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._label = ""

    def check(self, step: int) -> Finding | None:
        if not self.due(self.p["every"]):
            return None
        label, shares = attribute_bottleneck(self.ctx.tracks, self.p["bound"])
        if not label or label == self._label:
            return None
        self._label = label
        desc = ", ".join(f"{k} {v:.0%}" for k, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v > 0.01)
        return self.fire(step, "info", f"Step time is {label} ({desc})", values={"shares": shares, "bottleneck": label})


@register_detector("lr_schedule", "learning_rate")
class LRSchedule(Detector):
    """``actor/lr`` not following the configured schedule (warning only): above 1.5x the configured peak,
    away from the peak by more than ``tolerance`` after warm-up under a constant schedule, zero after warm-up,
    rising after warm-up under cosine, or (no config) jumping ``jump_ratio``x between steps."""

    keys = (LR,)
    defaults = {"tolerance": 0.5, "jump_ratio": 10.0, "sustain": 3}
    common = {"enabled": True, "warmup": 0, "cooldown": 100}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._schedule: tuple[float | None, int | None, str] | None = None

    def check(self, step: int) -> Finding | None:
        if self._schedule is None:  # the config does not change during a run: read it once
            view = self.ctx.view
            total = view.number("trainer.total_training_steps")
            ratio = view.number("actor.optim.lr_warmup_steps_ratio") or 0.0
            self._schedule = (view.number("actor.optim.lr"), math.ceil(ratio * total) if total else None,
                              str(view.get("actor.optim.warmup_style") or "constant"))
        peak, warm_steps, style = self._schedule
        track = self.ctx.tracks[LR]
        lr, prev = track.last, track.ago(1)
        problem = ""
        if peak:
            after_warmup = warm_steps is not None and track.n > warm_steps + 1
            if lr > 1.5 * peak:
                problem = f"lr {fmt(lr)} above the configured {fmt(peak)}"
            elif after_warmup and lr <= 0:
                problem = "lr is zero after warm-up"
            elif after_warmup and style == "constant" and abs(lr - peak) > self.p["tolerance"] * peak:
                problem = f"lr {fmt(lr)} should be {fmt(peak)} after warm-up (constant schedule)"
            elif after_warmup and style == "cosine" and prev == prev and lr > prev * 1.01:
                problem = f"lr rising {fmt(prev)} -> {fmt(lr)} under a cosine schedule"
        elif prev == prev and prev > 0 and (lr > self.p["jump_ratio"] * prev or lr * self.p["jump_ratio"] < prev):
            problem = f"lr jumped {fmt(prev)} -> {fmt(lr)}"
        if not self.sustained(bool(problem), 1 if "jumped" in problem else self.p["sustain"]):
            return None
        return self.fire(step, "warning", f"Learning rate not following its schedule: {problem}",
                         values={"lr": lr, "configured_lr": peak, "warmup_steps": warm_steps})


@register_detector("rollout_mismatch", "logprob_mismatch")
class RolloutMismatch(Detector):
    """Rollout engine and trainer disagree on log-probs: smoothed ``training/rollout_probs_diff_mean`` >
    ``warn_abs`` (warning); critical when also > ``critical_ratio`` x its warm-up level for ``sustain`` steps."""

    keys = (MISMATCH,)
    defaults = {"warn_abs": 0.01, "critical_ratio": 5.0, "floor": 0.001, "sustain": 2}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.base: float | None = None

    def check(self, step: int) -> Finding | None:
        track = self.ctx.tracks[MISMATCH]
        if self.base is None:
            self.base = median(track.tail(self.warmup, skip=1))
        s = track.mean_last(2)
        if s <= self.p["warn_abs"]:
            self._streak = 0
            return None
        ratio = s / max(self.base, self.p["floor"])
        vals = {"probs_diff": s, "baseline": self.base, "ratio": ratio}
        if self.sustained(ratio > self.p["critical_ratio"], self.p["sustain"]):
            return self.fire(step, "critical", f"Rollout/trainer log-prob mismatch {fmt(s)} ({ratio:.0f}x its earlier level)",
                             "The samples are no longer on-policy for the trainer: updates use wrong ratios.", values=vals)
        return self.fire(step, "warning", f"Rollout/trainer log-prob mismatch {fmt(s)} (> {self.p['warn_abs']:g})", values=vals)
