"""TensorBoard sink: scalars via ``SummaryWriter.add_scalar``, samples and findings as text.

Event files go to ``<store>/tensorboard/<run id>/`` (or ``logger_options={"tensorboard": {"log_dir": ...}}``),
so ``tensorboard --logdir <store>/tensorboard`` shows every run of a store side by side.
``torch.utils.tensorboard`` is preferred (it ships with torch); ``tensorboardX`` is the fallback.
Keys are written verbatim: TensorBoard accepts any tag string.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlcockpit.tracking.media.images import sample_images
from rlcockpit.tracking.sinks.base import SINKS, MetricRows, MissingExtra, RunInfo, Sink

MAX_TEXT_ROWS = 64  # samples shown per step in the text tab; the store keeps all of them
MAX_CELL_CHARS = 2000


def _summary_writer_class() -> type:
    try:
        from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package too

        return SummaryWriter
    except ImportError:
        pass
    try:
        from tensorboardX import SummaryWriter

        return SummaryWriter
    except ImportError:
        raise MissingExtra("tensorboard", "tensorboard", "tensorboard") from None


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text[:MAX_CELL_CHARS].replace("|", "\\|").replace("\n", "<br>")
    return text


def samples_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """A markdown table of sample rows (TensorBoard's text plugin renders markdown)."""
    columns: list[str] = []
    for row in rows[:MAX_TEXT_ROWS]:
        columns.extend(k for k in row if k not in columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows[:MAX_TEXT_ROWS]:
        lines.append("| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |")
    if len(rows) > MAX_TEXT_ROWS:
        lines.append(f"\n({len(rows) - MAX_TEXT_ROWS} more rows in the rlcockpit store)")
    return "\n".join(lines)


@SINKS.register("tensorboard", "tb")
class TensorBoardSink(Sink):
    name = "tensorboard"

    def open(self, run: RunInfo) -> None:
        writer_cls = _summary_writer_class()
        opts = dict(run.options.get(self.name) or {})
        log_dir = opts.pop("log_dir", None)
        self.log_dir = Path(log_dir) if log_dir else run.sink_dir(self.name)
        self._store_dir = run.dir
        self.log_dir.mkdir(parents=True, exist_ok=True)
        opts.setdefault("flush_secs", 10)
        self.writer = writer_cls(log_dir=str(self.log_dir), **opts)
        if run.config and not run.resumed:
            self.writer.add_text("config", "```json\n" + json.dumps(run.config, indent=2, default=str) + "\n```", 0)

    def log_metrics(self, rows: MetricRows) -> None:
        add = self.writer.add_scalar
        for step, ts, data in rows:
            for key, value in data.items():
                add(key, value, step, walltime=ts)

    def log_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        if rows:
            self.writer.add_text("samples", samples_markdown(rows), step)
            for tag, image, _ in sample_images(self._store_dir, rows):  # images as TensorBoard images (HWC)
                self.writer.add_image(tag, np.asarray(image.convert("RGB")), step, dataformats="HWC")

    def log_finding(self, finding: Any) -> None:
        d = finding.to_dict() if hasattr(finding, "to_dict") else dict(finding)
        text = f"**[{d.get('severity', '?')}] {d.get('detector', '?')}**: {d.get('title', '')}"
        self.writer.add_text("findings", text, int(d.get("step") or 0))

    def flush(self) -> None:
        self.writer.flush()

    def close(self, status: str, exit_code: int | None) -> None:
        self.writer.add_text("status", f"{status} (exit code {exit_code})", 0)
        self.writer.close()
