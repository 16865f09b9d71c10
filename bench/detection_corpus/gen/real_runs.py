"""Raw run files made elsewhere (public repositories) or by real CPU runs, imported as a user would import them.

``bench/detection_corpus/real/manifest.json`` lists every file: where it came from (repository, commit, path),
the sha256 of its bytes, the importer that reads it (the ``rlcockpit import`` kind), its label (class, onset, how
the onset was read) and whether any detector was tuned on it. The files are stored gzipped; the sha256 is of the
decompressed bytes, i.e. of the file as retrieved.

:func:`load_real` decompresses each file under its original name into a temporary directory, reads it with the
registered importer (``rlcockpit.integrations.readers.IMPORTERS``, the readers ``rlcockpit import`` uses), and
turns the rows into a corpus trace (``corpus_schema`` format, split ``heldout``). :func:`clean_step_count`
counts the steps of the same bytes without rlcockpit (a regex over verl console lines or over the dicts a TRL
console log prints, ``json`` over a trainer_state.json, the ``csv`` module over a metric-history CSV), so an importer that drops steps shows up as a mismatch.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from corpus_schema import CLASSES, NAMINGS, REAL_SOURCES, TraceError, validate

REAL_DIR = Path(__file__).resolve().parent.parent / "real"
MANIFEST = REAL_DIR / "manifest.json"
ENTRY_FIELDS = ("id", "source", "file", "sha256", "bytes", "kind", "naming", "origin", "class", "onset",
                "onset_method", "tuned_on")
# a verl console metrics line: "step:N - key:value - ..." (after any "(TaskRunner pid=..)" prefix); written
# independently of rlcockpit's parser on purpose
_VERL_STEP = re.compile(r"(?:^|[\s)])step:(\d+) - \S")
# a verl file-logger record ({"step": N, "data": {...}} per line, trainer.logger=['file']), found without a JSON parser
_VERL_FILE_STEP = re.compile(r'^\{"step":\s*(\d+),\s*"data":\s*\{')
# the start of a dict a transformers Trainer printed (ProgressCallback/PrinterCallback), and its first key: the first
# value is a number, bare or quoted (transformers 5 prints every value as a string), so a dict in a warning
# ("Updated tokens: {'bos_token_id': None}") is not a training log
_TRL_CONSOLE_DICT = re.compile(r"\{'([^']+)': '?[-+]?(?:\d|\.\d|nan|inf)")
# a metrics JSONL record's step, found without a JSON parser
_JSONL_STEP = re.compile(r'^\{.*"step": (\d+)[,}]')


def manifest(path: Path = MANIFEST) -> list[dict[str, Any]]:
    """The manifest's entries, each checked for its fields (a missing one names the entry and field)."""
    entries = json.loads(path.read_text())["runs"]
    for e in entries:
        for key in ENTRY_FIELDS:
            if key not in e:
                raise TraceError(f"real run {e.get('id', '<no id>')}: manifest lacks {key!r}")
        if e["class"] not in CLASSES or e["naming"] not in NAMINGS or e["source"] not in REAL_SOURCES:
            raise TraceError(f"real run {e['id']}: class {e['class']!r} / naming {e['naming']!r} / source "
                             f"{e['source']!r} unknown")
        if not {"repository", "commit", "path"} <= set(e["origin"]):
            raise TraceError(f"real run {e['id']}: origin needs repository, commit and path")
    return entries


def raw_bytes(entry: dict[str, Any]) -> bytes:
    """The file as retrieved (decompressed), after checking its recorded sha256 and size."""
    data = gzip.decompress((REAL_DIR / entry["file"]).read_bytes())
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"] or len(data) != entry["bytes"]:
        raise TraceError(f"real run {entry['id']}: {entry['file']} has sha256 {digest} ({len(data)} bytes), "
                         f"manifest says {entry['sha256']} ({entry['bytes']} bytes)")
    return data


