"""The module map of docs/architecture.md (the team's sketch: ../shared/ARCHITECTURE.md), checked mechanically
on the source — every import statement, at module level or inside functions:

* the ground floor (``registry.py``, ``redact.py``, ``paths.py``, ``version.py``) imports no rlcockpit module;
* every other area imports only itself, the ground floor and the areas its row of :data:`MAY_IMPORT` names
  (one row per line of the map's table; the arrows the code needs that the sketch lacks are marked ``+``,
  each with its reason, and listed in docs/architecture.md's "Known gaps"); a module-sized exception is in
  :data:`MODULE_EXTRA`, with its reason, and must still be needed;
* no private name (``_x``) is imported from another module: a name used across modules is public;
* nowhere is an import of our own modules (or an ``importlib.import_module`` call) wrapped in a
  ``try/except`` that catches ImportError: a broken sibling fails loudly (one deliberate exception: the
  verl plugin, which verl imports while ``import verl`` runs).

Tracking never imports health or alerts (it knows observers and hooks through its registries), the trainer
never imports health (decisions come through the guardrail link) nor preflight (the wiring hands the gate
down: ``PROVIDERS["preflight"]``), and preflight never imports the store, tracking or alerts
(``PROVIDERS["preflight_probes"]``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "rlcockpit"
GROUND = {"rlcockpit.registry", "rlcockpit.redact", "rlcockpit.paths", "rlcockpit.version"}
ROOT = "rlcockpit"  # the package root: the public, W&B-shaped API (``rlcockpit.init``, ``rlcockpit.log``, ...)
EVERYTHING = {"metrics", "algos", "store", "tracking", "health", "alerts", "trainer", "preflight", "sweeps",
              "artifacts", "ui", "server", "integrations", "cli", ROOT}
# area -> the areas it may import besides itself and the ground floor (the map's "may import" column)
MAY_IMPORT: dict[str, set[str]] = {
    "metrics": set(),  # the knowledge layer: the metric guide
    "algos": set(),  # pure torch functions
    "store": set(),
    "tracking": {"store", "metrics"},
    "health": {"metrics", "store"},
    # + store: ``rlcockpit watchdog`` opens the store whose runs it watches (read side, as health)
    "alerts": {"health", "store"},
    # ROOT: the trainer opens its run with the public ``rlcockpit.init``, as any user script does; + metrics: the
    # knowledge layer's config-key spellings (``metrics.keys``) and headline metrics (``metrics.headline``)
    "trainer": {"algos", "tracking", "metrics", ROOT},
    # + trainer (all of it, not only the config), + algos: preflight checks data, reward, model and memory with
    # the trainer's own loaders, reward managers, models and estimators, so it checks what will run
    "preflight": {"trainer", "metrics", "algos"},
    # + metrics: a sweep's metric names are resolved through the guide's aliases; ROOT: a function trial
    # (``rlcockpit.agent(function=...)``) runs against the public API
    "sweeps": {"store", "tracking", "metrics", ROOT},
    "artifacts": {"store", "tracking"},
    # + sweeps: the sweep pages show what ``sweeps.data`` computes (trial table, best-so-far, importance), the
    # same functions ``rlcockpit sweep --status`` uses; sweeps sits above ui in the map and never imports it
    "ui": {"store", "health", "metrics", "sweeps"},
    # + ui: the team server serves the dashboard's routes and static files behind its guard (and its HTTP
    # server's socket and timeouts); + alerts: it sends each project's KPI alerts through the alert channels
    # and validates the channels an admin stores
    "server": {"store", "health", "metrics", "ui", "alerts"},
    # ROOT: the verl / TRL / importer producers log through the public API (``rlcockpit.init``)
    "integrations": {"tracking", ROOT},
    "cli": EVERYTHING,  # the one entry point: parses and dispatches
    "defaults": EVERYTHING,  # the top-level wiring (registers health/alerts parts and PROVIDERS), above all
    "__main__": {"cli"},
    ROOT: {"tracking", "sweeps"},  # the lazy public API (``rlcockpit.sweep`` / ``rlcockpit.agent``)
}
# module -> areas it alone may import besides its area's row, each with its reason
MODULE_EXTRA: dict[str, set[str]] = {
    "rlcockpit.trainer.main_ppo": {"cli"},  # verl's entry-point name: runs the one CLI (``rlcockpit train``)
    "rlcockpit.trainer.demo": {"store"},  # prints where the demo's store is (``store.resolve_dir``: that default's home)
    # ``rlcockpit watch`` follows a live verl log: finds the run to resume in the store, and uses health's
    # stall watch (no new step for k x the usual step time) on what it follows
    "rlcockpit.integrations.watch": {"store", "health"},
}
# Guarded imports that are the point: verl imports this plugin while `import verl` runs, and a tracking
# add-on must never stop a training job from starting (it reports the failure on stderr instead).
GUARDED_ON_PURPOSE = {"rlcockpit.integrations.verl_plugin"}
# (module, private name imported from another module): none; add one only with its reason
PRIVATE_IMPORTS_ALLOWED: set[tuple[str, str]] = set()


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


def _area(module: str) -> str:
    return module.split(".")[1] if "." in module else ROOT


def _target(name: str) -> str:
    """The module an import reaches: ``from rlcockpit.x import y`` lists ``rlcockpit.x.y``, which is
    ``rlcockpit.x`` when y is an attribute (``from rlcockpit import init`` reaches the package root)."""
    return name if name == ROOT or _is_module(name) else name.rsplit(".", 1)[0]


def _violations(module: str, tree: ast.AST) -> list[tuple[int, str]]:
    area = _area(module)
    allowed = set() if module in GROUND else MAY_IMPORT[area] | MODULE_EXTRA.get(module, set()) | {area}
    bad = []
    for line, name in _imports(tree, module):
        target = _target(name)
        if target in GROUND or target == module:
            continue
        if module in GROUND or _area(target) not in allowed:
            bad.append((line, target))
    return bad


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_layering(path: Path) -> None:
    module = _module_name(path)
    assert _area(module) in MAY_IMPORT or module in GROUND, f"{module}: its area is not on the module map (MAY_IMPORT)"
    bad = _violations(module, ast.parse(path.read_text(encoding="utf-8")))
    assert not bad, f"{module} imports across the module map: {bad}"


def test_every_module_exception_is_still_needed() -> None:
    """An exception the code no longer needs is removed, so the map stays as narrow as the code."""
    for module, extra in MODULE_EXTRA.items():
        path = SRC.joinpath(*module.split(".")[1:]).with_suffix(".py")
        reached = {_area(_target(n)) for _, n in _imports(ast.parse(path.read_text(encoding="utf-8")), module)}
        assert extra <= reached - MAY_IMPORT[_area(module)], f"{module}: MODULE_EXTRA lists {extra}, it imports {reached}"


def _private_imports(module: str, tree: ast.AST) -> list[tuple[int, str]]:
    """``from rlcockpit.a import _b`` in a module other than ``rlcockpit.a`` (dunders are not private)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        source = _imports(ast.Module(body=[node], type_ignores=[]), module)
        for alias in node.names if source else ():
            private = alias.name.startswith("_") and not alias.name.startswith("__")
            if private and source[0][1] != module and (module, alias.name) not in PRIVATE_IMPORTS_ALLOWED:
                out.append((node.lineno, f"{source[0][1]}.{alias.name}"))
    return out


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_name_is_imported_across_modules(path: Path) -> None:
    bad = _private_imports(_module_name(path), ast.parse(path.read_text(encoding="utf-8")))
    assert not bad, f"{_module_name(path)} imports another module's private names (make them public): {bad}"


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


