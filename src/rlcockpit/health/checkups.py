"""Scheduled health reports: the checklist of our users' guide (§5.2), run for them.

| when | what the guide asks | what the report checks |
|---|---|---|
| ``1h`` | is the loss falling? GPU utilisation in the guide's healthy range (> 70%)? | the loss trend (for a policy-gradient loss, which hovers around 0 by design, the reward's), the GPU utilisation and the ``timing_s/*`` split |
| ``6h`` | is the reward trending up? KL under control? | the reward trend in the run's own noise, the KL level and trend, KL findings |
| ``daily`` | sample 10 generations and judge them | 10 generations of the last day with their rewards, and what the sample analysis flags |
| ``checkpoint`` | full config and logs saved | the run config stored, the checkpoint directory and its files, metrics stored up to that step |

Each report is a short verdict (``ok`` / ``attention`` / ``problem``) with the evidence, built from the stored
run by :func:`build_report` — the same code for ``rlcockpit report RUN --at 6h`` and for the live schedule
(:mod:`rlcockpit.health.schedule`), which stores it with the run (a ``health_report`` event) and sends it
through the run's alert channels.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rlcockpit.health.base import median
from rlcockpit.metrics.guide import canonical_name, threshold

KINDS = ("1h", "6h", "daily", "checkpoint")
OFFSET_S = {"1h": 3600.0, "6h": 6 * 3600.0, "daily": 24 * 3600.0}
STATUS_RANK = {"ok": 0, "n/a": 0, "warn": 1, "fail": 2}
VERDICTS = ("ok", "attention", "problem")
LOSSES = ("critic/vf_loss", "actor/pg_loss")
REWARD, KL, GPU_UTIL = "critic/score/mean", "actor/kl_loss", "system/gpu/<i>/utilization"
GPU_UTIL_GUIDE = "system/gpu/0/utilization"  # one device's entry in the metric guide
SAMPLES_PER_REPORT = 10


@dataclass
class Check:
    """One line of a report: ``status`` is ok / warn / fail, or n/a when the run did not log what it needs."""

    name: str
    status: str
    evidence: str


@dataclass
class HealthReport:
    kind: str
    run_id: str
    run_name: str | None
    project: str | None
    verdict: str
    headline: str
    checks: list[Check] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    step: int | None = None  # the last step the report covers
    elapsed_s: float | None = None  # run time the report covers
    created_at: float = field(default_factory=time.time)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        """The report as a few lines of plain text (terminal, alert text)."""
        mark = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "n/a": "n/a "}
        lines = [self.headline]
        if self.note:
            lines.append(self.note)
        lines += [f"  [{mark.get(c.status, c.status)}] {c.name}: {c.evidence}" for c in self.checks]
        if self.samples:
            lines.append(f"  {len(self.samples)} sampled generations (read them: automatic metrics can be fooled):")
            for s in self.samples:
                reward = s.get("reward")
                r = f"{reward:.3g}" if isinstance(reward, (int, float)) else "-"
                lines.append(f"    step {s.get('step')} reward {r}: {one_line(s.get('response'), 160)}")
        return "\n".join(lines)


def one_line(text: Any, limit: int) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``limit`` characters with an ellipsis."""
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def parse_reports(value: Any) -> tuple[str, ...]:
    """``[1h, 6h, daily, checkpoint]`` (a list, or one comma-separated string) as a tuple of report kinds;
    an unknown entry is an error naming it."""
    if value is None or value is False:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for item in items:
        name = str(item).strip().lower()
        if not name:
            continue
        if name not in KINDS:
            raise ValueError(f"health.reports: unknown report {item!r}; choose from {', '.join(KINDS)}")
        if name not in out:
            out.append(name)
    return tuple(out)


# ---- reading the stored run ------------------------------------------------------------------------------

