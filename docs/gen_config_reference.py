"""Generate ``docs/config-reference.md`` from the trainer's config dataclasses (``rlcockpit.trainer.config``).

Keys, types and defaults come from the dataclasses; the help text is each field's trailing ``# comment``
in ``config.py`` (read with :mod:`tokenize`), allowed values from ``VALID_CHOICES``, the verl path from
``rlcockpit.metrics.to_verl_key`` and the article-style aliases from ``ALIASES``. Why generated: the
dataclasses are what ``rlcockpit train`` validates against, so the docs cannot list a key that does not
exist. ``tests/docs/test_docs_current.py`` fails when the committed file differs from what this prints.

    python docs/gen_config_reference.py           # rewrite docs/config-reference.md
    python docs/gen_config_reference.py --check   # exit 1 if the committed file is stale
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import sys
import tokenize
import typing
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().with_name("config-reference.md")

# Help for keys whose field in config.py has no trailing comment (a comment there always wins).
FALLBACK_HELP = {
    "algorithm.adv_estimator": "how advantages are computed",
    "algorithm.gamma": "discount factor (GAE)",
    "algorithm.lam": "GAE lambda",
    "algorithm.norm_adv_by_std_in_grpo": "GRPO: divide group-centred scores by the group std (false: Dr. GRPO style)",
    "algorithm.use_kl_in_reward": "subtract kl_ctrl.kl_coef x KL(policy, reference) from the rewards (classic PPO)",
    "algorithm.kl_penalty": "KL estimator of the in-reward penalty",
    "algorithm.kl_ctrl.kl_coef": "KL coefficient of the in-reward penalty (start value for adaptive)",
    "algorithm.kl_ctrl.target_kl": "adaptive controller: the KL it steers towards",
    "algorithm.kl_ctrl.horizon": "adaptive controller: samples over which it moves the coefficient by at most 20%",
    "algorithm.filter_groups.enable": "drop prompt groups whose rewards are all equal and generate more prompts",
    "actor.clip_ratio": "PPO clip epsilon (both sides unless clip_ratio_low/high are set)",
    "actor.clip_ratio_low": "lower clip epsilon; null = clip_ratio",
    "actor.clip_ratio_high": "upper clip epsilon (DAPO clip-higher: 0.28); null = clip_ratio",
    "actor.clip_ratio_c": "dual-clip bound for negative advantages",
    "actor.policy_loss": "policy loss",
    "actor.entropy_coeff": "entropy bonus weight (negative: an entropy penalty)",
    "actor.use_kl_loss": "add kl_loss_coef x KL(policy, reference) to the actor loss (GRPO style)",
    "actor.kl_loss_coef": "weight of the KL loss",
    "actor.kl_loss_type": "KL estimator of the KL loss",
    "actor.loss_agg_mode": "how token losses are averaged into one number",
    "actor.ppo_epochs": "passes over each step's batch",
    "actor.grad_clip": "max gradient norm",
    "actor.optim.lr": "AdamW learning rate",
    "actor.optim.lr_warmup_steps_ratio": "fraction of the total steps spent in linear warm-up",
    "actor.optim.weight_decay": "AdamW weight decay",
    "actor.optim.betas": "AdamW betas",
    "actor.model.enable_gradient_checkpointing": "recompute activations in the backward pass (less memory)",
    "actor.model.lora_alpha": "LoRA alpha",
    "actor.model.target_modules": "modules LoRA adapts",
    "actor.model.tiny.hidden_size": "tiny model: hidden size",
    "actor.model.tiny.num_layers": "tiny model: decoder layers",
    "actor.model.tiny.num_heads": "tiny model: attention heads",
    "actor.model.tiny.intermediate_size": "tiny model: MLP width",
    "actor.model.tiny.sft_lr": "tiny model: warm-up learning rate",
    "actor.model.tiny.sft_batch_size": "tiny model: warm-up batch size",
    "actor.model.tiny.sft_slip_steps": "tiny model: steps of the sloppy second warm-up phase (0 = none)",
    "actor.model.tiny.sft_slip_rate": "tiny model: share of sloppy-phase answers with their carries forgotten",
    "actor.model.tiny.sft_slip_lr": "tiny model: sloppy-phase learning rate",
    "critic.cliprange_value": "value clip range",
    "critic.grad_clip": "max gradient norm",
    "critic.loss_agg_mode": "how token value losses are averaged",
    "critic.optim.lr": "critic learning rate",
    "critic.optim.lr_warmup_steps_ratio": "fraction of the total steps spent in linear warm-up",
    "critic.optim.warmup_style": "learning-rate schedule",
    "critic.optim.weight_decay": "AdamW weight decay",
    "critic.optim.betas": "AdamW betas",
    "rollout.name": "rollout engine",
    "rollout.n": "responses sampled per prompt (the group size of GRPO/RLOO)",
    "rollout.temperature": "sampling temperature (also used for the training log-probs)",
    "rollout.top_p": "nucleus sampling",
    "data.train_files": "parquet/JSONL files in verl's row layout; empty = the built-in task",
    "data.val_files": "validation files (same layout)",
    "data.val_batch_size": "prompts per validation generation batch",
    "data.max_prompt_length": "prompt tokens",
    "data.max_response_length": "new tokens per response",
    "data.shuffle": "shuffle the prompts each epoch",
    "data.seed": "shuffling seed",
    "data.builtin.name": "built-in task",
    "data.builtin.digits": "operand digits",
    "data.builtin.train_size": "training prompts generated",
    "data.builtin.val_size": "held-out validation prompts (never in training)",
    "data.builtin.seed": "generator seed",
    "reward.kwargs": "extra keyword arguments passed to the reward function",
    "reward.overlong_buffer.enable": "DAPO soft overlong punishment",
    "reward.overlong_buffer.len": "tokens before data.max_response_length where the penalty ramps up",
    "reward.overlong_buffer.penalty_factor": "penalty at the length limit",
    "health.enable": "run the health detectors live",
    "health.max_rollbacks": "after this many rollbacks a further critical finding stops the run",
    "trainer.project_name": "tracking project",
    "trainer.experiment_name": "run name; null = algorithm.adv_estimator",
    "trainer.total_training_steps": "steps to train; null = total_epochs over the data",
    "trainer.total_epochs": "epochs when total_training_steps is null",
    "trainer.save_freq": "checkpoint every N steps (and at the end); -1 = never",
    "trainer.test_freq": "validate every N steps (and before the first and after the last); <= 0 = never",
    "trainer.logger": "loggers (sinks) the run writes to",
    "trainer.default_local_dir": "checkpoint directory",
    "trainer.seed": "global random seed",
    "trainer.log_samples_freq": "store rollout samples every N steps (and at step 1); 0 = never",
    "trainer.num_log_samples": "samples stored per logged step",
    "trainer.max_consecutive_nonfinite": "stop after this many steps in a row with non-finite losses",
    "trainer.tags": "run tags",
    "actor.share_prefix": "score each distinct prompt and row once (same math, fewer FLOPs); false = plain forward",
}

# Where rlcockpit.metrics.to_verl_key does not give the verl setting: keys verl's ppo_trainer.yaml
# (verl 0.9) does not have, and the few whose verl path is not a mechanical rename.
NOT_IN_VERL_PREFIXES = ("actor.model.dtype", "actor.model.tiny.", "data.builtin.", "trainer.seed",
                        "trainer.log_samples_freq", "trainer.num_log_samples", "trainer.max_consecutive_nonfinite",
                        "trainer.tags", "actor.share_prefix", "actor.target_kl")
VERL_KEY_FIXES = {"actor.policy_loss": "actor_rollout_ref.actor.policy_loss.loss_mode"}


def verl_key(key: str) -> str | None:
    from rlcockpit.metrics import to_verl_key

    if key in VERL_KEY_FIXES:
        return VERL_KEY_FIXES[key]
    if any(key == p or (p.endswith(".") and key.startswith(p)) for p in NOT_IN_VERL_PREFIXES):
        return None
    return to_verl_key(key)


def registry_choices() -> dict[str, list[str]]:
    """Allowed values of keys chosen by name from a registry (aliases shown after the names)."""
    from rlcockpit.algos import ADV_ESTIMATORS, KL_CONTROLLERS, KL_ESTIMATORS, POLICY_LOSSES
    from rlcockpit.trainer.rewards import REWARDS
    from rlcockpit.trainer.rollout import ROLLOUT_ENGINES

    def names(reg: Any) -> list[str]:
        return reg.names() + sorted(reg._aliases)

    return {
        "algorithm.adv_estimator": names(ADV_ESTIMATORS),
        "algorithm.kl_penalty": names(KL_ESTIMATORS),
        "actor.kl_loss_type": names(KL_ESTIMATORS),
        "actor.policy_loss": names(POLICY_LOSSES),
        "rollout.name": names(ROLLOUT_ENGINES),
        "reward.name": names(REWARDS),
        "reward.val_name": names(REWARDS),
        "algorithm.kl_ctrl.type": names(KL_CONTROLLERS),
    }


def field_comments(cls: type) -> dict[str, str]:
    """``{field name: trailing comment}`` for the fields of dataclass ``cls`` (comments on the field's line)."""
    source = inspect.getsource(cls)
    names: dict[int, str] = {}
    comments: dict[int, str] = {}
    prev: tokenize.TokenInfo | None = None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.OP and tok.string == ":" and prev is not None and prev.type == tokenize.NAME \
                and prev.start[1] == 4:
            names[tok.start[0]] = prev.string
        elif tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            prev = tok
    return {name: comments[line] for line, name in names.items() if line in comments}


def _type_name(tp: Any) -> str:
    text = str(tp) if typing.get_origin(tp) else getattr(tp, "__name__", str(tp))
    return text.replace("typing.", "").replace("NoneType", "None")


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
        import json

        return json.dumps(value)
    return str(value)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _rows(cls: type, obj: Any, prefix: str, out: list[tuple[str, str, Any, str, type]]) -> None:
    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        key = f"{prefix}{f.name}"
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(tp):
            _rows(tp, value, key + ".", out)
        else:
            out.append((key, _type_name(tp), value, comments.get(f.name, ""), cls))


def render() -> str:
    from rlcockpit.trainer.config import ALIASES, VALID_CHOICES, Config

    choices_by_key = {**registry_choices(), **{k: list(v) for k, v in VALID_CHOICES.items()}}

    rows: list[tuple[str, str, Any, str, type]] = []
    _rows(Config, Config(), "", rows)
    lines = [
        "# Trainer config reference",
        "",
        "<!-- GENERATED by docs/gen_config_reference.py from rlcockpit.trainer.config; do not edit. -->",
        "",
        f"Every key `rlcockpit train` accepts ({len(rows)} keys). Set them in a preset, a `--config` YAML file or "
        "as dotted overrides (`actor.optim.lr=3e-5`); an unknown key or a value of the wrong type fails before "
        "anything loads, naming the closest key. How to use them: [trainer.md](trainer.md).",
        "",
        "The **verl key** column is the same setting in verl's config: rlcockpit flattens verl's "
        "`actor_rollout_ref` group (`actor.*`, `rollout.*`, `actor.model.*`); `—` marks a setting verl does not "
        "have. Defaults are the dataclass defaults before any preset; a preset (`arith-grpo`...) changes many "
        "of them.",
        "",
    ]
    sections: list[str] = []
    for key, *_ in rows:
        top = key.split(".")[0]
        if top not in sections:
            sections.append(top)
    for top in sections:
        lines += [f"## {top}", ""]
        docs_seen: set[type] = set()
        for _key, _tp, _value, _help, cls in rows:
            if _key.split(".")[0] == top and cls not in docs_seen and cls.__doc__ and \
                    not cls.__doc__.startswith(cls.__name__ + "("):
                docs_seen.add(cls)
                sub = _key.rsplit(".", 1)[0]
                lines.append(f"- `{sub}.*`: {' '.join(cls.__doc__.split()).replace('``', '`')}")
        if docs_seen:
            lines.append("")
        lines += ["| key | type | default | help | verl key |", "|---|---|---|---|---|"]
        for key, tp, value, help_text, _cls in rows:
            if key.split(".")[0] != top:
                continue
            if help_text.startswith("registry "):  # an implementation note, not help
                help_text = ""
            notes = help_text or FALLBACK_HELP.get(key, "")
            choices = choices_by_key.get(key)
            if choices:
                plain = " | ".join(choices)
                if notes.startswith(plain):  # the comment only listed the choices
                    notes = notes[len(plain):].strip(" ;,")
                listed = "one of " + ", ".join(f"`{c}`" for c in choices)
                notes = f"{notes}; {listed}" if notes else listed
            verl = verl_key(key)
            verl_text = "—" if verl is None else ("same" if verl == key else f"`{verl}`")
            lines.append(f"| `{key}` | {_cell(tp)} | `{_cell(_default(value))}` | {_cell(notes)} | {verl_text} |")
        lines.append("")
    lines += [
        "## Alias keys",
        "",
        "Keys from TRL's `PPOConfig` and older scripts that the trainer accepts and rewrites (it prints "
        "`config alias: A -> B`). `--kl_coef X` and `--use_wandb` work on the `rlcockpit train` command line too.",
        "",
        "| alias | means |",
        "|---|---|",
    ]
    for alias, target in ALIASES.items():
        means = f"`{target}`" + (" (true adds `wandb`, false removes it)" if alias == "use_wandb" else "")
        lines.append(f"| `{alias}` | {means} |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from docgen import generator_main

    return generator_main(render, OUTPUT, __file__, argv)


if __name__ == "__main__":
    sys.exit(main())
