"""``Api().sweep("entity/project/sweep_id")``: a sweep as W&B's public API shows it (``runs``, ``best_run()``,
``config``, ``state``), read from the sweep tables of the Api's store.

Why here and not in tracking: tracking must not import sweeps (the layering rules); the Api asks for this
through ``PROVIDERS["public_sweep"]`` (wired in :mod:`rlcockpit.defaults`).
"""

from __future__ import annotations

from typing import Any

from rlcockpit.store.sql import open_database
from rlcockpit.sweeps.config import parse_sweep
from rlcockpit.sweeps.controller import best_trial
from rlcockpit.sweeps.state import SweepState


class PublicSweep:
    """One sweep: attributes are read when the object is made; ``runs`` are the trials' stored runs, in
    trial order (a trial whose run was deleted is left out)."""

    def __init__(self, api: Any, sweep: dict[str, Any], trials: list[dict[str, Any]]) -> None:
        self._api = api
        self._trials = trials
        self.id: str = sweep["id"]
        self.name: str | None = sweep["name"]
        self.project: str = sweep["project"]
        self.config: dict[str, Any] = sweep["config"]
        self.state: str = sweep["state"].upper()  # W&B's states are upper case (RUNNING, FINISHED...)
        self.method: str = sweep["method"]
        self.entity: str | None = None
        self.path: list[str] = [self.project, self.id]
        self.url: str = f"http://127.0.0.1:6007/#/sweep/{self.id}"
        run_cap = self.config.get("run_cap")
        self.expected_run_count: int | None = int(run_cap) if run_cap else None
        self._cfg = parse_sweep(self.config)

    @property
    def runs(self) -> list[Any]:
        out = []
        for t in self._trials:
            try:
                out.append(self._api.run(t["run_id"]))
            except KeyError:
                continue
        return out

    def best_run(self, order: str | None = None) -> Any:
        """The best trial's run by the sweep's metric (as ``rlcockpit sweep --status`` reports it), or by
        ``order`` (W&B's ``"+summary_metrics.loss"`` form) over the runs' summaries; None when no trial has
        a value yet."""
        if order is not None:
            from rlcockpit.tracking.read.api_wandb import order_rows

            runs = {r.id: r for r in self.runs}
            rows = order_rows([r.to_dict() for r in runs.values()], order)
            return runs[rows[0]["id"]] if rows else None
        best = best_trial(self._cfg, self._trials)
        if best is None:
            return None
        try:
            return self._api.run(best["run_id"])
        except KeyError:
            return None

    def __repr__(self) -> str:
        return f"<Sweep {self.project}/{self.id} ({self.state})>"


def public_sweep(api: Any, path: str) -> PublicSweep:
    """The sweep ``path`` (an id, id prefix, ``project/id`` or ``entity/project/id``) of ``api``'s store."""
    state = SweepState(open_database(api.where))
    sweep = state.get(path)
    return PublicSweep(api, sweep, state.trials(sweep["id"]))
