"""Detection quality of rlcockpit's health detectors vs rlwatch on labelled traces.

    python bench/detection_quality.py --json            # machine-readable
    python bench/detection_quality.py --markdown        # table for BENCHMARKS.md
    python bench/detection_quality.py --runs-dir DIR    # also stored runs of the trainer presets

Per failure class: recall (share of traces where a detector responsible for that class raised a warning or
critical at/after the onset, and had been quiet in the 20 steps before it: an alarm that rings all the time
detects nothing), false alarms (critical findings before the onset; on healthy traces: every
critical finding), median detection delay in steps. Both tools see the same metric stream; rlwatch gets
entropy, KL, reward mean/std, per-sample rewards, loss and grad norm through its ``DetectorSuite``.
Also measured: rlcockpit's per-step detector overhead (µs, p50/p99 of ``HealthMonitor.observe``).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from typing import Any

import numpy as np

from rlcockpit.health import HealthMonitor
from rlcockpit.health.synthetic import FAILURES, HEALTHY, Trace, make_trace

# which detectors are "responsible" for a class (a detection by an unrelated detector does not count)
OURS: dict[str, set[str]] = {
    "collapse": {"reward_cliff", "kl_spike", "kl_rising", "sample_degeneration", "entropy_explosion"},
    "reward_hacking": {"reward_hacking"},
    "entropy_collapse": {"entropy_collapse"},
    "loss_divergence": {"nonfinite", "loss_spike", "grad_spike"},
    "grad_spike": {"grad_spike", "nonfinite"},
    "oom_creep": {"gpu_memory", "memory_growth"},
    "low_gpu_util": {"gpu_utilization"},
    "rollout_mismatch": {"rollout_mismatch"},
    "throughput_drop": {"throughput_drop"},
    "length_explosion": {"length_explosion", "truncation"},
}
RLWATCH: dict[str, set[str]] = {
    "collapse": {"kl_explosion", "reward_hacking", "entropy_collapse"},
    "reward_hacking": {"reward_hacking", "reward_mean_drift"},
    "entropy_collapse": {"entropy_collapse"},
    "loss_divergence": {"loss_nan", "gradient_norm_spike"},
    "grad_spike": {"gradient_norm_spike", "loss_nan"},
}
PRE_ONSET_QUIET = 20  # a responsible detector alarming in these steps before the onset gets no credit
PRESET_CLASSES = {"arith-grpo": "healthy", "arith-collapse": "collapse", "arith-hacking": "reward_hacking",
                  "arith-entropy-collapse": "entropy_collapse"}


def run_ours(trace: Trace, timings: list[float] | None = None,
             cpu_timings: list[float] | None = None) -> list[tuple[int, str, str]]:
    """(step, detector, severity) of every finding rlcockpit raises on ``trace``. ``timings`` gets the wall time
    of each ``observe`` (µs), ``cpu_timings`` its thread CPU time: on a shared machine the wall time includes
    preemption by other processes, the CPU time is what the detectors themselves cost."""
    monitor = HealthMonitor(run_config=trace.config)
    out = []
    for step, metrics in trace.metrics:
        if step in trace.samples:
            _m, found = monitor.observe_samples(step, trace.samples[step])
            out += [(f.step, f.detector, f.severity) for f in found]
        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
        found = monitor.observe(step, metrics)
        t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        if timings is not None:
            timings.append((t1 - t0) / 1000.0)
        if cpu_timings is not None:
            cpu_timings.append((c1 - c0) / 1000.0)
        out += [(f.step, f.detector, f.severity) for f in found]
    out += [(f.step, f.detector, f.severity) for f in monitor.close()]
    return out


def run_rlwatch(trace: Trace) -> list[tuple[int, str, str]]:
    """The same stream through rlwatch 0.5's detector suite (default config)."""
    from rlwatch.config import RLWatchConfig
    from rlwatch.detectors import DetectorSuite

    suite = DetectorSuite(RLWatchConfig())
    out = []
    for step, m in trace.metrics:
        rows = trace.samples.get(step)
        rewards = np.array([r["reward"] for r in rows], dtype=float) if rows else None
        alerts = suite.check_step(
            step, entropy=m.get("actor/entropy"), kl_divergence=m.get("actor/kl_loss"),
            reward_mean=m.get("critic/score/mean"), reward_std=m.get("critic/score/std"), rewards=rewards,
            loss=m.get("actor/pg_loss"), grad_norm=m.get("actor/grad_norm"),
        )
        out += [(a.step, a.detector, a.severity) for a in alerts]
    return out


