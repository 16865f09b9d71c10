"""Profiler results in the diagnosis: the top-ops tables of the steps run with ``trainer.profile_steps``.

The trainer stores one ``profile`` event per profiled step (trace path + top ops by self time, see
``rlcockpit.trainer.observe.profiling``); this module only reads and formats them, so ``diagnose`` shows where
a step's time went next to what went wrong.
"""

from __future__ import annotations

from typing import Any


def profile_events(store: Any, run_id: str) -> list[dict[str, Any]]:
    """The ``profile`` event payloads of a run, by step (empty for a run that profiled nothing)."""
    events = store.events(run_id, kind="profile") if hasattr(store, "events") else []
    return sorted((dict(e["payload"]) for e in events), key=lambda p: int(p.get("step", 0)))


def format_top_ops(payload: dict[str, Any], k: int = 10) -> str:
    """One profiled step as a text table: op, calls, self time, share, total CPU time."""
    key = payload.get("sort_by", "self_cpu_ms")
    head = key.removesuffix("_ms").replace("_", " ")
    lines = [f"Profile of step {payload.get('step')} ({'+'.join(payload.get('activities', ['cpu']))}); "
             f"trace: {payload.get('trace')}",
             f"  {'op':<44} {'calls':>7} {head + ' ms':>13} {'share':>6} {'cpu total ms':>13}"]
    for r in payload.get("top_ops", [])[:k]:
        lines.append(f"  {str(r['name'])[:44]:<44} {r['calls']:>7} {r.get(key, 0.0):>13.2f} {r.get('share', 0.0):>6.1%} "
                     f"{r.get('cpu_total_ms', 0.0):>13.2f}")
    return "\n".join(lines)
