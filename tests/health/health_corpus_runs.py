"""The real runs of bench/detection_corpus/real/ (other people's public runs, our CPU passes), loaded and replayed
the way ``bench/detection_quality.py`` does (not a test module): one loader and one replay for every health test
that pins a rule to a real run, instead of a copy in each file. The corpus loader lives in
``bench/detection_corpus/gen/real_runs.py`` (bench code, not a package), so it is imported from there once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from rlcockpit.health import HealthMonitor

GEN = Path(__file__).resolve().parents[2] / "bench" / "detection_corpus" / "gen"


@cache
def _loader() -> ModuleType:
    sys.path.insert(0, str(GEN))
    try:
        import real_runs
    finally:
        sys.path.remove(str(GEN))
    return real_runs


@cache
def real_runs() -> tuple[dict[str, Any], ...]:
    """Every run of the manifest, imported as ``rlcockpit import`` reads it (a corpus trace each). Without the
    clean step counts (``meta["clean_steps"]`` None): tests/bench/test_detection_real_runs.py checks those, and
    they were ~90 % of the load's time."""
    return tuple(_loader().load_real(clean_counts=False))


def real_by_id() -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in real_runs()}


def real_where(keep: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """Only the manifest entries ``keep`` accepts, imported: cheaper than every run for a test about a few. Once
    ``real_runs()`` has imported every run (collecting test_health_real_corpus.py does, before any test runs), its
    traces are handed out instead of a second import of the same bytes, so ``replay`` replays each once: shared,
    they are read, never changed."""
    loader = _loader()
    kept = [e for e in loader.manifest() if keep(e)]
    if real_runs.cache_info().currsize:
        by_id = real_by_id()
        return [by_id[e["id"]] for e in kept]
    return loader.load_real(kept, clean_counts=False)


def real_run(suffix: str, source: str | None = None) -> dict[str, Any]:
    """The one run whose id ends with ``suffix`` (of ``source`` when given)."""
    found = real_where(lambda e: e["id"].endswith(suffix) and (source is None or e["source"] == source))
    assert len(found) == 1, (suffix, [t["id"] for t in found])
    return found[0]


_REPLAYED: dict[str, tuple] = {}


def replay(trace: dict[str, Any], samples: bool = True) -> list:
    """Every finding the monitor raises on ``trace``: its samples fed before the metrics of their step (as the
    bench does), then its metrics, then ``close``. A run of ``real_runs()`` itself (that very dict, as the
    session-cached corpus hands it out, not a copy or another load) is replayed once per session and its findings
    shared: test_health_real_corpus.py reads every real run's findings in five tests, and replaying each run five
    times was most of its time (``samples`` changes nothing for a run without samples, as every real run is). Each
    call gets its own list; the findings in it are shared, read-only."""
    shared = real_runs.cache_info().currsize and isinstance(trace, dict) and trace is real_by_id().get(trace.get("id"))
    if shared and (samples or not trace["samples"]):
        if trace["id"] not in _REPLAYED:
            _REPLAYED[trace["id"]] = tuple(_replay(trace, samples))
        return list(_REPLAYED[trace["id"]])
    return _replay(trace, samples)


def _replay(trace: dict[str, Any], samples: bool) -> list:
    mon = HealthMonitor(run_config=trace["config"])
    pending = sorted(trace["samples"], key=lambda x: x[0]) if samples else []
    found = []
    for step, metrics in trace["metrics"]:
        while pending and pending[0][0] <= step:
            s, rows = pending.pop(0)
            found += mon.observe_samples(s, rows)[1]
        found += mon.observe(step, metrics)
    return found + mon.close()


def replay_stream(stream: list[tuple[int, dict[str, Any]]], run_config: dict[str, Any] | None = None) -> list:
    """Every finding a fresh monitor (given the run's logged config, when there is one) raises on a synthetic
    ``(step, metrics)`` stream, then ``close``."""
    mon = HealthMonitor(run_config=run_config)
    return [f for step, metrics in stream for f in mon.observe(step, metrics)] + mon.close()