def test_the_rules_catch_a_violation() -> None:
    """The checker itself can fail: upward imports, an import on the ground floor and a private import are found."""
    tree = ast.parse("from rlcockpit.health.monitor import HealthMonitor\n"
                     "try:\n    import rlcockpit.alerts\nexcept ImportError:\n    pass\n")
    assert {n for _, n in _violations("rlcockpit.tracking.run", tree)} == {"rlcockpit.health.monitor", "rlcockpit.alerts"}
    trainer = ast.parse("from rlcockpit.preflight import preflight_gate\nfrom rlcockpit.health import Finding\n"
                        "from rlcockpit.tracking.observers import GuardrailLink\nimport rlcockpit.registry\n"
                        "from rlcockpit import init\n")
    assert {n for _, n in _violations("rlcockpit.trainer.loop", trainer)} == {"rlcockpit.preflight", "rlcockpit.health"}
    assert _violations("rlcockpit.registry", ast.parse("from rlcockpit.store import open_store\n"))
    text = "from rlcockpit.tracking.run import _current, __version__\nfrom .runinfo import _init_error\n"
    assert _private_imports("rlcockpit.tracking.parts", ast.parse(text)) == [
        (1, "rlcockpit.tracking.run._current"), (2, "rlcockpit.tracking.runinfo._init_error")]
    assert _private_imports("rlcockpit.tracking.run", ast.parse("from rlcockpit.tracking.run import _current\n")) == []
