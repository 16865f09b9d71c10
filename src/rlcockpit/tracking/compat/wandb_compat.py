"""What a W&B script expects of ``import rlcockpit as wandb`` beyond ``init/log/finish``.

Why a module of its own: the run object only tracks; the W&B habits — ``wandb.config.lr`` and
``config.update(...)``, ``define_metric(..., summary="max")``, ``init(job_type=, entity=, mode=, reinit=)``,
``mode="disabled"`` on non-zero ranks — are translated here into the run's own entries, so a W&B example
script runs unchanged and what it sets is stored, never dropped on the floor.
"""

from __future__ import annotations

import fnmatch
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from rlcockpit.redact import redact
from rlcockpit.tracking.init_args import safe_config, safe_fields

logger = logging.getLogger("rlcockpit")

#: ``wandb.init`` arguments that mean nothing offline: accepted so W&B scripts run unchanged.
NO_EFFECT_INIT_ARGS = frozenset({
    "settings", "save_code", "anonymous", "force", "allow_val_change", "magic", "monitor_gym",
    "sync_tensorboard", "tensorboard", "resume_from", "fork_from", "dir_", "quiet",
})
SUMMARY_OPS = ("min", "max", "mean", "first", "last", "none", "copy", "best")


class Config(dict):
    """``run.config``: a dict that also reads and writes as attributes (``wandb.config.lr``), and whose changes
    (``config.update(...)``, ``config["k"] = v``, ``config.k = v``) are stored with the run, in order."""

    def __init__(self, data: Mapping[str, Any] | None = None, run: Any = None) -> None:
        super().__init__(data or {})
        object.__setattr__(self, "_run", run)

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__"):
            raise AttributeError(key)
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"run.config has no key {key!r} (keys: {', '.join(map(str, self)) or 'none'})"
                                 ) from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __delattr__(self, key: str) -> None:
        del self[key]

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self._changed()

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._changed()

    def update(self, *args: Any, allow_val_change: bool | None = None, **kwargs: Any) -> None:  # type: ignore[override]
        """As ``wandb.config.update``: a dict, an ``argparse.Namespace`` or any object with ``__dict__``."""
        from rlcockpit.tracking.runinfo import config_to_dict

        for arg in args:
            super().update(config_to_dict(arg) if not isinstance(arg, Mapping) else arg)
        super().update(kwargs)
        self._changed()

    def setdefaults(self, values: Mapping[str, Any]) -> None:
        """As ``wandb.config.setdefaults``: set the keys not set yet (a sweep's values win)."""
        super().update({k: v for k, v in dict(values).items() if k not in self})
        self._changed()

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def as_dict(self) -> dict[str, Any]:
        return dict(self)

    def _changed(self) -> None:
        run = self._run
        if run is not None:
            clean = redact(safe_config(self))  # a surrogate or NUL no store accepts would lose the whole batch
            dict.clear(self)
            dict.update(self, clean)
            run._config_changed()


class MetricDef(NamedTuple):
    """One ``define_metric`` call: ``name`` may end with ``*`` (a prefix glob, as in W&B)."""

    name: str
    step_metric: str | None
    summary: tuple[str, ...] | None
    goal: str | None
    hidden: bool | None
    step_sync: bool | None = None

    def syncs_to(self, key: str) -> str | None:
        """The step metric W&B inserts into a ``log()`` row with ``key`` that lacks it (``step_sync``, on
        by default when ``step_metric`` is set), else None."""
        if self.step_metric and self.step_sync is not False and key != self.step_metric and self.matches(key):
            return self.step_metric
        return None

    def matches(self, key: str) -> bool:
        return fnmatch.fnmatchcase(key, self.name) if self.name.endswith("*") else key == self.name

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in {"step_metric": self.step_metric, "summary": list(self.summary or ()) or None,
                                  "goal": self.goal, "hidden": self.hidden}.items() if v is not None}


def metric_def(name: Any, step_metric: Any = None, summary: Any = None, goal: Any = None,
               hidden: Any = None, step_sync: Any = None) -> MetricDef:
    """Validate a ``define_metric`` call the way W&B does (``ValueError`` naming the bad argument)."""
    if not isinstance(name, str) or not name:
        raise ValueError("define_metric() needs a non-empty metric name")
    if "*" in name[:-1]:
        raise ValueError(f"define_metric() name {name!r}: only a trailing '*' glob is supported (as in W&B)")
    if step_metric is not None and not isinstance(step_metric, str):
        step_metric = getattr(step_metric, "name", None)
        if not isinstance(step_metric, str):
            raise ValueError("define_metric() step_metric must be a metric name")
    ops: tuple[str, ...] | None = None
    if summary is not None:
        if not isinstance(summary, str):
            raise ValueError(f"define_metric() summary must be text such as 'max' or 'min,max', got {summary!r}")
        ops = tuple(s.strip().lower() for s in summary.split(",") if s.strip())
        bad = [s for s in ops if s not in SUMMARY_OPS]
        if bad:
            raise ValueError(f"define_metric() summary {bad[0]!r} is not one of {', '.join(SUMMARY_OPS)}")
    if goal is not None and goal not in ("minimize", "maximize"):
        raise ValueError(f"define_metric() goal must be 'minimize' or 'maximize', got {goal!r}")
    if ops and "best" in ops and goal is None:
        raise ValueError("define_metric() summary 'best' needs goal='minimize' or 'maximize'")
    if step_sync is not None and not isinstance(step_sync, bool):
        raise ValueError(f"define_metric() step_sync must be True or False, got {step_sync!r}")
    return MetricDef(name, step_metric, ops, goal, hidden, step_sync)


