"""The layering rules of ARCHITECTURE.md, checked mechanically on the source (every import statement,
at module level or inside functions):

* the ground floor (``registry.py``, ``redact.py``, ``paths.py``) imports no rlcockpit module;
* ``store/`` imports only the store and the ground floor;
* ``tracking/`` imports only tracking, the store, the metric guide and the ground floor (never health,
  alerts, trainer, ui...): it knows observers and hooks through its registries;
* ``health/`` imports no trainer, tracking, alerts or ui code;
* nowhere is an import of our own modules (or an ``importlib.import_module`` call) wrapped in a
  ``try/except`` that catches ImportError: a broken sibling fails loudly (one deliberate exception: the
  verl plugin, which verl imports while ``import verl`` runs).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "rlcockpit"
GROUND = {"rlcockpit.registry", "rlcockpit.redact", "rlcockpit.paths"}
ALLOWED = {
    "store": {"rlcockpit.store", *GROUND},
    "tracking": {"rlcockpit.tracking", "rlcockpit.store", "rlcockpit.metrics", *GROUND},
}
# Guarded imports that are the point: verl imports this plugin while `import verl` runs, and a tracking
# add-on must never stop a training job from starting (it reports the failure on stderr instead).
GUARDED_ON_PURPOSE = {"rlcockpit.integrations.verl_plugin"}
FORBIDDEN = {
    "health": {"rlcockpit.trainer", "rlcockpit.tracking", "rlcockpit.alerts", "rlcockpit.ui", "rlcockpit.server",
               "rlcockpit.integrations", "rlcockpit.preflight"},
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    out = []
    package = module if module.endswith("__init__") else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.append((node.lineno, name))
            out += [(node.lineno, f"{name}.{a.name}") for a in node.names]  # ``from rlcockpit import health``
    return [(line, n) for line, n in out if n == "rlcockpit" or n.startswith("rlcockpit.")]


def _sources() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "static" not in p.parts)


def _under(name: str, prefixes: set[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _is_module(name: str) -> bool:
    """``from rlcockpit.x import y`` lists ``rlcockpit.x.y``; count it only when y is a module."""
    rel = Path(*name.split(".")[1:])
    return (SRC / rel).with_suffix(".py").exists() or (SRC / rel / "__init__.py").exists()


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_layering(path: Path) -> None:
    module = _module_name(path)
    area = module.split(".")[1] if "." in module else ""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for line, name in _imports(tree, module):
        if name != "rlcockpit" and not _is_module(name) and name.rsplit(".", 1)[0] != "rlcockpit":
            name = name.rsplit(".", 1)[0]  # an imported attribute: check the module it comes from
        if module in GROUND and name.startswith("rlcockpit"):
            bad.append((line, name))
        elif area in ALLOWED and not _under(name, ALLOWED[area]):
            bad.append((line, name))
        elif area in FORBIDDEN and _under(name, FORBIDDEN[area]):
            bad.append((line, name))
    assert not bad, f"{module} imports across the layering rules: {bad}"


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = []
    t = handler.type
    for n in ([t] if not isinstance(t, ast.Tuple) else t.elts) if t is not None else []:
        names.append(n.id if isinstance(n, ast.Name) else getattr(n, "attr", ""))
    return t is None or bool({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"} & set(names))


def _guarded(path: Path) -> list[tuple[int, str]]:
    module = _module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names_our_modules = any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("rlcockpit.")
                            for n in ast.walk(tree))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            body = ast.Module(body=node.body, type_ignores=[])
            bad += [(line, name) for line, name in _imports(body, module)]
            if names_our_modules:  # import_module of a name: ours when the file spells out our module paths
                bad += [(n.lineno, "importlib.import_module(...)") for n in ast.walk(body) if isinstance(n, ast.Call)
                        and isinstance(n.func, ast.Attribute) and n.func.attr == "import_module"]
    return bad


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_guarded_imports_of_our_own_modules(path: Path) -> None:
    module = _module_name(path)
    if module in GUARDED_ON_PURPOSE:
        return
    bad = _guarded(path)
    assert not bad, f"{module}: imports of rlcockpit modules must not be guarded (a broken module must fail loudly): {bad}"


def test_the_rules_catch_a_violation(tmp_path: Path) -> None:
    """The checker itself can fail: an upward import and a guarded import are both found."""
    tree = ast.parse("from rlcockpit.health.monitor import HealthMonitor\n"
                     "try:\n    import rlcockpit.alerts\nexcept ImportError:\n    pass\n")
    names = [n for _, n in _imports(tree, "rlcockpit.tracking.run")]
    assert "rlcockpit.health.monitor" in names and "rlcockpit.alerts" in names
    assert not all(_under(n, ALLOWED["tracking"]) for n in names)
