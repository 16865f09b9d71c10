"""Generate ``docs/config-reference.md`` from the trainer's config schema (``rlcockpit.trainer.config.schema``).

Keys (verl's paths), types, defaults and help come from the dataclass fields (``opt(default, "help")``);
allowed values from the field's ``choices`` or the registry it names; the aliases and the "accepted, no
effect here" table from ``rlcockpit.trainer.config.keys``. Why generated: the schema is what ``rlcockpit
train`` validates against, so the page cannot list a key the parser refuses. ``tests/docs/test_docs_current.py``
fails when the committed file differs from what this prints.

    python docs/gen_config_reference.py           # rewrite docs/config-reference.md
    python docs/gen_config_reference.py --check   # exit 1 if the committed file is stale
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().with_name("config-reference.md")


def _type_name(tp: Any) -> str:
    from rlcockpit.trainer.config.values import type_name

    return type_name(tp)


def _default(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def choices_of(info: Any) -> list[str]:
    """Allowed values: fixed choices, or the registry's names (+ aliases) and any extra accepted names."""
    if info.choices:
        return [str(c) for c in info.choices]
    if not info.registry:
        return []
    from rlcockpit.trainer.config.values import registry_at

    reg = registry_at(info.registry)
    # one sorted list: whether a name is registered yet (rollout.name=vllm registers on import) or only an extra
    # accepted name depends on which modules the process imported first; the page must not
    return sorted({*reg.names(), *reg._aliases, *info.extra_choices})


def _section(key: str) -> str:
    parts = key.split(".")
    return ".".join(parts[:2]) if parts[0] == "actor_rollout_ref" else parts[0]