class RunWindow:
    """The stored run up to a point in time: series by canonical key (aliases resolved), cut at ``until_ts``."""

    def __init__(self, store: Any, run: Mapping[str, Any], until_ts: float | None = None,
                 until_step: int | None = None) -> None:
        self.store, self.run, self.run_id = store, run, run["id"]
        self.until_ts, self.until_step = until_ts, until_step
        self.keys: dict[str, list[str]] = {}
        for raw in store.keys(self.run_id):
            self.keys.setdefault(canonical_name(raw), []).append(raw)
        self._cache: dict[str, tuple[list[int], list[float]]] = {}

    def logged(self, canonical: str) -> list[str]:
        """The logged names of ``canonical`` (a ``<i>`` pattern matches every device)."""
        if "<i>" not in canonical:
            return self.keys.get(canonical, [])
        head, tail = canonical.split("<i>")
        return [raw for key, raws in self.keys.items() if key.startswith(head) and key.endswith(tail)
                and key[len(head) : len(key) - len(tail)].isdigit() for raw in raws]

    def series(self, raw: str) -> tuple[list[int], list[float]]:
        if raw not in self._cache:
            steps, values, ts = self.store.series(self.run_id, raw)
            keep = [(int(s), float(v)) for s, v, t in zip(steps.tolist(), values.tolist(), ts.tolist())
                    if (self.until_ts is None or t <= self.until_ts) and (self.until_step is None or s <= self.until_step)
                    and math.isfinite(v)]
            self._cache[raw] = ([s for s, _ in keep], [v for _, v in keep])
        return self._cache[raw]

    def first(self, canonical: str) -> tuple[str, list[int], list[float]] | None:
        """(logged name, steps, values) of the first logged name of ``canonical`` that has data."""
        for raw in self.logged(canonical):
            steps, values = self.series(raw)
            if values:
                return raw, steps, values
        return None

    def last_step(self) -> int | None:
        steps = [s[-1] for raws in self.keys.values() for raw in raws if (s := self.series(raw)[0])]
        return max(steps) if steps else None


