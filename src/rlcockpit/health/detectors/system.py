"""Pipeline detectors: GPU utilisation, throughput, bottlenecks, lr schedule, rollout log-prob mismatch.

Per-GPU metrics (``system/gpu/<i>/utilization``) are aggregated by the monitor into ``system/gpu/utilization``
(mean over devices).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort

from rlcockpit.health.advice import CLIPFRAC, PPO_KL, moved, ranked
from rlcockpit.health.base import (
    ADAPT_AT,
    LR_KEY,
    Cusum,
    Detector,
    DetectorContext,
    Track,
    climb,
    fmt,
    kendall_tau,
    log_scale,
    median,
    register_detector,
    robust,
    versus,
)
from rlcockpit.health.config_view import make_action
from rlcockpit.health.findings import Action, Cause, Finding
from rlcockpit.metrics.guide import threshold
from rlcockpit.metrics.phases import BOTTLENECK_KEYS, V1_MARKER

GPU_UTIL, GPU_MEM = "system/gpu/utilization", "system/gpu/memory_percent"
GPU_UTIL_GUIDE = "system/gpu/0/utilization"  # the guide's entry for one device (the detector reads their mean)
THROUGHPUT, STEP_TIME, TIME_PER_STEP = "perf/throughput", "timing_s/step", "perf/time_per_step"
SAMPLES_PER_S = "perf/samples_per_second"
LR, MISMATCH = LR_KEY, "training/rollout_probs_diff_mean"


def speed_advice(det: Detector, finding: Finding) -> tuple[list[Cause], list[Action]]:
    """Causes and fixes for a GPU that waits: read from the ``timing_s/*`` split of the step."""
    view = det.ctx.view
    values = finding.evidence.get("values", {})
    label = str(values.get("bottleneck") or "")
    share = max((values.get("shares") or {"": 0.0}).values())
    gpu = det.ctx.has_gpu()
    if "data" in label:
        return [Cause(f"data loading / host work stalls {'the GPU' if gpu else 'training'} (data-bound)", 0.7,
                      f"{share:.0%} of the step is outside any timed training phase")], [make_action(
            view, "More dataloader workers (verl; rlcockpit's trainer has no worker knob: look at reward functions "
            "and host-side work)", {"data.dataloader_num_workers": 8})]
    if "generation" in label:
        cause = Cause("rollout generation dominates the step (generation-bound)", 0.7, f"{share:.0%} of the step")
        engine = view.get("rollout.name") or view.get("actor_rollout_ref.rollout.name")
        if engine == "hf" or (view.is_trl and view.flag("use_vllm") is False):  # no KV-cache memory knob: a
            # proposal would change nothing (TRL generates with transformers unless use_vllm)
            switch = "use_vllm=True" if view.is_trl else "rollout.name=vllm"
            return [cause], [Action(f"Generate with vLLM ({switch}) if the machine has a GPU: the transformers "
                                    "rollout has no KV-cache memory setting")]
        return [cause], [
            make_action(view, "Give the rollout engine more memory for KV cache (a vLLM/SGLang rollout; the HF "
                        "rollout has no such knob)", {"rollout.gpu_memory_utilization": 0.7})]
    if "update" in label:
        return [Cause("the policy update dominates the step (update-bound)", 0.6, f"{share:.0%} of the step")], [
            make_action(view, "Larger micro-batches (if memory allows)", {})]
    if "inference" in label:
        return [Cause("reference / old log-prob passes dominate the step", 0.55, f"{share:.0%} of the step")], []
    if not gpu:
        return [Cause("other processes on the same CPU cores, or I/O waits, slow the step", 0.4)], []
    return [Cause("small batches, communication or I/O waits leave the GPU idle", 0.4)], []


@register_detector("gpu_utilization", "low_gpu_util")
class GPUUtilization(Detector):
    """GPU under-used (mean over devices of ``system/gpu/<i>/utilization``, W&B's ``system/gpu.<i>.gpu``).

    From the start (no healthy level of the run's own to compare with, so absolute bounds): the median of the
    recent ``window`` samples below ``low`` percent, or below ``target`` percent while the ``timing_s/*`` split
    shows more than ``host_share`` of the step outside any GPU phase (data loading, host work). The first sample
    (start-up) is skipped unless it is below ``first_low`` percent (W&B samples its system metrics on its own
    clock, sometimes only every 15 steps). Later, against the run's own level after ``warmup`` samples: below ``drop_ratio`` x
    that level (a data-loader stall, a slow reward server). Warning only; ``sustain`` consecutive checks when
    the run logs every step or two, one check at sparser cadences."""

    keys = (GPU_UTIL,)
    defaults = {"low": threshold(GPU_UTIL_GUIDE, "alert_below"), "target": threshold(GPU_UTIL_GUIDE, "healthy_low"),
                "host_share": 0.3, "drop_ratio": 0.6, "window": 5, "sustain": 2,
                "first_low": 30.0}
    common = {"enabled": True, "warmup": 10, "cooldown": 50}
    story, role = "speed", "outcome"

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self.base: float | None = None

    def observe(self, step: int) -> Finding | None:
        self.seen += 1
        if self.seen == 1:  # one reading; far below any healthy level it speaks on its own (W&B samples sparsely)
            m = self.ctx.tracks[GPU_UTIL].last
            if m >= self.p["first_low"]:
                return None
            label, shares = attribute_bottleneck(self.ctx)
            return self.fire(step, "warning", f"GPU utilisation {m:.0f}% from the first reading"
                             + (f"; {label}" if label else ""), values={"utilization": m, "bottleneck": label,
                                                                        "shares": shares},
                             extra_keys=(THROUGHPUT, STEP_TIME))
        return self.check(step)

    def check(self, step: int) -> Finding | None:
        p = self.p
        track = self.ctx.tracks[GPU_UTIL]
        if self.base is None and self.seen > self.warmup:
            self.base = median(track.tail(self.warmup - 1))
        vals, half = track.values, p["window"] // 2 + 1
        if track.n > p["window"] and self._streak == 0:  # the usual step: a majority of the window is healthy
            lo = min(vals[-i] for i in range(1, half + 1))  # so its median is too: no sort, no phase split
            if lo >= p["target"] and (self.base is None or lo >= p["drop_ratio"] * self.base):
                return None
        recent = track.tail(min(p["window"], track.n - 1) if track.n > 2 else 2)
        m = median(recent)
        low = m < p["low"]
        drop = self.base is not None and m < p["drop_ratio"] * self.base
        host = 0.0
        label, shares = "", {}
        if not low and not drop and m < p["target"]:
            label, shares = attribute_bottleneck(self.ctx)
            host = shares.get("data", 0.0) + shares.get("other", 0.0)
        waiting = host > p["host_share"]
        steps = track.tail_steps(2)
        needed = p["sustain"] if len(steps) == 2 and steps[1] - steps[0] < 5 else 1
        if not self.sustained(low or drop or waiting, needed):
            return None
        start = track.tail_steps(len(recent))[0]
        if self.repeats(step, "warning", start):
            return None
        if not label:
            label, shares = attribute_bottleneck(self.ctx)
        vals = {"utilization": m, "baseline": self.base, "bottleneck": label, "shares": shares}
        was = f" (was {self.base:.0f}%)" if drop else (f" (below the {p['low']:.0f}% floor)" if low else
                                                          f"; {host:.0%} of the step is host time")
        return self.fire(step, "warning", f"GPU utilisation {m:.0f}%{was}" + (f"; {label}" if label else ""),
                         values=vals, step_start=start, extra_keys=(THROUGHPUT, STEP_TIME))

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        return speed_advice(self, finding)


MARKERS = ("timing_s/testing", "timing_s/save_checkpoint")  # steps that also evaluated or saved
MARKER_PREFIXES = ("val-core/", "val-aux/", "val/", "eval/", "eval_")


@register_detector("throughput_drop", "throughput")
class ThroughputDrop(Detector):
    """Training slowed down: ``perf/throughput`` or ``perf/samples_per_second`` (or, where a run logs neither, the
    inverse of its step
    time: ``timing_s/step``, ``perf/time_per_step``, W&B's ``step_time``) against the run's own recent speed.
    Steps that also evaluated or saved a checkpoint (``timing_s/testing``, ``timing_s/save_checkpoint``,
    ``val-core/*``, ``eval/*`` logged at that step) are left out: they are slow by design.

    Warning: the median of the last ``recent`` speeds (2 when the run logs every few steps) below ``warn_ratio``
    x the median of a trailing ``window`` ending ``gap`` observations earlier, and the median of the whole low
    stretch so far (up to 10 observations) ``z_warn`` of that window's noise scales below it, in log space (speed
    noise is multiplicative; on a noisy shared machine a real slowdown shows after a few more steps). Critical only when the drop is both large and lasting:
    below ``critical_ratio`` x the level before the dip for ``sustain`` steps, on a run with a GPU (a CPU-only run
    stays at a warning: its likeliest slowdown is the machine's other work). The reference is frozen while the
    dip lasts, so a long drop is measured against the speed before it, not against itself. Where the run logs a
    ``timing_s/*`` split and shows no GPU, a slowdown in which no phase's share of the step moved by
    ``uniform_shift`` or more, or in which every phase that fills ``phase_min`` of an ordinary step (or half of the
    slow steps: a reward call grown from a tenth of a millisecond to most of the step) took at least
    ``uniform_growth`` x its usual time and ``uniform_balance`` x the slowdown of the most slowed one (every
    phase slower, comparably: other processes on the same cores) is reported as
    info, not as a warning, and a warning waits until the low stretch holds ``cpu_hold`` observations (the
    other job stretches whichever phase runs, so it takes a few steps to see that every phase slowed); without a split, so is a CPU run's slowdown that stays above ``cpu_unexplained_ratio`` of its
    level (a machine shared with one more job halves the speed). On a CPU run, split or not, a low stretch that is
    erratic (its log spread above ``cpu_steady``: the speed jumping about as
    other jobs come and go, where a slowdown of the run's own making keeps its new pace) is info too, and so is one
    longer than ten speeds whose step-to-step log spread over the whole stretch (up to ``window``) is above it (other
    jobs leave a long stretch at one pace for ten steps now and then; a ramp of the run's own moves its pace little
    from one step to the next). (On a GPU run a uniform slowdown, clocks or a
    slower node, stays a warning.) On any run, a low stretch no slower than speeds the run already held at
    ``held_frac`` or more of its earlier logged steps (an even sample of the whole run before the reference window)
    is info: the reference was an unusually fast stretch (on a shared machine, the other jobs gone for a while) and
    the run is back at its usual pace; a slowdown of the run's own making is slower than it has been before.

    One phase grown alone (warning; a run that logs a ``timing_s/*`` split, GPU or CPU): a phase of the step (the
    time outside every timed phase counts as one) whose median over the last ``phase_window`` ordinary steps is
    ``phase_growth`` x or more its median over the run's early ordinary steps (``phase_ref`` of them, after the
    first ten), has added at least ``1 / warn_ratio - 1`` of the early step time by itself (alone it slowed the
    step past the speed rule's bar), and grew ``1 / uniform_balance`` x as much as every other phase that filled
    ``phase_min`` of the early step (they held), on ``phase_hold`` successive ordinary steps. A slow ramp of the
    run's own making (a scan over a history that keeps growing, a reward call that slows) moves the speed's own
    reference along with it and hides under the machine's noise; other processes on the same cores stretch every
    phase alike, not one of them 3x while the rest hold."""

    keys = (THROUGHPUT, SAMPLES_PER_S, STEP_TIME, TIME_PER_STEP, *MARKERS)
    triggers = (THROUGHPUT, SAMPLES_PER_S, STEP_TIME, TIME_PER_STEP)
    prefixes = MARKER_PREFIXES
    defaults = {"warn_ratio": 0.8, "z_warn": 4.0, "critical_ratio": 0.35, "window": 30, "gap": 3, "recent": 3,
                "sustain": 20, "uniform_shift": 0.15, "uniform_growth": 1.3, "uniform_balance": 0.4, "phase_min": 0.1,
                "cpu_hold": 8, "cpu_steady": 0.15,
                "cpu_unexplained_ratio": 0.45, "held_frac": 0.2,
                "phase_window": 20, "phase_ref": 30, "phase_growth": 3.0, "phase_hold": 5}
    story, role = "speed", "outcome"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        return speed_advice(self, finding)

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._clean: list[tuple[int, float]] = []
        self._speeds: list[float] = []
        self._logs: list[float] = []  # log of each speed, taken once (speed noise is judged in log space)
        self._ref = self._noise = math.nan
        self._noise_logs: list[float] = []  # the logs of the reference window (:meth:`_speed_noise`)
        self._ref_at = self._noise_at = -10**9
        self._low_n = 0
        self._onset: int | None = None
        self._markers: list[Track] = []
        self._scanned: int | None = None
        self._ref_shares: dict[str, float] = {}  # phase shares of the ordinary steps (EMA)
        self._ref_times: dict[str, float] = {}  # phase times of the ordinary steps, seconds (EMA)
        self._hist: list[tuple[int, float]] = []  # (clean index, speed): an even sample of the whole run
        self._hist_stride, self._n_clean = 1, 0
        # the one-phase rule: (step time, each phase's time) of the ordinary steps; the early ones' medians, frozen
        self._level, self._gate = 0.0, -math.inf  # running mean of the step time; its bar (-inf: not frozen yet)
        self._phase_ref: tuple[float, tuple[float, ...]] | None = None  # early step time, each phase's early time
        self._phase_names: tuple[str, ...] = ()
        self._phase_run, self._phase_start, self._phase_last = 0, -1, -1
        # the window of the one-phase rule: step -> its split, and each phase's times over it kept sorted (a step
        # in and a step out per call: medians without a sort)
        self._win: dict[int, tuple[float, ...] | None] = {}
        self._cols: list[list[float]] = []
        # the held-level rule: the even sample's speeds up to ``_held_upto`` (its first ``_held_pos`` entries), sorted
        self._held_sorted: list[float] = []
        self._held_pos, self._held_upto, self._held_stride = 0, -10**9, 1
        self._sparse = False  # logged every third step or more sparsely (set on the ADAPT_AT-th speed)

    def _calm_shares(self) -> None:
        """Track the ``timing_s/*`` split of the run's ordinary steps (the first ten, then every fifth): each
        phase's share of the step and its time in seconds."""
        step_t = self.ctx.tracks.get(STEP_TIME)
        if step_t is None or not step_t.n:
            return
        _label, shares = attribute_bottleneck(self.ctx)
        if len(shares) > 1:
            ref = self._ref_shares
            self._ref_shares = shares if not ref else {ph: 0.7 * ref.get(ph, 0.0) + 0.3 * v for ph, v in shares.items()}
            times = {ph: v * step_t.last for ph, v in shares.items()}
            old = self._ref_times
            self._ref_times = times if not old else {ph: 0.7 * old.get(ph, 0.0) + 0.3 * v for ph, v in times.items()}

    def _speed_noise(self) -> float:
        """The log-speed noise (1.4826 x MAD of the logs) of the reference window: measured when a low step first
        asks for it, not at every refresh of the reference (two sorts; most steps are not low and never read it)."""
        if self._noise != self._noise:
            logs = self._noise_logs
            mid = median(logs)
            self._noise = 1.4826 * median([abs(x - mid) for x in logs])  # speed noise is multiplicative
        return self._noise

    def _all_slower(self, now: dict[str, float], k: int) -> float | None:
        """The smallest slowdown (time now / usual time) over the phases that fill at least ``phase_min`` of an
        ordinary step or half of the slow ones (None without a split): other processes on the same cores slow
        every phase of the step; a stalled loader, a slow reward server or longer generations slow one and leave the others' times as
        they were. (Shares alone cannot tell: on a shared CPU the phase that happens to run while the other job
        does stretches most.)"""
        step_t = self.ctx.tracks.get(STEP_TIME)
        if len(now) < 2 or not self._ref_times or step_t is None or step_t.n < k:
            return None
        mean_step = sum(step_t.tail(k)) / k
        usual = sum(self._ref_times.values())
        ratios = [now.get(ph, 0.0) * mean_step / t for ph, t in self._ref_times.items()
                  if ph != "other" and t > 0 and (t >= self.p["phase_min"] * usual or now.get(ph, 0.0) >= 0.5)]
        # a phase too small to count before that now fills half the step (a reward call grown from 0.1 ms to
        # 0.25 s) is in too: other processes on the same cores do not make one tiny phase the bulk of the step
        if len(ratios) < 2:
            return None
        return min(ratios) if min(ratios) >= self.p["uniform_balance"] * max(ratios) else 1.0  # one phase far
        # slower than the others (an update 6x, generation 1.3x) is this run's own doing

    def _erratic(self, low: list[float]) -> float | None:
        """The log spread (1.4826 x MAD of the logs) of the low stretch of a CPU run, when it is above ``cpu_steady``
        (None otherwise; the spread before the drop is no reference: on a shared machine it holds the last dips). A slowdown of the run's own making (a slow reward
        function, a stalled loader, longer answers) adds time to every step: the speed drops to a new level and
        keeps its rhythm. Other processes on the same cores come and go: the speed jumps about."""
        logs = [math.log(max(v, 1e-12)) for v in low]
        mid = median(logs)
        spread = 1.4826 * median([abs(x - mid) for x in logs])
        return spread if spread > self.p["cpu_steady"] else None

    def _jumpy(self, low: list[float]) -> float | None:
        """The step-to-step log spread (1.4826 x MAD of the successive differences of the logs, / sqrt(2)) of a CPU
        run's whole low stretch longer than the ten speeds :meth:`_erratic` reads (up to ``window``), when it is above
        ``cpu_steady`` (None otherwise). Other jobs that come and go over a long stretch leave it at one pace for ten
        steps now and then (0.6-1.3 s a step for 20 steps, where it was 0.13: the newest ten at 0.58-0.95 read as
        steady); a slowdown of the run's own making, a step or a ramp, moves its pace little from one step to the
        next (differences, not the spread around the median: a ramp's own trend is no jumping about)."""
        logs = [math.log(max(v, 1e-12)) for v in low]
        diffs = [b - a for a, b in zip(logs, logs[1:])]
        mid = median(diffs)
        spread = 1.4826 * median([abs(x - mid) for x in diffs]) / math.sqrt(2.0)
        return spread if spread > self.p["cpu_steady"] else None

    def _shift(self, now: dict[str, float]) -> float | None:
        """The largest change of a phase's share of the step between the ordinary steps and the slow ones (None
        without a ``timing_s/*`` split): a slowdown of the run's own making (a stalled loader, a slow reward
        server, longer generations) moves time into one phase; other processes on the same cores slow them all."""
        if len(now) < 2 or not self._ref_shares:
            return None
        return max(abs(now.get(ph, 0.0) - self._ref_shares.get(ph, 0.0)) for ph in self._ref_shares)

    def _held_before(self, s: float, k: int) -> float | None:
        """The share of the run's earlier speeds (those before the reference window and the low stretch) at or
        below ``s``, when it is at least ``held_frac`` (None otherwise, or with fewer than ``window`` of them): a
        reference taken in an unusually fast stretch (the machine's other jobs gone for a while) makes the return
        to the run's ordinary speed look like a drop; a slowdown of the run's own making is slower than the run
        has been before."""
        before = self._n_clean - (self.p["window"] + self.p["gap"] + max(k, self._low_n))
        hist, srt = self._hist, self._held_sorted
        if before < self._held_upto or self._held_stride != self._hist_stride:  # an earlier cut, or thinned
            srt.clear()
            self._held_pos, self._held_stride = 0, self._hist_stride
        self._held_upto = before
        pos = self._held_pos
        while pos < len(hist) and hist[pos][0] <= before:  # the sample only grows at its end: add the new ones
            insort(srt, hist[pos][1])
            pos += 1
        self._held_pos = pos
        if len(srt) < self.p["window"]:
            return None
        frac = bisect_right(srt, s) / len(srt)
        return frac if frac >= self.p["held_frac"] else None

    def _busy(self, step: int) -> bool:
        """True when this step also evaluated or saved (its step time is not training speed)."""
        if self._scanned != len(self.ctx.tracks):  # a key logged for the first time: look for new markers
            self._scanned = len(self.ctx.tracks)
            self._markers = [t for k, t in self.ctx.tracks.items() if k in MARKERS or k.startswith(MARKER_PREFIXES)]
        for t in self._markers:
            if t.last_step == step:
                return True
        return False

    def _speed(self, step: int) -> float | None:
        tracks = self.ctx.tracks
        for key in (THROUGHPUT, SAMPLES_PER_S):
            t = tracks.get(key)
            if t is not None and t.n:
                return t.last if t.last_step == step else None
        for key in (STEP_TIME, TIME_PER_STEP):
            t = tracks.get(key)
            if t is not None and t.last_step == step and t.last > 0:
                return 1.0 / t.last
        return None

    def observe(self, step: int) -> Finding | None:
        self.seen += 1
        speed = self._speed(step)
        if speed is None:
            return None
        if self._scanned != len(self.ctx.tracks) or self._markers:  # _busy, its usual call (no marker) inlined
            if self._busy(step):
                return None
        p = self.p
        clean = self._clean
        clean.append((step, speed))
        self._speeds.append(speed)
        n_clean = self._n_clean = self._n_clean + 1
        if n_clean % self._hist_stride == 0:  # at most 256 speeds, spread evenly over the whole run
            self._hist.append((n_clean, speed))
            if len(self._hist) >= 256:
                del self._hist[1::2]
                self._hist_stride *= 2
        self._logs.append(math.log(max(speed, 1e-12)))
        # the one-phase rule's gate: on the usual step the step time's running mean (~ the last 20 steps') is under
        # it (-inf until frozen, inf without a split), and nothing more is read
        step_t = self.ctx.tracks.get(STEP_TIME)
        if step_t is None or step_t.last_step != step:
            grown = None
        else:
            level = self._level = self._level + 0.1 * (step_t.last - self._level)  # ~ the last 20 steps' mean
            grown = None if level < self._gate else self._phase_grown_past_gate(step, step_t)
        window = p["window"]
        if len(clean) > 4 * window:
            keep = 2 * window
            del clean[:-keep], self._speeds[:-keep], self._logs[:-keep]
        n = len(clean)
        if n == ADAPT_AT:
            spacing = (clean[-1][0] - clean[0][0]) / (n - 1)
            self._sparse = spacing >= 3
            if spacing > 1:
                self.warmup = max(ADAPT_AT, min(self.warmup, math.ceil(self.warmup / spacing)))
        if not self._low_n and (n <= 10 or n % 5 == 0) and not speed < p["warn_ratio"] * self._ref:
            self._calm_shares()  # an ordinary step (a slow one would teach the reference its slowness)
        if n <= max(self.warmup, p["gap"] + 3):
            return grown
        found = self.judge(step)
        return grown if grown is not None and (found is None or found.severity == "info") else found

    def _phase_grown_past_gate(self, step: int, step_t: Track) -> Finding | None:
        """The one-phase rule (class docstring), on a step whose running mean of the step time is at or above the
        gate (:meth:`observe` keeps that mean: an ordinary step costs only it; the split is read back from the phase
        tracks to freeze the early medians and on steps where the mean is up by half the bar)."""
        if self._phase_ref is None:
            if self._n_clean >= 10 + self.p["phase_ref"]:
                self._freeze_phases(step_t)
            return None
        recent = self._ordinary(step_t, int(self.p["phase_window"]))
        win, cols = self._win, self._cols  # each step's split is read once, when it enters the window
        new = {st for st, _t in recent}
        if win.keys() != new:
            for st in [st for st in win if st not in new]:
                row = win.pop(st)
                if row is not None:
                    for col, v in zip(cols, row):
                        del col[bisect_left(col, v)]
            fresh = [(st, t) for st, t in recent if st not in win]
            split = self._split_at([st for st, _t in fresh], [t for _st, t in fresh]) if fresh else {}
            for st, row in split.items():
                win[st] = row
                if row is not None:
                    if not cols:
                        cols.extend([] for _ in row)
                    for col, v in zip(cols, row):
                        insort(col, v)
        n = len(cols[0]) if cols else 0
        if n < self.p["phase_window"] // 2:
            return None
        p = self.p
        early_step, early = self._phase_ref
        bar = (1.0 / p["warn_ratio"] - 1.0) * early_step
        k = len(early)
        mid = n // 2
        now = [col[mid] if n % 2 else 0.5 * (col[mid - 1] + col[mid]) for col in cols[:k]]
        growth = [now[i] / max(early[i], 1e-9) for i in range(k)]
        top = max(range(k), key=lambda i: now[i] - early[i])
        others = [growth[i] for i in range(k) if i != top and early[i] >= p["phase_min"] * early_step]
        held = bool(others) and max(others) <= p["uniform_balance"] * growth[top]
        if not (now[top] - early[top] >= bar and growth[top] >= p["phase_growth"] and held):
            return None
        prev = self._clean[-2][0] if len(self._clean) > 1 else None
        self._phase_run = self._phase_run + 1 if prev is not None and prev == self._phase_last else 1
        self._phase_last = step  # successive ordinary steps only: a step that did not pass starts the count again
        if self._phase_run == 1:
            self._phase_start = step
        if self._phase_run < p["phase_hold"] or self.repeats(step, "warning", self._phase_start):
            return None
        name = self._phase_names[top]
        what = "the time outside every timed phase" if name == "other" else f"the {name} phase"
        w = n
        vals = {"phase": name, "phase_time": now[top], "phase_early": early[top], "growth": growth[top],
                "others_growth": max(others), "step_early": early_step, "added_share": (now[top] - early[top]) / early_step,
                "shares": dict(zip(self._phase_names, (t / max(sum(now), 1e-9) for t in now)))}
        return self.fire(step, "warning",
                         f"Step time grown by one phase: {what} {fmt(early[top])} s -> {fmt(now[top])} s a step "
                         f"({growth[top]:.0f}x, medians over the early and the last {w} ordinary steps) while every other "
                         f"phase held (at most {max(others):.1f}x): it alone added {vals['added_share']:.0%} of the "
                         f"early step time {fmt(early_step)} s",
                         "Work inside the trainer's own step grows (a scan over a history that keeps growing, a "
                         "reward call or host-side work that slows as the run goes on): the run slows itself. Other "
                         "processes on the same machine would slow every phase alike.",
                         metric=STEP_TIME, values=vals, step_start=self._phase_start)

    def _ordinary(self, step_t: Track, k: int) -> list[tuple[int, float]]:
        """(step, step time) of the last ``k`` logged steps that neither evaluated nor saved (from the step time's
        track: the steps a marker was logged at are left out)."""
        n = k + 16
        busy = {st for t in self._markers for st in t.tail_steps(n)}
        pairs = [(st, v) for st, v in zip(step_t.tail_steps(n), step_t.tail(n)) if st not in busy]
        return pairs[-k:]

    def _freeze_phases(self, step_t: Track) -> None:
        """The early medians of the step time and of each phase over the ``phase_ref`` ordinary steps before this
        one (``_gate`` inf: the run logs no split, the rule is off)."""
        early = self._ordinary(step_t, int(self.p["phase_ref"]) + 1)[:-1]
        rows = [r for r in self._split_at([st for st, _t in early], [t for _st, t in early]).values() if r is not None]
        if len(rows) < self.p["phase_ref"] // 2:
            self._gate = math.inf
            return
        early_step = median([sum(r) for r in rows])
        self._phase_ref = (early_step, tuple(median([r[i] for r in rows]) for i in range(len(rows[0]))))
        # the gate: the running mean of the step time up by half the bar
        self._gate = early_step * (1.0 + 0.5 * (1.0 / self.p["warn_ratio"] - 1.0))

    def _split_at(self, steps: list[int], totals: list[float]) -> dict[int, tuple[float, ...] | None]:
        """Each phase's time at each of ``steps`` (the logged ``timing_s/*`` keys of a phase summed; a phase not
        logged at a step counts 0), the time outside them last (``_phase_names`` holds the names); None for a step
        whose step time is unknown or with no phase logged."""
        _aside, phases = self.ctx.per_keyset("bottleneck_phases", _phase_tracks)
        span = min(256, steps[-1] - steps[0] + 1) if steps else 0
        first = steps[0] if steps else 0
        if len(steps) == 1:  # the usual call: one step entered the window, each track's newest value or none
            cols = [[sum(tr.last if tr.last_step == first else 0.0 for tr in trs)] for _ph, trs in phases]
        else:
            cols = []
            for _ph, trs in phases:
                maps = [_since(tr, first, span) for tr in trs]
                cols.append([sum(m.get(st, 0.0) for m in maps) for st in steps])
        self._phase_names = (*(ph for ph, _trs in phases), "other")
        out: dict[int, tuple[float, ...] | None] = {}
        for j, (st, total) in enumerate(zip(steps, totals)):
            times = [c[j] for c in cols]
            named = sum(times)
            out[st] = (*times, max(0.0, total - named)) if total == total and named else None
        return out

    def _low_values(self, s: float, ratio: float, step: int) -> tuple[str, dict[str, object]]:
        """The bottleneck label and the values of a finding about the low stretch: read only when one is raised
        (most low steps raise none; the split of the latest step costs a pass over every phase's tracks)."""
        label, shares = attribute_bottleneck(self.ctx)
        return label, {"speed": s, "before": self._ref, "ratio": ratio, "bottleneck": label, "shares": shares,
                       "steps_low": step - self._onset}

    def judge(self, step: int) -> Finding | None:
        p = self.p
        vals = self._speeds
        if not self._low_n and (step - self._ref_at >= 5 or self._ref != self._ref):  # frozen while low
            window = slice(-(p["window"] + p["gap"]), -p["gap"])
            self._ref, self._ref_at = median(vals[window]), step
            self._noise, self._noise_logs = math.nan, self._logs[window]  # measured only if a step is low
        k0 = 2 if self._sparse else int(p["recent"])
        bar = p["warn_ratio"] * self._ref
        if k0 == 3:  # the usual step: the median of the last three at or above the bar, without a sort
            x, y, z = vals[-3], vals[-2], vals[-1]
            if (x >= bar) + (y >= bar) + (z >= bar) >= 2:
                self._low_n, self._onset = 0, None
                return None
        if median(vals[-k0:]) >= bar:
            self._low_n, self._onset = 0, None
            return None
        self._low_n += 1
        k = min(max(k0, self._low_n + k0 - 1), 10)  # judge the whole low stretch so far: a noisy run needs it
        s = median(vals[-k:])
        ratio = s / max(self._ref, 1e-12)
        if math.log(max(self._ref, 1e-12) / max(s, 1e-12)) <= p["z_warn"] * self._speed_noise() / math.sqrt(k):
            return None
        if self._onset is None:
            self._onset = self._clean[-k][0]
        stretch = split_over(self.ctx.tracks, max(k, 3))
        shift = self._shift(stretch)
        what = "Throughput" if self.ctx.tracks.get(THROUGHPUT) is not None else "Training speed (1 / step time)"
        cpu = not self.ctx.has_gpu()
        unexplained = cpu and shift is None and ratio >= p["cpu_unexplained_ratio"]
        slowest = self._all_slower(stretch, max(k, 3)) if cpu and shift is not None else None
        every = slowest is not None and slowest >= p["uniform_growth"]
        if cpu and (shift is not None and shift < p["uniform_shift"] or unexplained or every):
            # every phase of a CPU run slowed alike, or no split to tell and not below half speed: most likely
            # other processes on the same cores, not this run's doing
            _label, vals_out = self._low_values(s, ratio, step)
            vals_out["phase_shift"] = shift
            vals_out["slowest_phase_growth"] = slowest
            why = (f"every phase of the step slower alike (no phase's share moved more than {shift:.0%})"
                   if shift is not None and shift < p["uniform_shift"] else
                   f"every phase of the step slower (each took at least {slowest:.1f}x its usual time)" if every
                   else "no timing_s/* split to say which part of the step slowed")
            return self.fire(step, "info", f"{what} at {ratio:.0%} of its level before step {self._onset}, {why}: "
                             "other work on the same machine, most likely", values=vals_out, step_start=self._onset)
        if cpu and k < p["cpu_hold"]:
            return None  # a shared CPU stretches whichever phase runs: judge a few low steps first
        held = self._held_before(s, k)
        if held is not None:
            _label, vals_out = self._low_values(s, ratio, step)
            vals_out["held_before"] = held
            return self.fire(step, "info", f"{what} at {ratio:.0%} of its level before step {self._onset}, a speed "
                             f"the run already held at {held:.0%} of its earlier logged steps: the level before was "
                             "unusually fast, not this one slow", values=vals_out, step_start=self._onset)
        erratic, span = self._erratic(vals[-k:]) if cpu else None, k
        whole = min(self._low_n + k0 - 1, int(p["window"]))
        if cpu and erratic is None and whole > k:
            erratic, span = self._jumpy(vals[-whole:]), whole
        if erratic is not None:
            _label, vals_out = self._low_values(s, ratio, step)
            vals_out["low_spread"], vals_out["before_spread"] = erratic, self._noise
            return self.fire(step, "info", f"{what} at {ratio:.0%} of its level before step {self._onset}, erratic "
                             f"(its log spread {erratic:.2f} over the last {span} logged steps, {self._noise:.2f} before): "
                             "other work on the same machine, most likely", values=vals_out, step_start=self._onset)
        if ratio < p["critical_ratio"] and step - self._onset >= p["sustain"] and not cpu:
            # a CPU-only run stays at a warning: on a CPU the likeliest cause is the machine's other work
            label, vals_out = self._low_values(s, ratio, step)
            where = f"; {label}" if label else ""
            return self.fire(step, "critical", f"{what} down to {ratio:.0%} of its earlier level for "
                             f"{step - self._onset} steps{where}", values=vals_out, step_start=self._onset,
                             extra_keys=(STEP_TIME, GPU_UTIL))
        if self.repeats(step, "warning", self._onset):
            return None
        label, vals_out = self._low_values(s, ratio, step)
        where = f"; {label}" if label else ""
        return self.fire(step, "warning", f"{what} dropped to {ratio:.0%} of its recent level{where}",
                         "A dip that recovers (e.g. another process on the same cores) is harmless.",
                         values=vals_out, step_start=self._onset, extra_keys=(STEP_TIME, GPU_UTIL))


PHASES = BOTTLENECK_KEYS
NOT_TRAINING = MARKERS  # evaluation and checkpoint time: taken out of the step before the split
LABELS = {"generation": "generation-bound", "update": "update-bound", "data": "data-bound",
          "other": "data-bound (unaccounted host time)", "inference": "inference-bound (ref/old log-prob)",
          "sample_wait": "rollout-bound (the trainer waits for samples from the rollout / replay buffer)"}


def attribute_bottleneck(ctx: DetectorContext, bound: float = 0.5) -> tuple[str, dict[str, float]]:
    """Which phase dominates ``timing_s/step`` at its latest logged step: ``"generation-bound"``,
    ``"update-bound"``, ``"data-bound"`` (data loading or time outside every timed phase) or ``""``; plus each
    phase's share of the training part of the step (evaluation and checkpoint time taken out). Only phases logged
    at that same step count (an evaluation's time is not carried into the steps after it)."""
    step_t = ctx.tracks.get(STEP_TIME)
    if step_t is None or not step_t.n:
        return "", {}
    at = step_t.last_step
    not_training, phases = ctx.per_keyset("bottleneck_phases", _phase_tracks)
    if not any(trs for _ph, trs in phases):  # no timing_s/* phase logged: the whole step is "other"
        return "", {"other": 1.0}
    aside = sum(t.last for t in not_training if t.last_step == at)
    total = max(step_t.last - aside, 1e-9)
    shares: dict[str, float] = {}
    for phase, phase_tracks in phases:
        t = sum(tr.last for tr in phase_tracks if tr.last_step == at)
        if t:
            shares[phase] = t / total
    shares["other"] = max(0.0, 1.0 - sum(shares.values()))
    top = max(shares, key=shares.get)
    if shares[top] < bound or len(shares) == 1:  # nothing but the step time: nothing to attribute
        return "", shares
    return LABELS[top], shares


def _since(track: Track, first: int, most: int) -> dict[int, float]:
    """{step: value} of ``track``'s newest values logged at ``first`` or later (at most ``most`` of them): a walk
    back from the newest that stops at the first older one, not a copy of the whole tail."""
    steps, values = track.steps, track.values
    out: dict[int, float] = {}
    for i in range(len(steps) - 1, max(len(steps) - 1 - most, -1), -1):
        st = steps[i]
        if st < first:  # steps are logged in order: the rest are older still
            break
        if st not in out:  # a step logged twice: its newest value, as dict(zip(steps, values)) keeps
            out[st] = values[i]
    return out


def _phase_tracks(ctx: DetectorContext) -> tuple[list[Track], list[tuple[str, list[Track]]]]:
    """The tracks :func:`attribute_bottleneck` sums, in its order: those of the time spent outside training, and per
    phase those the run logs (verl V1 logs its rollout wait as ``timing_s/gen``: a wait for samples, not generation)."""
    tracks = ctx.tracks
    v1 = ctx.logs_prefix((V1_MARKER,))
    phases = []
    for phase, keys in PHASES.items():
        if v1 and phase in ("generation", "sample_wait"):
            keys = tuple(k for k in keys if k != "timing_s/gen") + (("timing_s/gen",) if phase == "sample_wait" else ())
        phases.append((phase, [tracks[k] for k in keys if k in tracks]))
    return [tracks[k] for k in NOT_TRAINING if k in tracks], phases


def split_over(tracks: dict[str, Track], k: int) -> dict[str, float]:
    """Each phase's share of the last ``k`` logged ``timing_s/step`` values together (``{}`` without a split): the
    split of a stretch of steps, steadier than one step's."""
    step_t = tracks.get(STEP_TIME)
    if step_t is None or step_t.n < k:
        return {}
    total = sum(step_t.tail(k))
    shares: dict[str, float] = {}
    for phase, keys in PHASES.items():
        t = sum(sum(tracks[key].tail(k)) for key in keys if key in tracks and tracks[key].last_step == step_t.last_step)
        if t:
            shares[phase] = t / max(total, 1e-9)
    if shares:
        shares["other"] = max(0.0, 1.0 - sum(shares.values()))
    return shares


@register_detector("bottleneck")
class Bottleneck(Detector):
    """Which phase of ``timing_s/*`` dominates the step. Warning (an absolute bound, so it speaks from the first
    steps, when there is no healthy level of the run's own yet): more than ``host_share`` of the training part of
    the step (evaluation and checkpoint time taken out) is outside
    every timed GPU phase (data loading, host-side reward, waits) on ``sustain`` consecutive observations (one
    when the run logs every 5 steps or less often) — the
    GPUs idle for most of each step. Info: the dominant phase (more than ``bound`` of ``timing_s/step``), reported
    once and again whenever the attribution changes, evaluated every ``every`` observations."""

    keys = (STEP_TIME,)
    prefixes = ("timing_s/",)
    defaults = {"bound": 0.6, "every": 20, "host_share": 0.3, "sustain": 2}
    common = {"enabled": True, "warmup": 0, "cooldown": 0}
    story = "speed"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        return speed_advice(self, finding)

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._label = ""
        self._warned = False

    def check(self, step: int) -> Finding | None:
        p = self.p
        every, phased = p["every"], self.seen + self._phase
        if self.seen > 20 and not self._streak and phased % 5 and every > 1 and phased % every:
            return None  # after the first steps, the split is looked at every fifth observation (self.due, inlined)
        label, shares = attribute_bottleneck(self.ctx, p["bound"])
        host = shares.get("other", 0.0) + shares.get("data", 0.0) if len(shares) > 1 else 0.0
        steps = self.ctx.tracks[STEP_TIME].tail_steps(2)
        needed = p["sustain"] if len(steps) < 2 or steps[1] - steps[0] < 5 else 1  # sparse logs: one reading
        if self.sustained(host > p["host_share"], needed) and not self._warned:
            self._warned = True
            what = ("The GPUs wait most of each step: " if self.ctx.has_gpu() else "Most of each step is host time: ")
            return self.fire(step, "warning", f"{what}{host:.0%} of the step is outside every timed training phase "
                             "(data loading, host work)", values={"shares": shares,
                             "bottleneck": LABELS["other"] if shares.get("other", 0) >= shares.get("data", 0)
                             else LABELS["data"], "host_share": host},
                             step_start=self.ctx.tracks[STEP_TIME].tail_steps(p["sustain"])[0])
        if host <= p["host_share"] and self._streak == 0:
            self._warned = False
        if (every > 1 and phased % every) or not label or label == self._label:  # not self.due(every), inlined
            return None
        self._label = label
        desc = ", ".join(f"{k} {v:.0%}" for k, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v > 0.01)
        return self.fire(step, "info", f"Step time is {label} ({desc})", values={"shares": shares, "bottleneck": label})


@register_detector("lr_schedule", "learning_rate")
class LRSchedule(Detector):
    """``actor/lr`` not what the run asked for (warning only). Decays are left alone — step decay, cosine,
    linear to zero are all schedules people plan. Flagged: the lr above ``peak_ratio`` x the configured peak for
    ``sustain`` observations (a resumed scheduler, a unit error), an upward jump of more than ``jump_ratio`` x
    between two observations after the lr had reached its peak, to at least ``min_share`` of that peak (a schedule
    restarted by accident; the lr leaving a cosine's trough near 0 multiplies many times over), unless the jump
    left a trough under ``trough_share`` of that peak for at most ``cycle_ratio`` x the peak the lr first fell from
    (a cosine with hard restarts ends each cycle near 0 and starts the next at its peak: 5.9e-9 -> 5e-5, the
    peak, on TRL's two- and three-cycle runs; a restart to twice the peak is still one), the lr risen to
    ``jump_ratio`` x the lowest it had decayed to since its peak, and to ``min_share`` of that peak, for ``sustain``
    observations and past ``cycle_ratio`` x the peak it first fell from (a ramp made of small steps: a schedule that
    climbs again, each step under ``jump_ratio`` x the one before it; a warm-up then a decay, linear or cosine, only
    ever falls after its peak, and a cyclic one — cosine with restarts, several cosine cycles — climbs back to that
    peak, not past it), or an lr of 0
    for ``sustain`` observations before the last ``end_share`` of the configured steps (nothing is learned)."""

    keys = (LR,)
    defaults = {"peak_ratio": 1.5, "jump_ratio": 3.0, "sustain": 3, "end_share": 0.1, "min_share": 0.1,
                "cycle_ratio": 1.05, "trough_share": 0.01}
    common = {"enabled": True, "warmup": 0, "cooldown": 100}
    cause = "the scheduler is not the one configured (resumed state, wrong total steps)"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        return [Cause(self.cause, 0.5)], [make_action(self.ctx.view, "Check the scheduler; warm up over 10% of "
                                                       "the steps", {"actor.optim.lr_warmup_steps_ratio": 0.1})]

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._config: tuple[float | None, float | None] | None = None
        self._max = 0.0
        self._low = math.inf  # the lowest lr since it fell from its peak (inf: it has not fallen yet)
        self._peak = 0.0  # the lr it first fell from

    def check(self, step: int) -> Finding | None:
        if self._config is None:  # the config does not change during a run: read it once
            view = self.ctx.view
            self._config = (view.number("actor.optim.lr"), view.number("trainer.total_training_steps"))
        peak, total = self._config
        track = self.ctx.tracks[LR]
        lr, prev = track.last, track.ago(1)
        problem, needed, climbed = "", self.p["sustain"], None
        if peak and lr > self.p["peak_ratio"] * peak:
            problem = f"lr {fmt(lr)} above the configured {fmt(peak)}"
        elif prev == prev and prev > 0 and lr > self.p["jump_ratio"] * prev and self._max > 0 and prev < self._max \
                and lr > self.p["min_share"] * self._max:  # 1e-9 -> 3e-9 at a cosine's trough is no jump
            if prev >= self.p["trough_share"] * self._max or lr > self.p["cycle_ratio"] * self._peak:
                problem, needed = f"lr jumped up {fmt(prev)} -> {fmt(lr)} after it had decayed", 1
        elif lr > self.p["jump_ratio"] * self._low and lr > self.p["min_share"] * self._max \
                and lr > self.p["cycle_ratio"] * self._peak:
            climbed = {"lr_low": self._low, "rise": lr / self._low}
            problem = f"lr climbed again to {fmt(lr)}, {lr / self._low:.1f}x the {fmt(self._low)} it had decayed to"
        elif lr <= 0 and self._max > 0 and (not total or step < (1 - self.p["end_share"]) * total):
            problem = "lr is zero in the middle of the run"
        if lr < self._max and lr < self._low:
            if self._low == math.inf:
                self._peak = self._max  # the peak it first decayed from: a cyclic schedule climbs back to it
            self._low = lr
        self._max = max(self._max, lr)
        if not self.sustained(bool(problem), needed):
            return None
        return self.fire(step, "warning", f"Learning rate not following its schedule: {problem}",
                         values={"lr": lr, "configured_lr": peak, "max_lr": self._max, **(climbed or {})})


MISMATCH_KEYS = (MISMATCH, "rollout_corr/log_ppl_abs_diff", "rollout_corr/k3_kl", "rollout_corr/kl",
                 "sampling/sampling_logp_difference/mean")  # the first one a run logs is judged
FRAC_ZERO = "critic/score/frac_zero_std"  # share of prompt groups whose rewards all tie (TRL: frac_reward_zero_std)
ENTROPY, REWARD = "actor/entropy", "critic/score/mean"


@register_detector("rollout_mismatch", "logprob_mismatch")
class RolloutMismatch(Detector):
    """Rollout engine and trainer disagree on log-probs: verl's ``training/rollout_probs_diff_mean`` or
    ``rollout_corr/*`` divergences, TRL's ``sampling/sampling_logp_difference/mean``. Judged against the run's
    own level after warm-up (the mismatch of a healthy run is small and flat; dtype, kernel or weight-sync
    problems make it grow). Warning: the smoothed value is ``warn_ratio`` x its baseline (floored at
    ``floor``) and ``z_warn`` noise scales above it; or ``creep_ratio`` x the baseline while climbing steadily
    over one of ``windows`` recent observations. A mismatch that is high but stable is the run's baseline (bf16
    rollouts differ from an fp32 trainer), not a finding. Also a warning: a slow drift, found by a one-sided CUSUM
    (allowance ``drift_k``, decision level ``drift_h``) of the log-ratio to the level of the first ``warmup``
    observations in units of their spread, once the median of the last 5 is ``drift_ratio`` x that level; the finding
    starts where the drift began. Settling: for ``settle`` steps after the warm-up, a rise under ``settle_ratio`` x
    the first level that trips a warning rule re-bases the warning rules (``warn_ratio``, ``creep_ratio``, the
    drift's level and spread) to the last ``warmup`` observations instead of warning, and a run that moved so is
    re-based once more when the settling ends: the gap of a vLLM rollout steps up over the first updates and then
    holds (the engine/trainer numerical floor of the setup); a real mismatch jumps far above its settled level or
    keeps growing past it. Only the first of the keys the run logs is judged.
    Also a warning (one chance per run): the mismatch left its early level in one leap (an observation
    ``leap_ratio`` x that level, after the warm-up) and keeps growing from where it landed: among the first
    ``leap_window`` observations from the leap, the median of the last 3 reaches ``leap_growth`` x the median of the
    first 3 on at least ``leap_min`` of them, with a Kendall trend (tau) of ``leap_tau`` or more over them. A new
    numerical floor (bf16 rollout logits where they were bit-exact) steps up once and holds at the level it stepped
    to; weights that reach the rollout engine only in part, or ever later, move it further off step after step,
    which the floored ratio rules see only once it passes ``floor``. The finding starts at the leap.
    Critical:
    > ``critical_ratio`` x the baseline for ``sustain`` checks.
    Sampling narrower than the policy (a run that logs no log-prob comparison, TRL on CPU: a generation config's
    ``top_k``, ``temperature`` or greedy decoding that the training pass does not share): every prompt group's
    rewards tied (``critic/score/frac_zero_std`` at 1) on n consecutive logged steps, n long enough that the run's
    own earlier share q of all-tied steps makes such a run anywhere among its m earlier logged steps less likely
    than ``tie_chance`` (m x q**n, with a prior of 1.5 in 4; between ``tie_sustain`` and ``tie_max``), while the policy's own entropy (the training pass,
    over the full distribution) averaged over those steps is not ``entropy_z`` spreads under its level over the
    ``tie_window`` logged steps before them, and the reward is neither at its best nor its worst of the run (every
    prompt solved or every prompt failed: the task, not the sampler). A policy that still spreads its probability
    does not give every completion of every group the same score step after step unless what generates the
    completions is narrower than the policy the trainer scores. Warning.
    Old log-probs from another model (a run that logs no log-prob comparison): ``actor/ppo_kl`` exactly 0 on each
    of at least ``exact_min`` logged steps (one update per batch on the policy that sampled it: the ratio is exactly
    1), then, from the first step it is not, past ``kl_abs`` in magnitude on ``exact_moved`` of the ``exact_window``
    logged steps from there (one chance per run). An exact 0 does not end by noise: the "old" log-probs no longer
    come from the weights being trained (the reference model, stale weights), or the run now takes more than one
    update per batch (more PPO epochs or mini-batches). Warning."""

    keys = (*MISMATCH_KEYS, FRAC_ZERO, PPO_KL)
    triggers = (*MISMATCH_KEYS, FRAC_ZERO, PPO_KL)
    defaults = {"warn_ratio": 2.0, "z_warn": 6.0, "critical_ratio": 5.0, "floor": 0.001, "sustain": 2,
                "smooth": 3, "creep_ratio": 1.6, "windows": (9, 24, 60), "drift_k": 0.5, "drift_h": 12.0,
                "drift_ratio": 1.3, "settle": 45, "settle_ratio": 2.5, "tie_chance": 0.0001, "tie_sustain": 3,
                "tie_max": 30, "entropy_z": 3.0, "tie_window": 50, "exact_min": 30, "kl_abs": 1e-4,
                "exact_moved": 3, "exact_window": 5, "leap_ratio": 20.0, "leap_window": 20, "leap_min": 6,
                "leap_growth": 2.5, "leap_tau": 0.4}
    common = {"enabled": True, "warmup": 15, "cooldown": 30}
    story, role = "mismatch", "outcome"
    cause = ("rollout engine and trainer compute different log-probs (dtype, kernels, temperature, stale weights "
             "after sync)")

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._base: dict[str, tuple[float, float]] = {}
        self._key: str | None = None
        self._key_at = -1  # len(tracks) when the judged key was chosen: a new series may come first in order
        self._cusum = Cusum(self.p["drift_k"], self.p["drift_h"])
        self._log: tuple[float, float] | None = None  # early level and spread, in logs
        self._drift_ref: float | None = None  # the warning rules' level: the first steps', or the settled one
        self._settled_at = -1  # the step the settling ends: ``settle`` steps after the warm-up
        self._tie_obs = self._tie_all = self._tie_streak = 0  # logged shares, all-tied ones, current all-tied run
        self._tie_step = -1
        self._exact = 0  # logged steps with ppo_kl exactly 0; -1: the old-log-probs rule is over for this run
        self._moved: list[int] | None = None  # first step past 0, steps since, steps past kl_abs, exact steps
        self._leap: list[float] | None = None  # the observations from the leap off the early level; [] once over
        self._leap_step = -1

    def check(self, step: int) -> Finding | None:
        tracks = self.ctx.tracks
        if self._exact >= 0:  # the old-log-probs rule: a 0 counted inline, anything else judged
            kl = tracks.get(PPO_KL)
            if kl is not None and kl.last_step == step:
                if self._exact and kl.last == 0.0 and self._moved is None:
                    self._exact += 1
                else:
                    found = self._old_logprobs(step, kl)
                    if found is not None:
                        return found
        if self._key_at != len(tracks):
            self._key_at = len(tracks)
            self._key = next((k for k in MISMATCH_KEYS if k in tracks and tracks[k].n), None)
        key = self._key
        track = tracks.get(key) if key else None
        if track is None or track.last_step != step or track.n <= self.warmup:
            return self._narrow(step) if FRAC_ZERO in tracks else None
        if key not in self._base:
            self._base[key] = robust(track.tail(self.warmup, skip=1), 0.05, 1e-9)
            self._settled_at = step + self.p["settle"]
        return self._judge(step, key, track)

    def _judge(self, step: int, key: str, track: Track) -> Finding | None:
        p = self.p
        base, scale = self._base[key]
        if self._leap != []:
            grown = self._leap_growth(step, key, track, base)
            if grown is not None:
                return grown
        s = track.mean_last(p["smooth"])
        ref = max(base, p["floor"])
        ratio = s / ref
        dref = self._drift_ref if self._drift_ref is not None else ref
        drifting = self._drift(key, track, ref) and median(track.tail(5)) > p["drift_ratio"] * dref
        relative = s > p["warn_ratio"] * dref and s - max(base, dref) > p["z_warn"] * scale
        creeping = s > p["creep_ratio"] * dref and climb(track, tuple(p["windows"]), p["z_warn"], 0.02 * ref,
                                                         self.warmup // 2) is not None
        if 0 <= self._settled_at < step:  # settled: the level it ended at, when it moved while settling
            self._settled_at = -1
            if self._drift_ref is not None and ratio < p["settle_ratio"]:
                self._rebase(track)
                relative = creeping = drifting = False
        elif step <= self._settled_at and ratio < p["settle_ratio"] and (relative or creeping or drifting):
            self._rebase(track)  # still settling: the level it steps up to is the run's own floor
            relative = creeping = drifting = False
        if not (relative or creeping or drifting):
            self._streak = 0
            return None
        vals = {"mismatch": s, "baseline": base, "ratio": ratio}
        settled = vals if self._drift_ref is None else vals | {"baseline": dref, "ratio": s / dref, "first": base}
        start = self._cusum.start if drifting and not (relative or creeping) else None
        if start is not None:
            return self.fire(step, "warning", f"Rollout/trainer log-prob mismatch drifting up since step {start}: "
                             f"{track.raw} {fmt(s)}, {s / dref:.1f}x " + (
                                 f"{versus(ref, base, 'level', f' over the first {self.warmup} logged steps')}"
                                 if self._drift_ref is None else f"its settled level {fmt(dref)}"),
                             metric=key, values=settled | {"drift_since": start}, step_start=start)
        if self.sustained(ratio > p["critical_ratio"], p["sustain"]):
            return self.fire(step, "critical", f"Rollout/trainer log-prob mismatch {track.raw}={fmt(s)} ({ratio:.0f}x "
                             f"{versus(ref, base, 'earlier level')})", "The samples are no longer on-policy for the trainer: updates use "
                             "wrong ratios.", metric=key, values=vals)
        if self._drift_ref is not None:
            return self.fire(step, "warning", f"Rollout/trainer log-prob mismatch growing: {track.raw} "
                             f"{fmt(dref)} -> {fmt(s)} ({s / dref:.1f}x its settled level)", metric=key, values=settled)
        return self.fire(step, "warning", f"Rollout/trainer log-prob mismatch growing: {track.raw} {fmt(base)} -> "
                         f"{fmt(s)} ({ratio:.1f}x {versus(ref, base, 'earlier level')})", metric=key, values=vals)

    def _leap_growth(self, step: int, key: str, track: Track, base: float) -> Finding | None:
        """A leap off the early level that keeps growing from where it landed (the class docstring)."""
        p, v = self.p, track.last
        if self._leap is None:
            if v <= p["leap_ratio"] * max(base, 1e-12):
                return None
            self._leap, self._leap_step = [], step
        obs = self._leap
        obs.append(v)
        n = len(obs)
        if n >= p["leap_window"]:
            self._leap = []  # over: it held (or grew too slowly to be told from a new floor this early)
        if n < p["leap_min"]:
            return None
        first, last = median(obs[:3]), median(obs[-3:])
        if last < p["leap_growth"] * first:
            return None
        tau = kendall_tau(obs)
        if tau < p["leap_tau"]:
            return None
        self._leap = []
        vals = {"mismatch": last, "baseline": base, "landed": first, "growth": last / first, "tau": tau,
                "leap_step": self._leap_step}
        return self.fire(step, "warning", f"Rollout/trainer log-prob mismatch leapt off its early level at step "
                         f"{self._leap_step} ({track.raw} {fmt(base)} -> {fmt(first)}) and keeps growing: "
                         f"{fmt(last)} ({last / first:.1f}x where it landed, trend tau {tau:.2f} over {n} logged "
                         "steps)", "A new numerical floor steps up once and holds; this one moves further off step "
                         "after step (weights reaching the rollout engine in part, or later and later).",
                         metric=key, values=vals, step_start=self._leap_step)

    def _narrow(self, step: int) -> Finding | None:
        """Sampling narrower than the policy: every group tied for longer than chance allows, the policy's
        entropy not fallen, the reward at neither end of its range (the class docstring)."""
        tracks, p = self.ctx.tracks, self.p
        ft = tracks[FRAC_ZERO]
        if ft.last_step != step or self._tie_step == step:
            return None
        self._tie_step = step
        if not self._tie_obs:  # the shares logged before the warm-up ended: the run's own rate of all-tied steps
            prior = ft.tail(ft.n - 1, skip=1)
            self._tie_obs, self._tie_all = len(prior), sum(1 for v in prior if v >= 1.0 - 1e-9)
        tied = ft.last >= 1.0 - 1e-9
        self._tie_obs += 1
        self._tie_all += tied
        n = self._tie_streak = self._tie_streak + 1 if tied else 0
        if n < p["tie_sustain"]:
            return None
        before = self._tie_obs - n
        q = (self._tie_all - n + 1.5) / (before + 4)  # prior: 1.5 all-tied in 4 (nothing known yet)
        # a run of n anywhere among the steps so far: before x q**n (the union over where it could have started)
        if n < min(p["tie_max"], math.ceil(math.log(p["tie_chance"] / max(before, 1)) / math.log(q))):
            return None
        ent, rew = tracks.get(ENTROPY), tracks.get(REWARD)
        if ent is None or rew is None or len(ent.values) < n + self.warmup or len(rew.values) < n + self.warmup:
            return None
        now = ent.mean_last(n)
        level, spread = robust(ent.tail(p["tie_window"], skip=n))
        if now < level - p["entropy_z"] * spread:
            return None  # the policy itself narrowed: entropy_collapse's finding, not the sampler's
        r, hi, lo = rew.mean_last(n), max(rew.values), min(rew.values)
        if r >= hi - 0.05 * (hi - lo) or r <= lo + 0.05 * (hi - lo):
            return None  # every prompt solved (or failed): the task, not the sampler
        share = (self._tie_all - n) / max(self._tie_obs - n, 1)
        vals = {"frac_zero_std": ft.last, "steps": n, "tied_share_before": share, "entropy": now,
                "entropy_level": level, "reward": r}
        return self.fire(step, "warning", f"Sampling narrower than the policy: every prompt group's rewards tied "
                         f"({ft.raw} 1) on the last {n} logged steps (all tied on {share:.0%} of the steps "
                         f"before) while the policy's entropy held at {fmt(now)} (level {fmt(level)})",
                         "The completions of each group agree although the policy still spreads its "
                         "probability: generation samples from a narrower distribution than the trainer scores "
                         "(top_k, temperature, greedy decoding), and GRPO gets no learning signal.",
                         metric=FRAC_ZERO, values=vals, step_start=ft.steps[-min(n, len(ft.steps))],
                         extra_keys=(ENTROPY, REWARD))

    def _old_logprobs(self, step: int, kl: Track) -> Finding | None:
        """The old log-probs from another model: ppo_kl exactly 0 for long, then past ``kl_abs`` on most of the next
        few logged steps (the class docstring)."""
        p, v = self.p, kl.last
        if self._moved is None:
            if not self._exact:  # the first check: the values logged before it (the warm-up) count too
                prior = kl.tail(kl.n - 1, skip=1)
                self._exact = len(prior) if not any(prior) else -1
                if self._exact < 0:
                    return None
            if v == 0.0:
                self._exact += 1
                return None
            if self._exact < p["exact_min"]:
                self._exact = -1
                return None
            self._moved = [step, 0, 0, self._exact]
        w = self._moved
        w[1] += 1
        w[2] += abs(v) > p["kl_abs"]
        if w[2] < p["exact_moved"]:
            if w[1] >= p["exact_window"]:
                self._exact = -1
            return None
        self._exact = -1
        clip = self.ctx.tracks.get(CLIPFRAC)
        vals = {"ppo_kl": v, "exact_steps": w[3], "moved": w[2], "window": w[1]}
        if clip is not None and clip.last_step == step:
            vals["pg_clipfrac"] = clip.last
        return self.fire(step, "warning", f"PPO ratio no longer 1: {kl.raw} exactly 0 on the first "
                         f"{vals['exact_steps']} logged steps, then past {fmt(p['kl_abs'])} on {w[2]} of the "
                         f"{w[1]} logged steps since step {w[0]} (now {fmt(v)})",
                         "One update per batch on the policy that sampled it gives a ratio of exactly 1: the old "
                         "log-probs no longer come from the weights being trained (the reference model, stale "
                         "weights), or the run now takes more than one update per batch.", metric=PPO_KL,
                         values=vals, step_start=w[0], extra_keys=(CLIPFRAC,))

    def _rebase(self, track: Track) -> None:
        """The warning rules' level (and the drift's spread) from the last ``warmup`` observations; the drift's
        CUSUM starts over."""
        fit = log_scale(track.tail(self.warmup), 0.05)
        if fit is None:
            return
        self._drift_ref = max(fit[0], self.p["floor"])
        self._log = (math.log(self._drift_ref), fit[1])
        self._cusum = Cusum(self.p["drift_k"], self.p["drift_h"])

    def _drift(self, key: str, track: Track, ref: float) -> bool:
        """A slow drift above the early level (:class:`Cusum` of the log-ratio to it, in units of the early
        steps' spread of logs), for mismatch that grows a little every step."""
        if self._log is None:
            fit = log_scale(track.tail(self.warmup, skip=1), 0.05)
            self._log = (math.log(max(fit[0], self.p["floor"])), fit[1]) if fit else (math.log(ref), 0.1)
        v = track.last
        if v <= 0:
            return False
        mid, spread = self._log
        return self._cusum.update((math.log(v) - mid) / spread, track.last_step)

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        if "frac_zero_std" in finding.evidence.get("values", {}):
            return [Cause("generation samples from a narrower distribution than the policy (a generation config's "
                          "top_k / temperature / do_sample, or a rollout engine's sampling parameters, differ from "
                          "the trainer's)", 0.7)], [
                make_action(self.ctx.view, "Sample completions from the policy itself: check the generation "
                            "config (top_k, top_p, temperature, do_sample) the trainer hands to generation", {})]
        if "exact_steps" in finding.evidence.get("values", {}):
            return [Cause("the old log-probs come from another model than the policy that sampled the batch (the "
                          "reference model, or weights from before the last update)", 0.7),
                    Cause("the run now takes more than one update per batch (more PPO epochs or mini-batches)",
                          0.4)], [
                make_action(self.ctx.view, "Compute the old log-probs with the policy that sampled the batch, "
                            "before its update (not the reference model); check that no config change raised the "
                            "PPO epochs or mini-batches", {})]
        causes = [Cause(self.cause, 0.7)]
        length = moved(self.ctx, "response_length/mean", up=1.3, window=60, recent=5)
        if length is not None:
            causes.append(Cause("longer responses accumulate more numerical mismatch per sequence", 0.5, length.text))
        return ranked(causes), [make_action(self.ctx.view, "Use the same dtype and sampling params in rollout and "
                                            "trainer; check the weight sync; correct the ratios (verl's "
                                            "rollout_corr / TRL's vllm_importance_sampling_correction)", {})]
