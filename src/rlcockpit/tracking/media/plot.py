"""``wandb.plot.*`` (``rlcockpit.plot``): W&B's preset charts, kept as the data table each one draws.

Why: W&B scripts log ``wandb.plot.line(table, "x", "y", title=...)``, ``plot.confusion_matrix(...)``... in
``log()``; without these functions the script dies on ``AttributeError`` at ``wandb.plot``. A W&B chart is a
Vega spec over a table, so what is worth keeping is the table: each function returns a :class:`Chart` (a
``Table`` that also records the chart kind, fields and title), and ``log({"key": chart})`` stores its rows as
sample rows at that step, as any logged ``Table`` (columns kept, ``table`` = the key). Tables are built with
the same columns W&B's presets build (wandb/plot/*.py), so a W&B user finds the data under the same names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rlcockpit.tracking.media.rich import Table

__all__ = ["Chart", "bar", "confusion_matrix", "histogram", "line", "line_series", "plot_table", "pr_curve",
           "roc_curve", "scatter"]


class Chart(Table):
    """A preset chart: its data table plus ``kind``, ``fields`` (chart role -> column) and ``title``."""

    def __init__(self, kind: str, table: Table, fields: Mapping[str, str], title: str | None = None) -> None:
        missing = [c for c in fields.values() if c not in table.columns]
        if missing:
            raise ValueError(f"plot.{kind}: column {missing[0]!r} is not in the table's columns {table.columns}")
        super().__init__(columns=list(table.columns), data=[list(r) for r in table.data])
        self.kind, self.fields, self.title = kind, dict(fields), title

    def __repr__(self) -> str:
        return f"<rlcockpit.plot.{self.kind} {self.title or ''!r} {len(self.data)} rows × {self.columns}>"


def _need_table(kind: str, table: Any) -> Table:
    if not isinstance(table, Table):
        raise TypeError(f"plot.{kind}: the first argument must be a Table, got {type(table).__name__}")
    return table


def line(table: Table, x: str, y: str, stroke: str | None = None, title: str = "", split_table: bool = False) -> Chart:
    fields = {"x": x, "y": y, **({"stroke": stroke} if stroke else {})}
    return Chart("line", _need_table("line", table), fields, title)


def scatter(table: Table, x: str, y: str, title: str = "", split_table: bool = False) -> Chart:
    return Chart("scatter", _need_table("scatter", table), {"x": x, "y": y}, title)


def bar(table: Table, label: str, value: str, title: str = "", split_table: bool = False) -> Chart:
    return Chart("bar", _need_table("bar", table), {"label": label, "value": value}, title)


def histogram(table: Table, value: str, title: str = "", split_table: bool = False) -> Chart:
    return Chart("histogram", _need_table("histogram", table), {"value": value}, title)


def plot_table(vega_spec_name: str, data_table: Table, fields: Mapping[str, str],
               string_fields: Mapping[str, Any] | None = None, split_table: bool = False) -> Chart:
    """``wandb.plot_table``: a custom Vega chart; its table is kept, the spec name is the chart's kind."""
    return Chart(str(vega_spec_name), _need_table("plot_table", data_table), fields,
                 (string_fields or {}).get("title"))


def line_series(xs: Sequence[Any], ys: Sequence[Sequence[Any]], keys: Sequence[str] | None = None,
                title: str = "", xname: str = "x", split_table: bool = False) -> Chart:
    """Several lines: one row per point, columns ``step`` (the x value), ``lineKey``, ``lineVal`` (W&B's)."""
    ys = [list(y) for y in ys]
    per_line_x = len(xs) > 0 and isinstance(xs[0], (list, tuple, np.ndarray))
    xs_all = [list(x) for x in xs] if per_line_x else [list(xs)] * len(ys)
    if len(xs_all) != len(ys):
        raise ValueError(f"plot.line_series: {len(xs_all)} x sequences for {len(ys)} lines")
    if keys is not None and len(keys) != len(ys):
        raise ValueError(f"plot.line_series: {len(keys)} keys for {len(ys)} lines")
    names = list(keys) if keys is not None else [f"key_{i}" for i in range(len(ys))]
    data = []
    for name, x, y in zip(names, xs_all, ys):
        if len(x) != len(y):
            raise ValueError(f"plot.line_series: line {name!r} has {len(x)} x values and {len(y)} y values")
        data += [[xv, name, yv] for xv, yv in zip(x, y)]
    table = Table(columns=["step", "lineKey", "lineVal"], data=data)
    return Chart("line_series", table, {"step": "step", "lineKey": "lineKey", "lineVal": "lineVal",
                                        "xname": "step"}, title)


