"""The labelled-trace schema, its validation, the tuning/held-out split and the gzipped JSONL storage.

One trace is one JSON object (one line of ``<split>/<source>.jsonl.gz``)::

    {"id": "verl_synth-collapse-003", "source": "verl_synth", "class": "collapse",
     "onset": 140, "onset_method": "...", "split": "tuning", "naming": "verl",
     "config": {...}, "meta": {...},
     "metrics": [[step, {"key": value, ...}], ...],          # ascending steps, one entry per logged step
     "samples": [[step, [{"prompt": ..., "response": ..., "reward": ...}, ...]], ...]}

Non-finite values are stored as the strings ``"nan"``, ``"inf"``, ``"-inf"`` (strict JSON has no NaN) and turned
back into floats by :func:`load_corpus`. The split is a pure function of the ids: inside each (source, class)
group the ids are ranked by a seeded hash and alternate tuning/held-out, so the split is balanced per group and
no one chooses which trace lands where.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CLASSES = ("healthy", "collapse", "reward_hacking", "entropy_collapse", "loss_divergence", "grad_spike",
           "oom_creep", "low_gpu_util", "rollout_mismatch", "throughput_drop", "length_explosion")
# in the order the sources joined the corpus: the split walks groups in this order, so a source added at the end
# never moves a trace of an earlier source from one split to the other
SOURCES = ("verl_synth", "wandb_synth", "rlcockpit_trainer", "trl_grpo")
# raw run files imported through rlcockpit's importers (real/manifest.json, gen/real_runs.py): never in the
# tuning/held-out JSONL files, always held out
REAL_SOURCES = ("verl_console_public", "trl_state_public", "trl_cpu_settings",
                "rlcockpit_trainer_cpu", "verl_wandb_output_public", "grpo_loop_jsonl_public",
                "tinker_jsonl_public", "grpo_jsonl_public2", "tinker_jsonl_public2",
                "rlcockpit_trainer_cpu2", "trl_cpu_settings2", "rlcockpit_trainer_cpu3",
                "trl_cpu_settings3", "rlcockpit_trainer_cpu4", "trl_cpu_settings4",
                "verl_file_public", "trl_state_public3", "rlcockpit_trainer_cpu5",
                "trl_cpu_settings5", "trl_state_public8", "rlcockpit_trainer_cpu6",
                "trl_cpu_settings6", "trl_state_public9", "verl_keys_jsonl_public9",
                "tinker_jsonl_public9", "trl_console_public9", "trl_state_public10",
                "rlcockpit_trainer_cpu7", "trl_cpu_settings7", "trl_csv_public11",
                "verl_console_public11", "trl_console_public12", "verl_console_public12",
                "trl_csv_public13", "trl_state_public13", "rlcockpit_trainer_cpu8",
                "trl_cpu_settings8", "trl_state_public14", "rlcockpit_trainer_cpu9",
                "trl_cpu_settings9", "rlcockpit_trainer_cpu10", "trl_cpu_settings10",
                "rlcockpit_trainer_cpu11", "trl_cpu_settings11", "tinker_jsonl_public15",
                "rlcockpit_trainer_cpu12", "trl_cpu_settings12", "trl_cpu_settings13",
                "rlcockpit_trainer_cpu13", "rlcockpit_trainer_cpu14", "trl_cpu_settings14",
                "rlcockpit_trainer_cpu15", "trl_cpu_settings15", "rlcockpit_trainer_cpu16",
                "trl_cpu_settings16", "trl_cpu_settings17", "rlcockpit_trainer_cpu17",
                "trl_cpu_settings18",
                "tinker_jsonl_public18", "verl_file_public18",
                "grpo_jsonl_public18",
                "rlcockpit_trainer_cpu18", "verl_keys_jsonl_public19",
                "verl_csv_public19",
                "rlcockpit_trainer_cpu19", "trl_cpu_settings19")
SPLITS = ("tuning", "heldout")
NAMINGS = ("verl", "trl", "wandb", "seed", "custom")  # custom: a hand-written loop's own key names
SPLIT_SEED = "rlcockpit-detection-corpus-v1"
CORPUS_DIR = Path(__file__).resolve().parent.parent
REQUIRED = ("id", "source", "class", "onset", "onset_method", "split", "naming", "config", "meta", "metrics", "samples")
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class TraceError(ValueError):
    """A trace that breaks the schema; the message names the trace and the field."""


def split_hash(trace_id: str) -> str:
    return hashlib.sha256(f"{SPLIT_SEED}:{trace_id}".encode()).hexdigest()


def assign_splits(traces: Iterable[dict[str, Any]]) -> None:
    """Set ``trace["split"]``, ~50/50 stratified by (source, class): inside a group the ids are ordered by shape
    (the id without its number, so each shape with two or more traces lands in both splits) and then by
    :func:`split_hash`, and alternate tuning, held-out, ...; groups of odd size take turns giving the extra trace
    to tuning or to held-out (groups walked source by source in :data:`SOURCES` order, then by class), so the
    totals stay balanced too and a new source never moves the traces of the sources before it."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for t in traces:
        groups[(t["source"], t["class"])].append(t)
    odd = 0
    for key in sorted(groups, key=lambda g: (SOURCES.index(g[0]), g[1])):
        ranked = sorted(groups[key], key=lambda t: (t["id"].rsplit("-", 1)[0], split_hash(t["id"])))
        offset = 0
        if len(ranked) % 2:
            offset, odd = odd % 2, odd + 1
        for i, t in enumerate(ranked):
            t["split"] = SPLITS[(i + offset) % 2]


