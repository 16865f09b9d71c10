"""W&B's rich values for ``log()``: ``Table``, ``Histogram``, ``Image`` — what each becomes in the store.

Why: W&B scripts (and TRL's W&B logging) put these in ``log()`` dicts; without the classes such a script dies
on ``AttributeError`` at ``wandb.Table``, and a rejected value would lose the data. What is kept:

* ``Table`` → sample rows at the logged step (``run.log_samples``), one row per table row, plus a ``table``
  column with the logged key; a ``completion`` column (TRL's name) is also the ``response``; columns named
  ``step`` / ``idx`` become ``table_step`` / ``table_idx``.
* ``Histogram`` → four points: ``<key>/mean``, ``<key>/std``, ``<key>/min``, ``<key>/max``.
* ``Image`` → stored content-addressed beside the store, a sample row per image (see
  :mod:`rlcockpit.tracking.media.images`); the other media (``Html``, ``Video``...) → not stored: the key is rejected
  with one warning saying so.

The conversion runs on the writer thread (the training thread only copies the dict, as for any value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlcockpit.tracking.media.images import Image, ImageList, is_image_list

__all__ = ["Audio", "Histogram", "Html", "Image", "Molecule", "Object3D", "Table", "Video"]


class Table:
    """``wandb.Table(columns=[...], data=[[...], ...])``, ``Table(dataframe=df)``; ``add_data(*values)``."""

    _rlcockpit_media = "table"
    #: set once any Table exists: only then does ``run.log`` look for tables to snapshot (the hot path of a
    #: script without tables stays a dict copy)
    in_use = False

    def __init__(self, columns: Sequence[str] | None = None, data: Sequence[Sequence[Any]] | None = None,
                 rows: Sequence[Sequence[Any]] | None = None, dataframe: Any = None,
                 log_mode: str | None = None, **_: Any) -> None:
        Table.in_use = True
        if log_mode not in (None, "IMMUTABLE", "MUTABLE", "INCREMENTAL"):
            raise ValueError(f"Table(log_mode={log_mode!r}): expected 'IMMUTABLE', 'MUTABLE' or 'INCREMENTAL'")
        self.log_mode = log_mode or "IMMUTABLE"
        self._logged_rows = 0  # INCREMENTAL: rows already logged
        if dataframe is not None:
            columns = [str(c) for c in dataframe.columns]
            data = dataframe.itertuples(index=False, name=None)
        rows_in = data if data is not None else rows
        self.data: list[list[Any]] = [list(r) for r in (rows_in or [])]
        if columns is None:
            width = max((len(r) for r in self.data), default=0)
            columns = [f"col{i}" for i in range(width)]
        self.columns: list[str] = [str(c) for c in columns]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        TABLE_TYPES.add(cls)

    def snapshot(self) -> Table:
        """The table as it is now, for ``log()``: rows logged later are not in it (a script that keeps adding
        rows to one table logs a growing table, as W&B does); an ``INCREMENTAL`` table gives only the rows added
        since it was last logged, as W&B logs it."""
        start = self._logged_rows if self.log_mode == "INCREMENTAL" else 0
        self._logged_rows = len(self.data)
        view = Table.__new__(Table)
        view.columns, view.data, view.log_mode, view._logged_rows = list(self.columns), [
            list(r) for r in self.data[start:]], self.log_mode, 0
        return view

    def add_data(self, *values: Any) -> None:
        if len(values) != len(self.columns):
            raise ValueError(f"Table.add_data: {len(values)} values for {len(self.columns)} columns {self.columns}")
        self.data.append(list(values))

    def add_column(self, name: str, data: Sequence[Any]) -> None:
        if self.data and len(data) != len(self.data):
            raise ValueError(f"Table.add_column {name!r}: {len(data)} values for {len(self.data)} rows")
        self.columns.append(str(name))
        if not self.data:
            self.data = [[] for _ in data]
        for row, v in zip(self.data, data):
            row.append(v)

    def get_column(self, name: str) -> list[Any]:
        i = self.columns.index(name)
        return [r[i] for r in self.data]

    def get_dataframe(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.data, columns=self.columns)

    def sample_rows(self, key: str) -> list[dict[str, Any]]:
        """The table as sample rows (see the module docstring)."""
        out = []
        for r in self.data:
            # "step" and "idx" name the sample's own place in the store: a table's columns of those names
            # (TRL's completions table has "step") are kept as "table_step" / "table_idx"
            row = {(f"table_{c}" if c in ("step", "idx") else c): _plain(v) for c, v in zip(self.columns, r)}
            if "response" not in row and "completion" in row:
                row["response"] = row["completion"]
            row.setdefault("table", key)
            out.append(row)
        return out

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"<rlcockpit.Table {len(self.data)} rows × {self.columns}>"


class Histogram:
    """``wandb.Histogram(sequence)`` or ``Histogram(np_histogram=(counts, bin_edges))``."""

    _rlcockpit_media = "histogram"

    def __init__(self, sequence: Any = None, np_histogram: Any = None, num_bins: int = 64) -> None:
        if np_histogram is not None:
            counts, edges = (np.asarray(a, np.float64) for a in np_histogram)
            mids = (edges[:-1] + edges[1:]) / 2
            total = counts.sum()
            mean = float((counts * mids).sum() / total) if total else math.nan
            std = float(np.sqrt((counts * (mids - mean) ** 2).sum() / total)) if total else math.nan
            nz = np.nonzero(counts)[0]
            lo = float(edges[nz[0]]) if nz.size else math.nan
            hi = float(edges[nz[-1] + 1]) if nz.size else math.nan
        else:
            values = np.asarray(_as_numpy(sequence), np.float64).ravel()
            values = values[np.isfinite(values)]
            mean, std = (float(values.mean()), float(values.std())) if values.size else (math.nan, math.nan)
            lo, hi = (float(values.min()), float(values.max())) if values.size else (math.nan, math.nan)
        self.num_bins = num_bins
        # an empty histogram logs nothing (a NaN would read as a non-finite metric to the detectors)
        self.stats = {"mean": mean, "std": std, "min": lo, "max": hi} if math.isfinite(mean) else {}

    def __repr__(self) -> str:
        return f"<rlcockpit.Histogram {self.stats}>"


class _OtherMedia:
    """W&B's other media (``Html``, ``Video``, ``Audio``, ``Object3D``, ``Molecule``): accepted so scripts run;
    not stored (the key is rejected, once, saying so)."""

    _rlcockpit_media = "media"

    def __init__(self, data_or_path: Any = None, *args: Any, caption: str | None = None, **_: Any) -> None:
        self.caption = caption


class Html(_OtherMedia):
    """``wandb.Html``."""


class Video(_OtherMedia):
    """``wandb.Video``."""


class Audio(_OtherMedia):
    """``wandb.Audio``."""


class Object3D(_OtherMedia):
    """``wandb.Object3D``."""


class Molecule(_OtherMedia):
    """``wandb.Molecule``."""


TABLE_TYPES: set[type] = {Table}  # Table and its subclasses (plot charts): what run.log snapshots


def _histogram_sized(value: Any) -> bool:
    """A numpy array or torch tensor of real numbers with more than 32 elements (W&B's histogram threshold)."""
    if isinstance(value, np.ndarray):
        return value.size > 32 and value.dtype.kind in "biuf"
    if type(value).__module__.startswith("torch") and hasattr(value, "numel"):
        real = value.dtype.is_floating_point or str(value.dtype).startswith(("torch.int", "torch.uint"))
        return value.numel() > 32 and real
    return False


def _as_numpy(value: Any) -> Any:
    if hasattr(value, "detach"):  # a torch tensor
        return value.detach().float().cpu().numpy()
    return value


def _plain(value: Any) -> Any:
    """A table cell as JSON can store it: numpy / torch scalars as numbers, small arrays as lists, media (an
    ``Html`` in a table) as a short ``[Html: caption]`` text instead of an object's repr; an ``Image`` stays
    itself (the writer stores it and puts its reference in the cell)."""
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "detach"):
        if getattr(value, "ndim", 1) == 0:
            return value.item()
        value = _as_numpy(value)
    if isinstance(value, np.ndarray):
        return value.tolist() if value.size <= 1024 else f"[array of shape {tuple(value.shape)}]"
    media = getattr(value, "_rlcockpit_media", None)
    if media == "image" or is_image_list(value):
        return value
    if media is not None and media != "table":
        caption = getattr(value, "caption", None)
        return f"[{type(value).__name__}: {caption}]" if caption else f"[{type(value).__name__}]"
    return value