def confusion_matrix(probs: Sequence[Sequence[float]] | None = None, y_true: Sequence[Any] | None = None,
                     preds: Sequence[Any] | None = None, class_names: Sequence[str] | None = None,
                     title: str = "Confusion Matrix Curve", split_table: bool = False) -> Chart:
    """Counts per (actual, predicted) class: columns ``Actual``, ``Predicted``, ``nPredictions`` (W&B's)."""
    if y_true is None:
        raise ValueError("plot.confusion_matrix: y_true is required")
    if (probs is None) == (preds is None):
        raise ValueError("plot.confusion_matrix: give exactly one of probs and preds")
    predicted = np.argmax(np.asarray(probs), axis=1).tolist() if probs is not None else list(preds or [])
    truth = list(y_true)
    if len(predicted) != len(truth):
        raise ValueError(f"plot.confusion_matrix: {len(truth)} labels for {len(predicted)} predictions")
    classes = sorted(set(truth) | set(predicted))
    if class_names is not None:
        bad = [c for c in classes if not isinstance(c, (int, np.integer)) or not 0 <= int(c) < len(class_names)]
        if bad:
            raise ValueError(f"plot.confusion_matrix: label {bad[0]!r} is not an index into class_names")
        classes = list(range(len(class_names)))
    counts = {(a, p): 0 for a in classes for p in classes}
    for a, p in zip(truth, predicted):
        counts[(a, p)] += 1
    name = (lambda c: class_names[int(c)]) if class_names is not None else str
    data = [[name(a), name(p), n] for (a, p), n in counts.items()]
    table = Table(columns=["Actual", "Predicted", "nPredictions"], data=data)
    return Chart("confusion_matrix", table, {"Actual": "Actual", "Predicted": "Predicted",
                                             "nPredictions": "nPredictions"}, title)


def _curve(kind: str, y_true: Sequence[Any], y_probas: Sequence[Sequence[float]], labels: Sequence[str] | None,
           classes_to_plot: Sequence[Any] | None) -> list[tuple[Any, np.ndarray, np.ndarray]]:
    from sklearn.metrics import precision_recall_curve
    from sklearn.metrics import roc_curve as sk_roc

    truth, probas = np.asarray(y_true), np.asarray(y_probas, dtype=np.float64)
    if probas.ndim != 2 or len(probas) != len(truth):
        raise ValueError(f"plot.{kind}: y_probas must be one row of class probabilities per label "
                         f"(got shape {probas.shape} for {len(truth)} labels)")
    classes = np.unique(truth)
    out = []
    for i, cls in enumerate(classes):
        if classes_to_plot is not None and cls not in classes_to_plot:
            continue
        hit = truth == cls
        if kind == "roc_curve":
            fpr, tpr, _ = sk_roc(hit, probas[:, i])
            out.append((labels[i] if labels is not None else cls.item(), fpr, tpr))
        else:
            precision, recall, _ = precision_recall_curve(hit, probas[:, i])
            out.append((labels[i] if labels is not None else cls.item(), precision, recall))
    return out


def roc_curve(y_true: Sequence[Any], y_probas: Sequence[Sequence[float]], labels: Sequence[str] | None = None,
              classes_to_plot: Sequence[Any] | None = None, title: str = "ROC Curve", split_table: bool = False
              ) -> Chart:
    """One row per curve point: ``class``, ``fpr``, ``tpr`` (W&B's columns)."""
    data = [[c, float(x), float(y)] for c, xs, ys in _curve("roc_curve", y_true, y_probas, labels, classes_to_plot)
            for x, y in zip(xs, ys)]
    return Chart("roc_curve", Table(columns=["class", "fpr", "tpr"], data=data), {"x": "fpr", "y": "tpr",
                                                                                  "class": "class"}, title)


def pr_curve(y_true: Sequence[Any], y_probas: Sequence[Sequence[float]], labels: Sequence[str] | None = None,
             classes_to_plot: Sequence[Any] | None = None, title: str = "Precision-Recall Curve",
             split_table: bool = False) -> Chart:
    """One row per curve point: ``class``, ``precision``, ``recall`` (W&B's columns; the points are
    scikit-learn's, W&B interpolates its own)."""
    data = [[c, float(x), float(y)] for c, xs, ys in _curve("pr_curve", y_true, y_probas, labels, classes_to_plot)
            for x, y in zip(xs, ys)]
    return Chart("pr_curve", Table(columns=["class", "precision", "recall"], data=data),
                 {"x": "recall", "y": "precision", "class": "class"}, title)
