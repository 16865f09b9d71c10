"""Helpers of a run's identity and row: the summary dict, config conversion, metadata, init errors."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlcockpit.store.base import StoreError, StoreUnavailable
from rlcockpit.tracking.entries import SummarySet


class Summary(dict):
    """``run.summary``: last value of every key, plus what you set (``run.summary["best"] = 0.9``)."""

    def __init__(self, run: Any) -> None:
        super().__init__()
        self._run = run

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self._run._put_internal(SummarySet({key: value}))

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        d = dict(*args, **kwargs)
        super().update(d)
        self._run._put_internal(SummarySet(d))

    def _refresh(self, values: Mapping[str, Any]) -> None:
        for k, v in values.items():
            dict.__setitem__(self, k, v)


def _config_to_dict(config: Any) -> dict[str, Any]:
    if config is None:
        return {}
    if type(config).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(config, resolve=True)  # type: ignore[return-value]
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    if isinstance(config, Mapping):
        return dict(config)
    if hasattr(config, "to_dict"):
        return config.to_dict()
    return dict(vars(config))


def _init_error(exc: StoreError, dir: Path) -> StoreError:
    """The same store error, saying that ``init`` could not start and what to do."""
    text = f"rlcockpit.init: cannot use the store at {dir}: {exc}"
    if isinstance(exc, StoreUnavailable):
        if exc.reason == "full":
            text += " — free some space, or pass another dir="
        return exc.with_message(text)
    return StoreError(exc.errno, text)


def _safe_meta(capture: bool) -> dict[str, Any]:
    from rlcockpit.tracking.meta import collect_meta

    try:
        return collect_meta(capture_git=capture)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"metadata capture failed: {exc}"}
