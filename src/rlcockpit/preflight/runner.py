"""Running the preflight: the memory check (config → shapes → estimate vs device), the whole
sequence, the rich table, and the gate the trainer calls at the start of ``train``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rlcockpit.preflight.checks import (
    CheckResult,
    check_backup,
    check_batch,
    check_data,
    check_logging,
)
from rlcockpit.preflight.memory import (
    LORA_MODULES,
    SAFETY_MARGIN,
    GiB,
    ModelShape,
    TrainShape,
    alternatives,
    device_capacity,
    estimate_memory,
    fits,
)
from rlcockpit.preflight.signal import check_model, check_reward

CHECKS = ("batch", "data", "reward", "model", "memory", "logging", "backup")


class PreflightFailed(RuntimeError):
    """``trainer.preflight=strict`` and at least one check failed."""


def model_shape_for(cfg: Any) -> ModelShape:
    """Shapes of ``actor.model.path`` from its ``config.json`` (no weights), or of the tiny model."""
    m = cfg.model
    if m.path == "tiny" and cfg.data.builtin.name == "bars" and not cfg.data.train_files:
        from rlcockpit.trainer.vision.model import build_tiny_processor, build_tiny_vl_model

        t = m.tiny  # the vision demo's Qwen2-VL (trainer/vision/task.py): its config, built without weights' cost
        return ModelShape.from_hf_config(build_tiny_vl_model(build_tiny_processor(), hidden=t.hidden_size,
                                                             layers=t.num_layers, heads=t.num_heads).config.to_dict())
    if m.path == "tiny":
        from rlcockpit.trainer.tiny import build_char_tokenizer

        t = m.tiny
        return ModelShape(hidden=t.hidden_size, layers=t.num_layers, heads=t.num_heads, kv_heads=t.num_heads,
                          intermediate=t.intermediate_size, vocab=len(build_char_tokenizer()), tie_embeddings=True,
                          attention_bias=True, model_type="qwen2")  # trainer/tiny.py builds a Qwen2
    path = Path(m.path).expanduser() / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"actor_rollout_ref.model.path={m.path!r} has no config.json (rlcockpit never downloads)")
    return ModelShape.from_hf_config(json.loads(path.read_text()))


def image_patches_for(cfg: Any, shape: ModelShape | None = None) -> int:
    """A VL prompt's vision patches at the processor's ``max_pixels`` (one image a prompt, as geo3k's rows):
    the pixel budget the estimate plans for; 0 for a text model."""
    shape = shape or model_shape_for(cfg)
    if shape.vision is None:
        return 0
    from rlcockpit.trainer.vision.data import max_pixels_of
    from rlcockpit.trainer.vision.model import TINY_MAX_PIXELS

    if cfg.model.path == "tiny":
        pixels = TINY_MAX_PIXELS
    else:
        from transformers import AutoImageProcessor

        pixels = max_pixels_of(AutoImageProcessor.from_pretrained(str(Path(cfg.model.path).expanduser()),
                                                                  use_fast=False, local_files_only=True))
    return pixels // shape.vision.patch ** 2


def train_shape_for(cfg: Any, device: str, prompt_length: int | None = None,
                    image_patches: int = 0) -> TrainShape:
    """The memory-relevant settings of a trainer config, as the trainer will run them on ``device``. A VL
    model (``image_patches`` > 0): the prompt gains the image's tokens, and the passes run whole rows with their
    images (no prompt sharing, no chunked output layer: ``trainer/vision/inputs.py``)."""
    from rlcockpit.algos import kl_needs_full_vocab
    from rlcockpit.trainer.config import micro_batch_size
    from rlcockpit.trainer.launch import node_ranks
    from rlcockpit.trainer.models import needs_reference
    from rlcockpit.trainer.step_inputs import needs_old_pass

    a, d, m = cfg.actor, cfg.data, cfg.model
    mini = a.ppo_mini_batch_size * cfg.rollout.n
    on_gpu = device == "cuda"
    rows = d.train_batch_size * cfg.rollout.n
    lora = m.lora_rank > 0 or bool(m.lora_adapter_path)
    targets = m.target_modules
    lora_targets = LORA_MODULES if targets == "all-linear" else ((targets,) if isinstance(targets, str)
                                                                  else tuple(targets))
    alg = cfg.algorithm
    full_kl = (a.use_kl_loss and kl_needs_full_vocab(a.kl_loss_type)) or (
        alg.use_kl_in_reward and kl_needs_full_vocab(alg.kl_penalty))
    return TrainShape(
        train_batch_size=d.train_batch_size, rollout_n=cfg.rollout.n,
        micro_batch_size=max(1, min(mini, micro_batch_size(cfg) or mini)),
        # a VL prompt's image tokens: one per 2x2 merged patches
        prompt_length=(prompt_length or d.max_prompt_length) + image_patches // 4,
        response_length=d.max_response_length,
        compute_dtype=m.dtype, weight_dtype="fp32",  # the trainer keeps fp32 weights and autocasts (models.py)
        ref_dtype="bf16" if (on_gpu and m.dtype == "bf16") else "fp32",
        grad_checkpointing=m.enable_gradient_checkpointing, lora_rank=m.lora_rank if lora else 0,
        lora_targets=lora_targets, needs_ref=needs_reference(cfg),
        needs_critic=alg.adv_estimator == "gae", old_log_prob_pass=needs_old_pass(cfg, rows, None),
        full_vocab_kl=full_kl,
        share_prefix=bool(a.share_prefix) and not m.use_remove_padding and not image_patches,  # packing.py
        entropy_grad=a.entropy_coeff != 0, temperature=float(cfg.rollout.temperature),
        world_size=node_ranks(cfg), device="cuda" if on_gpu else "cpu", image_patches=image_patches,
        fused_head=False if image_patches else None)


def check_memory(cfg: Any, *, prompt_length: int | None = None, capacity_bytes: int | None = None,
                 device: str | None = None) -> list[CheckResult]:
    """Estimated peak memory (+20% margin) against the device; options with their estimates if it won't fit."""
    name = "memory: peak estimate"
    try:
        shape = model_shape_for(cfg)
    except (FileNotFoundError, ValueError) as exc:
        return [CheckResult(name, "fail", str(exc))]
    where, capacity = device_capacity(cfg.trainer.device)
    if capacity_bytes is not None:
        where, capacity = "given capacity", capacity_bytes
    dev = device or ("cuda" if where.startswith("GPU") else "cpu")
    train = train_shape_for(cfg, dev, prompt_length, image_patches_for(cfg, shape))
    est = estimate_memory(shape, train)
    top = sorted(((k, v) for k, v in est.components.items() if v), key=lambda kv: -kv[1])[:4]
    parts = ", ".join(f"{k} {v / GiB:.2f}" for k, v in top)
    detail = (f"{est.peak_gib:.2f} GiB peak at {est.peak_phase} ({shape.n_params / 1e6:.1f}M params; {parts} GiB) vs "
              f"{capacity / GiB:.1f} GiB {where}")
    if cfg.rollout.name == "vllm" and dev == "cuda":  # vLLM's pool is its own, sized by a fraction of the device
        detail += (f"; vLLM reserves actor_rollout_ref.rollout.gpu_memory_utilization="
                   f"{cfg.rollout.gpu_memory_utilization} of the device on top (not in this estimate)")
    data = {"estimate": est.to_dict(), "capacity_bytes": capacity, "device": where}
    if fits(est.peak_bytes, capacity):
        return [CheckResult(name, "pass", detail, data)]
    options = []
    for what, overrides, alt in alternatives(shape, train):
        ok = "fits" if fits(alt.peak_bytes, capacity) else "still too big"
        options.append(f"{what}: {alt.peak_gib:.2f} GiB ({ok}) [{' '.join(overrides)}]")
    data["options"] = options
    status = "warn" if est.peak_bytes <= capacity else "fail"
    margin = f"{SAFETY_MARGIN:.0%} safety margin" if status == "warn" else "device"
    return [CheckResult(name, status, f"{detail}: does not fit the {margin}. Options: " + "; ".join(options), data)]


def run_preflight(cfg: Any, *, skip: Iterable[str] = (), backup_dir: str | None = None, alerts: Any = None,
                  run: Any = None, capacity_bytes: int | None = None, tokenizer: Any = None) -> list[CheckResult]:
    """All checks in order; a check that crashes is reported as a failure of that check, never raised."""
    skip = set(skip)
    unknown = skip - set(CHECKS)
    if unknown:
        raise ValueError(f"unknown preflight check(s) {sorted(unknown)}; known: {', '.join(CHECKS)}")
    results: list[CheckResult] = []
    stats: dict[str, Any] = {}

    def guarded(label: str, fn: Any) -> None:
        if label in skip:
            return
        try:
            results.extend(fn())
        except Exception as exc:  # noqa: BLE001 - preflight reports, it does not crash
            results.append(CheckResult(f"{label}: check", "fail", f"the check itself failed: {type(exc).__name__}: {exc}"))

    guarded("batch", lambda: check_batch(cfg))
    guarded("data", lambda: check_data(cfg, tokenizer=tokenizer, stats=stats))
    guarded("reward", lambda: check_reward(cfg))
    guarded("model", lambda: check_model(cfg))
    guarded("memory", lambda: check_memory(cfg, prompt_length=stats.get("prompt_len_max"),
                                           capacity_bytes=capacity_bytes))
    guarded("logging", lambda: check_logging(cfg, alerts=alerts))
    guarded("backup", lambda: check_backup(cfg, run=run, backup_dir=backup_dir))
    return results


def print_report(results: list[CheckResult], console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    t = Table(title="rlcockpit preflight", show_lines=False)
    t.add_column("check", no_wrap=True)
    t.add_column("status", no_wrap=True)
    t.add_column("detail", overflow="fold")
    style = {"pass": "green", "warn": "yellow", "fail": "bold red"}
    for r in results:
        t.add_row(r.name, f"[{style[r.status]}]{r.status.upper()}[/]", r.detail)
    console.print(t)
    n_fail = sum(r.status == "fail" for r in results)
    n_warn = sum(r.status == "warn" for r in results)
    console.print(f"{'[bold red]FAILED' if n_fail else '[green]OK'}[/]: {n_fail} failed, {n_warn} warning(s), "
                  f"{len(results) - n_fail - n_warn} passed")


def preflight_gate(cfg: Any, mode: str | None = None, *, log: Any = print, **kwargs: Any) -> list[CheckResult]:
    """What ``train`` calls first: ``strict`` raises :class:`PreflightFailed` on any fail, ``warn`` prints
    and goes on, ``off`` does nothing (``mode`` defaults to ``cfg.trainer.preflight``)."""
    mode = mode or cfg.trainer.preflight
    if mode == "off":
        return []
    results = run_preflight(cfg, **kwargs)
    print_report(results)
    failed = [r for r in results if r.status == "fail"]
    if failed and mode == "strict":
        raise PreflightFailed("preflight failed (trainer.preflight=strict; trainer.preflight=warn runs anyway): " +
                              "; ".join(f"{r.name}: {r.detail}" for r in failed))
    if failed:
        log(f"[rlcockpit] preflight: {len(failed)} check(s) failed; continuing (trainer.preflight=warn)")
    return results
