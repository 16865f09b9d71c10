"""A trial's command line from the sweep's ``program`` / ``command`` and W&B's macros.

The expansions are W&B's, character for character, because programs parse them: ``${args}`` is
``--name=value`` with Python's ``str(value)`` (``1e-05``, ``True``, ``{'lr': 0.1}`` for a nested block),
``${args_no_hyphens}`` is ``name=value`` (Hydra / verl overrides), ``${args_json}`` one JSON argument,
``${args_json_file}`` the path of a file holding it, ``${envvar:NAME}`` an environment variable. Two
deliberate differences: ``${interpreter}`` is the agent's own Python (W&B runs whatever ``python`` is on
``PATH``), and the agent's ``bin`` directory leads the trial's ``PATH`` so ``rlcockpit`` resolves to the
same installation.

Our trainer is a sweep program out of the box: ``program: rlcockpit`` with no ``command`` runs
``rlcockpit train ${args_no_hyphens}``, and so does a verl entry point (``ppo_main.py``,
``main_ppo.py``, ``verl.trainer.main_ppo``) that is not a file in the working directory — the verl
article's sweep file then runs unchanged against rlcockpit's trainer, which takes verl's keys.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DEFAULT_COMMAND = ("${env}", "${interpreter}", "${program}", "${args}")
TRAINER_COMMAND = ("${interpreter}", "-m", "rlcockpit", "train", "${base_options}", "${base_overrides}",
                   "${args_no_hyphens}")
_ARG_MACROS = ("${args}", "${args_no_hyphens}", "${args_no_boolean_flags}", "${args_json}", "${args_json_file}",
               "${args_no_equals}", "${args_append_hydra}", "${args_override_hydra}")
VERL_ENTRY_POINTS = ("ppo_main.py", "main_ppo.py", "verl.trainer.main_ppo", "verl/trainer/main_ppo.py")
_ENVVAR = re.compile(r"\$\{envvar:([A-Za-z0-9_]*)\}")


def is_trainer_program(program: str | None, command: Sequence[str] | None, cwd: str | Path = ".") -> bool:
    """True when trials run rlcockpit's own trainer without an explicit ``command``."""
    if command is not None or not program:
        return False
    if program == "rlcockpit":
        return True
    norm = program.replace("\\", "/")
    if any(norm == e or norm.endswith("/" + e) for e in VERL_ENTRY_POINTS):
        return not (Path(cwd) / program).is_file()
    return False


def command_runs_trainer(command: Sequence[str]) -> bool:
    """An explicit command that calls ``rlcockpit train`` (base arguments are inserted after ``train``)."""
    parts = [Path(c).name for c in command]
    return any(a == "rlcockpit" and b == "train" for a, b in zip(parts, parts[1:]))


def macro_values(params: Mapping[str, Any]) -> dict[str, list[str]]:
    """The argument macros for one trial (top-level parameters, nested blocks as one value)."""
    flags, no_hyphens, no_bool, no_equals, hydra_add, hydra_override = [], [], [], [], [], []
    for name, value in params.items():
        flag = f"{name}={value}"
        flags.append("--" + flag)
        no_hyphens.append(flag)
        no_equals += [f"--{name}", str(value)]
        hydra_add.append("+" + flag)
        hydra_override.append("++" + flag)
        if isinstance(value, bool):
            if value:
                no_bool.append("--" + name)
        else:
            no_bool.append("--" + flag)
    return {
        "args": flags, "args_no_hyphens": no_hyphens, "args_no_boolean_flags": no_bool,
        "args_no_equals": no_equals, "args_append_hydra": hydra_add, "args_override_hydra": hydra_override,
        "args_json": [json.dumps(dict(params))],
    }


def expand_envvars(part: str, env: Mapping[str, str]) -> str:
    """``${envvar:NAME}`` -> its value (left as ``NAME`` when unset, as W&B does)."""
    return _ENVVAR.sub(lambda m: env.get(m.group(1), m.group(1)), part)


def build_command(
    *,
    program: str | None,
    command: Sequence[str] | None,
    params: Mapping[str, Any],
    base_args: Sequence[str] = (),
    args_json_file: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | Path = ".",
) -> list[str]:
    """The argv of one trial."""
    env = os.environ if env is None else env
    if is_trainer_program(program, command, cwd):
        template: Sequence[str] = TRAINER_COMMAND
    else:
        template = list(command) if command is not None else DEFAULT_COMMAND
        if base_args:
            template = _insert_base_args(template)
    values = macro_values(params)
    values["env"] = ["/usr/bin/env"] if os.name == "posix" else []
    values["interpreter"] = [sys.executable]
    values["program"] = [program] if program else []
    values["args_json_file"] = [args_json_file] if args_json_file else []
    values["base_options"], values["base_overrides"] = split_base_args(base_args)
    argv: list[str] = []
    for part in template:
        part = expand_envvars(str(part), env)
        if part.startswith("${") and part.endswith("}") and part[2:-1] in values:
            argv += values[part[2:-1]]
        else:
            argv.append(part)
    return argv


def split_base_args(base_args: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(["--preset", X, "--config", Y], [overrides...])``: options go right after ``train``, overrides just
    before the sweep's parameters, so ``rlcockpit train``'s positional overrides stay together."""
    options: list[str] = []
    overrides: list[str] = []
    it = iter(base_args)
    for tok in it:
        if tok in ("--preset", "--config"):
            options += [tok, next(it, "")]
        elif tok.startswith(("--preset=", "--config=")):
            options.append(tok)
        else:
            overrides.append(tok)
    return options, overrides


def _insert_base_args(template: Sequence[str]) -> list[str]:
    parts = list(template)
    names = [Path(c).name for c in parts]
    for i in range(len(parts) - 1):
        if names[i] == "rlcockpit" and names[i + 1] == "train":
            head, tail = parts[: i + 2], parts[i + 2 :]
            at = next((j for j, c in enumerate(tail) if c in _ARG_MACROS), len(tail))
            return [*head, "${base_options}", *tail[:at], "${base_overrides}", *tail[at:]]
    raise ValueError("trainer arguments given to `rlcockpit sweep` need a sweep that runs `rlcockpit train` "
                     "(program: rlcockpit, or a command calling rlcockpit train)")


def uses_args_json_file(command: Sequence[str] | None) -> bool:
    return bool(command) and any("${args_json_file}" in c for c in command or ())
