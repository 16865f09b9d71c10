"""Every metric name of the labelled detection corpus's tuning split (verl 0.9, TRL, W&B and seed-article key
names, real trainer and TRL runs) resolves through the metric guide; the harness reports both splits."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from rlcockpit.metrics import lookup

TUNING = Path(__file__).resolve().parents[2] / "bench" / "detection_corpus" / "tuning"


def test_every_tuning_corpus_metric_name_resolves():
    files = sorted(TUNING.glob("*.jsonl.gz"))
    assert len(files) >= 4
    names: set[str] = set()
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                for _step, metrics in json.loads(line)["metrics"]:
                    names.update(metrics)
    assert len(names) > 150
    assert sorted(n for n in names if lookup(n) is None) == []