def snapshot_tables(metrics: dict[Any, Any]) -> dict[Any, Any]:
    """``metrics`` with its top-level tables replaced by snapshots, in a new dict; ``metrics`` itself when it
    holds no table (run.log calls this while tables exist, and copies the dict anyway)."""
    if TABLE_TYPES.isdisjoint(map(type, metrics.values())):  # the common case, looped over in C
        return metrics
    out = metrics.copy()
    for k, v in metrics.items():
        if type(v) in TABLE_TYPES:
            out[k] = v.snapshot()
    return out


def split_media(step: int, ts: float, data: dict[str, Any], reject: Any) -> tuple[dict[str, Any], list[Any]]:
    """``data`` without its top-level W&B media values, and the tables found: ``(step, ts, key, Table)``.
    Histograms become their statistics (nested, so ``flatten`` names them ``key/mean``...), and so does a
    numeric array or tensor of more than 32 values, which W&B logs as a 32-bin histogram
    (``wandb.util.maybe_compress_history``); an image (or a list of images) is returned with the tables: it
    becomes sample rows (:meth:`Image.sample_rows`). Other media are rejected with one warning naming the key."""
    tables: list[Any] = []
    out: dict[str, Any] = {}
    for k, v in data.items():
        kind = getattr(v, "_rlcockpit_media", None) if not isinstance(v, (int, float)) else None
        if kind is None and is_image_list(v):
            kind, v = "table", ImageList(list(v))
        if kind is None and _histogram_sized(v):
            out[k] = dict(Histogram(v, num_bins=32).stats)
        elif kind is None:
            out[k] = v
        elif kind in ("table", "image"):
            tables.append((step, ts, k, v))
        elif kind == "histogram":
            out[k] = dict(v.stats)
        else:
            reject(repr(k), f"a {type(v).__name__} is not stored by rlcockpit (scalars, Tables and Histograms are)")
    return out, tables