def score(label: str, onset: int | None, findings: list[tuple[int, str, str]], responsible: set[str]) -> dict[str, Any]:
    """Per-trace outcome: detected?, delay, false alarms (criticals before onset / anywhere if healthy)."""
    if label == "healthy":
        return {"false_alarms": sum(1 for _s, _d, sev in findings if sev == "critical"),
                "warnings": sum(1 for _s, _d, sev in findings if sev == "warning")}
    start = onset if onset is not None else -1
    alarms = [s for s, d, sev in findings if d in responsible and sev in ("warning", "critical")]
    if onset is not None and any(onset - PRE_ONSET_QUIET <= s < onset for s in alarms):
        alarms = []  # an alarm already ringing before the failure did not detect it
    hits = [s for s in alarms if s >= start]
    any_hit = any(d in responsible and sev in ("warning", "critical") and s >= start for s, d, sev in findings)
    false = sum(1 for s, _d, sev in findings if sev == "critical" and onset is not None and s < onset)
    return {"detected": bool(hits), "detected_any": any_hit, "delay": (min(hits) - onset) if hits and onset is not None else None,
            "false_alarms": false}


def aggregate(results: list[tuple[str, dict[str, Any]]], covered: set[str] | None = None) -> dict[str, Any]:
    by_class: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for label, res in results:
        by_class[label].append(res)
    out: dict[str, Any] = {}
    for label, items in by_class.items():
        if label == "healthy":
            out[label] = {"traces": len(items), "false_alarms": sum(i["false_alarms"] for i in items),
                          "warnings": sum(i["warnings"] for i in items)}
            continue
        delays = [i["delay"] for i in items if i["delay"] is not None]
        out[label] = {
            "traces": len(items),
            "recall": round(sum(i["detected"] for i in items) / len(items), 3),
            "recall_any_alarm": round(sum(i.get("detected_any", i["detected"]) for i in items) / len(items), 3),
            "false_alarms": sum(i["false_alarms"] for i in items),
            "median_delay_steps": statistics.median(delays) if delays else None,
        }
        if covered is not None:
            out[label]["covered"] = label in covered
    return out


