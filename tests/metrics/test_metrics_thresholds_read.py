"""Every threshold in the metric guide is read by code (issue 29, "one source of thresholds"): a ``thresholds:``
value that no detector, checkup, panel or advice reads through :func:`rlcockpit.metrics.guide.threshold` is a
second, silent copy of a number that the code keeps elsewhere, and the two drift apart (the guide said 10x for a
gradient spike while the detector warned at 6x; a GPU utilisation ``warn_below`` of 60 sat beside a detector using
50 and 70). The reads are found statically: every ``threshold(KEY, "name")`` call in ``src/rlcockpit`` with KEY a
string or a module-level constant of its module."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import rlcockpit
from rlcockpit.metrics.guide import all_entries, lookup

SRC = Path(rlcockpit.__file__).parent


def _module(path: Path):
    name = ".".join(("rlcockpit", *path.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__")
    return importlib.import_module(name)


def threshold_reads() -> set[tuple[str, str]]:
    """(canonical guide key, threshold name) of every ``threshold(...)`` call in the package."""
    reads: set[tuple[str, str]] = set()
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and len(node.args) == 2 and isinstance(node.args[1], ast.Constant)):
                continue
            if getattr(node.func, "id", getattr(node.func, "attr", None)) != "threshold":
                continue
            arg = node.args[0]
            key = arg.value if isinstance(arg, ast.Constant) else \
                getattr(_module(path), arg.id, None) if isinstance(arg, ast.Name) else None
            assert isinstance(key, str), f"{path.relative_to(SRC)}: threshold({ast.unparse(arg)}, ...) key not resolved"
            info = lookup(key)
            assert info is not None, f"{path.relative_to(SRC)}: threshold({key!r}) names no guide entry"
            reads.add((info.key, node.args[1].value))
    return reads


def test_every_guide_threshold_is_read_by_code():
    reads = threshold_reads()
    unread = sorted((e.key, name) for e in all_entries() for name in e.thresholds if (e.key, name) not in reads)
    assert unread == []


def test_the_static_scan_sees_the_known_reads():
    reads = threshold_reads()  # a scan that found nothing would pass the test above vacuously
    assert ("actor/pg_clipfrac", "warn_above") in reads
    assert ("actor/grad_norm", "spike_factor") in reads
    assert len(reads) >= 20
