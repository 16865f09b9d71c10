"""The validation probe set: the same few validation prompts, answered at every validation.

The dashboard's "prompt across steps" view needs the *same* prompts at many steps; training samples are
a fresh batch each step. Validation rows come in a fixed order, so the first ``n`` validation samples
are the same prompts every time: they are stored as samples marked ``kind="probe"`` (and verl's
``split="val"``) with a stable ``probe_id``. ``trainer.log_val_generations`` (verl's key) sets ``n``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PROBE_KIND = "probe"


def probe_rows(samples: Sequence[Mapping[str, Any]], n: int) -> list[dict[str, Any]]:
    """The first ``n`` validation samples as probe rows; ``probe_id`` numbers the distinct prompts in order."""
    ids: dict[str, int] = {}
    rows = []
    for s in samples[: max(0, n)]:
        pid = ids.setdefault(str(s.get("prompt")), len(ids))
        rows.append({**s, "kind": PROBE_KIND, "split": "val", "probe_id": pid})
    return rows


def log_probes(run: Any, step: int, samples: Sequence[Mapping[str, Any]], n: int) -> None:
    """Store this validation's probe rows on ``run`` (nothing when ``n <= 0`` or there are no samples)."""
    rows = probe_rows(samples, n)
    if rows:
        run.log_samples(rows, step=step)
