"""``trainer.profile_steps=[5,6]``: torch.profiler on chosen training steps, stored with the run.

Seed article §4.3: before optimising, look at where a step's time goes.  Each listed step runs under
``torch.profiler`` (CPU activities, plus CUDA on a GPU) and leaves, next to the run's store:

- ``profiles/<run_id>/step_<N>.pt.trace.json.gz``: the Chrome trace (opens in Perfetto / chrome://tracing,
  and TensorBoard's profiler plugin reads the ``*.pt.trace.json.gz`` name); the loop's phases
  (``timing_s/gen``, ``timing_s/update_actor``...) appear as named ranges in it;
- a ``profile`` event in the run with the top ops by self time, which ``rlcockpit diagnose`` prints.

Why steps chosen by number and not "every N": a profiled step is slower (the profiler records every op)
and its trace is megabytes; a user profiles a couple of steps after warm-up, as verl's ``profile_steps``.
The ``timing_s/*`` metrics of a profiled step include the profiler's overhead.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

TOP_OPS = 15


def phase(name: str) -> contextlib.AbstractContextManager:
    """A named range in the trace (cheap when no profiler runs); the loop wraps its phases in it."""
    return torch.profiler.record_function(name)


class StepProfiler:
    """Profiles the steps in ``steps``; a no-op for every other step."""

    def __init__(self, steps: list[int] | tuple[int, ...], out_dir: str | Path, *, device: torch.device | str = "cpu",
                 run: Any = None, log: Any = print) -> None:
        self.steps = {int(s) for s in steps or ()}
        self.out_dir = Path(out_dir)
        self.device = torch.device(device)
        self.run = run
        self.log = log
        self.saved: list[dict[str, Any]] = []

    @classmethod
    def for_run(cls, cfg: Any, run: Any, device: torch.device, log: Any = print) -> StepProfiler:
        steps = list(getattr(cfg.trainer, "profile_steps", None) or [])
        return cls(steps, Path(run.dir) / "profiles" / run.id, device=device, run=run, log=log)

    def activities(self) -> list[Any]:
        acts = [torch.profiler.ProfilerActivity.CPU]
        if self.device.type == "cuda" and torch.cuda.is_available():
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        return acts

    @contextlib.contextmanager
    def step(self, step: int, timing: dict[str, float] | None = None) -> Iterator[None]:
        """Profile the body when ``step`` is in ``trainer.profile_steps``. ``timing`` gets verl's
        ``start_profile`` / ``stop_profile`` (seconds to start the profiler, to stop it and store the trace;
        0 on the steps not profiled), which verl logs every step outside ``timing_s/step``."""
        timing = {} if timing is None else timing
        if step not in self.steps:
            timing["start_profile"] = timing["stop_profile"] = 0.0
            yield
            return
        t0 = time.perf_counter()
        with torch.profiler.profile(activities=self.activities(), record_shapes=True, profile_memory=True) as prof:
            with phase(f"rlcockpit/step_{step}"):
                timing["start_profile"] = time.perf_counter() - t0
                yield
                t1 = time.perf_counter()
        self._save(prof, step)
        timing["stop_profile"] = time.perf_counter() - t1

    def _save(self, prof: Any, step: int) -> None:
        """Write the gzipped trace, log the top-ops event; a failure here never stops training."""
        try:
            trace = write_trace(prof, self.out_dir / f"step_{step}.pt.trace.json.gz")
            cuda = any(a == torch.profiler.ProfilerActivity.CUDA for a in self.activities())
            rows = top_ops(prof, cuda=cuda)
            payload = {"step": step, "trace": str(trace), "sort_by": "self_cuda_ms" if cuda else "self_cpu_ms",
                       "activities": ["cpu", "cuda"] if cuda else ["cpu"], "top_ops": rows}
            self.saved.append(payload)
            if self.run is not None:
                self.run.log_event("profile", payload, step=step)
            top = f"; top op {rows[0]['name']} ({rows[0]['share']:.0%} of self time)" if rows else ""
            self.log(f"[rlcockpit] step {step}: profiler trace {trace} (open it in https://ui.perfetto.dev){top}")
        except Exception as exc:  # noqa: BLE001 - the profiler is a diagnostic, training goes on
            self.log(f"[rlcockpit] step {step}: could not store the profiler trace: {exc}")


def write_trace(prof: Any, path: Path) -> Path:
    """The profiler's Chrome trace, gzipped at ``path`` (Perfetto opens .json.gz directly)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, raw = tempfile.mkstemp(suffix=".json", dir=path.parent)
    os.close(fd)
    try:
        prof.export_chrome_trace(raw)
        tmp = path.with_suffix(".tmp")
        with open(raw, "rb") as src, gzip.open(tmp, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(raw)
    return path


def top_ops(prof: Any, *, cuda: bool = False, k: int = TOP_OPS) -> list[dict[str, Any]]:
    """The ``k`` ops with the most self time (CUDA time on a GPU), as JSON-ready rows."""
    rows = []
    for ev in prof.key_averages():
        if ev.key.startswith(("rlcockpit/", "timing_s/", "ProfilerStep")):
            continue  # our own ranges: they contain the ops, they are not ops
        self_dev = float(getattr(ev, "self_device_time_total", 0.0) or 0.0)
        rows.append({"name": ev.key, "calls": int(ev.count),
                     "self_cpu_ms": ev.self_cpu_time_total / 1e3, "cpu_total_ms": ev.cpu_time_total / 1e3,
                     "self_cuda_ms": self_dev / 1e3, "cpu_mem_mb": float(ev.self_cpu_memory_usage) / 2**20})
    key = "self_cuda_ms" if cuda else "self_cpu_ms"
    rows.sort(key=lambda r: r[key], reverse=True)
    total = sum(r[key] for r in rows) or 1.0
    for r in rows:
        r["share"] = r[key] / total
    return rows[:k]
