"""Each alias table has one home on the ground floor (``rlcockpit.metrics``), and no second copy appears in src.

Three kinds of knowledge were kept in several tables by hand and had drifted: config-key spellings (verl path,
rlcockpit short form, TRL / seed-article names: ``metrics/keys.py``), the headline metrics' candidate keys
(``metrics/headline.py``) and the step phases' timing keys (``metrics/phases.py``). Two checks:

* literals only the tables use (``"ppo_config.cliprange"``, ``"objective/scores"``, ``"wait_for_enough_samples"``)
  appear in no other file of ``src``;
* no other file holds three or more of a table's relations (an alias next to its target in a dict, or two
  candidates of one slot in one all-string tuple), which is what a copied table looks like whatever its name.
"""

from __future__ import annotations

import ast
import functools
import itertools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from rlcockpit.metrics import headline, keys, phases

SRC = Path(__file__).resolve().parents[2] / "src" / "rlcockpit"
HOMES = {"keys": SRC / "metrics" / "keys.py", "headline": SRC / "metrics" / "headline.py",
         "phases": SRC / "metrics" / "phases.py"}

# literal -> its home: each is written in that file only (readers import the table)
ONLY_IN_HOME: dict[str, str] = {
    **dict.fromkeys(('"ppo_config.cliprange"', '"kl_controller."', '"reward_config.entropy_coef"',
                     '"ppo_config.target_kl"', '"vllm_gpu_memory_utilization"', '"max_completion_length"',
                     '"model_name_or_path"', '"actor_rollout_ref.rollout."', '"actor_rollout_ref.model."',
                     '"reward.overlong_buffer."', '"kl_ctrl."'), "keys"),
    **dict.fromkeys(('"objective/scores"', '"completions/mean_length"', '"kl/divergence"', '"critic/rewards/mean"',
                     '"objective/entropy"', '"train/response_length"'), "headline"),
    **dict.fromkeys(('"wait_for_enough_samples"', '"timing_s/wait_for_enough_samples"', '"data_loading"',
                     '"param_sync"', '"timing_s/param_sync"'), "phases"),
}

TABLES: dict[str, Any] = {
    "metrics.keys.PREFIX_ALIASES": keys.PREFIX_ALIASES, "metrics.keys.KEY_ALIASES": keys.KEY_ALIASES,
    "metrics.keys.TO_VERL_PREFIXES": keys.TO_VERL_PREFIXES, "metrics.keys.VERL_KEYS": keys.VERL_KEYS,
    "metrics.keys.TRL_KEYS": keys.TRL_KEYS, "metrics.keys.ALIASES": keys.ALIASES,
    "metrics.headline.HEADLINE_KEYS": headline.HEADLINE_KEYS, "metrics.phases.PHASES": phases.PHASES,
}
COPY_AT = 3  # shared relations that make a copy (two can be a coincidence: a key and its verl path side by side)


@functools.cache
def _sources() -> dict[Path, str]:
    """Every source file's text, read once for the module (no test here writes to src)."""
    return {p: p.read_text(encoding="utf-8") for p in sorted(SRC.rglob("*.py"))}


@functools.cache
def _relations_by_file() -> dict[Path, set[frozenset[str]]]:
    """:func:`file_relations` of every source file but the homes, parsed once for all the tables (each table's
    test parsed all of src again: ~3 s a table)."""
    return {p: file_relations(text) for p, text in _sources().items() if p not in HOMES.values()}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _pairs(values: Iterable[str]) -> set[frozenset[str]]:
    return {frozenset(p) for p in itertools.combinations(sorted(set(values)), 2)}


def file_relations(text: str) -> set[frozenset[str]]:
    """Alias relations written in a file: a dict entry's key with each string of its value, and every two strings of
    one tuple/list/set made of string constants only."""
    out: set[frozenset[str]] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                key = _strings(k) if k is not None else []
                out |= {frozenset((a, b)) for a in key for b in _strings(v) if a != b}
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
            if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                out |= _pairs(_strings(node))
    return out


def table_relations(table: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> set[frozenset[str]]:
    """The same relations for one of the home tables (``{key: alias or aliases}`` or ``((key, aliases), ...)``)."""
    out: set[frozenset[str]] = set()
    for key, value in (table.items() if isinstance(table, Mapping) else table):
        values = [value] if isinstance(value, str) else [v for v in (value or ()) if isinstance(v, str)]
        out |= {frozenset((key, v)) for v in values if v != key} | _pairs(values)
    return out


@pytest.mark.parametrize("literal", sorted(ONLY_IN_HOME))
def test_table_literal_lives_in_its_home_only(literal: str) -> None:
    home = HOMES[ONLY_IN_HOME[literal]]
    where = [p.relative_to(SRC).as_posix() for p, text in _sources().items() if literal in text and p != home]
    name = literal.strip('"').removeprefix("timing_s/")  # phases.py writes the names after ``timing_s/``
    assert f'"{name}"' in home.read_text(encoding="utf-8"), f"{literal} is no longer in {home.name}: update this test"
    assert not where, f"{literal} belongs to {home.relative_to(SRC)}; import the table there instead of: {where}"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_no_second_copy_of_a_table(name: str) -> None:
    relations = table_relations(TABLES[name])
    assert len(relations) >= COPY_AT
    copies = {p.relative_to(SRC).as_posix(): len(relations & found) for p, found in _relations_by_file().items()}
    copies = {path: n for path, n in copies.items() if n >= COPY_AT}
    assert not copies, f"{name} is copied (shared alias relations per file): {copies}"


def test_a_copied_table_is_caught() -> None:
    """The relation check sees a renamed, reordered, inverted copy (as ``trainer/config/__init__.py``'s ``_SHORT`` was)."""
    copy = '_SHORT = (("actor_rollout_ref.model.", "actor.model."), ("actor_rollout_ref.actor.", "actor."),\n' \
           '          ("actor_rollout_ref.rollout.", "rollout."))\n'
    assert len(table_relations(keys.PREFIX_ALIASES) & file_relations(copy)) >= COPY_AT
    timeline = 'T = {"gen": ("timing_s/gen", "timing_s/generate"), "upd": ("timing_s/update_actor", ' \
               '"timing_s/update_critic", "timing_s/update")}\n'
    assert len(table_relations({g: phases.timing_keys(p) for g, p in phases.BOTTLENECK_GROUPS.items()})
               & file_relations(timeline)) >= COPY_AT


def test_the_readers_read_the_home_tables() -> None:
    """The modules that used to keep their own copies now hand out the home's objects."""
    from rlcockpit.health import config_view
    from rlcockpit.trainer import guardrails
    from rlcockpit.trainer.config import keys as config_keys
    from rlcockpit.ui import analysis, panels

    assert config_keys.PREFIX_ALIASES is keys.PREFIX_ALIASES and config_keys.KEY_ALIASES is keys.KEY_ALIASES
    assert config_view.VERL_KEYS is keys.VERL_KEYS and config_view.TRL_KEYS is keys.TRL_KEYS
    assert config_view.ALIASES is keys.ALIASES
    assert guardrails.STEP_SIZE_KEYS == ("actor.optim.lr", "actor_rollout_ref.actor.optim.lr")
    assert panels.PHASES is phases.PHASES and panels.STEP_KEYS is headline.HEADLINE_KEYS["step_time"]
    assert analysis.KL_KEYS is headline.HEADLINE_KEYS["kl"]
    assert analysis.REWARD_KEYS is headline.HEADLINE_KEYS["reward"]