def _leaves(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for k, v in tree.items():
            out |= _leaves(v, f"{prefix}{k}.")
        return out
    return {prefix[:-1]: tree}


# keys a user commonly overrides on top of a preset (run length, seed, paths, model): not part of its identity
PRESET_FREE_KEYS = ("trainer.", "actor.model.path", "health.")


def preset_of(config: dict[str, Any]) -> str | None:
    """The trainer preset a stored run was launched from, recognised by its config: every setting the preset
    makes (apart from run length, seed, paths and the model) has the preset's value in the run's config.
    The most specific matching preset wins. Works whatever the run was named."""
    from rlcockpit.trainer.config import load_preset

    run = _leaves(config)
    best, best_n = None, 0
    for name in PRESET_CLASSES:
        try:
            wanted = {k: v for k, v in _leaves(load_preset(name)).items() if not k.startswith(PRESET_FREE_KEYS)}
        except (FileNotFoundError, KeyError, ValueError):
            continue
        if wanted and all(k in run and _same(run[k], v) for k, v in wanted.items()) and len(wanted) > best_n:
            best, best_n = name, len(wanted)
    return best


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    return a == b


def stored_runs(runs_dir: str) -> list[tuple[str, str, list[tuple[int, str, str]]]]:
    """(label, run name, findings) for stored runs of the trainer presets: the preset is named in the run's
    name/tags/config or recognised from the config itself (:func:`preset_of`)."""
    from rlcockpit.health.diagnosis import replay_run
    from rlcockpit.store import open_store

    store = open_store(runs_dir)
    out = []
    for run in store.list_runs():
        cfg = run.get("config") or {}
        names = [str(cfg.get("preset") or ""), str((cfg.get("trainer") or {}).get("preset") or ""), str(run.get("name") or ""),
                 *map(str, run.get("tags") or [])]
        label = next((PRESET_CLASSES[n] for n in names if n in PRESET_CLASSES), None)
        if label is None:
            preset = preset_of(cfg)
            label = PRESET_CLASSES[preset] if preset else None
        if label is None:
            label = next((c for p, c in sorted(PRESET_CLASSES.items(), key=lambda kv: -len(kv[0]))
                          if any(p in n for n in names)), None)
        if label is None:
            continue
        findings = replay_run(store, run["id"])
        out.append((label, run.get("name") or run["id"], [(f.step, f.detector, f.severity) for f in findings]))
    return out


def evaluate(seeds: int, steps: int, runs_dir: str | list[str] | None, with_rlwatch: bool = True) -> dict[str, Any]:
    ours, theirs, timings, cpu = [], [], [], []
    for kind in HEALTHY + FAILURES:
        for seed in range(seeds):
            trace = make_trace(kind, seed, steps=steps)
            ours.append((trace.label, score(trace.label, trace.onset, run_ours(trace, timings, cpu), OURS.get(trace.label, set()))))
            if with_rlwatch:
                theirs.append((trace.label, score(trace.label, trace.onset, run_rlwatch(trace), RLWATCH.get(trace.label, set()))))
    runs = []
    for one_dir in [runs_dir] if isinstance(runs_dir, str) else runs_dir or []:
        for label, name, findings in stored_runs(one_dir):
            res = score(label, None, findings, OURS.get(label, set()))
            ours.append((label, res))
            runs.append({"run": name, "store": one_dir, "label": label, **res})
    arr, carr = np.array(timings), np.array(cpu)
    report: dict[str, Any] = {
        "rlcockpit": aggregate(ours),
        "overhead_us_per_step": {"p50": round(float(np.percentile(arr, 50)), 2), "p99": round(float(np.percentile(arr, 99)), 2),
                                 "mean": round(float(arr.mean()), 2), "steps": int(arr.size),
                                 "cpu_p50": round(float(np.percentile(carr, 50)), 2),
                                 "cpu_p99": round(float(np.percentile(carr, 99)), 2)},
        "traces_per_class": seeds, "steps_per_trace": steps,
    }
    if with_rlwatch:
        report["rlwatch"] = aggregate(theirs, covered=set(RLWATCH))
    if runs:
        report["stored_runs"] = runs
        report["stored_runs_by_class"] = aggregate([(r["label"], r) for r in runs])
    return report


def markdown(report: dict[str, Any]) -> str:
    def cell(d: dict[str, Any] | None, key: str) -> str:
        if not d or (key != "false_alarms" and d.get("covered") is False):
            return "—"
        v = d.get(key)
        return "—" if v is None else (f"{v:.2f}" if isinstance(v, float) and not float(v).is_integer() else str(v))

    lines = ["| class | rlcockpit recall | rlcockpit false alarms | rlcockpit median delay | rlwatch recall | "
             "rlwatch false alarms | rlwatch median delay |", "|---|---|---|---|---|---|---|"]
    theirs = report.get("rlwatch", {})
    for label, d in report["rlcockpit"].items():
        t = theirs.get(label)
        lines.append(f"| {label} | {cell(d, 'recall')} | {cell(d, 'false_alarms')} | {cell(d, 'median_delay_steps')} | "
                     f"{cell(t, 'recall')} | {cell(t, 'false_alarms')} | {cell(t, 'median_delay_steps')} |")
    o = report["overhead_us_per_step"]
    lines.append("")
    lines.append(f"Detector overhead per step (all detectors, {o['steps']} steps): wall p50 {o['p50']} µs, p99 {o['p99']} µs; "
                 f"thread CPU p50 {o['cpu_p50']} µs, p99 {o['cpu_p99']} µs.")
    lines.append(f"{report['traces_per_class']} synthetic traces per class, {report['steps_per_trace']} steps each; "
                 "false alarms = critical findings before the onset (healthy: any critical). Recall counts an alarm "
                 "only if the responsible detector was quiet in the 20 steps before the onset (`recall_any_alarm` in "
                 "the JSON drops that condition).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--seeds", type=int, default=5, help="traces per class (default 5)")
    parser.add_argument("--steps", type=int, default=200, help="steps per trace (default 200)")
    parser.add_argument("--runs-dir", action="append", default=None,
                        help="rlcockpit store with runs of the trainer presets (repeatable)")
    parser.add_argument("--no-rlwatch", action="store_true", help="skip the rlwatch comparison")
    args = parser.parse_args(argv)
    report = evaluate(args.seeds, args.steps, args.runs_dir, with_rlwatch=not args.no_rlwatch)
    if args.markdown:
        print(markdown(report))
    if args.json or not args.markdown:
        print(json.dumps(report, indent=2, default=lambda v: None if isinstance(v, float) and math.isnan(v) else str(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
