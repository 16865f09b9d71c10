"""Closed-loop guardrails: what the trainer does when the health monitor reports a critical finding.

Findings arrive on a background thread (``run.on_finding``); acting there would race the training
loop, so :meth:`Guardrails.on_finding` only queues them and the loop calls :meth:`Guardrails.poll`
between steps.  ``health.on_critical``:

* ``warn``: print and record a ``guardrail`` event, keep training;
* ``stop``: record the event and end the run cleanly after this step;
* ``rollback``: restore the last checkpoint from before the event started, apply the finding's first
  action's ``overrides`` (``actor.optim.lr=5e-7``...) to the live config and optimizer, record the
  event and continue. If the run fails again, the next rollback also applies the finding's next action
  not yet applied (escalation: e.g. raise the KL penalty, then lower the learning rate, then shrink the
  PPO update). Findings about steps before the last rollback describe the abandoned trajectory and are
  ignored. After ``health.max_rollbacks`` rollbacks the run stops instead.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any

from rlcockpit.health import Finding
from rlcockpit.trainer.config import Config, parse_override, set_key


class Guardrails:
    def __init__(self, cfg: Config, run: Any, *, rollback: Callable[[int], int | None],
                 apply_live: Callable[[str, Any], None], log: Callable[[str], None] = print) -> None:
        """``rollback(step)`` restores the newest checkpoint before ``step`` and returns its step
        (None when there is none); ``apply_live(key, value)`` pushes a changed key into live objects."""
        self.cfg, self.run = cfg, run
        self._rollback, self._apply_live, self._log = rollback, apply_live, log
        self._queue: queue.Queue[Finding] = queue.Queue()
        self.rollbacks = 0
        self.rolled_back_at: int | None = None  # training step at which the last rollback happened
        self.applied: set[str] = set()  # overrides applied by earlier rollbacks
        self.stop_requested = False
        self.handled: list[dict[str, Any]] = []

    def on_finding(self, finding: Finding) -> None:
        """Callback for ``run.on_finding`` (any thread)."""
        if finding.severity == "critical":
            self._queue.put(finding)

    def poll(self, step: int) -> None:
        """Handle queued critical findings; called by the loop between steps."""
        while True:
            try:
                finding = self._queue.get_nowait()
            except queue.Empty:
                return
            self.handle(finding, step)

    def handle(self, finding: Finding, step: int) -> dict[str, Any] | None:
        start = finding.step_start if finding.step_start is not None else finding.step
        if self.rolled_back_at is not None and start <= self.rolled_back_at:
            self._log(f"[rlcockpit] guardrail: ignoring {finding.title!r}: it began at step {start}, before the "
                      f"rollback at step {self.rolled_back_at}")
            return None
        mode = self.cfg.health.on_critical
        event: dict[str, Any] = {"action": mode, "detector": finding.detector, "title": finding.title,
                                 "finding_step": finding.step, "finding_id": finding.id}
        if mode == "rollback" and self.rollbacks >= self.cfg.health.max_rollbacks:
            mode = event["action"] = "stop"
            event["reason"] = f"health.max_rollbacks={self.cfg.health.max_rollbacks} reached"
        if mode == "stop":
            self.stop_requested = True
        elif mode == "rollback":
            restored = self._rollback(start)
            if restored is None:
                event.update(action="stop", reason="no checkpoint from before the event to roll back to")
                self.stop_requested = True
            else:
                self.rollbacks += 1
                self.rolled_back_at = step
                event["restored_step"] = restored
                event["overrides"] = self.apply_overrides(finding)
        self._log(f"[rlcockpit] guardrail: critical finding {finding.title!r} ({finding.detector}) -> "
                  f"{event['action']}" + (f", restored step {event['restored_step']}" if "restored_step" in event else "")
                  + (f", applied {event['overrides']}" if event.get("overrides") else ""))
        self.run.log_event("guardrail", event, step=step)
        self.handled.append(event)
        return event

    def apply_overrides(self, finding: Finding) -> list[str]:
        """Apply the first action whose overrides were not all applied by an earlier rollback (the
        first action on a first rollback); a bad override is reported, not fatal."""
        applied: list[str] = []
        action = next((a for a in finding.actions if not set(a.overrides) <= self.applied), None)
        if action is None:
            return applied
        for text in action.overrides:
            try:
                key, value = parse_override(text)
                set_key(self.cfg, key, value)
                self._apply_live(key, value)
                applied.append(text)
                self.applied.add(text)
            except (ValueError, KeyError) as exc:
                self._log(f"[rlcockpit] guardrail: could not apply override {text!r}: {exc}")
        return applied
