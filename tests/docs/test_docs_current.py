"""The generated reference pages in ``docs/`` must match what their generators print from the code today.

Why: the metric guide, the detectors and the trainer config change as the project evolves; a reference page
that silently drifts from the code is worse than none. Fix a failure by running the generator named in the
message and committing its output.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
GENERATORS = ("gen_metrics_reference", "gen_detectors_reference", "gen_config_reference")


def load_generator(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", GENERATORS)
def test_generated_page_is_current(name: str) -> None:
    gen = load_generator(name)
    assert gen.OUTPUT.exists(), f"{gen.OUTPUT} is missing: run python docs/{name}.py"
    committed = gen.OUTPUT.read_text(encoding="utf-8")
    assert committed == gen.render(), f"{gen.OUTPUT.name} is stale: run python docs/{name}.py and commit it"


@pytest.mark.parametrize("name", GENERATORS)
def test_check_mode_detects_a_stale_page(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--check`` is what CI or a pre-commit hook would call: 0 when current, 1 when the page differs."""
    gen = load_generator(name)
    stale = tmp_path / gen.OUTPUT.name
    stale.write_text(gen.render() + "\nedited by hand\n", encoding="utf-8")
    monkeypatch.setattr(gen, "OUTPUT", stale)
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0  # rewrites the page
    assert gen.main(["--check"]) == 0


def test_metrics_reference_lists_every_canonical_key_and_alias() -> None:
    from rlcockpit.metrics import guide_as_dict

    text = (DOCS / "metrics-reference.md").read_text(encoding="utf-8")
    guide = guide_as_dict()
    for key, entry in guide["entries"].items():
        assert f"| `{key}` |" in text, key
        for alias in entry["aliases"]:
            assert f"`{alias}`" in text, (key, alias)


def test_detectors_reference_lists_every_detector_with_its_defaults() -> None:
    from rlcockpit.health import DETECTORS

    text = (DOCS / "detectors-reference.md").read_text(encoding="utf-8")
    for name, cls in DETECTORS.items():
        assert f"\n### {name}\n" in text, name
        section = text.split(f"\n### {name}\n", 1)[1].split("\n### ", 1)[0]
        for setting in {**cls.common, **cls.defaults}:
            assert f"`{setting}=" in section, (name, setting)


def test_config_reference_lists_every_key_and_only_real_keys() -> None:
    import re

    from rlcockpit.trainer.config import all_keys, schema_keys
    from rlcockpit.trainer.config.keys import KEY_ALIASES, canonical_key, no_effect_reason

    text = (DOCS / "config-reference.md").read_text(encoding="utf-8")
    main_tables = text.split("## Aliases", 1)[0]
    listed = set(re.findall(r"^\| `([a-z_.]+)` \| ", main_tables, flags=re.M))
    assert listed == set(schema_keys())  # every verl-path key the trainer acts on, and nothing else
    aliases = set(re.findall(r"^\| `([a-z_.]+)` \| ", text.split("## Aliases", 1)[1].split("## verl keys")[0], flags=re.M))
    assert {a for a, b in KEY_ALIASES.items() if a != b} <= aliases
    for alias in aliases - {"use_wandb", "reward.custom_fn", "actor.policy_loss"}:
        target = canonical_key(alias)[0]
        assert target in all_keys() or no_effect_reason(target), alias  # every alias lands on an accepted key
    assert "trainer.n_gpus_per_node" in text.split("## verl keys accepted with no effect here", 1)[1]


def test_config_help_comes_from_the_schema() -> None:
    """The help column comes from ``opt(default, "help")`` in config/schema.py; losing it would empty it."""
    from rlcockpit.trainer.config.schema import schema_fields

    fields = schema_fields()
    assert "prompts" in fields["actor_rollout_ref.actor.ppo_mini_batch_size"].help
    assert sum(1 for f in fields.values() if not f.help) == 0
    text = (DOCS / "config-reference.md").read_text(encoding="utf-8")
    assert fields["data.prompt_key"].help in text
