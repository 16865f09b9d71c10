"""TRL / transformers integration: ``trainer.add_callback(CockpitCallback())``.

Works with ``GRPOTrainer`` and any other ``transformers.Trainer`` subclass (TRL's PPO, RLOO, DPO...):
``on_log`` stores every numeric value the trainer logs, verbatim (``reward``, ``reward_std``, ``kl``,
``entropy``, ``clip_ratio/region_mean``, ``completions/mean_length``, ``grad_norm``, ``learning_rate``...;
aliases of verl's keys are resolved on read), at ``state.global_step``. For GRPO-style trainers the
latest generation batch (``trainer._logs``: prompt, completion, per-function rewards, advantages) is
stored as samples. The trainer's ``args.to_dict()`` (secrets redacted) is the run config.

Only the main process (``state.is_world_process_zero``) logs.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
from collections.abc import Mapping
from typing import Any

from transformers import TrainerCallback

from rlcockpit.integrations.chat_text import chat_text as _text
from rlcockpit.tracking.compat.reinit import OWN_RUN


def _find_trainer(callback: TrainerCallback) -> Any:
    """The Trainer whose callback handler holds ``callback`` (callbacks are not given the trainer)."""
    frame = inspect.currentframe()
    try:
        while frame is not None:
            obj = frame.f_locals.get("self")
            handler = getattr(obj, "callback_handler", None)
            if handler is not None and callback in getattr(handler, "callbacks", ()):
                return obj
            frame = frame.f_back
    finally:
        del frame
    return None


class CockpitCallback(TrainerCallback):
    """Log a transformers/TRL training run to rlcockpit (metrics, samples, config; detectors and alerts).

    ``run``: log into an existing run instead of creating one. ``trainer``: the trainer (found
    automatically when omitted). ``max_samples``: completions stored per logging step.
    """

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        *,
        dir: str | os.PathLike[str] | None = None,
        config: Mapping[str, Any] | None = None,
        health: bool | Mapping[str, Any] = True,
        alerts: Any = None,
        run: Any = None,
        trainer: Any = None,
        log_samples: bool = True,
        max_samples: int = 64,
    ) -> None:
        self.project = project or os.environ.get("RLCOCKPIT_PROJECT") or "trl"
        self.name = name
        self.dir = dir
        self.extra_config = dict(config or {})
        self.health = health
        self.alerts = alerts
        self.run = run
        self._owns_run = run is None
        self.trainer = trainer
        self.log_samples = log_samples
        self.max_samples = max_samples
        self._last_batch: str | None = None

    # ---- lifecycle ---------------------------------------------------------------------------------
    def _start(self, args: Any, state: Any) -> None:
        if self.run is not None:
            return
        import rlcockpit

        try:
            config = args.to_dict()
        except Exception:  # noqa: BLE001 - a custom args object
            config = {k: v for k, v in vars(args).items() if not k.startswith("_")}
        config = {**config, **self.extra_config}
        config.setdefault("framework", "trl")
        name = self.name or getattr(args, "run_name", None) or os.path.basename(os.path.normpath(args.output_dir))
        self.run = rlcockpit.init(project=self.project, name=name, config=config, dir=self.dir, health=self.health,
                                  alerts=self.alerts, reinit=OWN_RUN)
        meta = dict(self.run.store.get_run(self.run.id).get("meta") or {})
        meta["framework"] = "trl"
        if self.trainer is not None:
            meta["trainer_class"] = type(self.trainer).__name__
        self.run.store.update_run(self.run.id, meta=meta)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.trainer is None:
            self.trainer = _find_trainer(self)
        if state.is_world_process_zero:
            self._start(args, state)

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None,
               **kwargs: Any) -> None:
        if not state.is_world_process_zero or not logs:
            return
        self._start(args, state)
        metrics = {k: v for k, v in logs.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "step"}
        if metrics:
            self.run.log(metrics, step=state.global_step)
        if self.log_samples:
            self._log_completions(state.global_step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero and self.run is not None and self._owns_run:
            self.run.finish(0)

    # ---- samples ---------------------------------------------------------------------------------
    def _log_completions(self, step: int) -> None:
        logs = getattr(self.trainer, "_logs", None)
        if not isinstance(logs, Mapping) or not logs.get("prompt"):
            return
        prompts, completions = list(logs["prompt"]), list(logs.get("completion") or [])
        rewards: dict[str, list[float]] = {k: list(v) for k, v in (logs.get("rewards") or {}).items()}
        advantages = list(logs.get("advantages") or [])
        n = min(len(prompts), len(completions))
        if not n:
            return
        fingerprint = hashlib.sha1(
            json.dumps([_text(prompts[0]), _text(completions[-1]), n], default=str).encode()).hexdigest()
        if fingerprint == self._last_batch:
            return  # no new generation since the last log (e.g. num_iterations > 1)
        self._last_batch = fingerprint
        weights = getattr(self.trainer, "reward_weights", None)
        try:
            weights = [float(w) for w in weights] if weights is not None else None
        except TypeError:
            weights = None
        names = list(rewards)
        rows = []
        for i in range(n)[: self.max_samples]:
            per_func = {name: rewards[name][i] for name in names if i < len(rewards[name])}
            vals = [(per_func.get(name), weights[j] if weights and j < len(weights) else 1.0)
                    for j, name in enumerate(names)]
            finite = [v * w for v, w in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
            row: dict[str, Any] = {"prompt": _text(prompts[i]), "response": _text(completions[i]),
                                   "reward": sum(finite) if finite else None}
            for name, v in per_func.items():
                row[f"rewards/{name}"] = v
            if i < len(advantages):
                row["advantage"] = advantages[i]
            rows.append(row)
        self.run.log_samples(rows, step=step)


def register_report_to() -> None:
    """Make ``report_to="rlcockpit"`` (or ``["wandb", "rlcockpit"]``) a transformers reporting integration, as
    ``"wandb"`` is: transformers builds ``CockpitCallback()`` itself (project ``$RLCOCKPIT_PROJECT`` or
    ``trl``, store ``$RLCOCKPIT_DIR``). Done when this module is imported; without that import transformers
    refuses the name (its ``ValueError`` lists the integrations it knows)."""
    from transformers.integrations import integration_utils

    integration_utils.INTEGRATION_TO_CALLBACK.setdefault("rlcockpit", CockpitCallback)


register_report_to()
