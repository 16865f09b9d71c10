"""Preflight checks: each finds one class of problem that would otherwise surface hours into a run.

Every ``check_*`` takes the trainer :class:`~rlcockpit.trainer.config.Config` and returns a list of
:class:`CheckResult`; none of them loads model weights or sends anything. They reuse the trainer's
own loaders (config, data, tokenizer, rewards) so a passing preflight means the trainer will
accept the same inputs.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATUSES = ("pass", "warn", "fail")
SAMPLE_ROWS_FOR_LENGTHS = 2000
TRACKER_PACKAGES = {"wandb": "wandb", "mlflow": "mlflow", "swanlab": "swanlab", "tensorboard": "tensorboard"}


@dataclass
class CheckResult:
    name: str
    status: str  # pass | warn | fail
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"CheckResult status must be one of {STATUSES}, got {self.status!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def load_cfg(preset: str | None = None, config_file: str | None = None, overrides: list[str] | None = None) -> Any:
    """The trainer config *without* its batch-arithmetic validation, so preflight can report it as a row."""
    import yaml

    from rlcockpit.trainer.config import Config, apply_dict, load_preset, parse_override, set_key

    cfg = Config()
    if preset:
        apply_dict(cfg, load_preset(preset))
    if config_file:
        path = Path(config_file)
        if not path.is_file():
            raise FileNotFoundError(f"config file not found: {path}")
        apply_dict(cfg, yaml.safe_load(path.read_text()) or {})
    for text in overrides or []:
        key, value = parse_override(text)
        set_key(cfg, key, value)
    return cfg


# --------------------------------------------------------------------------- batch arithmetic

def check_batch(cfg: Any) -> list[CheckResult]:
    """Batch, mini-batch, micro-batch and ``rollout.n`` divide as the update loop needs."""
    from rlcockpit.trainer.config import ConfigError, finalize

    a, d, n = cfg.actor, cfg.data, cfg.rollout.n
    fails: list[str] = []
    warns: list[str] = []
    if n < 1 or d.train_batch_size < 1:
        fails.append(f"rollout.n={n} and data.train_batch_size={d.train_batch_size} must be >= 1")
    if not 1 <= a.ppo_mini_batch_size <= d.train_batch_size:
        fails.append(f"actor.ppo_mini_batch_size={a.ppo_mini_batch_size} must be in [1, data.train_batch_size="
                     f"{d.train_batch_size}]: otherwise a step has zero mini-batches")
    elif d.train_batch_size % a.ppo_mini_batch_size:
        warns.append(f"data.train_batch_size={d.train_batch_size} is not a multiple of actor.ppo_mini_batch_size="
                     f"{a.ppo_mini_batch_size}: the last mini-batch of each step is smaller (verl refuses this)")
    mini_samples = max(1, a.ppo_mini_batch_size) * max(1, n)
    micro = a.ppo_micro_batch_size
    if micro is not None:
        if not 1 <= micro <= mini_samples:
            fails.append(f"actor.ppo_micro_batch_size={micro} must be in [1, ppo_mini_batch_size*rollout.n="
                         f"{mini_samples}]: otherwise there are zero gradient-accumulation steps")
        elif mini_samples % micro:
            warns.append(f"ppo_mini_batch_size*rollout.n={mini_samples} is not a multiple of "
                         f"actor.ppo_micro_batch_size={micro}: uneven accumulation steps")
    if a.ppo_epochs < 1:
        fails.append(f"actor.ppo_epochs={a.ppo_epochs} must be >= 1")
    if cfg.algorithm.adv_estimator in ("grpo", "rloo") and n < 2:
        fails.append(f"algorithm.adv_estimator={cfg.algorithm.adv_estimator} needs rollout.n >= 2: with one sample "
                     "per prompt every group advantage is 0")
    if not fails:
        try:
            finalize(copy.deepcopy(cfg))
        except ConfigError as exc:
            fails.append(str(exc))
    accum = (mini_samples // micro) if micro and 1 <= micro <= mini_samples else 1
    data = {"samples_per_step": d.train_batch_size * n, "mini_batches_per_epoch":
            (d.train_batch_size // a.ppo_mini_batch_size) if a.ppo_mini_batch_size >= 1 else 0,
            "grad_accumulation": accum}
    if fails:
        return [CheckResult("batch: arithmetic", "fail", "; ".join(fails), data)]
    if warns:
        return [CheckResult("batch: arithmetic", "warn", "; ".join(warns), data)]
    return [CheckResult("batch: arithmetic", "pass",
                        f"{data['samples_per_step']} samples/step, {data['mini_batches_per_epoch']} mini-batch(es) "
                        f"x {accum} micro-batch(es)", data)]


# --------------------------------------------------------------------------- data

def load_tokenizer_for(cfg: Any) -> Any:
    """The tokenizer the trainer would use (the built-in one for ``tiny``); never downloads."""
    if cfg.actor.model.path == "tiny":
        from rlcockpit.trainer.tiny import build_char_tokenizer

        return build_char_tokenizer()
    from rlcockpit.trainer.models import load_tokenizer

    return load_tokenizer(cfg.actor.model.path)


def _rule_reward(cfg: Any) -> bool:
    return not cfg.reward.model_path


def load_rows_for(cfg: Any) -> tuple[list[Any], str]:
    """Train rows through the trainer's loader (files or the built-in task) and a description."""
    from rlcockpit.trainer.data import arith_rows, load_rows, validate_row

    if cfg.data.train_files:
        rows = load_rows(list(cfg.data.train_files))
        return rows, f"{len(rows)} rows in {len(cfg.data.train_files)} file(s)"
    train, _ = arith_rows(cfg.data.builtin)
    rows = [validate_row(r, f"builtin:{cfg.data.builtin.name}: row {i}") for i, r in enumerate(train)]
    return rows, f"built-in task {cfg.data.builtin.name!r} ({len(rows)} rows)"