def _thirds(values: list[float]) -> tuple[float, float, float, float]:
    """Medians of the first, middle and last third, and the noise of a third's median."""
    k = max(1, len(values) // 3)
    parts = (values[:k], values[k : len(values) - k] or values[:k], values[-k:])
    a, b, c = (median(p) for p in parts)
    resid = [abs(v - m) for p, m in zip(parts, (a, b, c)) for v in p]
    return a, b, c, 1.4826 * median(resid) / math.sqrt(k) if resid else 0.0


def _trend(name: str, raw: str, values: list[float], want: str) -> Check:
    """Is ``values`` going the ``want`` way ("up" or "down"), beyond its own noise?"""
    if len(values) < 6:
        return Check(name, "n/a", f"only {len(values)} values of {raw} so far")
    a, _b, c, noise = _thirds(values)
    moved = c - a
    band = max(3 * noise, 0.01 * abs(a), 1e-12)
    direction = "up" if moved > band else "down" if moved < -band else "flat"
    text = f"{raw} {a:.4g} -> {c:.4g} ({direction}; noise ±{noise:.2g})"
    if direction == want:
        return Check(name, "ok", text)
    return Check(name, "fail" if direction != "flat" else "warn", text)


# ---- the checks ----------------------------------------------------------------------------------------

def loss_check(w: RunWindow) -> Check:
    """Hour 1: is the loss falling? A policy-gradient loss (GRPO/RLOO) hovers around 0 and changes sign by
    design, so for it the reward's trend answers "is it learning?"."""
    for key in LOSSES:
        found = w.first(key)
        if found is None:
            continue
        raw, _steps, values = found
        med = median(values)
        spread = median([abs(v - med) for v in values]) * 1.4826
        if min(values) < 0 < max(values) or abs(med) < 3 * spread:
            reward = w.first(REWARD)
            if reward is None:
                return Check("learning", "n/a", f"{raw} hovers around 0 by design and no reward is logged")
            check = _trend("learning (reward)", reward[0], reward[2], "up")
            check.evidence += f"; {raw} hovers around 0 by design, so the reward's trend is the signal"
            return check
        return _trend("loss falling", raw, values, "down")
    return Check("loss falling", "n/a", "no loss logged")


def gpu_check(w: RunWindow, want: float | None = None, floor: float | None = None) -> Check:
    """Hour 1: GPU utilisation above ``want`` percent (the low end of the guide's healthy range, which the
    ``gpu_utilization`` detector reads too; ``floor``: its alert level); the ``timing_s/*`` split says where the
    step goes when it is not."""
    want = threshold(GPU_UTIL_GUIDE, "healthy_low") if want is None else want
    floor = threshold(GPU_UTIL_GUIDE, "alert_below") if floor is None else floor
    name = f"GPU utilisation > {want:.0f}%"
    devices = [w.series(raw)[1] for raw in w.logged(GPU_UTIL)]
    devices = [v[len(v) // 10 :] for v in devices if v]  # the start-up minutes are not the steady state
    split = _timing_split(w)
    if not devices:
        return Check(name, "n/a", "no GPU utilisation logged (CPU run, or no system metrics)"
                     + (f"; step time: {split}" if split else ""))
    level = median([median(v) for v in devices if v])
    status = "ok" if level >= want else ("warn" if level >= floor else "fail")
    return Check(name, status, f"median {level:.0f}% over {len(devices)} GPU(s)"
                 + (f"; step time: {split}" if split else ""))


def _timing_split(w: RunWindow) -> str:
    step = w.first("timing_s/step")
    if step is None:
        return ""
    total = median(step[2])
    parts = {}
    for key, raws in w.keys.items():
        if key.startswith("timing_s/") and key != "timing_s/step" and raws:
            values = w.series(raws[0])[1]
            if values:
                parts[key.split("/", 1)[1]] = median(values) / max(total, 1e-12)
    parts["other"] = max(0.0, 1.0 - sum(parts.values()))
    top = sorted(parts.items(), key=lambda kv: -kv[1])[:3]
    return ", ".join(f"{k} {v:.0%}" for k, v in top)


def reward_check(w: RunWindow) -> Check:
    found = w.first(REWARD)
    if found is None:
        return Check("reward trending up", "n/a", "no reward logged")
    return _trend("reward trending up", found[0], found[2], "up")


def kl_check(w: RunWindow, band: float | None = None) -> Check:
    """Hour 6: KL under control — no KL finding, and a level in the usual band (the guide's healthy range, which
    the KL detectors read too) or steady for this run."""
    band = threshold(KL, "healthy_high") if band is None else band
    low = threshold(KL, "healthy_low")
    found = w.first(KL)
    kl_findings = [f for f in w.store.findings(w.run_id) if str(f.get("detector", "")).startswith("kl_")
                   and f.get("severity") in ("warning", "critical")
                   and (w.until_step is None or int(f.get("step") or 0) <= w.until_step)]
    if found is None:
        return Check("KL under control", "n/a", "no KL to the reference logged (no reference model, e.g. beta=0)")
    raw, _steps, values = found
    a, _b, c, noise = _thirds(values)
    latest = median(values[-5:])
    worst = max(kl_findings, key=lambda f: STATUS_RANK["fail" if f["severity"] == "critical" else "warn"], default=None)
    text = f"{raw} {a:.3g} -> {latest:.3g}"
    if worst is not None:
        status = "fail" if worst["severity"] == "critical" else "warn"
        return Check("KL under control", status, f"{text}; {worst['detector']} at step {worst.get('step')}: "
                     f"{worst.get('title')}")
    if latest <= band:
        return Check("KL under control", "ok", text + f" (in the usual {low:g}-{band:g} band)")
    if latest > 3 * max(a, 1e-6) and latest > 2 * band:
        return Check("KL under control", "fail", text + f" ({latest / max(a, 1e-6):.0f}x its early level: the policy "
                     "is leaving the reference)")
    rising = latest - c > max(3 * noise, 0.25 * c)
    return Check("KL under control", "warn" if rising else "ok",
                 text + (f" (above {band:g} and still rising)" if rising else f" (above {band:g} but steady for this run)"))


def samples_for_report(store: Any, run_id: str, lo_step: int | None, hi_step: int | None,
                       n: int = SAMPLES_PER_REPORT) -> list[dict[str, Any]]:
    """``n`` logged generations from the steps ``lo_step..hi_step``: the latest sample steps first, one per
    prompt, so a reader sees different prompts."""
    rows = [r for r in store.samples(run_id) if (lo_step is None or r["step"] >= lo_step)
            and (hi_step is None or r["step"] <= hi_step)]
    rows.sort(key=lambda r: (-int(r["step"]), int(r.get("idx") or 0)))
    picked, prompts = [], set()
    for r in rows:
        if r.get("prompt") in prompts:
            continue
        prompts.add(r.get("prompt"))
        picked.append({"step": r["step"], "prompt": one_line(r.get("prompt"), 300),
                       "response": str(r.get("response") or "")[:1000], "reward": r.get("reward")})
        if len(picked) == n:
            break
    if len(picked) < n:  # fewer distinct prompts than n: fill with the remaining rows
        seen = {(p["step"], p["response"]) for p in picked}
        for r in rows:
            if len(picked) == n:
                break
            if (r["step"], str(r.get("response") or "")[:1000]) not in seen:
                picked.append({"step": r["step"], "prompt": one_line(r.get("prompt"), 300),
                               "response": str(r.get("response") or "")[:1000], "reward": r.get("reward")})
    return picked


def samples_check(samples: list[dict[str, Any]], rows_for_analysis: list[dict[str, Any]]) -> list[Check]:
    from rlcockpit.health.samples import analyze_samples

    if not samples:
        return [Check("10 sampled generations", "warn", "no generations logged in this period "
                      "(log them with run.log_samples / trainer.log_samples_freq)")]
    out = [Check("10 sampled generations", "ok" if len(samples) >= SAMPLES_PER_REPORT else "warn",
                 f"{len(samples)} below, for a person to judge")]
    metrics, _ = analyze_samples(rows_for_analysis, None)
    flags = []
    if metrics.get("samples/repeat_ngram_rate", 0.0) > threshold("samples/repeat_ngram_rate", "warn_above"):
        flags.append(f"repetitive ({metrics['samples/repeat_ngram_rate']:.0%} repeated 3-grams)")
    if metrics.get("samples/empty_rate", 0.0) > threshold("samples/empty_rate", "warn_above"):
        flags.append(f"empty ({metrics['samples/empty_rate']:.0%})")
    if metrics.get("samples/nonprintable_rate", 0.0) > threshold("samples/nonprintable_rate", "warn_above"):
        flags.append("non-printable characters")
    out.append(Check("automatic sample checks", "warn" if flags else "ok", "; ".join(flags) or
                     "no repetition, empty answers or gibberish detected"))
    return out


def checkpoint_checks(w: RunWindow, checkpoint: Mapping[str, Any] | None) -> list[Check]:
    """Every checkpoint: the full config and the logs saved, so the run can be traced back."""
    cfg = w.run.get("config") or {}
    out = [Check("config saved with the run", "ok" if cfg else "fail",
                 f"{len(cfg)} top-level config sections stored" if cfg else "the run has no stored config")]
    step = (checkpoint or {}).get("step")
    path = (checkpoint or {}).get("path")
    if path:
        p = Path(str(path))
        files = sorted(x.name for x in p.iterdir()) if p.is_dir() else []
        config_files = [f for f in files if f.startswith("config") or f.endswith((".yaml", ".json"))
                        or f == "trainer_state.pt"]
        size = sum(x.stat().st_size for x in p.rglob("*") if x.is_file()) if p.is_dir() else 0
        if not p.is_dir():
            out.append(Check("checkpoint on disk", "fail", f"{path} does not exist"))
        else:
            out.append(Check("checkpoint on disk", "ok" if files else "fail",
                             f"{path}: {len(files)} files, {size / 1e6:.1f} MB"))
            out.append(Check("config saved with the checkpoint", "ok" if config_files else "warn",
                             ", ".join(config_files[:4]) or "no config file next to the weights"))
    last = w.last_step()
    if step is None:
        step = last
    ok = last is not None and step is not None and last >= int(step)
    out.append(Check("logs saved up to the checkpoint", "ok" if ok else "warn",
                     f"metrics stored up to step {last} ({len(w.keys)} keys)"
                     + (f", checkpoint at step {step}" if step is not None else "")))
    return out


# ---- building a report ------------------------------------------------------------------------------------

def build_report(store: Any, run_id: str, kind: str, *, now: float | None = None,
                 checkpoint: Mapping[str, Any] | None = None) -> HealthReport:
    """The ``kind`` report of the stored run ``run_id``, on the data logged up to ``kind``'s time after the
    run started (``1h``, ``6h``; ``daily``: the last 24 hours; ``checkpoint``: up to the checkpoint's step,
    ``checkpoint={"step", "path"}`` or the latest ``checkpoint`` event of the run)."""
    if kind not in KINDS:
        raise ValueError(f"unknown report {kind!r}; choose from {', '.join(KINDS)}")
    run = store.get_run(run_id)
    now = time.time() if now is None else now
    start = float(run.get("created_at") or now)
    end = float(run.get("finished_at") or now)
    note = ""
    until_ts = None
    if kind in ("1h", "6h"):
        until_ts = start + OFFSET_S[kind]
        if until_ts > min(now, end):
            note = (f"The run {'lasted' if run.get('finished_at') else 'is'} {_duration(min(now, end) - start)}: "
                    f"this {kind} report covers all of it.")
    if kind == "checkpoint" and checkpoint is None:
        events = store.events(run["id"], "checkpoint")
        checkpoint = events[-1]["payload"] if events else None
    until_step = int(checkpoint["step"]) if kind == "checkpoint" and checkpoint and checkpoint.get("step") is not None else None
    w = RunWindow(store, run, until_ts, until_step)
    checks: list[Check] = []
    samples: list[dict[str, Any]] = []
    if kind == "1h":
        checks = [loss_check(w), gpu_check(w)]
    elif kind == "6h":
        checks = [reward_check(w), kl_check(w)]
    elif kind == "daily":
        lo_ts = min(now, end) - OFFSET_S["daily"]
        lo_step = _step_at(w, lo_ts)
        samples = samples_for_report(store, run["id"], lo_step, None)
        rows = [r for r in store.samples(run["id"]) if lo_step is None or r["step"] >= lo_step][-512:]
        checks = samples_check(samples, rows)
    else:
        checks = checkpoint_checks(w, checkpoint)
    worst = max((STATUS_RANK.get(c.status, 0) for c in checks), default=0)
    verdict = VERDICTS[worst]
    label = {"1h": "hour-1", "6h": "hour-6", "daily": "daily", "checkpoint": "checkpoint"}[kind]
    issues = [c.name for c in checks if STATUS_RANK.get(c.status, 0) > 0]
    headline = f"{label} health report for run {run.get('name') or run['id']}: {verdict}" + (
        f" ({', '.join(issues)})" if issues else "")
    step = until_step if until_step is not None else w.last_step()
    elapsed = (min(until_ts, min(now, end)) if until_ts else min(now, end)) - start
    return HealthReport(kind=kind, run_id=run["id"], run_name=run.get("name"), project=run.get("project"),
                        verdict=verdict, headline=headline, checks=checks, samples=samples, step=step,
                        elapsed_s=elapsed, note=note)


def _step_at(w: RunWindow, ts: float) -> int | None:
    """The first step logged at or after time ``ts`` (None: before the run's first step)."""
    best = None
    for raws in w.keys.values():
        steps, _values, times = w.store.series(w.run_id, raws[0])
        for s, t in zip(steps.tolist(), times.tolist()):
            if t >= ts:
                best = int(s) if best is None else min(best, int(s))
                break
        if best is not None:
            break
    return best


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{max(seconds, 0) / 60:.0f} min"