class Aggregates:
    """Per-key min / max / mean / first of the values logged so far, for the keys a ``define_metric`` summary
    names (kept on the writer thread; NaN and ±Inf are left out of min, max and mean, as evidence elsewhere)."""

    def __init__(self) -> None:
        self.defs: list[MetricDef] = []
        self.syncing = False  # some def has a step metric with step_sync on
        self._ops: dict[str, tuple[str, ...] | None] = {}  # key -> the summary ops of the newest matching def
        self._goal: dict[str, str | None] = {}
        self.state: dict[str, list[float]] = {}  # key -> [min, max, sum, count, first]

    def add(self, d: MetricDef) -> None:
        self.defs.append(d)
        self.syncing = self.syncing or bool(d.step_metric and d.step_sync is not False)
        self._ops.clear()
        self._goal.clear()

    def ops(self, key: str) -> tuple[str, ...] | None:
        if key not in self._ops:
            found = [d for d in self.defs if d.summary is not None and d.matches(key)]
            self._ops[key] = found[-1].summary if found else None
            self._goal[key] = found[-1].goal if found else None
        return self._ops[key]

    def update(self, key: str, values: Sequence[float]) -> None:
        if not self.defs or self.ops(key) is None:
            return
        st = self.state.get(key)
        for v in values:
            v = float(v)
            if st is None:
                st = self.state[key] = [math.inf, -math.inf, 0.0, 0.0, v]
            if math.isfinite(v):
                st[0] = min(st[0], v)
                st[1] = max(st[1], v)
                st[2] += v
                st[3] += 1

    def apply(self, summary: dict[str, Any]) -> dict[str, Any]:
        """The summary with each defined key replaced by W&B's nested form (``{"loss": {"min": 0.1}}``)."""
        if not self.defs:
            return summary
        out = dict(summary)
        for key in list(summary):
            ops = self.ops(key)
            if not ops or ops == ("copy",):
                continue
            if "none" in ops:
                del out[key]
                continue
            st, last = self.state.get(key), summary[key]
            agg: dict[str, Any] = {}
            for op in ops:
                if op == "last" or op == "copy":
                    agg["last"] = last
                elif st is None:
                    continue
                elif op == "first":
                    agg["first"] = st[4]
                elif st[3] and op in ("min", "max", "mean"):
                    agg[op] = {"min": st[0], "max": st[1], "mean": st[2] / st[3]}[op]
                elif st[3] and op == "best":
                    agg["best"] = st[0] if self._goal.get(key) == "minimize" else st[1]
            out[key] = agg
        return out


