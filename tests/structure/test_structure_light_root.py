"""The package root is light: the ground floor loads without tracking or the store (ARCHITECTURE.md), yet
``import rlcockpit as wandb`` still offers the whole public API and a run still gets its default parts."""

from __future__ import annotations

import json
import subprocess
import sys


def _loaded_after(code: str) -> list[str]:
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('rlcockpit'))))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_ground_floor_loads_at_most_three_rlcockpit_modules() -> None:
    loaded = _loaded_after("import rlcockpit.registry")
    assert len(loaded) <= 3, loaded
    assert not any(m.startswith(("rlcockpit.tracking", "rlcockpit.store")) for m in loaded), loaded


def test_version_needs_nothing_else() -> None:
    assert _loaded_after("from rlcockpit.version import __version__") == ["rlcockpit", "rlcockpit.version"]


def test_every_public_name_resolves_and_is_listed() -> None:
    import rlcockpit

    for name in rlcockpit.__all__:
        assert getattr(rlcockpit, name) is not None, name
        assert name in dir(rlcockpit), name
    assert rlcockpit.plot.line is not None  # a module, as wandb.plot


def test_a_run_started_without_the_package_root_still_gets_its_health_observer(tmp_path) -> None:  # noqa: ANN001
    """The default parts register on the first registry lookup, whatever the entry point."""
    code = (f"from rlcockpit.tracking.run import init\nrun = init(project='p', dir={str(tmp_path)!r}, health=True)\n"
            "run.log({'a': 1.0})\nrun.finish()")
    assert "rlcockpit.health.monitor" in _loaded_after(code)
    assert "rlcockpit.health.monitor" not in _loaded_after(code.replace("health=True", "health=False"))
