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

from rlcockpit.redact import redact
from rlcockpit.registry import PROVIDERS

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


def load_cfg(preset: str | None = None, config_file: str | None = None, overrides: list[str] | None = None,
             log: Any = print) -> Any:
    """The trainer config *without* its batch-arithmetic validation, so preflight can report it as a row.
    ``log`` receives the config notes (aliases used...): stderr under ``--json``, so stdout stays JSON."""
    from rlcockpit.trainer.config import load_config

    return load_config(preset=preset, config_file=config_file, overrides=overrides, validate=False, log=log)


# --------------------------------------------------------------------------- batch arithmetic

def check_batch(cfg: Any) -> list[CheckResult]:
    """Batch, mini-batch, micro-batch and ``rollout.n`` divide as the update loop needs."""
    from rlcockpit.trainer.config import ConfigError, dynamic_batching, finalize

    a, d, n = cfg.actor, cfg.data, cfg.rollout.n
    fails: list[str] = []
    warns: list[str] = []
    dynamic = dynamic_batching(cfg)
    if n < 1 or d.train_batch_size < 1:
        fails.append(f"rollout.n={n} and data.train_batch_size={d.train_batch_size} must be >= 1")
    # verl with use_dynamic_bsz: a mini-batch past the step's batch is one mini-batch of it (finalize, the update)
    if a.ppo_mini_batch_size < 1 or (a.ppo_mini_batch_size > d.train_batch_size and not dynamic):
        fails.append(f"actor.ppo_mini_batch_size={a.ppo_mini_batch_size} must be in [1, data.train_batch_size="
                     f"{d.train_batch_size}]: otherwise a step has zero mini-batches")
    elif not dynamic and d.train_batch_size % a.ppo_mini_batch_size:
        warns.append(f"data.train_batch_size={d.train_batch_size} is not a multiple of actor.ppo_mini_batch_size="
                     f"{a.ppo_mini_batch_size}: the last mini-batch of each step is smaller (verl refuses this)")
    mini_samples = max(1, a.ppo_mini_batch_size) * max(1, n)
    micro = a.ppo_micro_batch_size
    if micro is not None and not dynamic:
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
            max(1 if dynamic else 0, d.train_batch_size // a.ppo_mini_batch_size) if a.ppo_mini_batch_size >= 1 else 0,
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
    from rlcockpit.trainer.models import load_tokenizer, tokenizer_path

    if cfg.model.path == "tiny" and not (cfg.model.tokenizer_path or cfg.data.tokenizer):
        from rlcockpit.trainer.tiny import build_char_tokenizer

        return build_char_tokenizer()
    return load_tokenizer(tokenizer_path(cfg, cfg.model.path), trust_remote_code=cfg.model.trust_remote_code,
                          chat_template=cfg.model.custom_chat_template)


def _rule_reward(cfg: Any) -> bool:
    from rlcockpit.trainer.reward.rewards import reward_model_enabled

    return not reward_model_enabled(cfg)


def _reward_label(cfg: Any) -> str:
    crf = cfg.custom_reward_function
    return f"{crf.path}:{crf.name or 'compute_score'}" if crf.path else f"reward.name={cfg.reward.name}"


def load_rows_for(cfg: Any, rejected: list[str] | None = None) -> tuple[list[Any], str]:
    """Train rows through the trainer's loader (files or the built-in task) and a description."""
    from rlcockpit.trainer.data import builtin_rows, load_rows

    if cfg.data.train_files:
        rows = load_rows(list(cfg.data.train_files), cfg.data, max_samples=cfg.data.train_max_samples,
                         rejected=rejected)
        return rows, f"{len(rows)} rows in {len(cfg.data.train_files)} file(s)"
    rows = builtin_rows(cfg.data)[0]
    return rows, f"built-in task {cfg.data.builtin.name!r} ({len(rows)} rows)"


def check_images(cfg: Any, rows: list[Any], rejected: list[str]) -> CheckResult | None:
    """The image column (issue 28): rows left out for their images, and rows with images, which need a
    vision-language policy (the trainer stops at loading rather than train a text model on the text alone)."""
    from rlcockpit.trainer.vision.inputs import policy_is_vl

    with_images = [r for r in rows if r.images]
    if not with_images and not rejected:
        return None
    largest = max((im.width * im.height for r in with_images for im in r.images), default=0)
    data = {"rows_with_images": len(with_images), "rejected_rows": len(rejected), "largest_image_pixels": largest}
    if with_images:
        detail = (f"{len(with_images)} row(s) carry images (data.image_key={cfg.data.image_key!r}, largest {largest} "
                  "pixels)" + (f"; {len(rejected)} left out, first: {rejected[0]}" if rejected else ""))
        if policy_is_vl(cfg):
            return CheckResult("data: images", "warn" if rejected else "pass",
                               detail + "; a vision-language policy", data)
        return CheckResult("data: images", "fail", detail + f": actor_rollout_ref.model.path={cfg.model.path!r} is "
                           "a text-only model (a vision-language one, e.g. Qwen2-VL / Qwen2.5-VL, reads them)", data)
    return CheckResult("data: images", "warn", f"{len(rejected)} row(s) left out for their images; first: "
                       f"{rejected[0]}", data)


def check_data(cfg: Any, tokenizer: Any = None, stats: dict[str, Any] | None = None) -> list[CheckResult]:
    """Files exist and parse, every row has the fields, prompts render and fit ``max_prompt_length``.

    ``stats`` (optional dict) receives ``prompt_len_max``/``prompt_len_p95`` for the memory check.
    """
    from rlcockpit.trainer.data import DataError, empty_prompt, load_rows, render_prompt

    out: list[CheckResult] = []
    rows_val: list[Any] = []
    rejected: list[str] = []
    try:
        rows, desc = load_rows_for(cfg, rejected)
        if cfg.data.val_files:
            val = load_rows(list(cfg.data.val_files), cfg.data, max_samples=cfg.data.val_max_samples,
                            rejected=rejected)
            rows_val = val
            desc += f"; {len(val)} validation rows"
    except (FileNotFoundError, DataError) as exc:
        return [CheckResult("data: files and rows", "fail", str(exc))]
    except Exception as exc:  # noqa: BLE001 - a parquet reader error, a permission error...
        return [CheckResult("data: files and rows", "fail", f"{type(exc).__name__}: {exc}")]
    out.append(CheckResult("data: files and rows", "pass", desc, {"rows": len(rows)}))
    all_rows = [*rows, *rows_val]
    image_check = check_images(cfg, all_rows, rejected)
    if image_check is not None:
        out.append(image_check)
    blank = [r for r in all_rows if empty_prompt(r.prompt)]
    if blank:
        out.append(CheckResult("data: prompts", "fail", f"{len(blank)} row(s) have an empty prompt (first: "
                               f"{blank[0].where or 'row ?'}; column {cfg.data.prompt_key!r}): the model would be "
                               "trained on answers to nothing", {"empty": len(blank)}))

    if _rule_reward(cfg):
        missing = [i for i, r in enumerate(all_rows) if r.ground_truth is None or str(r.ground_truth).strip() == ""]
        if missing:
            first = all_rows[missing[0]].where or f"row {missing[0]}"
            out.append(CheckResult("data: ground truth", "fail",
                                   f"{len(missing)} row(s) have a null or empty reward_model.ground_truth (first: "
                                   f"{first}); rule reward {_reward_label(cfg)} needs it",
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
            text = render_prompt(row.prompt, tokenizer, cfg.data.apply_chat_template_kwargs)
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
    what = {"drop": "dropped", "left": "truncated (left)", "right": "truncated (right)", "middle": "truncated (middle)",
            "error": "an error"}
    mode = "drop" if cfg.data.filter_overlong_prompts else cfg.data.truncation
    detail = (f"prompt tokens p50 {p50}, p95 {p95}, max {lengths_sorted[-1]} vs data.max_prompt_length={limit}; "
              f"{share:.1%} would be {what.get(mode, mode)}")
    if over == len(lengths) or (over and mode == "error"):
        status = "fail"
    elif share > 0.05:
        status = "warn"
    else:
        status = "warn" if over else "pass"
    out.append(CheckResult("data: prompt length", status, detail, data))
    return out


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
    probes = PROVIDERS.get("preflight_probes")()  # tracking's and the store's knowledge, handed down
    out: list[CheckResult] = []
    problems: list[str] = []
    for name in cfg.trainer.logger:
        try:
            canonical = probes.logger_name(name)
        except KeyError as exc:
            problems.append(f"trainer.logger: {exc.args[0]}")
            continue
        package = TRACKER_PACKAGES.get(canonical)
        if package:
            try:
                importlib.import_module(package)
            except ImportError:
                problems.append(str(probes.missing_extra(canonical, package, canonical)))
    store_dir = probes.store_dir(cfg.trainer.rlcockpit_dir)
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
    probes = PROVIDERS.get("preflight_probes")()
    name = "logging: alert channels"
    try:
        config = probes.load_alerts_config(alerts)
    except ValueError as exc:
        return CheckResult(name, "fail", str(exc))
    problems = [p for ch in config.channels for p in ch.problems()]
    for ch in config.channels:
        if "secret" in ch.options and not ch.options.get("secret"):
            problems.append(f"{ch.name}: signing is configured ('secret' key) but the secret is empty")
    for var, (_kind, secret_var) in probes.env_webhooks.items():
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
    meta = ((run.store.get_run(run.id).get("meta") if run is not None else None)
            or PROVIDERS.get("preflight_probes")().collect_meta(capture_git=True))
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
