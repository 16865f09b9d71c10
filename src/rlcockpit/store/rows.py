"""Row shapes every SQL store shares: how a finding, a sample row and a search pattern look on the way in and out.

SQLite and PostgreSQL differ in SQL dialect (placeholders, upserts, ``ILIKE``), not in what a row means; keeping
the row conversions here means a change to the sample or finding shape is made once for both stores (and for the
remote store, which forwards findings to the team server).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

from rlcockpit.store.batch import DataLoss


def finding_record(finding: Any) -> dict[str, Any]:
    """A finding (object with ``to_dict`` or a mapping) as a dict with an ``id``; the id is written back onto the
    object so the caller can refer to the stored finding later (resolve it, link an alert to it)."""
    d = finding.to_dict() if hasattr(finding, "to_dict") else dict(finding)
    d["id"] = d.get("id") or uuid.uuid4().hex[:12]
    if hasattr(finding, "id"):
        finding.id = d["id"]
    return d


def sample_dicts(rows: Iterable[tuple[Any, Any, Any, Any, Any, Any]]) -> list[dict[str, Any]]:
    """``(step, idx, prompt, response, reward, extra_json)`` rows as the sample dicts ``Store.samples`` returns
    (the extra columns a logger sent are merged back in)."""
    out = []
    for step, idx, prompt, response, reward, extra in rows:
        d = {"step": step, "idx": idx, "prompt": prompt, "response": response, "reward": reward}
        if extra:
            d.update(json.loads(extra))
        out.append(d)
    return out


def escape_like(text: str) -> str:
    """``text`` with LIKE's wildcards escaped (backslash is the escape character in both stores' queries)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def loss_increment(loss: DataLoss) -> int:
    """How much a data-loss record adds to the run's ``data_lost`` count: a loss with an id is an upsert that
    was already counted up to ``counted`` entries; a one-off loss counts at least one entry."""
    if getattr(loss, "id", None):
        return loss.entries - int(getattr(loss, "counted", 0) or 0)
    return max(loss.entries, 1)