def _encode(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _decode(v: Any) -> Any:
    return _NONFINITE.get(v, v) if isinstance(v, str) else v


def encode_trace(t: dict[str, Any]) -> dict[str, Any]:
    out = dict(t)
    out["metrics"] = [[int(s), {k: _encode(float(v)) for k, v in m.items()}] for s, m in t["metrics"]]
    return out


def decode_trace(t: dict[str, Any]) -> dict[str, Any]:
    out = dict(t)
    out["metrics"] = [(int(s), {k: _decode(v) for k, v in m.items()}) for s, m in t["metrics"]]
    out["samples"] = [(int(s), rows) for s, rows in t.get("samples") or []]
    return out


def validate(t: dict[str, Any]) -> None:
    """Raise :class:`TraceError` naming the trace and field for anything the harness could misread."""
    tid = t.get("id", "<no id>")
    for key in REQUIRED:
        if key not in t:
            raise TraceError(f"trace {tid}: missing field {key!r}")
    if t["class"] not in CLASSES:
        raise TraceError(f"trace {tid}: class {t['class']!r} not in {CLASSES}")
    if t["source"] not in SOURCES + REAL_SOURCES:
        raise TraceError(f"trace {tid}: source {t['source']!r} not in {SOURCES + REAL_SOURCES}")
    if t["split"] not in SPLITS:
        raise TraceError(f"trace {tid}: split {t['split']!r} not in {SPLITS}")
    if t["naming"] not in NAMINGS:
        raise TraceError(f"trace {tid}: naming {t['naming']!r} not in {NAMINGS}")
    if (t["class"] == "healthy") != (t["onset"] is None):
        raise TraceError(f"trace {tid}: onset must be None exactly for healthy traces (got {t['onset']!r})")
    if not t["onset_method"]:
        raise TraceError(f"trace {tid}: onset_method is empty")
    steps = [s for s, _m in t["metrics"]]
    if len(steps) < (10 if t["source"] in REAL_SOURCES else 20):  # a real run may have stopped early
        raise TraceError(f"trace {tid}: only {len(steps)} logged steps")
    if any(b <= a for a, b in zip(steps, steps[1:])):
        raise TraceError(f"trace {tid}: metric steps are not strictly ascending")
    if t["onset"] is not None and not (steps[0] <= t["onset"] <= steps[-1]):
        raise TraceError(f"trace {tid}: onset {t['onset']} outside the logged steps {steps[0]}..{steps[-1]}")
    for s, m in t["metrics"]:
        for k, v in m.items():
            if not isinstance(k, str) or not isinstance(v, (int, float)) or isinstance(v, bool):
                raise TraceError(f"trace {tid}: step {s} key {k!r}: value {v!r} is not a number")
    for s, rows in t["samples"]:
        for i, r in enumerate(rows):
            if not {"prompt", "response", "reward"} <= set(r):
                raise TraceError(f"trace {tid}: samples at step {s} row {i} lack prompt/response/reward")


def write_corpus(traces: list[dict[str, Any]], root: Path = CORPUS_DIR) -> dict[str, int]:
    """Write every trace to ``root/<split>/<source>.jsonl.gz`` (sorted by id, reproducible bytes)."""
    by_file: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for t in traces:
        validate(t)
        by_file[(t["split"], t["source"])].append(t)
    sizes = {}
    for split in SPLITS:
        (root / split).mkdir(parents=True, exist_ok=True)
        for old in (root / split).glob("*.jsonl.gz"):
            old.unlink()
    for (split, source), items in sorted(by_file.items()):
        path = root / split / f"{source}.jsonl.gz"
        lines = [json.dumps(encode_trace(t), sort_keys=True, separators=(",", ":"), allow_nan=False)
                 for t in sorted(items, key=lambda t: t["id"])]
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as fh:
            fh.write(("\n".join(lines) + "\n").encode())
        sizes[str(path.relative_to(root))] = path.stat().st_size
    return sizes


def load_corpus(splits: Iterable[str] = SPLITS, root: Path = CORPUS_DIR) -> list[dict[str, Any]]:
    """All traces of ``splits``, decoded and validated; a trace found in the wrong directory is an error."""
    out = []
    for split in splits:
        if split not in SPLITS:
            raise TraceError(f"unknown split {split!r}; one of {SPLITS}")
        for path in sorted((root / split).glob("*.jsonl.gz")):
            with gzip.open(path, "rt") as fh:
                for n, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    t = decode_trace(json.loads(line))
                    validate(t)
                    if t["split"] != split:
                        raise TraceError(f"{path}:{n}: trace {t['id']} says split {t['split']!r}")
                    out.append(t)
    return out