def clean_step_count(entry: dict[str, Any], data: bytes) -> int:
    """Distinct logged steps in the raw bytes, counted without rlcockpit's readers."""
    if entry["kind"] == "verl":  # a console log or a file-logger JSONL, the two shapes `rlcockpit import` reads
        steps = {int(m.group(1)) for line in data.decode("utf-8", errors="replace").splitlines()
                 if (m := _VERL_STEP.search(line) or _VERL_FILE_STEP.match(line))}
        return len(steps)
    if entry["kind"] == "trl":
        history = json.loads(data)["log_history"]
        return len({e["step"] for e in history if "step" in e and any(
            k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool) for k, v in e.items())})
    if entry["kind"] == "tensorboard":
        return len(_tensorboard_steps(data))
    if entry["kind"] == "trl-console":  # one step per training log: dicts not opening with eval_* or the summary
        return sum(1 for line in data.decode("utf-8", errors="replace").split("\n")
                   if (m := _TRL_CONSOLE_DICT.search(line)) and not m.group(1).startswith(("eval_", "train_runtime")))
    if entry["kind"] == "jsonl":
        return len({int(m.group(1)) for line in data.decode("utf-8").splitlines() if (m := _JSONL_STEP.match(line))})
    if entry["kind"] == "csv":  # a metric-history CSV (header row, a `step` column): rows with a number beside the step
        return len({int(row["step"]) for row in csv.DictReader(io.StringIO(data.decode("utf-8"), newline=""))
                    if (row.get("step") or "").isdigit() and any(_is_number(v) for k, v in row.items() if k != "step" and isinstance(v, str))})
    raise TraceError(f"real run {entry['id']}: no clean parser for kind {entry['kind']!r}")


def _is_number(cell: str | None) -> bool:
    try:
        float(cell or "")
    except ValueError:
        return False
    return True


def _tensorboard_steps(data: bytes) -> set[int]:
    """Steps with a scalar, read by TensorBoard's own event loader (not rlcockpit's record reader). The legacy
    loader yields the events as stored, without the read-time compat migration (simple_value -> tensor) that
    tripled the time and changes no count: both forms are counted below."""
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    with tempfile.TemporaryDirectory(prefix="corpus-tb-") as tmp:
        path = Path(tmp) / "events.out.tfevents.corpus"
        path.write_bytes(data)
        steps = set()
        for event in LegacyEventFileLoader(str(path)).Load():
            if any(v.HasField("simple_value") or v.HasField("tensor") and v.metadata.plugin_data.plugin_name == "scalars"
                   for v in event.summary.value):
                steps.add(int(event.step))
    return steps


def import_entry(entry: dict[str, Any], data: bytes) -> tuple[list[tuple[int, dict[str, float]]], dict[str, Any], list[str]]:
    """``(metrics by step, config, problems)`` as rlcockpit's importer reads the file; rows of one step merge
    (a TRL eval entry shares its step with the train entry), as they do in a stored run."""
    from rlcockpit.integrations.readers import IMPORTERS, ImportOptions, RowProblem
    from rlcockpit.integrations.verl_files import SourceError

    problems: list[str] = []
    by_step: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="corpus-real-") as tmp:
        path = Path(tmp) / Path(entry["origin"]["path"]).name
        path.write_bytes(data)
        imported = IMPORTERS.get(entry["kind"]).read(str(path), ImportOptions())
        try:
            for row in imported.rows:
                if isinstance(row, RowProblem):  # a ValueLost (a value left out of a kept record) keeps its type
                    problems.append(row)
                    continue
                step, metrics = row
                by_step.setdefault(int(step), {}).update({k: float(v) for k, v in metrics.items()})
        except SourceError as exc:
            problems.append(f"import stopped: {exc}")
    return sorted(by_step.items()), imported.config, problems


def load_real(entries: list[dict[str, Any]] | None = None, clean_counts: bool = True) -> list[dict[str, Any]]:
    """Every manifest run imported and turned into a held-out corpus trace; ``meta`` carries the step counts
    (``imported_steps``, ``clean_steps``) and any import problems. ``clean_counts=False`` leaves ``clean_steps``
    None: the clean parse is most of the load's time (TensorBoard's pure-Python record reader), and a caller that
    only replays the metrics does not read it."""
    from rlcockpit.integrations.readers import ValueLost

    out = []
    for e in manifest() if entries is None else entries:
        data = raw_bytes(e)
        metrics, config, problems = import_entry(e, data)
        lost = [str(p) for p in problems if isinstance(p, ValueLost)]
        problems = [str(p) for p in problems if not isinstance(p, ValueLost)]
        trace = {"id": e["id"], "source": e["source"], "class": e["class"], "onset": e["onset"],
                 "onset_method": e["onset_method"], "split": "heldout", "naming": e["naming"],
                 "config": e.get("config") or config, "metrics": metrics, "samples": [],
                 "meta": {"origin": e["origin"], "tuned_on": e["tuned_on"], "imported_steps": len(metrics),
                          "clean_steps": clean_step_count(e, data) if clean_counts else None, "import_problems": problems,
                          "values_lost": lost}}
        validate(trace)
        out.append(trace)
    return out