def check_data(cfg: Any, tokenizer: Any = None, stats: dict[str, Any] | None = None) -> list[CheckResult]:
    """Files exist and parse, every row has the fields, prompts render and fit ``max_prompt_length``.

    ``stats`` (optional dict) receives ``prompt_len_max``/``prompt_len_p95`` for the memory check.
    """
    from rlcockpit.trainer.data import DataError, load_rows, render_prompt

    out: list[CheckResult] = []
    try:
        rows, desc = load_rows_for(cfg)
        if cfg.data.val_files:
            val = load_rows(list(cfg.data.val_files))
            desc += f"; {len(val)} validation rows"
    except (FileNotFoundError, DataError) as exc:
        return [CheckResult("data: files and rows", "fail", str(exc))]
    except Exception as exc:  # noqa: BLE001 - a parquet reader error, a permission error...
        return [CheckResult("data: files and rows", "fail", f"{type(exc).__name__}: {exc}")]
    out.append(CheckResult("data: files and rows", "pass", desc, {"rows": len(rows)}))

    if _rule_reward(cfg):
        missing = [i for i, r in enumerate(rows) if r.ground_truth is None or str(r.ground_truth).strip() == ""]
        if missing:
            out.append(CheckResult("data: ground truth", "fail",
                                   f"{len(missing)} row(s) have an empty reward_model.ground_truth (first: row "
                                   f"{missing[0]}); rule reward {cfg.reward.custom_fn or cfg.reward.name!r} needs it",
                                   {"missing": len(missing), "first_row": missing[0]}))
        else:
            out.append(CheckResult("data: ground truth", "pass", "present in every row"))

    try:
        tokenizer = tokenizer if tokenizer is not None else load_tokenizer_for(cfg)
    except Exception as exc:  # noqa: BLE001
        out.append(CheckResult("data: chat template", "fail", f"tokenizer could not load: {exc}"))
        return out
    step = max(1, len(rows) // SAMPLE_ROWS_FOR_LENGTHS)
    sample = list(enumerate(rows))[::step][:SAMPLE_ROWS_FOR_LENGTHS]
    lengths: list[int] = []
    for i, row in sample:
        try:
            text = render_prompt(row.prompt, tokenizer)
            lengths.append(len(tokenizer(text, add_special_tokens=False)["input_ids"]))
        except Exception as exc:  # noqa: BLE001
            out.append(CheckResult("data: chat template", "fail", f"row {i}: prompt does not render through the "
                                   f"tokenizer's chat template: {type(exc).__name__}: {exc}"))
            return out
    chat_rows = any(isinstance(r.prompt, list) for _, r in sample)
    if chat_rows and not getattr(tokenizer, "chat_template", None):
        out.append(CheckResult("data: chat template", "warn", "the tokenizer has no chat template: chat prompts are "
                               "joined with newlines (an instruct model will see an unfamiliar format)"))
    else:
        out.append(CheckResult("data: chat template", "pass", f"{len(sample)} prompts rendered"))

    limit = cfg.data.max_prompt_length
    lengths_sorted = sorted(lengths)
    p50 = lengths_sorted[len(lengths) // 2]
    p95 = lengths_sorted[min(len(lengths) - 1, int(math.ceil(0.95 * len(lengths))) - 1)]
    over = sum(1 for x in lengths if x > limit)
    share = over / len(lengths)
    data = {"p50": p50, "p95": p95, "max": lengths_sorted[-1], "over_limit_share": round(share, 4),
            "sampled": len(lengths)}
    if stats is not None:
        stats.update(prompt_len_max=min(lengths_sorted[-1], limit), prompt_len_p95=min(p95, limit))
    what = {"drop": "dropped", "left": "truncated (left)", "right": "truncated (right)", "error": "an error"}
    detail = (f"prompt tokens p50 {p50}, p95 {p95}, max {lengths_sorted[-1]} vs data.max_prompt_length={limit}; "
              f"{share:.1%} would be {what.get(cfg.data.truncation, cfg.data.truncation)}")
    if over == len(lengths) or (over and cfg.data.truncation == "error"):
        status = "fail"
    elif share > 0.05:
        status = "warn"
    else:
        status = "warn" if over else "pass"
    out.append(CheckResult("data: prompt length", status, detail, data))
    return out


# --------------------------------------------------------------------------- reward

def check_reward(cfg: Any, rows: list[Any] | None = None, n_samples: int = 4) -> list[CheckResult]:
    """The reward function imports and returns finite numbers on a few samples (right and wrong answers)."""
    name = "reward: function"
    if cfg.reward.model_path:
        p = Path(cfg.reward.model_path)
        if not (p / "config.json").is_file():
            return [CheckResult(name, "fail", f"reward.model_path={str(p)!r} is not a local model directory")]
        return [CheckResult(name, "pass", f"reward model at {p} (not loaded by preflight)")]
    from rlcockpit.trainer.rewards import REWARDS, load_custom_fn

    label = cfg.reward.custom_fn or cfg.reward.name
    try:
        fn = load_custom_fn(cfg.reward.custom_fn) if cfg.reward.custom_fn else REWARDS.get(cfg.reward.name)
    except Exception as exc:  # noqa: BLE001 - KeyError with a hint, SyntaxError in the user's file...
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else f"{type(exc).__name__}: {exc}"
        return [CheckResult(name, "fail", f"reward {label!r} could not be loaded: {msg}")]
    kwargs = dict(cfg.reward.kwargs) if not cfg.reward.custom_fn or cfg.reward.kwargs else {}
    if rows is None:
        try:
            rows = load_rows_for(cfg)[0]
        except Exception as exc:  # noqa: BLE001
            return [CheckResult(name, "warn", f"no data to test the reward on ({exc})")]
    scores: list[float] = []
    for i, row in enumerate(rows[:n_samples]):
        for response in (str(row.ground_truth), "I don't know."):
            try:
                value = fn(row.data_source, response, row.ground_truth, row.extra_info, **kwargs)
            except Exception as exc:  # noqa: BLE001
                return [CheckResult(name, "fail", f"reward {label!r} raised on row {i} (response {response!r}): "
                                    f"{type(exc).__name__}: {exc}")]
            raw = value.get("score") if isinstance(value, dict) else value
            if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(float(raw)):
                return [CheckResult(name, "fail", f"reward {label!r} returned {value!r} on row {i}: it must return a "
                                    "finite number or a dict with a numeric 'score'")]
            scores.append(float(raw))
    if scores and len(set(scores)) == 1:
        return [CheckResult(name, "warn", f"reward {label!r} gave {scores[0]} for right and wrong answers alike: "
                            "no learning signal", {"scores": scores})]
    return [CheckResult(name, "pass", f"reward {label!r} ran on {len(scores)} samples "
                        f"(range {min(scores):g}..{max(scores):g})", {"scores": scores})]


# --------------------------------------------------------------------------- logging and alerts

def _writable(path: Path) -> str | None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".rlcockpit-preflight-"):
            pass
    except OSError as exc:
        return f"{path} is not writable: {exc.strerror or exc}"
    return None


def check_logging(cfg: Any, alerts: Any = None) -> list[CheckResult]:
    """Every configured logger can start (library installed, directory writable); alert channels parse."""
    from rlcockpit.store import resolve_dir
    from rlcockpit.tracking.sinks import SINKS, MissingExtra

    out: list[CheckResult] = []
    problems: list[str] = []
    for name in cfg.trainer.logger:
        try:
            canonical = SINKS.canonical(name)
        except KeyError as exc:
            problems.append(f"trainer.logger: {exc.args[0]}")
            continue
        package = TRACKER_PACKAGES.get(canonical)
        if package:
            try:
                importlib.import_module(package)
            except ImportError:
                problems.append(str(MissingExtra(canonical, package, canonical)))
    store_dir = resolve_dir(cfg.trainer.rlcockpit_dir)
    err = _writable(store_dir)
    if err:
        problems.append(f"tracking store: {err}")
    if cfg.trainer.save_freq > 0:
        err = _writable(Path(cfg.trainer.default_local_dir.split("$")[0] or "."))
        if err:
            problems.append(f"checkpoints: {err}")
    out.append(CheckResult("logging: loggers", "fail" if problems else "pass",
                           "; ".join(problems) or f"{', '.join(cfg.trainer.logger)} → store {store_dir}"))
    out.append(_check_alerts(alerts))
    return out


def _check_alerts(alerts: Any) -> CheckResult:
    from rlcockpit.alerts.config import ENV_WEBHOOKS, load_alerts_config

    name = "logging: alert channels"
    try:
        config = load_alerts_config(alerts)
    except ValueError as exc:
        return CheckResult(name, "fail", str(exc))
    problems = [p for ch in config.channels for p in ch.problems()]
    for ch in config.channels:
        if "secret" in ch.options and not ch.options.get("secret"):
            problems.append(f"{ch.name}: signing is configured ('secret' key) but the secret is empty")
    for var, (_kind, secret_var) in ENV_WEBHOOKS.items():
        if secret_var and os.environ.get(secret_var) and not os.environ.get(var):
            problems.append(f"{secret_var} is set but {var} is not: the signed channel is not configured")
    if problems:
        return CheckResult(name, "fail", "; ".join(problems))
    if not config.channels:
        return CheckResult(name, "pass", "no alert channel configured (alerts off)")
    return CheckResult(name, "pass", ", ".join(ch.describe() for ch in config.channels) + " (not sent; "
                       "`rlcockpit alert-test` sends a test message)")


# --------------------------------------------------------------------------- backup

def check_backup(cfg: Any, run: Any = None, backup_dir: str | os.PathLike[str] | None = None) -> list[CheckResult]:
    """Resolved config, command line, git commit + diff and package versions are captured (and saved)."""
    from rlcockpit.redact import redact
    from rlcockpit.tracking.meta import collect_meta

    meta = (run.store.get_run(run.id).get("meta") if run is not None else None) or collect_meta(capture_git=True)
    config = redact(dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else dict(cfg))
    missing, warns = [], []
    if not meta.get("command"):
        missing.append("command line")
    if not meta.get("packages"):
        missing.append("package versions")
    git = meta.get("git")
    if not git:
        warns.append("the working directory is not a git repository: code state not captured")
    written: list[str] = []
    if backup_dir:
        root = Path(backup_dir)
        root.mkdir(parents=True, exist_ok=True)
        import yaml

        files = {"config.yaml": yaml.safe_dump(config, sort_keys=False),
                 "command.txt": " ".join(meta.get("command") or []) + "\n",
                 "packages.json": json.dumps(meta.get("packages") or {}, indent=2),
                 "meta.json": json.dumps({k: v for k, v in meta.items() if k != "git"} |
                                         {"git": {k: v for k, v in (git or {}).items() if k != "diff"}}, indent=2)}
        if git:
            files["git.diff"] = git.get("diff") or ""
        for fname, text in files.items():
            (root / fname).write_text(text)
            written.append(str(root / fname))
    if missing:
        return [CheckResult("backup: run metadata", "fail", "not captured: " + ", ".join(missing))]
    parts = [f"git {git['commit'][:10]}{' (dirty: diff saved)' if git.get('dirty') else ''}" if git else "no git",
             f"{len(meta.get('packages') or {})} package versions", "command line", "resolved config"]
    detail = ", ".join(parts) + (f"; written to {backup_dir}" if written else "")
    status = "warn" if warns else "pass"
    return [CheckResult("backup: run metadata", status, "; ".join([*warns, detail]), {"files": written})]