def _key_table(fields: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    sections: dict[str, list[Any]] = {}
    for key, info in fields.items():
        sections.setdefault(_section(key), []).append(info)
    for name, infos in sections.items():
        lines += [f"## {name}", ""]
        seen: set[type] = set()
        for info in infos:
            doc = info.section.__doc__ or ""
            if info.section not in seen and doc and not doc.startswith(info.section.__name__ + "("):
                seen.add(info.section)
                lines.append(f"- `{info.key.rsplit('.', 1)[0]}.*`: {' '.join(doc.split()).replace('``', '`')}")
        if seen:
            lines.append("")
        lines += ["| key | type | default | help | verl |", "|---|---|---|---|---|"]
        for info in infos:
            notes = info.help
            options = choices_of(info)
            if options:
                listed = "one of " + ", ".join(f"`{c}`" for c in options)
                notes = f"{notes}; {listed}" if notes else listed
            verl = "rlcockpit only" if info.only_here else "same key"
            lines.append(f"| `{info.key}` | {_cell(_type_name(info.type))} | `{_cell(_default(info.default))}` | "
                         f"{_cell(notes)} | {verl} |")
        lines.append("")
    return lines


def _alias_tables() -> list[str]:
    from rlcockpit.trainer.config.keys import KEY_ALIASES, PREFIX_ALIASES, SEED_FLAGS

    lines = ["## Aliases", "",
             "Older rlcockpit short forms, TRL / seed-article names and keys verl renamed. Each one used is reported "
             "once per run (`config aliases: A -> B`) and the value lands on the verl key.", "",
             "Prefixes (the rest of the key is kept):", "", "| written | means |", "|---|---|"]
    lines += [f"| `{a}*` | `{b}*` |" for a, b in PREFIX_ALIASES]
    lines += ["", "Whole keys:", "", "| alias | means |", "|---|---|"]
    lines += [f"| `{a}` | `{b}` |" for a, b in KEY_ALIASES.items() if a != b]
    lines += ["| `use_wandb` | adds (true) or removes (false) `wandb` in `trainer.logger` |",
              "| `reward.custom_fn` | `path/file.py:function` -> `custom_reward_function.path` + `.name` |",
              "| `actor.policy_loss` (a name) | `actor_rollout_ref.actor.policy_loss.loss_mode` |", "",
              "Command-line flags of the articles, accepted by `rlcockpit train` and `rlcockpit preflight` as "
              "`--flag value` or `--flag=value`: " + ", ".join(f"`--{f}`" for f in SEED_FLAGS) + ".", ""]
    return lines


def _no_effect_tables() -> list[str]:
    from rlcockpit.trainer.config.keys import NO_EFFECT, UNSUPPORTED

    lines = ["## verl keys accepted with no effect here", "",
             "These keys steer only verl's distributed engines. They are accepted (in a `--config` file or on the "
             "command line), stored with the run and listed once at the start of `rlcockpit train` in a "
             "\"no effect here\" table; never an error, never silently dropped. `*` matches any part of a key; a key "
             "that is also in the tables above is a real key. A key added with `+key=value` that rlcockpit does not "
             "know is stored the same way.", "", "| keys | why they do nothing here |", "|---|---|"]
    for entry in NO_EFFECT:
        keys = ", ".join(f"`{p}`" for p in entry.patterns)
        lines.append(f"| {keys} | {_cell(entry.why)} |")
    lines += ["", "Switches of verl features this trainer does not have: their default is accepted, turning them on "
              "is an error (training without the feature would silently be a different experiment).", "",
              "| key | accepted values | why |", "|---|---|---|"]
    for key, (off, why) in UNSUPPORTED.items():
        lines.append(f"| `{key}` | {', '.join(f'`{_default(v)}`' for v in off)} | {_cell(why)} |")
    lines.append("")
    return lines


def _defaults_tables() -> list[str]:
    from rlcockpit.trainer.config.keys import MATH_WARNINGS
    from rlcockpit.trainer.config.verl import DEMO_DEFAULTS, VERL_DEFAULT_DIFFERENCES

    lines = ["## Differences from verl's defaults", "",
             "Every key above takes verl 0.9.1's default (its `_generated_ppo_trainer.yaml`), with these "
             "exceptions, none of which changes the math of a run that sets its own model and data. "
             "`tests/trainer/config/test_trainer_verl_defaults.py` composes verl's own config for real example scripts "
             "in the verl venv and fails on any difference not listed here. Precedence follows verl: "
             "`actor.clip_ratio_low/high` (0.2 each by default) win over `actor.clip_ratio`, which then only "
             "prints a note; the critic takes the actor's `loss_agg_mode` and `ppo_epochs` unless given.", "",
             "| key | why rlcockpit's default differs |", "|---|---|"]
    lines += [f"| `{k}` | {_cell(why)} |" for k, why in VERL_DEFAULT_DIFFERENCES.items()]
    lines += ["", "The built-in demo task (no `data.train_files`) is sized for a CPU: there these settings apply to "
              "the keys not given (a `critic.*` key keeps verl's gae and n=1; `trainer.total_epochs` keeps "
              "`total_training_steps` null).", "", "| key | demo value |", "|---|---|"]
    lines += [f"| `{k}` | `{_default(v)}` |" for k, v in DEMO_DEFAULTS.items()]
    lines += ["", "Accepted without effect, but in verl a value other than these changes the math: a warning is "
              "printed when one is set.", "", "| key | values that are fine | why |", "|---|---|---|"]
    lines += [f"| `{k}` | {', '.join(f'`{_default(v)}`' for v in off)} | {_cell(why)} |"
              for k, (off, why) in MATH_WARNINGS.items()]
    lines.append("")
    return lines


def render() -> str:
    from rlcockpit.trainer.config.schema import schema_fields

    fields = schema_fields()
    lines = [
        "# Trainer config reference",
        "",
        "<!-- GENERATED by docs/gen_config_reference.py from rlcockpit.trainer.config.schema; do not edit. -->",
        "",
        f"Every key `rlcockpit train` acts on ({len(fields)} keys), by verl path. Set them in a preset, a "
        "`--config` YAML file in verl's shape, or as overrides (`actor_rollout_ref.actor.optim.lr=3e-5`, Hydra "
        "grammar: `+key=value`, `~key`, `key=null`, `[a,b]`, `${...}`). Unknown keys and wrong types fail before "
        "anything loads, all of them in one message. How to use them: [trainer.md](trainer.md).",
        "",
        "The **verl** column says whether verl has the same key (\"same key\": verl's meaning, as in its "
        "`ppo_trainer.yaml`) or it is an rlcockpit extension. verl keys this trainer accepts but does not act on "
        "are [listed below](#verl-keys-accepted-with-no-effect-here). Defaults are the dataclass defaults before "
        "any preset.",
        "",
    ]
    lines += _key_table(fields)
    lines += _alias_tables()
    lines += _no_effect_tables()
    lines += _defaults_tables()
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from docgen import generator_main

    return generator_main(render, OUTPUT, __file__, argv)


if __name__ == "__main__":
    sys.exit(main())
