"""Closed-loop guardrails: what the trainer does when the health monitor reports a critical finding.

Findings arrive on the run's observer thread; acting there would race the training loop. They reach the
guardrails through one narrow link, the run's :class:`~rlcockpit.tracking.observers.GuardrailLink`
(``init(guardrails=True)``, ``run.guardrails``): the loop calls :meth:`Guardrails.poll` between steps,
which (unless ``health.on_critical=warn``) first waits until the observers have seen every step logged so
far — the same decisions on every rerun — then takes the link's findings.  ``health.on_critical``:

* ``warn``: print and record a ``guardrail`` event, keep training;
* ``stop``: record the event and end the run cleanly after this step;
* ``rollback``: restore the last checkpoint known to be healthy, apply the finding's first recommended
  action plus its lower learning rate (``overrides`` such as ``actor.optim.lr=6e-4``, see
  :meth:`Guardrails.choose_actions`) to the live config and optimizer, start the health monitor afresh,
  record the event and continue. If the run fails again, the next rollback applies the next action on a
  lever not tried yet and a further lr cut (escalation), on top of the earlier changes. Findings about steps before the
  last rollback describe the abandoned trajectory and are ignored. After ``health.max_rollbacks``
  rollbacks the run stops instead.

A checkpoint is *known healthy* once the monitor has seen :data:`CONFIRM_STEPS` steps past it and no
warning or critical finding covers it. Detectors date an event by the first step whose *metrics* look
bad, but those were produced by the weights saved one step earlier, and detection itself lags; so a
finding covers the checkpoints from :data:`LEAD_STEPS` before its start to :data:`CONFIRM_STEPS` after its
end. The newest known-healthy checkpoint is protected from ``trainer.max_actor_ckpt_to_keep`` rotation,
and a rollback restores it rather than "the newest checkpoint before the event", which may already
carry the damage.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any

from rlcockpit.metrics.keys import to_verl_key
from rlcockpit.tracking.observers import GuardrailAction, GuardrailFinding
from rlcockpit.trainer.config import Config, parse_override, set_key, to_dict

CONFIRM_STEPS = 3  # steps the monitor must see past a checkpoint before it counts as healthy
SYNC_TIMEOUT_S = 10.0  # the longest a step waits for the observers to catch up
LEAD_STEPS = 2  # a finding starting at step t also covers checkpoints t-1 and t-2 (see module doc)
STEP_SIZE_KEYS = ("actor.optim.lr", to_verl_key("actor.optim.lr"))  # short form and verl path


def _keys(overrides: list[str]) -> set[str]:
    return {text.split("=", 1)[0].strip() for text in overrides}


class Guardrails:
    def __init__(self, cfg: Config, run: Any, *, rollback: Callable[[int], int | None],
                 apply_live: Callable[[str, Any], None], log: Callable[[str], None] = print,
                 link: Any = None) -> None:
        """``rollback(step)`` restores the newest checkpoint before ``step`` and returns its step
        (None when there is none); ``apply_live(key, value)`` pushes a changed key into live objects;
        ``link``: the run's guardrail link (``run.guardrails``), else findings come via :meth:`on_finding`."""
        self.cfg, self.run, self.link = cfg, run, link
        self._rollback, self._apply_live, self._log = rollback, apply_live, log
        self._queue: queue.Queue[GuardrailFinding] = queue.Queue()
        self.rollbacks = 0
        self.rolled_back_at: int | None = None  # training step at which the last rollback happened
        self.applied: list[str] = []  # overrides applied by rollbacks, in order
        self.stop_requested = False
        self.handled: list[dict[str, Any]] = []
        self.problems: list[tuple[int, int]] = []  # (start, end) of warning/critical findings on this trajectory
        self.pending: list[int] = []  # checkpoints saved but not yet confirmed healthy
        self.healthy: int | None = None  # the newest checkpoint known to be healthy
        self.observed_step = -1  # the last step the health monitor has processed (set on its thread)

    # ---- inputs ---------------------------------------------------------------------------------
    def on_finding(self, finding: GuardrailFinding) -> None:
        """Queue a finding (any thread); with a link, :meth:`poll` takes them from it."""
        if finding.severity in ("warning", "critical"):
            self._queue.put(finding)

    def note_checkpoint(self, step: int, *, healthy: bool = False) -> None:
        """The loop saved ``global_step_{step}``; ``healthy=True`` for one known good by construction
        (the untouched initial model)."""
        if healthy:
            self.healthy = step
        elif step not in self.pending:
            self.pending.append(step)

    def mark_observed(self, step: int) -> None:
        """The monitor has processed every step up to ``step`` (without a link: called by the caller)."""
        self.observed_step = max(self.observed_step, step)

    def protected(self) -> set[int]:
        """Checkpoint steps that rotation must keep: the known-healthy one, and those still being judged
        (one of them may become the known-healthy one a few steps from now)."""
        return set(self.pending) | (set() if self.healthy is None else {self.healthy})

    # ---- the decision -----------------------------------------------------------------------------
    def poll(self, step: int) -> None:
        """Handle queued findings and confirm healthy checkpoints; called by the loop between steps."""
        if self.link is not None:
            if self.cfg.health.on_critical != "warn" and not self.link.sync(SYNC_TIMEOUT_S):
                self._log(f"[rlcockpit] guardrail: the health checks did not catch up within {SYNC_TIMEOUT_S:g}s; "
                          "deciding on what they have seen")
            self.mark_observed(self.link.observed_step)  # read first: findings up to it are in the link
            for finding in self.link.take():
                self.on_finding(finding)
        observed = self.observed_step
        while True:
            try:
                finding = self._queue.get_nowait()
            except queue.Empty:
                break
            self.handle(finding, step)
        self._confirm(observed)

    def _covers(self, step: int) -> bool:
        return any(start - LEAD_STEPS <= step <= end + CONFIRM_STEPS for start, end in self.problems)

    def _confirm(self, observed: int) -> None:
        for ckpt in sorted(self.pending):
            if ckpt + CONFIRM_STEPS > observed:
                break
            self.pending.remove(ckpt)
            if not self._covers(ckpt) and (self.healthy is None or ckpt > self.healthy):
                self.healthy = ckpt

    def handle(self, finding: GuardrailFinding, step: int) -> dict[str, Any] | None:
        start = finding.step_start if finding.step_start is not None else finding.step
        if self.rolled_back_at is not None and start <= self.rolled_back_at:
            self._log(f"[rlcockpit] guardrail: ignoring {finding.title!r}: it began at step {start}, before the "
                      f"rollback at step {self.rolled_back_at}")
            return None
        self.problems.append((start, max(finding.step, finding.step_end or finding.step)))
        if finding.severity != "critical":
            return None  # a warning only marks checkpoints as not known healthy
        mode = self.cfg.health.on_critical
        event: dict[str, Any] = {"action": mode, "detector": finding.detector, "title": finding.title,
                                 "finding_step": finding.step, "finding_step_start": start,
                                 "finding_id": finding.id}
        if mode == "rollback" and self.rollbacks >= self.cfg.health.max_rollbacks:
            mode = event["action"] = "stop"
            event["reason"] = f"health.max_rollbacks={self.cfg.health.max_rollbacks} reached"
        if mode == "stop":
            self.stop_requested = True
        elif mode == "rollback":
            self._do_rollback(finding, start, step, event)
        self._log(f"[rlcockpit] guardrail: critical finding {finding.title!r} ({finding.detector}) -> "
                  f"{event['action']}" + (f", restored step {event['restored_step']}" if "restored_step" in event else "")
                  + (f", applied {event['overrides']}" if event.get("overrides") else "")
                  + (f" ({event['reason']})" if event.get("reason") else ""))
        self.run.log_event("guardrail", event, step=step)
        self.handled.append(event)
        return event

    def _target(self, start: int) -> int:
        """``rollback``'s argument: restore the newest checkpoint strictly before the returned step."""
        if self.healthy is not None and not self._covers(self.healthy):
            return self.healthy + 1
        return start - LEAD_STEPS + 1  # nothing confirmed yet: the newest one the finding does not cover

    def _do_rollback(self, finding: GuardrailFinding, start: int, step: int, event: dict[str, Any]) -> None:
        restored = self._rollback(self._target(start))
        if restored is None:
            event.update(action="stop", reason="no checkpoint from before the event to roll back to")
            self.stop_requested = True
            return
        self.rollbacks += 1
        self.rolled_back_at = step
        event["restored_step"] = restored
        # the restored optimizer/scheduler/KL state predates earlier interventions: re-apply them first
        for text in self.applied:
            self._apply_text(text, record=False)
        actions = self.choose_actions(finding)
        event["action_titles"] = [a.title for a in actions]
        event["overrides"] = [text for a in actions for text in self._apply_action(a)]
        event["overrides_total"] = list(self.applied)
        self.problems.clear()  # the abandoned trajectory's problems
        self.pending = [c for c in self.pending if c <= restored]
        self.healthy = restored
        reset = getattr(self.run, "reset_health", None)
        if reset is not None:
            reset(to_dict(self.cfg))

    def choose_actions(self, finding: GuardrailFinding) -> list[GuardrailAction]:
        """What to change on this rollback: the finding's first recommended action on a lever (set of keys)
        not tried yet, plus its action lowering the learning rate if it offers one.

        Why both: a rollback replays the same kind of data from the same point, and with the same step
        size the same collapse tends to recur within a few steps, faster than a KL penalty (which only
        pushes back once the policy has drifted) or a tighter clip can hold it; a smaller step trades speed
        for safety, never correctness. The advice derives the new lr from the current one, so each repeated
        failure lowers it further while escalation moves through the other levers in the finding's order."""
        tried = _keys(self.applied)
        chosen: list[GuardrailAction] = []
        lever = next((a for a in finding.actions if a.overrides and not _keys(a.overrides) <= tried
                      and not any(self._lowers(t) for t in a.overrides)), None)
        step_size = next((a for a in finding.actions if any(self._lowers(t) for t in a.overrides)), None)
        for action in (lever, step_size):
            if action is not None:
                chosen.append(action)
        return chosen

    def _lowers(self, text: str) -> bool:
        try:
            key, value = parse_override(text)
            current: Any = self.cfg
            for part in key.split("."):
                current = getattr(current, part)
            return key in STEP_SIZE_KEYS and float(value) < float(current)
        except (ValueError, KeyError, TypeError):
            return False

    def _apply_action(self, action: GuardrailAction) -> list[str]:
        return [text for text in action.overrides if self._apply_text(text, record=True)]

    def _apply_text(self, text: str, *, record: bool) -> bool:
        """Apply one ``key=value`` override to the config and live objects; a bad one is reported, not fatal."""
        try:
            key, value = parse_override(text)
            set_key(self.cfg, key, value)
            self._apply_live(key, value)
        except (ValueError, KeyError, TypeError) as exc:
            self._log(f"[rlcockpit] guardrail: could not apply override {text!r}: {exc}")
            return False
        if record and text not in self.applied:
            self.applied.append(text)
        return True

    # ---- checkpointed state ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"rollbacks": self.rollbacks, "rolled_back_at": self.rolled_back_at, "applied": list(self.applied),
                "healthy": self.healthy}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume: the interventions made before the restart are applied again (config and live objects)."""
        self.rollbacks = int(state.get("rollbacks", 0))
        self.rolled_back_at = state.get("rolled_back_at")
        self.healthy = state.get("healthy")
        for text in state.get("applied", []):
            if self._apply_text(text, record=False):
                self.applied.append(text)
