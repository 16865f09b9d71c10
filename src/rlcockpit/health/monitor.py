"""``HealthMonitor``: runs every detector over a stream of ``(step, metrics)`` and ``(step, samples)``.

The same monitor runs live on the tracking writer thread and offline in ``diagnose_run`` (a replay of the
stored run), so live findings and post-mortem findings can never disagree. The per-step path is built for
a budget of ~50 µs: alias resolution runs once per key name, the key -> (track, aggregate, detectors) plan
once per distinct set of logged keys, and detectors only touch their own tracks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from rlcockpit.health.advice import config_causes
from rlcockpit.health.base import DETECTORS, Detector, DetectorContext, Track
from rlcockpit.health.config_view import RunConfigView
from rlcockpit.health.detectors import entropy as detectors_entropy  # noqa: F401 - importing registers the built-in detectors
from rlcockpit.health.detectors import heldout as detectors_heldout  # noqa: F401
from rlcockpit.health.detectors import kl as detectors_kl  # noqa: F401
from rlcockpit.health.detectors import length as detectors_length  # noqa: F401
from rlcockpit.health.detectors import loss as detectors_loss  # noqa: F401
from rlcockpit.health.detectors import memory as detectors_memory  # noqa: F401
from rlcockpit.health.detectors import offpolicy as detectors_offpolicy  # noqa: F401
from rlcockpit.health.detectors import reward as detectors_reward  # noqa: F401
from rlcockpit.health.detectors import samples as detectors_samples  # noqa: F401
from rlcockpit.health.detectors import system as detectors_system  # noqa: F401
from rlcockpit.health.detectors import trend as detectors_trend  # noqa: F401
from rlcockpit.health.detectors.loss import NonFinite
from rlcockpit.health.detectors.memory import GPU_BYTES, GPU_MEM, GPU_SPREAD, GPU_USED
from rlcockpit.health.detectors.system import GPU_UTIL
from rlcockpit.health.findings import Finding
from rlcockpit.health.samples import analyze_samples
from rlcockpit.health.stall import StallWatch
from rlcockpit.metrics.guide import canonical_name

# per-GPU series -> the key the detectors read: utilisation is averaged over devices, memory takes the fullest
GPU_AGGREGATES = {"utilization": GPU_UTIL, "memory_percent": GPU_MEM, "memory_used_gb": GPU_USED,
                  "memory_allocated_bytes": GPU_BYTES}
MAX_AGGREGATES = frozenset({GPU_MEM, GPU_USED, GPU_BYTES})


def _gpu_aggregate(key: str) -> str | None:
    """``system/gpu/<i>/utilization`` -> the mean-over-devices key; ``.../memory_*`` -> the max-over-devices key."""
    if not key.startswith("system/gpu/"):
        return None
    parts = key.split("/")
    if len(parts) == 4 and parts[2].isdigit():
        return GPU_AGGREGATES.get(parts[3])
    return None


@lru_cache(maxsize=8192)
def _canonical(raw: str) -> tuple[str, str | None]:
    """(canonical key, GPU aggregate key or None) of a logged key; shared by every monitor of the process
    (a sweep, ``diagnose`` over many runs), so a new monitor does not resolve the same aliases again."""
    key = canonical_name(raw)
    return key, _gpu_aggregate(key)


class _Plan:
    """What one set of logged keys means for the monitor: ``entries`` = (raw key, canonical key, its track,
    aggregate or None) per relevant key, ``detectors`` = the detectors whose trigger metric is in the set, and
    ``calls`` = per detector (detector, the method the step calls, 0 or the ``every`` of :meth:`Detector.gate`: 0
    where the detector's own ``observe`` runs, else the monitor counts the observation, handles the warm-up inline
    and calls ``check`` on one observation in ``every``): bound once per plan, not looked up again for every
    detector of every step."""

    __slots__ = ("entries", "detectors", "calls")

    def __init__(self, entries: list[tuple[str, str, Track, str | None]], detectors: list[Detector],
                 nonfinite: Detector | None = None) -> None:
        self.entries = entries
        self.detectors = detectors
        self.calls = [(det, det.check, det.gate()) if det.plain_observe and det is not nonfinite
                      else (det, det.check if det is nonfinite else det.observe, 0) for det in detectors]


# settings of the health section that are not detectors: health.reports (the report schedule,
# rlcockpit.health.schedule) and health.stall (the wall-clock stall watch of a live run, rlcockpit.health.stall)
RUN_SETTINGS = frozenset({"reports", "stall"})
PLAN_CACHE_SIZE = 64  # distinct key sets remembered; a run whose key set never repeats just re-plans


class HealthMonitor:
    """Streaming health checks for one run.

    ``settings`` maps a detector name (or alias) to overrides of its thresholds, e.g.
    ``{"kl_spike": {"critical_ratio": 4.0}, "gpu_utilization": {"enabled": False}}`` (a ``reports`` entry, the
    run's report schedule, is not a detector and is left to :mod:`rlcockpit.health.schedule`); every detector documents
    its defaults in its docstring (``rlcockpit.health.DETECTORS.get(name).__doc__``). ``run_config`` is the
    run's config (rlcockpit or verl shape): causes and actions consult it.
    """

    def __init__(self, settings: Mapping[str, Any] | None = None, run_config: Mapping[str, Any] | None = None) -> None:
        if settings is not None and not isinstance(settings, Mapping):
            raise TypeError(f"health settings must be a mapping of detector name -> overrides, got {type(settings).__name__}")
        per_detector: dict[str, Mapping[str, Any]] = {}
        for name, params in (settings or {}).items():
            if name in RUN_SETTINGS:  # settings of the run's health section that are not detectors
                continue
            canonical = DETECTORS.canonical(name)  # KeyError naming the closest detector
            if not isinstance(params, Mapping):
                raise TypeError(f"health setting {name!r} must be a mapping of threshold overrides, got {params!r}")
            per_detector[canonical] = params
        self.view = RunConfigView(run_config)
        self.ctx = DetectorContext(self.view)
        self.detectors: list[Detector] = []
        for name, cls in DETECTORS.items():
            det = cls(per_detector.get(name), self.ctx)
            if det.enabled:
                self.detectors.append(det)
        # advice consults the run config; asking its questions now keeps the first finding of a run cheap
        config_causes(self.view)
        self._nonfinite = next((d for d in self.detectors if isinstance(d, NonFinite)), None)
        self._tracked = {k for d in self.detectors for k in d.keys}
        self._prefixes = tuple(p for d in self.detectors for p in d.prefixes) + ("samples/",)
        self._keys: dict[str, tuple[str, str | None, bool]] = {}
        self._plans: dict[tuple[str, ...], _Plan] = {}
        self._plans_no_samples: dict[tuple[str, ...], _Plan] = {}  # the same, for steps whose samples/* were analysed
        self._sample_steps: set[int] = set()
        self._sample_order: deque[int] = deque()
        self.findings: list[Finding] = []
        self.last_step = -1
        self.stall = StallWatch.from_settings((settings or {}).get("stall"))

    # -- planning -------------------------------------------------------------------------------------
    def _resolve(self, raw: str) -> tuple[str, str | None, bool]:
        """(canonical key, GPU aggregate key or None, relevant?) of a logged key; alias resolution runs once
        per key name for the monitor's lifetime, so a new combination of known keys costs dict lookups only."""
        info = self._keys.get(raw)
        if info is None:
            key, agg = _canonical(raw)
            relevant = agg is not None or key in self._tracked or key.startswith(self._prefixes) or key in NonFinite.keys
            info = self._keys[raw] = (key, agg, relevant)
        return info

    def _plan(self, sig: tuple[str, ...], skip_samples: bool) -> _Plan:
        entries: list[tuple[str, str, Track, str | None]] = []
        present: set[str] = set()
        tracks = self.ctx.tracks
        for raw in sig:
            key, agg, relevant = self._resolve(raw)
            if not relevant or (skip_samples and raw.startswith("samples/")):
                continue
            name = agg or key
            track = tracks.get(name)
            if track is None:  # evidence cites the logged name; a multi-GPU aggregate keeps its own
                solo = agg is None or sum(1 for r in sig if self._resolve(r)[1] == agg) == 1
                track = tracks[name] = Track(name, raw=raw if solo else name)
            entries.append((raw, key, track, agg))
            if agg is not None or key in self._tracked or key.startswith(self._prefixes):
                present.add(name)
        dets = []
        for det in self.detectors:
            if not det.keys:
                continue
            if any(t in present for t in det.trigger_keys()):
                dets.append(det)
        plans = self._plans_no_samples if skip_samples else self._plans
        if len(plans) >= PLAN_CACHE_SIZE:
            plans.clear()
        plan = plans[sig] = _Plan(entries, dets, self._nonfinite)
        return plan

    # -- streaming ------------------------------------------------------------------------------------
    def observe(self, step: int, metrics: Mapping[str, float]) -> list[Finding]:
        """Feed one logged step; returns the findings it triggered (usually none)."""
        sig = tuple(metrics)
        if step in self._sample_steps:  # samples/* of this step were computed by observe_samples already
            plan = self._plans_no_samples.get(sig) or self._plan(sig, True)
        else:
            plan = self._plans.get(sig) or self._plan(sig, False)
        bad: dict[str, tuple[str, float]] | None = None
        agg: dict[str, list[float]] | None = None
        for raw, key, track, agg_key in plan.entries:
            v = metrics[raw]
            if type(v) is not float:
                try:
                    v = float(v)
                except (TypeError, ValueError):
                    continue
            if v - v != 0:  # NaN or +-Inf
                if bad is None:
                    bad = {}
                bad[key] = (raw, v)
                continue
            if agg_key is None:  # Track.push, inlined: this loop runs for every logged key of every step
                track.values.append(v)
                track.steps.append(step)
                track.n += 1
                track.last = v
                track.last_step = step
            else:
                if agg is None:
                    agg = {}
                agg.setdefault(agg_key, []).append(v)
        if agg:
            tracks = self.ctx.tracks
            for key, vals in agg.items():
                tracks[key].push(step, max(vals) if key in MAX_AGGREGATES else sum(vals) / len(vals))
                if key == GPU_MEM and len(vals) > 1:  # the fullest GPU's lead over the median one
                    srt = sorted(vals)
                    mid = len(srt) // 2
                    med = srt[mid] if len(srt) % 2 else 0.5 * (srt[mid - 1] + srt[mid])
                    spread = tracks.get(GPU_SPREAD)
                    if spread is None:
                        spread = tracks[GPU_SPREAD] = Track(GPU_SPREAD)
                    spread.push(step, srt[-1] - med)
        if step > self.last_step:
            self.last_step = step
        out: list[Finding] = []
        if bad and self._nonfinite is not None:
            f = self._nonfinite.report(step, bad)
            if f is not None:
                out.append(f)
        # non-finite values were reported above: the non-finite detector's call is its skipped-update check
        for det, call, every in plan.calls:
            if every:  # Detector.observe, inlined: the usual step is past the warm-up, one comparison
                seen = det.seen = det.seen + 1
                if seen <= det.warmup + 1 and not det.warming(seen):
                    continue
                if every > 1 and (seen + det._phase) % every:  # not due (Detector.gate)
                    continue
            f = call(step)
            if f is not None:
                out.append(f)
        if out:
            self.findings.extend(out)
        return out

    def observe_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> tuple[dict[str, float], list[Finding]]:
        """Analyse one step's logged samples: returns the ``samples/*`` metrics (for the tracking layer to log)
        and the findings they triggered."""
        metrics, excerpts = analyze_samples(rows, self.ctx.max_response_length())
        if not metrics:
            return metrics, []
        self.ctx.excerpts, self.ctx.excerpt_step = excerpts, step
        for row in rows[:512]:
            reward = row.get("reward") if isinstance(row, Mapping) else None
            if isinstance(reward, (int, float)) and not isinstance(reward, bool) and reward == reward:
                self.ctx.sample_rewards.append(float(reward))
        findings = self.observe(step, metrics)
        self._sample_steps.add(step)
        self._sample_order.append(step)
        if len(self._sample_order) > 256:
            self._sample_steps.discard(self._sample_order.popleft())
        return metrics, findings

    @staticmethod
    def describe(finding: Finding) -> str:
        """A finding's console text (tracking's console logger and live printing ask the observer for it)."""
        return format_finding_console(finding)

    def tick(self, now: float, arrivals: Sequence[tuple[int, float]]) -> list[Finding]:
        """The wall clock of a live run: ``arrivals`` are the ``(step, unix time logged)`` of the steps observed
        since the last tick, ``now`` the unix time. Returns the stall finding due now (no new step for k x the
        run's usual step time, :class:`~rlcockpit.health.stall.StallWatch`), else nothing. Only a live run's
        observer thread calls it; a replay of a stored run never does, so its step times mean nothing here."""
        if self.stall is None:
            return []
        for step, ts in arrivals:
            self.stall.step(step, ts)
        found = self.stall.check(now)
        if found is None:
            return []
        self.findings.append(found)
        return [found]

    def close(self) -> list[Finding]:
        """End of run: lets window-based detectors report; returns the findings produced now."""
        out = [f for det in self.detectors if (f := det.finish(self.last_step)) is not None]
        self.findings.extend(out)
        return out


_SEV_MARK = {"critical": "CRITICAL", "warning": "WARNING", "info": "info"}


def format_finding_console(finding: Finding, width: int = 160) -> str:
    """Compact console text: one headline, the top cause, the first fix with its overrides."""
    span = f"{finding.step_start}-{finding.step}" if finding.step_start != finding.step else f"{finding.step}"
    lines = [f"[health] {_SEV_MARK.get(finding.severity, finding.severity)} step {span} {finding.detector}: {finding.title}"]
    if finding.causes:
        lines.append(f"  cause: {finding.causes[0].title}")
    for action in finding.actions[:1]:
        fix = " ".join(action.overrides) if action.overrides else ""
        lines.append(f"  fix:   {action.title}" + (f": {fix}" if fix else ""))
    if len(lines[0]) > width:  # the headline may be cut; causes and overrides never are
        lines[0] = lines[0][: width - 1] + "…"
    return "\n".join(lines)
