"""``Run.log``'s hot path inlines ``entries.metrics_cost`` (one call less per log): it must charge with the
constants of entries.py, not copies of their values, or the queue bound and the accounting drift apart the
day a constant changes."""

from __future__ import annotations

import ast
from pathlib import Path

import rlcockpit.tracking.run as run_module
from rlcockpit.tracking.write import entries


def test_run_log_charges_with_the_entries_constants() -> None:
    tree = ast.parse(Path(run_module.__file__).read_text(encoding="utf-8"))
    values = {entries.ENTRY_BYTES, entries.KEY_BYTES}
    copies = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) is int
              and n.value in values]
    assert not copies, f"tracking/run.py copies ENTRY_BYTES/KEY_BYTES as literals on lines {copies}"
    assert run_module.ENTRY_BYTES is entries.ENTRY_BYTES and run_module.KEY_BYTES is entries.KEY_BYTES
    assert run_module.ENTRY_BYTES + run_module.KEY_BYTES * 7 == entries.metrics_cost(7)