def step_sync_points(defs: Sequence[MetricDef], columns: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    """W&B's ``step_sync`` for one batch of metric columns (key -> (steps, values, timestamps) arrays):
    each step metric S gets, at every step where a key synced to S was logged and S was not, the value of S
    logged last at or before that step (``last``: values before this batch). Returns S -> its new column."""
    import numpy as np

    wanted: dict[str, set[int]] = {}
    stamps: dict[tuple[str, int], float] = {}
    for key, (steps, _values, ts) in columns.items():
        sync = next((d.syncs_to(key) for d in reversed(defs) if d.matches(key)), None)
        if sync is None:
            continue
        lacking = ~np.isin(steps, columns[sync][0]) if sync in columns else np.ones(len(steps), bool)
        for step, t in zip(steps[lacking].tolist(), ts[lacking].tolist()):
            wanted.setdefault(sync, set()).add(step)
            stamps.setdefault((sync, step), t)
    out: dict[str, Any] = {}
    for sync, steps_wanted in wanted.items():
        col = columns.get(sync)
        new_steps, new_values, new_ts = [], [], []
        for step in sorted(steps_wanted):
            value = last.get(sync)
            if col is not None:
                before = np.nonzero(col[0] <= step)[0]
                if len(before):
                    value = col[1][before[-1]]
            if isinstance(value, (int, float, np.number)):
                new_steps.append(step)
                new_values.append(float(value))
                new_ts.append(stamps[(sync, step)])
        if not new_steps:
            continue
        merged = [np.asarray(new_steps, dtype=np.int64), np.asarray(new_values, dtype=np.float64), np.asarray(new_ts)]
        if col is not None:
            merged = [np.concatenate([c, m]) for c, m in zip(col, merged)]
            order = np.argsort(merged[0], kind="stable")
            merged = [m[order] for m in merged]
        out[sync] = tuple(merged)
    return out


class DisabledRun:
    """``init(mode="disabled")``: W&B's do-nothing run (for non-zero ranks, debugging): every call is accepted
    and nothing is stored, so a script needs no ``if rank == 0`` around its logging."""

    disabled = True
    id = name = project = group = entity = job_type = notes = url = None
    step = -1
    resumed = False
    dropped = 0

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.config = Config(config)
        self.summary: dict[str, Any] = {}
        self.tags: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None

    def finish(self, *args: Any, **kwargs: Any) -> None:
        from rlcockpit.tracking import run as run_module

        if run_module._current is self:
            run_module._current = None

    def __enter__(self) -> DisabledRun:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.finish()

    def __repr__(self) -> str:
        return "<rlcockpit.DisabledRun>"


def check_init_args(extra: Mapping[str, Any]) -> None:
    """``TypeError`` for an ``init`` argument neither rlcockpit nor W&B has (a typo), naming it."""
    unknown = sorted(set(extra) - NO_EFFECT_INIT_ARGS - {"config_exclude_keys", "config_include_keys"})
    if unknown:
        raise TypeError(f"init() got an unexpected keyword argument {unknown[0]!r}")
    if extra.get("sync_tensorboard") or extra.get("tensorboard"):
        # W&B copies TensorBoard scalars into the run; nothing does here, so say where they are to be found
        logger.warning("rlcockpit: init(sync_tensorboard=True): TensorBoard scalars are not copied into the run "
                       "while it trains; import them afterwards with `rlcockpit import <tensorboard log dir>`")


def filter_config(config: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """W&B's ``config_include_keys`` / ``config_exclude_keys``."""
    include, exclude = extra.get("config_include_keys"), extra.get("config_exclude_keys")
    if include:
        config = {k: v for k, v in config.items() if k in set(include)}
    if exclude:
        config = {k: v for k, v in config.items() if k not in set(exclude)}
    return config


def normalize_resume(resume: Any, id: str | None) -> Any:
    """W&B's ``resume`` values: ``True`` is ``"auto"``, ``False``/``"never"`` is a new run; with ``id=``, the
    modes ``allow``/``must``/``auto`` resume that id (``("id", id, mode)``) — W&B's preempted-job pattern."""
    if resume is True:
        resume = "auto"
    if resume is False or resume is None:
        return None
    if id is not None and resume in ("allow", "must", "auto", "never"):
        return ("id", id, resume)
    return resume


class WandbRunMethods:
    """The parts of W&B's ``Run`` a script calls besides ``log``: ``define_metric``, ``config`` changes,
    ``entity`` / ``job_type`` / ``path`` / ``url``, and the cloud-only calls (``save``, ``watch``,
    ``log_code``, ``mark_preempting``), which are accepted and do nothing offline."""

    meta: dict[str, Any]
    _sweep_id: str | None = None

    def define_metric(self, name: str, step_metric: Any = None, step_sync: bool | None = None,
                      hidden: bool | None = None, summary: str | None = None, goal: str | None = None,
                      overwrite: bool | None = None) -> MetricDef:
        """As ``wandb.define_metric``: ``summary="min"|"max"|"mean"|"first"|"last"|"best"|"none"`` (comma
        separated for several) makes the run summary's value for the key W&B's nested form, e.g.
        ``summary["val/loss"] == {"min": 0.12}``; ``step_metric`` is recorded in ``meta["metrics"]`` (the
        chart's x axis in W&B) and, unless ``step_sync=False``, its last value is stored at each step where a
        matching key was logged without it (W&B's ``step_sync``). Raises ``ValueError`` for a bad argument, as W&B raises its ``Error``."""
        from rlcockpit.tracking.write.entries import DefineMetric

        d = metric_def(name, step_metric, summary, goal, hidden, step_sync)
        self._put_internal(DefineMetric(d))  # type: ignore[attr-defined]
        metrics = dict(self.meta.get("metrics") or {})
        metrics[d.name] = {**({} if overwrite else metrics.get(d.name, {})), **d.to_json()}
        self.meta["metrics"] = metrics
        self.update_meta({"metrics": metrics})  # type: ignore[attr-defined]
        return d

    def _config_changed(self) -> None:
        from rlcockpit.tracking.write.entries import ConfigSet

        self._put_internal(ConfigSet(dict(self.config)))  # type: ignore[attr-defined]

    # name, tags, notes and group are run columns: W&B scripts set them after init (``wandb.run.name = ...`` in
    # sweep programs, ``run.tags = run.tags + ("release_candidate",)`` in W&B's tags guide); each change is
    # queued in order with the data, so the stored run shows it (the other loggers keep the name they opened with)
    @property
    def name(self) -> str:
        return self._fields["name"]  # type: ignore[attr-defined]

    @name.setter
    def name(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise TypeError(f"run.name must be a non-empty str, got {value!r}")
        self._set_fields(name=value)

    @property
    def tags(self) -> tuple[str, ...]:
        """A tuple, as in W&B (so ``run.tags + ("x",)`` works); assign a new sequence to change them."""
        return self._fields["tags"]  # type: ignore[attr-defined]

    @tags.setter
    def tags(self, value: Sequence[str]) -> None:
        if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(t, str) for t in value):
            raise TypeError(f"run.tags must be a sequence of str, got {value!r}")
        self._set_fields(tags=tuple(value))

    @property
    def notes(self) -> str | None:
        return self._fields["notes"]  # type: ignore[attr-defined]

    @notes.setter
    def notes(self, value: str | None) -> None:
        if value is not None and not isinstance(value, str):
            raise TypeError(f"run.notes must be a str or None, got {value!r}")
        self._set_fields(notes=value)

    @property
    def group(self) -> str | None:
        return self._fields["group"]  # type: ignore[attr-defined]

    @group.setter
    def group(self, value: str | None) -> None:
        if value is not None and not isinstance(value, str):
            raise TypeError(f"run.group must be a str or None, got {value!r}")
        self._set_fields(group=value)

    def _set_fields(self, **fields: Any) -> None:
        from rlcockpit.tracking.write.entries import RunFieldsSet

        self._fields.update(fields)  # type: ignore[attr-defined]
        stored = safe_fields(fields)  # surrogates/NULs replaced, secrets masked (as at init)
        self._put_internal(RunFieldsSet(stored))  # type: ignore[attr-defined]

    @property
    def start_time(self) -> float:
        """Unix time the run was created (W&B's ``run.start_time``)."""
        return self._start_time  # type: ignore[attr-defined]

    @property
    def sweep_id(self) -> str | None:
        """The sweep this run is a trial of (set when ``init`` claimed an agent's trial), else None."""
        return self._sweep_id

    @property
    def offline(self) -> bool:
        """Always True: nothing is sent anywhere (a team server is a store, not W&B's cloud)."""
        return True

    @property
    def entity(self) -> str | None:
        return self.meta.get("entity")

    @property
    def job_type(self) -> str | None:
        return self.meta.get("job_type")

    @property
    def path(self) -> str:
        return f"{self.project}/{self.id}"  # type: ignore[attr-defined]

    @property
    def url(self) -> str:
        """Where the dashboard shows this run (``rlcockpit ui`` on its default port)."""
        return f"http://127.0.0.1:6007/#/run/{self.id}"  # type: ignore[attr-defined]

    def get_url(self) -> str:
        """W&B's older ``run.get_url()``: the run's dashboard page."""
        return self.url

    def get_project_url(self) -> str:
        """W&B's older ``run.get_project_url()``: the dashboard's runs page."""
        return "http://127.0.0.1:6007/#/runs"

    def get_sweep_url(self) -> str | None:
        """W&B's older ``run.get_sweep_url()``: the sweep's dashboard page (None outside a sweep)."""
        return f"http://127.0.0.1:6007/#/sweep/{self._sweep_id}" if self._sweep_id else None

    def log_model(self, path: Any, name: str | None = None, aliases: Sequence[str] | None = None) -> Any:
        """As W&B's ``run.log_model(path, name)``: a ``model`` artifact (default name ``run-<id>-<file name>``)."""
        import os

        default = f"run-{self.id}-{os.path.basename(os.path.normpath(str(path)))}"  # type: ignore[attr-defined]
        return self.log_artifact(path, name=name or default, type="model", aliases=aliases)  # type: ignore[attr-defined]

    def use_model(self, name: str) -> str:
        """As W&B's ``run.use_model("my-model:latest")``: mark it used and return the local path of its files."""
        return str(self.use_artifact(name).download())  # type: ignore[attr-defined]

    def save(self, *args: Any, **kwargs: Any) -> None:
        """W&B uploads files; the store keeps metrics, so this is accepted and does nothing (use log_artifact)."""

    def watch(self, *args: Any, **kwargs: Any) -> None:
        """W&B's gradient/parameter histograms hook: accepted, nothing is logged."""

    def log_code(self, *args: Any, **kwargs: Any) -> None:
        """The git commit and diff are captured at ``init`` already (``meta.git``)."""

    def mark_preempting(self) -> None:
        """Accepted: a resumed run continues at its last step + 1 anyway."""
