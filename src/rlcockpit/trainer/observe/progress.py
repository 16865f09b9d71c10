"""The trainer's console: a live rich progress bar on a terminal, one plain line per step otherwise.

Shown: step / total, ETA, seconds per step and the key metrics (score, entropy, the KL to the reference named by
its metric, response length, the last validation accuracy). On a terminal the bar stays at the bottom and every other line printed while it
is up (the trainer's notes, findings printed by the tracking thread) appears above it, so nothing is
skipped or printed twice; in a log file (stdout not a terminal) each step is exactly one line.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from typing import Any

from rlcockpit.metrics.headline import HEADLINE_KEYS

# name shown, headline slot, format; the "kl" column is named by the metric it found (kl_loss, ref_kl, ...)
KEY_METRICS = (("score", "reward", "{:.3f}"), ("entropy", "entropy", "{:.3f}"), ("kl", "kl", "{:+.4f}"),
               ("len", "resp_len", "{:.1f}"))


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class Progress:
    """``update(step, metrics)`` once per step; ``val(acc)`` after a validation; use as a context manager."""

    def __init__(self, total: int, *, start: int = 0, stream: Any = None, live: bool | None = None,
                 label: str = "train") -> None:
        self.total, self.start, self.label = total, start, label
        self.stream = stream or sys.stdout
        self.live = (hasattr(self.stream, "isatty") and self.stream.isatty()) if live is None else live
        self.step_times: deque[float] = deque(maxlen=20)
        self.last_acc: float | None = None
        self._bar: Any = None
        self._task: Any = None
        self._last = time.perf_counter()

    def __enter__(self) -> Progress:
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
            from rich.progress import Progress as Bar

            self._bar = Bar(TextColumn("[bold]{task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(),
                            TextColumn("{task.fields[info]}"), console=Console(file=self.stream),
                            redirect_stdout=True, redirect_stderr=True, transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total, completed=self.start, info="")
        self._last = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None

    def val(self, acc: float) -> None:
        self.last_acc = acc

    def line(self, step: int, metrics: dict[str, float], seconds: float) -> str:
        avg = sum(self.step_times) / len(self.step_times) if self.step_times else seconds
        parts = [f"{seconds:.2f}s/step", f"ETA {_duration(avg * max(0, self.total - step))}"]
        for name, slot, fmt in KEY_METRICS:
            keys = HEADLINE_KEYS[slot] + HEADLINE_KEYS["kl_estimate"] if slot == "kl" else HEADLINE_KEYS[slot]
            key = next((k for k in keys if k in metrics), "")
            if slot == "kl":
                name = key.rsplit("/", 1)[-1]
            if key:
                parts.append(f"{name} {fmt.format(metrics[key])}")
        if self.last_acc is not None:
            parts.append(f"val acc {self.last_acc:.3f}")
        return " | ".join(parts)

    def update(self, step: int, metrics: dict[str, float], seconds: float | None = None) -> None:
        now = time.perf_counter()
        seconds = now - self._last if seconds is None else seconds
        self._last = now
        self.step_times.append(seconds)
        info = self.line(step, metrics, seconds)
        if self._bar is not None:
            self._bar.update(self._task, completed=step, info=info)
        else:
            print(f"[rlcockpit] step {step}/{self.total} | {info}", file=self.stream, flush=True)
