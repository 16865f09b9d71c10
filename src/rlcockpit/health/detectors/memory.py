"""Memory detectors: device and host memory creeping towards an out-of-memory kill.

Runs log memory in two shapes, and both are judged: a percent of capacity (W&B's
``system/gpu.0.memoryAllocated``, ``system/memory_percent``) and an absolute amount without the device total
(verl's ``perf/max_memory_allocated_gb``, ``system/proc_rss_gb``, W&B's ``system/proc.memory.rssMB``). The
absolute amounts are judged relative to the run's own level after warm-up, so the unit (GB, MB, bytes) does not
matter. A healthy run's memory is flat after warm-up or steps up a few times (the allocator's peak, a longer
batch); a leak, or memory that grows with the response length, climbs step after step. Per-GPU series are
aggregated by the monitor (max over devices).
"""

from __future__ import annotations

import math
from collections import deque

from rlcockpit.health.advice import LEN, memory_action, moved, ranked, story_causes
from rlcockpit.health.base import Detector, Track, climb, fmt, median, register_detector, robust
from rlcockpit.health.config_view import make_action
from rlcockpit.health.findings import Action, Cause, Finding

GPU_MEM, HOST_MEM = "system/gpu/memory_percent", "system/memory_percent"
ALLOC, RESERVED = "perf/max_memory_allocated_gb", "perf/max_memory_reserved_gb"
RSS, RSS_MB, CPU_USED = "system/proc_rss_gb", "system/proc_rss_mb", "perf/cpu_memory_used_gb"
GPU_USED, GPU_BYTES = "system/gpu/memory_used_gb", "system/gpu/memory_allocated_bytes"
GPU_SPREAD = "system/gpu/memory_percent_spread"  # fullest GPU minus the median GPU (the monitor derives it)
ABSOLUTE = (ALLOC, RESERVED, GPU_USED, GPU_BYTES, RSS, RSS_MB, CPU_USED)
MACHINE_USED = ("system/memory_used_gb", CPU_USED)  # the machine's used memory in GB, as rlcockpit / verl log it
# a climb of the machine's memory is the run's own when its RSS grew by at least this share of it meanwhile
OWN_SHARE = 0.25
DEVICE_KEYS = (ALLOC, RESERVED, GPU_USED, GPU_BYTES)


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


def _latest(tracks: dict[str, Track], *keys: str) -> float | None:
    """The newest value in GB of the first of ``keys`` the run logs (a ``_mb`` key is converted), else ``None``."""
    for key in keys:
        track = tracks.get(key)
        if track is not None and track.n:
            return track.last / 1024.0 if key.endswith("_mb") else track.last
    return None


def steps_to_full(track: Track, level: float, slope_per_observation: float, full: float = 100.0) -> float:
    """Steps (not log lines) until ``level`` reaches ``full`` at ``slope_per_observation``, from the series'
    logging cadence: the "OOM in ~N steps" projection (infinite when not rising)."""
    if slope_per_observation <= 0:
        return math.inf
    st = track.steps
    spacing = (st[-1] - st[0]) / max(len(st) - 1, 1) if len(st) > 1 else 1.0
    return max(full - level, 0.0) / slope_per_observation * max(spacing, 1.0)


