"""``rlcockpit import``: turn a finished run recorded elsewhere into a stored run.

The imported run is an ordinary run created with ``rlcockpit.init(..., health=True)``: every row goes
through the same writer thread and detectors as a live run, so ``diagnose``, ``explain``, the dashboard
and comparisons work the same. Keys are stored verbatim as the source logged them (TRL's ``kl``,
verl's ``actor/kl_loss``); aliases are resolved on read.

A single unusable record (a step beyond 2**63, a NaN step) is skipped and listed in ``result.problems``
and the run's ``meta["import_problems"]``; a bad value loses only its key (one warning). Samples that cannot
be read (a W&B table file missing or cut off) are listed the same way and recorded as a ``data_lost`` event
(``what: samples``, ``reason: source_damaged``) at their step; the metrics and the other samples are imported. A source that is
bad or cut off part-way is imported up to the bad part (TensorBoard files: around it); the result carries
the error (file and line or byte offset), the run's ``meta["import_error"]`` records it, and the
unreadable part is a ``data_lost`` event (``reason: source_damaged``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlcockpit.integrations.readers import (
    IMPORTERS,
    ImportOptions,
    RowProblem,
    SampleProblem,
    ValueLost,
    detect_kind,
    merge_config_file,
)
from rlcockpit.integrations.verl_files import SourceError
from rlcockpit.tracking.compat.reinit import OWN_RUN
from rlcockpit.tracking.write.values import BadStep, check_step

logger = logging.getLogger("rlcockpit")
FLUSH_EVERY = 5000  # rows; keeps the run's queue (bounded, drops when full) far from its limit
MAX_PROBLEMS = 100  # listed in meta; the count is exact


@dataclass
class ImportResult:
    run_id: str
    kind: str
    name: str
    project: str
    steps: int = 0
    sample_rows: int = 0
    skipped: int = 0
    values_lost: int = 0  # values left out of records that were kept (a line cut mid-pair), each in ``problems``
    findings: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how the source was read (e.g. where a console log's steps came from)

    @property
    def ok(self) -> bool:
        return self.error is None


def import_run(
    source: str,
    *,
    kind: str | None = None,
    project: str | None = None,
    name: str | None = None,
    dir: str | os.PathLike[str] | None = None,
    rollout_dir: str | None = None,
    run_id: str | None = None,
    tracking_uri: str | None = None,
    config_file: str | None = None,
    health: bool | Mapping[str, Any] = True,
    alerts: Any = None,
    logging_steps: int | None = None,
    source_run: str | None = None,
) -> ImportResult:
    """Import ``source`` (auto-detected unless ``kind``) into the store at ``dir``; see module docs.

    Raises ``FileNotFoundError``/``ValueError``/``KeyError`` when nothing can be read at all (no run is
    created then); a source that breaks part-way gives a run plus ``result.error``. ``logging_steps``: a console
    log's logging interval when the log prints no step (TRL/transformers console; see ``trl_console``).
    ``source_run``: the run to read from a W&B multi-run CSV export (see ``csv_history``; default: the first).
    """
    from rlcockpit import init

    if logging_steps is not None and logging_steps < 1:
        raise ValueError(f"logging_steps must be a positive number of steps, got {logging_steps}")
    opts = ImportOptions(rollout_dir=rollout_dir, run_id=run_id, tracking_uri=tracking_uri, logging_steps=logging_steps,
                         source_run=source_run)
    kind = IMPORTERS.canonical(kind) if kind else detect_kind(source, opts)
    imported = IMPORTERS.get(kind).read(source, opts)
    merge_config_file(imported, config_file)
    rows = iter(imported.rows)
    # read the first row before creating the run: a source that is unreadable from line 1 creates nothing
    early: list[str] = []
    try:
        first = next(rows, None)
        while isinstance(first, RowProblem):
            early.append(first)
            first = next(rows, None)
    except SourceError as exc:
        if exc.line is None or exc.line <= 1 or not early:
            raise ValueError(str(exc)) from None
        raise
    run = init(project=project or imported.project or kind, name=name or imported.name, config=imported.config,
               dir=dir, health=health, alerts=alerts, system_interval=None, capture_meta=False, reinit=OWN_RUN)
    source_meta = {"kind": kind, "path": str(source), **({"rollout_dir": rollout_dir} if rollout_dir else {})}
    notes = {"import_notes": imported.notes} if imported.notes else {}
    run.update_meta({**imported.meta, **notes, "source": source_meta, "imported": True})
    result = ImportResult(run_id=run.id, kind=kind, name=run.name, project=run.project, notes=list(imported.notes))
    for text in imported.notes:
        logger.warning("rlcockpit import: note: %s", text)
    for text in early:
        _problem(result, text)
    samples = iter(imported.samples)
    pending: tuple[int, list[dict[str, Any]]] | None = None

    def next_samples() -> tuple[int, list[dict[str, Any]]] | None:
        item = next(samples, None)
        while isinstance(item, SampleProblem):  # unreadable samples (a damaged table file): recorded, skipped
            _problem(result, item.text)
            run.report_loss("samples", [[item.step, item.step]], "source_damaged", item.text)
            item = next(samples, None)
        return item

    last: int | None = None
    went_back: list[tuple[int, int]] = []  # (the step stored last, the earlier step the source gave next)
    try:
        pending = next_samples()
        row = first
        while row is not None:
            if isinstance(row, RowProblem):
                _problem(result, row)
                row = next(rows, None)
                continue
            step, metrics = row
            try:
                step = check_step(step)
            except BadStep as exc:
                _problem(result, f"{source}: record skipped: {exc}")
                row = next(rows, None)
                continue
            while pending is not None and pending[0] <= step:  # samples of a step go with its metrics
                run.log_samples(pending[1], step=pending[0])
                result.sample_rows += len(pending[1])
                pending = next_samples()
            # after the steps went back, the step where they went back from is stored already: keep its first values
            if step < run.step or (went_back and step == last and went_back[-1][0] == step):
                result.skipped += 1  # a source that went back in steps (a restarted job): keep the first
                went_back.append((run.step, step))
            else:
                run.log(metrics, step=step)
                result.steps += 1  # records stored (an eval entry at a training step's step is a record of its own)
                last = step
                if result.steps % FLUSH_EVERY == 0:
                    run.flush(60)
            row = next(rows, None)
        while pending is not None:
            run.log_samples(pending[1], step=pending[0])
            result.sample_rows += len(pending[1])
            pending = next_samples()
    except SourceError as exc:
        result.error = str(exc)
        logger.warning("rlcockpit import: stopped early: %s", exc)
    if went_back:  # counted in skipped already: one message says what and why
        top, low = went_back[0]
        result.problems.append(f"{source}: the steps go back from {top} to {low} (a restarted or resumed job?): "
                               f"{len(went_back)} record(s) at steps already stored were skipped, the first "
                               "values kept")
        logger.warning("rlcockpit import: %s", result.problems[-1])
    if result.problems:
        run.update_meta({"import_problems": result.problems[:MAX_PROBLEMS], "import_problem_count": result.skipped,
                         "import_values_lost": result.values_lost})
    if result.error:
        run.update_meta({"import_error": result.error})
        last = max(run.step, 0)
        run.report_loss("metrics", [], "source_damaged", f"{result.error} (stored: up to step {last})")
    run.finish(0, reason=f"import stopped early: {result.error}" if result.error else None)
    result.findings = run.store.findings(run.id)
    return result


def _problem(result: ImportResult, text: str) -> None:
    """Record a problem of the source: a skipped record, or a value left out of a kept one (:class:`ValueLost`)."""
    if isinstance(text, ValueLost):
        result.values_lost += 1
    else:
        result.skipped += 1
    result.problems.append(text)
    if len(result.problems) <= 10:
        logger.warning("rlcockpit import: %s", text)