class MemoryTrend(Detector):
    """Shared rule for one memory series, against its own behaviour after warm-up: its level (``base``), its
    step-to-step jitter and the highest value it reached (``high``: the top of a healthy sawtooth, the
    allocator's settled peak).

    Creep (warning), any of:
    - a steady climb over one of ``windows`` recent observations (medians of its thirds rising by ``z_warn``
      noise units of the window's own jitter, the rise spread over the window rather than one jump) whose newest
      third lies above the warm-up's highest value and ``min_growth`` above its level;
    - a run of records: each of the last ``records`` observations (fewer for a sparse log: those covering
      ``records_steps`` steps, at least 2) above every earlier one, ``record_growth`` above the warm-up's highest
      value (a healthy running peak steps up now and then and stays; a leak sets a new high at every log);
    - each of the last ``run`` observations rose by more than twice the warm-up's jitter and the newest is
      2 x ``min_growth`` above the warm-up level (a sparse log sees only a few points of a climb).
    Checked every ``every`` observations. Subclasses say how big ``min_growth`` / ``record_growth`` are
    (percent points, or a share of the baseline for absolute amounts)."""

    story, role = "memory", "outcome"
    cause = "activation/cache memory grows with batch and sequence length, or leaks"
    defaults = {"z_warn": 5.0, "windows": (9, 24, 60), "run": 2, "records": 6, "records_steps": 8, "every": 1,
                "rel_floor": 0.001, "warmup_steps": 20}
    common = {"enabled": True, "warmup": 6, "cooldown": 100}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._base: dict[str, tuple[float, float, float]] = {}
        self._first: dict[str, int] = {}
        self._warm_n: dict[str, int] = {}
        # key -> [highest so far, records in a row, n seen, record margin, min_growth, n to refine the baseline at]
        self._top: dict[str, list] = {}
        self._cut: dict[str, float] = {}

    def ready(self, key: str, track: Track) -> bool:
        """Warm once the series has ``warmup`` observations spanning ``warmup_steps`` steps (memory settles in
        steps, not in log lines: the allocator's peak keeps rising over the first batches however sparse the log)."""
        if key in self._base:
            return True
        first = self._first.setdefault(key, track.steps[0])
        if track.n < self.warmup or track.last_step - first < self.p["warmup_steps"]:
            return False
        self.baseline(key, track)
        return True

    def baseline(self, key: str, track: Track) -> tuple[float, float, float]:
        """(level, step-to-step jitter, highest value) at warm-up end; the warm-up's first third (allocator
        warm-up, the first batches) is left out."""
        if key not in self._base:
            first = self._first.get(key, track.steps[0])
            self._cut[key] = cut = first + (track.last_step - first) / 3
            self._warm_n[key] = track.n
            self._measure(key, track, cut, refine_at=2 * track.n)
        return self._base[key]

    def _measure(self, key: str, track: Track, cut: float, refine_at: int) -> None:
        warm = [v for st, v in zip(track.steps, track.values) if st >= cut][:-1] or [track.last]
        med, _ = robust(warm, self.p["rel_floor"], 1e-9)
        # step-to-step jitter from the upper quartile of the changes (/1.15: the scale of a normal difference), not
        # their median: a sawtooth's changes are half tiny (same tooth) and half a whole tooth
        diffs = sorted(abs(y - x) for x, y in zip(warm, warm[1:]))
        measured = diffs[(3 * len(diffs)) // 4] / 1.15 if diffs else 0.0
        jitter = max(measured, self.p["rel_floor"] * abs(med), 1e-9)
        self._base[key] = (med, jitter, max(warm))
        # a record must beat the top by half the measured jitter: in a noisy series a hair above is chance, in
        # a running peak (jitter 0) any rise is a record
        top = max(max(warm), self._top[key][0]) if key in self._top else max(warm)
        self._top[key] = [top, 0, track.n - 1, 0.5 * measured, self.min_growth(med, key), refine_at]

    def refine(self, key: str, track: Track) -> None:
        """Measure the baseline again from everything since the warm-up's first third once the series has
        twice, and again four times, the warm-up's observations — while it shows no rise (no record run, not
        half ``min_growth`` above its level): a handful of warm-up readings misjudge a noisy series' jitter and
        top (a sparse W&B clock gives six), a longer healthy stretch does not."""
        rec = self._top[key]
        warm_n = self._warm_n[key]
        nxt = 2 * rec[5] if rec[5] < 4 * warm_n else -1
        if rec[1] == 0 and track.mean_last(3) - self._base[key][0] < 0.5 * rec[4]:
            self._measure(key, track, self._cut[key], nxt)
        else:
            rec[5] = nxt

    def records(self, key: str, track: Track) -> int:
        """How many of the newest observations in a row each set a new high of the series since warm-up
        (updated from the observations since the last call: a comparison per observation)."""
        rec = self._top[key]
        new = min(track.n - rec[2], len(track.values))
        if new > 0:
            vals, eps = track.values, rec[3]
            for i in range(len(vals) - new, len(vals)):
                v = vals[i]
                if v > rec[0] + eps:
                    rec[0] = v
                    rec[1] += 1
                else:
                    rec[1] = 0
            rec[2] = track.n
        return rec[1]

    def min_growth(self, base: float, key: str = "") -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def record_growth(self, base: float, key: str = "") -> float:
        return 0.5 * self.min_growth(base, key)

    def record_run(self, key: str, track: Track, streak: int) -> dict[str, float] | None:
        """The last observations each set a new high, and the newest is ``record_growth`` above the warm-up's
        highest value: how a leak looks in a running peak, or in any series whose rise outpaces its noise."""
        base, jitter, high = self._base[key]
        st = track.steps
        spacing = (st[-1] - st[0]) / max(len(st) - 1, 1)
        need = max(2, min(int(self.p["records"]), math.ceil(self.p["records_steps"] / max(spacing, 1e-9))))
        if track.n < 2 * self._warm_n[key]:  # a baseline of a few readings is provisional: one record more
            need += 1
        if streak < need or track.last - high < max(self.record_growth(base, key), jitter):
            return None
        k = min(streak, len(track.values) - 1)
        first = track.ago(k)
        if track.last - first < 3 * jitter:  # records inside the noise band of a jittery series are chance
            return None
        return {"value": track.last, "baseline": base, "growth": track.last - base,
                "relative_growth": (track.last - base) / max(abs(base), 1e-12),
                "slope_per_observation": (track.last - first) / k, "window": k + 1, "records": streak}

    def rising_run(self, key: str, track: Track) -> dict[str, float] | None:
        """A climb seen in only a few observations (a run that logs every 10 steps has two of them within 15
        steps of a leak's start): each of the last ``run`` values is above the one before by more than the
        warm-up's step-to-step jitter, and the newest is ``min_growth`` above the warm-up level."""
        base, jitter, high = self._base[key]
        k = int(self.p["run"])
        vals = track.tail(k + 1)
        if len(vals) < k + 1 or track.n < self._warm_n.get(key, 0) + k:
            return None
        if any(y - x <= 2 * jitter for x, y in zip(vals, vals[1:])) or vals[-1] - base < 2 * self.min_growth(base, key) \
                or vals[-1] <= high:
            return None
        return {"value": vals[-1], "baseline": base, "growth": vals[-1] - base,
                "relative_growth": (vals[-1] - base) / max(abs(base), 1e-12),
                "slope_per_observation": (vals[-1] - vals[0]) / k, "window": k + 1, "noise": jitter}

    def quiet_step(self, key: str, track: Track, mean3: float | None = None) -> bool:
        """:meth:`creeping`'s usual step, told without it (the step cost of the memory detectors): the newest value
        is one observation on, no new high (the record run ends, as :meth:`records` counts it) and no refinement of
        the baseline is due; True when, besides, the 3-step mean (``mean3``, else taken here) is under
        ``min_growth`` above the baseline: nowhere near a creep, :meth:`creeping` would find nothing."""
        rec = self._top[key]
        if track.n - rec[2] != 1 or track.last > rec[0] + rec[3] or track.n == rec[5]:
            return False
        rec[1], rec[2] = 0, track.n
        return (track.mean_last(3) if mean3 is None else mean3) - self._base[key][0] < rec[4]

    def creeping(self, key: str, track: Track) -> dict[str, float] | None:
        """The creep evidence for ``track`` now, or ``None`` (see the class docstring)."""
        if track.n == self._top.get(key, (0,) * 6)[5]:
            self.refine(key, track)
        base, jitter, high = self.baseline(key, track)
        streak = self.records(key, track)
        if streak >= 2 and track.last - high >= max(self.record_growth(base, key), jitter):
            ev = self.record_run(key, track, streak)
            if ev is not None:
                return ev
        if track.mean_last(3) - base < self._top[key][4]:  # the usual case: nowhere near a creep (min_growth)
            return None
        floor = self.p["rel_floor"] * max(abs(base), 1e-9)
        found = climb(track, tuple(self.p["windows"]), self.p["z_warn"], floor, self._warm_n.get(key, 0) // 2)
        if found is not None and found[2] - base >= self.min_growth(base, key) and found[2] > high:
            a, _b, c, window, noise = found
            vals = track.tail(window)
            third = window // 3
            jump = max(y - x for x, y in zip(vals, vals[1:]))
            last = vals[2 * third :]
            # a creep, not a step up: the rise is spread over the window, it exceeds what the warm-up's jitter
            # makes of thirds' medians (a sawtooth's thirds land on either tooth), and the newest third still moves
            if jump <= 0.5 * (c - a) + 3 * jitter and c - a >= self.p["z_warn"] * 0.9 * jitter / math.sqrt(third) \
                    and max(last) - min(last) > floor:
                return {"value": c, "baseline": base, "growth": c - base,
                        "relative_growth": (c - base) / max(abs(base), 1e-12),
                        "slope_per_observation": (c - a) / (2 * (window // 3)), "window": window, "noise": noise}
        return self.rising_run(key, track)

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        view = self.ctx.view
        causes = story_causes(view, ("ckpt",))
        frag = finding.evidence.get("values", {}).get("allocated_growth")
        if frag is not None:
            causes.append(Cause("the caching allocator fragments: reserved memory grows while allocated memory does "
                                "not (variable sequence lengths leave unusable blocks; PYTORCH_CUDA_ALLOC_CONF="
                                "expandable_segments:True lets PyTorch reuse them)", 0.8,
                                f"allocated {frag:+.0%} since warm-up"))
        length = moved(self.ctx, LEN, up=1.2, window=60, recent=5)
        if length is not None:
            causes.append(Cause("memory grows with the response length: longer sequences need more activation "
                                "and KV-cache memory", 0.7, length.text))
            limit = view.current_number("data.max_response_length")
            cap = make_action(view, "Cap the response length (or penalise overlong answers)",
                              {"data.max_response_length": int(limit * 0.75)} if limit else {})
            return ranked(causes + [Cause(self.cause, 0.5)]), [memory_action(view), cap]
        causes.append(Cause("a leak: memory climbs while the response length stays flat (tensors kept across steps, "
                            "growing buffers)", 0.6))
        return ranked(causes), [memory_action(view)]


class _Percent(MemoryTrend):
    """A percent-of-capacity series: creep by more than ``creep_points`` over its baseline (warning, with an
    estimate of the steps left until 100%); critical when above ``critical_percent`` and ``critical_rise``
    points above its own warm-up level. A level that was high from the start (vLLM reserves 90% of the device
    for its KV cache) is the run's baseline, not a finding."""

    defaults = {**MemoryTrend.defaults, "creep_points": 2.0, "spread_points": 1.0, "critical_percent": 92.0,
                "critical_rise": 8.0}
    label = "memory"

    def min_growth(self, base: float, key: str = "") -> float:
        return self.p["spread_points"] if key == GPU_SPREAD else self.p["creep_points"]

    def check(self, step: int) -> Finding | None:
        p = self.p
        key = self.keys[0]
        track = self.ctx.tracks[key]
        known = self._base.get(key)  # ready() and baseline(), their usual call (warm, measured) inlined
        if known is None:
            if not self.ready(key, track):
                return None
            known = self.baseline(key, track)
        base = known[0]
        s = track.mean_last(3)
        if s > p["critical_percent"] and s - base > p["critical_rise"]:
            return self.fire(step, "critical", f"{self.label} at {s:.0f}% (was {base:.0f}%): OOM imminent",
                             values={"percent": s, "baseline": base}, extra_keys=(LEN,))
        every = p["every"]
        if every > 1 and (self.seen + self._phase) % every:  # not self.due(every), inlined
            return None
        if self.quiet_step(key, track, s):
            return self.spread(step)
        ev = self.creeping(key, track)
        if ev is None:
            spread = self.spread(step)
            if spread is not None:
                return spread
            return None
        eta = ev["steps_to_full"] = steps_to_full(track, track.last, ev["slope_per_observation"])
        return self.fire(step, "warning", f"{self.label} creeping up: {base:.0f}% -> {track.last:.0f}% (full in "
                         f"~{eta:.0f} steps at this rate)", "Memory that keeps climbing ends in an out-of-memory kill.",
                         values=ev, step_start=step - int(ev["window"]), extra_keys=(LEN,))


    def spread(self, step: int) -> Finding | None:  # only device memory has peers to compare with
        return None


@register_detector("gpu_memory", "oom_risk")
class GPUMemory(_Percent):
    __doc__ = ("Device memory in percent of capacity (max over GPUs of ``system/gpu/<i>/memory_percent``). "
               + _Percent.__doc__ + " With several GPUs, also the fullest GPU's lead over the median GPU "
               "(``system/gpu/memory_percent_spread``), judged by the same rule: data-parallel ranks fill their "
               "devices in lockstep, so one rank leaking shows as a lead that grows, free of the sawtooth all "
               "ranks share (rollout and update phases).")
    keys = (GPU_MEM,)  # the lead is derived, not logged: evidence cites the devices' memory, the lead is in values
    label = "GPU memory"

    def spread(self, step: int) -> Finding | None:
        track = self.ctx.tracks.get(GPU_SPREAD)
        if track is None or track.last_step != step or not self.ready(GPU_SPREAD, track):
            return None
        ev = self.creeping(GPU_SPREAD, track)
        if ev is None:
            return None
        total = self.ctx.tracks[GPU_MEM]
        eta = ev["steps_to_full"] = steps_to_full(track, total.last, ev["slope_per_observation"])
        return self.fire(step, "warning", f"GPU memory of one device pulling away from the others: "
                         f"+{ev['growth']:.1f} points above its peers since warm-up, now {total.last:.0f}% (full in "
                         f"~{eta:.0f} steps at this rate)",
                         "One rank's memory climbs while the others hold: a leak on that rank (tensors kept "
                         "across steps, a rank-local cache) or a growing imbalance.", metric=GPU_MEM, values=ev,
                         step_start=step - int(ev["window"]), extra_keys=(LEN,))


@register_detector("host_memory", "host_memory_creep")
class HostMemory(_Percent):
    __doc__ = ("Host memory (``system/memory_percent``). " + _Percent.__doc__ + " A run of new highs counts once it "
               "is the full ``creep_points`` above the warm-up's highest value (not half of it): the host's percent "
               "is the whole machine's, and a shared machine's wanders up a point or two while the run's own "
               "memory is flat. No creep warning while the run's own RSS, logged beside the machine's used GB, grew "
               "by under ``own_share`` of what the machine's grew since warm-up: other processes filled the machine.")
    keys = (HOST_MEM, RSS, RSS_MB, *MACHINE_USED)  # the run's own RSS and the machine's GB: see _others_climb
    triggers = (HOST_MEM,)
    label = "Host memory"
    # host memory wanders more (page cache, workers); own_share: see _others_climb
    defaults = {**_Percent.defaults, "creep_points": 3.0, "own_share": OWN_SHARE}
    cause = "host memory leak (growing buffers, dataloader workers, cached samples)"

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._at_base: tuple[float | None, float | None] = (None, None)  # (own RSS, machine used) at warm-up, GB

    def record_growth(self, base: float, key: str = "") -> float:
        """A run of new highs counts once it is the full ``creep_points`` above the warm-up's highest value, not
        half of it as for device memory: the host's percent is the whole machine's (other jobs, the page cache)
        and on a shared machine wanders up two points over hundreds of steps while this run's own memory is flat."""
        return self.min_growth(base, key)

    def baseline(self, key: str, track: Track) -> tuple[float, float, float]:
        if key not in self._base:  # what the process and the machine held when the percent's level was taken
            self._at_base = (_latest(self.ctx.tracks, RSS, RSS_MB), _latest(self.ctx.tracks, *MACHINE_USED))
        return super().baseline(key, track)

    def creeping(self, key: str, track: Track) -> dict[str, float] | None:
        ev = super().creeping(key, track)
        return None if ev is not None and self._others_climb() else ev

    def _others_climb(self) -> bool:
        """Whether the machine's climb is other processes': the run logs its own RSS beside the machine's used
        memory (rlcockpit's sampler logs both), and since warm-up the RSS grew by under ``own_share`` of what the
        machine's used memory grew. A shared machine fills with other jobs (``make demo`` beside a test suite);
        a leak in this run grows its own RSS with the machine's. Without both series the percent is judged alone."""
        rss0, used0 = self._at_base
        rss1, used1 = _latest(self.ctx.tracks, RSS, RSS_MB), _latest(self.ctx.tracks, *MACHINE_USED)
        if None in (rss0, used0, rss1, used1) or used1 <= used0:
            return False
        return rss1 - rss0 < self.p["own_share"] * (used1 - used0)

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        # rlcockpit's trainer loads data in-process (no worker knob): the override is verl's only
        return [Cause(self.cause, 0.5)], [make_action(
            self.ctx.view, "Check for growing buffers (cached samples, logged tensors); in verl, fewer dataloader "
            "workers", {"data.dataloader_num_workers": 2})]


@register_detector("memory_growth", "rss_creep", "memory_creep")
class MemoryGrowth(MemoryTrend):
    """Absolute memory series without a device total (``perf/max_memory_allocated_gb``,
    ``perf/max_memory_reserved_gb``, per-GPU used GB or allocated bytes, ``system/proc_rss_gb`` or MB,
    ``perf/cpu_memory_used_gb``, the machine's: not judged once the process's RSS is logged often enough to have a
    level of its own — an RSS logged every hundred steps never warms up, and a leak would go unseen in both — and
    not raised while such a sparse RSS, read before and after most of the machine's climb, grew by less than a
    quarter of what the machine's grew between those readings: the climb is then another process's; the machine's
    climb before the first RSS reading, which those readings cannot speak to, raises its bar rather than counting
    towards it; once the RSS readings themselves grew by more than ``host_growth_ratio`` of the first one and a
    quarter of the machine's growth meanwhile, the machine's used memory stands in for the process's and is judged by
    ``growth_ratio``; until then the machine's climb must also exceed the largest move other processes made between
    two RSS readings, the machine's change less the RSS's, beyond 3 x its warm-up jitter: a swing the host's other
    tenants have shown): a
    creep of more than ``growth_ratio`` x the run's own level after warm-up
    (``host_growth_ratio`` for the machine's used memory, which other processes move too), and
    ``z_warn`` noise scales (warning; see the shared rule above). With ``device_memory_gb`` set, device memory
    above 80% of it is a warning and above ``critical_percent`` of it while ``growth_ratio`` above its own
    level is critical. The machine's used memory also warns, well before that 15%, on a steady climb read from
    the signs of its step-to-step changes: at least ``trend_rises`` of the last ``trend_window`` changes are rises
    (ties count against) while at most ``trend_early_rate`` of all its earlier changes since warm-up were, and it
    rose by ``trend_growth_ratio`` of its level and 10 x its warm-up jitter over that window, to above its warm-up
    high and ``trend_growth_ratio`` (plus that swing) above its warm-up level (a leak adds memory at every step; a healthy host wanders
    up and down, or sits flat, or gives memory back and takes it again)."""

    keys = ABSOLUTE
    triggers = ABSOLUTE  # whichever of them the run logs
    defaults = {**MemoryTrend.defaults, "growth_ratio": 0.03, "host_growth_ratio": 0.15, "device_memory_gb": None,
                "critical_percent": 92.0, "trend_window": 40, "trend_rises": 0.85, "trend_early_rate": 0.5,
                "trend_growth_ratio": 0.02}

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._present: list[str] = []
        self._present_at = self._based = -1
        self._signs: dict[str, list] = {}  # key -> [window of rise flags, rises in it, earlier rises, earlier n, n]
        # the process's sparse RSS readings: (step, RSS in GB, the machine's used memory when it was read)
        self._rss_pts: list[tuple[int, float, float]] = []
        self._rss_n = 0
        self._rss_key = ""  # the process's RSS series the run logs (none: "")
        self._confirmed = False  # the process's own RSS grew by more than host_growth_ratio of its first reading
        self._others = 0.0  # the largest move of the machine's used memory, between two RSS readings, not the run's

    def min_growth(self, base: float, key: str = "") -> float:
        # the machine's used memory (every process on it, page cache): +3% of a 450 GB host is another user's job
        if key != CPU_USED:
            return self.p["growth_ratio"] * abs(base)
        if self._confirmed:  # the process's own readings say it grows: the dense machine series stands in for it
            return self.p["growth_ratio"] * abs(base)
        # the machine's climb before the process's first RSS reading is not one its readings can confirm or refute
        before = self._rss_pts[0][2] - base if self._rss_pts else 0.0
        return self.p["host_growth_ratio"] * abs(base) + max(before, 0.0) + self._others

    def _note_rss(self, machine: Track) -> None:
        """Keep each new reading of the process's RSS with the machine's used memory at that moment (the machine's
        track keeps only its recent values), and whether the process's own memory grew by more than
        ``host_growth_ratio`` of its first reading and by at least a quarter of what the machine grew meanwhile."""
        rss = self.ctx.tracks[self._rss_key]
        if rss.n == self._rss_n:
            return
        self._rss_n = rss.n
        per_gb = 1024.0 if self._rss_key == RSS_MB else 1.0
        self._rss_pts.append((rss.last_step, rss.last / per_gb, machine.last))
        (_s0, r0, m0), (_s1, r1, m1) = self._rss_pts[0], self._rss_pts[-1]
        self._confirmed = r1 - r0 > self.p["host_growth_ratio"] * abs(r0) and r1 - r0 >= OWN_SHARE * (m1 - m0)
        if len(self._rss_pts) > 1:  # what the machine's used memory moved between the last two readings, less the run's,
            (_sp, rp, mp) = self._rss_pts[-2]  # beyond what the machine's step-to-step jitter makes of two readings
            noise = self._base[CPU_USED][1] if CPU_USED in self._base else 0.0
            self._others = max(self._others, abs((m1 - mp) - (r1 - rp)) - 3 * noise)
        if CPU_USED in self._top:
            self._top[CPU_USED][4] = self.min_growth(self._base[CPU_USED][0], CPU_USED)

    def record_growth(self, base: float, key: str = "") -> float:
        """Device memory: half ``min_growth`` (a device's peak only rises with a leak or a longer batch). Host
        memory creeps slowly in healthy runs too (page cache, Python heap, logging buffers: +1-2% over a thousand
        steps), so a run of records there needs the full ``min_growth``."""
        return self.min_growth(base, key) * (0.5 if key in DEVICE_KEYS else 1.0)

    def check(self, step: int) -> Finding | None:
        every = self.p["every"]
        if every > 1 and (self.seen + self._phase) % every:  # not self.due(every), inlined
            return None
        if self._present_at != len(self.ctx.tracks) or self._based != len(self._base):  # which series to judge:
            self._present_at, self._based = len(self.ctx.tracks), len(self._base)  # anew when a key appears or warms up
            self._present = [k for k in self.keys if k in self.ctx.tracks]
            self._rss_key = RSS if RSS in self.ctx.tracks else RSS_MB if RSS_MB in self.ctx.tracks else ""
            if GPU_MEM in self.ctx.tracks:  # the same devices in percent of capacity: gpu_memory judges them
                self._present = [k for k in self._present if k not in (GPU_USED, GPU_BYTES)]
            if RSS in self._base or RSS_MB in self._base:  # the process's own memory has a level: the machine's
                self._present = [k for k in self._present if k != CPU_USED]  # (others' too) is not judged
        tracks = self.ctx.tracks
        for key in self._present:
            track = tracks[key]
            if key == CPU_USED and self._rss_key:
                self._note_rss(track)
            if track.last_step != step or (key not in self._base and not self.ready(key, track)):
                continue
            if key == CPU_USED:
                found = self._sign_trend(step, key, track)
                if found is not None:
                    return found
            if not self.p["device_memory_gb"] and self.quiet_step(key, track):
                continue
            found = (self.p["device_memory_gb"] and self._device_limit(step, key, track)) or self._creep(step, key, track)
            if found is not None:
                return found
        return None

    def _process_grew(self, machine: Track, growth_gb: float) -> bool:
        """Whether the process's own RSS, where read at least twice (too sparsely to be judged by itself) across a
        quarter or more of the machine's climb of ``growth_gb``, grew by at least a quarter of what the machine's
        used memory grew between its first and last readings: a machine whose used memory climbs while this run's
        RSS holds is another process's climb. True where no such pair of readings says otherwise."""
        pts = self._rss_pts
        if len(pts) < 2:
            return True
        (_s0, r0, m0), (_s1, r1, m1) = pts[0], pts[-1]
        spanned = m1 - m0
        if spanned < 0.25 * growth_gb:  # the readings do not bracket the climb: they say nothing about it
            return True
        return r1 - r0 >= OWN_SHARE * spanned

    def _sign_trend(self, step: int, key: str, track: Track) -> Finding | None:
        """The machine's used memory rising at nearly every step of the last ``trend_window`` (see the class
        docstring): a running window of rise flags, O(1) per observation."""
        w = int(self.p["trend_window"])
        st = self._signs.get(key)
        if st is None:  # (no new window built and dropped on every call)
            st = self._signs[key] = [deque(), 0, 0, 0, track.n]
        new = min(track.n - st[4], len(track.values) - 1)
        st[4] = track.n
        if new <= 0:
            return None
        vals, flags = track.values, st[0]
        for i in range(len(vals) - new, len(vals)):
            up = vals[i] > vals[i - 1]
            flags.append(up)
            st[1] += up
            if len(flags) > w:
                old = flags.popleft()
                st[1] -= old
                st[2] += old
                st[3] += 1
        if len(flags) < w or st[1] < self.p["trend_rises"] * w or st[3] < w \
                or st[2] > self.p["trend_early_rate"] * st[3]:
            return None
        base, jitter, high = self._base[key]
        rise = track.last - track.ago(w)
        grow = self.p["trend_growth_ratio"] * abs(base)
        # the climb must also stand above the warm-up level: a machine that gave memory back and took it again
        # (a shared host's other jobs ending and starting) rose over the window without growing
        others = 0.0 if self._confirmed else self._others
        if rise < max(grow, 10 * jitter) or track.last <= high or track.last - base < grow + others:
            return None
        if not self._process_grew(track, rise) or self.repeats(step, "warning", step - w):
            return None
        ev = {"value": track.last, "baseline": base, "growth": track.last - base,
              "relative_growth": (track.last - base) / max(abs(base), 1e-12), "slope_per_observation": rise / w,
              "window": w, "rises": float(st[1]), "early_rise_rate": st[2] / st[3], "noise": jitter}
        return self.fire(step, "warning", f"{track.raw} (host memory) rising at {st[1]} of the last {w} steps: "
                         f"{fmt(track.ago(w))} -> {fmt(track.last)} (+{ev['relative_growth']:.0%} since warm-up)",
                         "Memory that rises at nearly every step ends in an out-of-memory kill: a leak, or memory "
                         "that grows with the response length.", metric=key, values=ev, step_start=step - w,
                         extra_keys=(LEN, ALLOC))

    def _device_limit(self, step: int, key: str, track: Track) -> Finding | None:
        dev = self.p["device_memory_gb"]
        if not dev or key not in (ALLOC, RESERVED, GPU_USED):
            return None
        share = 100.0 * track.mean_last(3) / float(dev)
        base = self.baseline(key, track)[0]
        vals = {"gb": track.last, "percent_of_device": share, "baseline_gb": base}
        if share > self.p["critical_percent"] and track.mean_last(3) > (1 + self.p["growth_ratio"]) * base:
            return self.fire(step, "critical", f"Device memory {fmt(track.last)} GB = {share:.0f}% of "
                             f"{fmt(float(dev))} GB and growing: OOM imminent", metric=key, values=vals)
        if share > 80.0:
            return self.fire(step, "warning", f"Device memory {fmt(track.last)} GB > 80% of {fmt(float(dev))} GB",
                             metric=key, values=vals)
        return None

    def _creep(self, step: int, key: str, track: Track) -> Finding | None:
        ev = self.creeping(key, track)
        if ev is None or (key == CPU_USED and not self._process_grew(track, ev["growth"])):
            return None
        if self.repeats(step, "warning", step - int(ev["window"])):
            return None
        where = "device" if key in DEVICE_KEYS else "host"
        dev = self.p["device_memory_gb"]
        eta = ""
        if dev and key in (ALLOC, RESERVED, GPU_USED):
            ev["steps_to_full"] = steps_to_full(track, track.last, ev["slope_per_observation"], float(dev))
            eta = f"; {fmt(float(dev))} GB full in ~{ev['steps_to_full']:.0f} steps at this rate"
        title = f"{track.raw} ({where} memory) creeping up: {fmt(ev['baseline'])} -> {fmt(track.last)} " \
                f"(+{ev['relative_growth']:.0%} since warm-up{eta})"
        alloc = self.ctx.tracks.get(ALLOC)
        if key == RESERVED and alloc is not None and alloc.n and ALLOC in self._base:
            grown = (alloc.mean_last(3) - self._base[ALLOC][0]) / max(abs(self._base[ALLOC][0]), 1e-12)
            if grown < ev["relative_growth"] / 3:  # reserved climbs, allocated does not: the allocator's cache
                ev["allocated_growth"] = grown
                title += f" while {alloc.raw} holds ({grown:+.0%}): allocator fragmentation"
        return self.fire(step, "warning", title, "Memory that only grows ends in an out-of-memory kill: a leak, or "
                         "memory that grows with the response length.", metric=key, values=ev,
                         step_start=step - int(ev["window"]), extra_keys=(LEN, ALLOC))
