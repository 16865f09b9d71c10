"""Everything the training loop mutates (:class:`State`), how it is built from a config, saved and restored.

:func:`build` loads the tokenizer, models, data, optimizers, rollout engine and reward functions; the
checkpoint helpers (:func:`save`, :func:`restore`, :func:`rollback`) and :func:`apply_live` (a guardrail
changed a key mid-run) act on the state. The loop itself is :mod:`rlcockpit.trainer.loop`.
"""

from __future__ import annotations

import math
import random
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlcockpit.algos import get_kl_controller
from rlcockpit.trainer.checkpoints import checkpoint as ckpt
from rlcockpit.trainer.config import Config, canonical, to_dict
from rlcockpit.trainer.cpu_threads import auto_threads
from rlcockpit.trainer.data import PromptLoader, load_datasets
from rlcockpit.trainer.distributed.group import SINGLE, Dist, check_batch_layout
from rlcockpit.trainer.distributed.group import setup as setup_distributed
from rlcockpit.trainer.distributed.rollout import ShardedEngine, ShardedReward
from rlcockpit.trainer.host_memory import return_freed_memory_to_os
from rlcockpit.trainer.models import (
    autocast_factory,
    import_external_lib,
    load_actor_and_ref,
    load_critic,
    load_tokenizer,
    needs_reference,
    resolve_device,
    tokenizer_path,
)
from rlcockpit.trainer.reward.rewards import RewardManager
from rlcockpit.trainer.rollout import vllm as rollout_vllm  # noqa: F401 - registers rollout.name=vllm
from rlcockpit.trainer.rollout.engine import ROLLOUT_ENGINES
from rlcockpit.trainer.vision.inputs import config_of, load_vl_processor, vl_engine_note
from rlcockpit.trainer.vision.model import vl_family


@dataclass
class State:
    """Everything the loop mutates; checkpoints and guardrails act on it."""

    cfg: Config
    device: torch.device
    tokenizer: Any
    model_path: str
    actor: Any
    ref: Any
    critic: Any
    actor_opt: torch.optim.Optimizer
    actor_sched: Any
    critic_opt: Any
    critic_sched: Any
    loader: PromptLoader
    val_rows: list
    reward: RewardManager
    val_reward: RewardManager
    engine: Any
    kl_ctrl: Any
    autocast: Any
    data_stats: dict
    step: int = 0
    ckpt_dir: Path | None = None  # where this run's checkpoints go (see checkpoint.claim_dir)
    run_id: str | None = None
    last_val: tuple[int, float] | None = None  # (step, validation accuracy) of the latest validation
    dist: Dist = SINGLE  # this process's rank in the data-parallel group (trainer/distributed/group.py)


def warmup_steps(optim_cfg: Any, total_steps: int) -> int:
    """``lr_warmup_steps`` when >= 0, else ``lr_warmup_steps_ratio`` of the run (verl's rule)."""
    if optim_cfg.lr_warmup_steps is not None and optim_cfg.lr_warmup_steps >= 0:
        return int(optim_cfg.lr_warmup_steps)
    return int(optim_cfg.lr_warmup_steps_ratio * total_steps)


def make_scheduler(opt: torch.optim.Optimizer, optim_cfg: Any, total_steps: int) -> Any:
    """Linear warm-up, then constant or cosine (down to ``min_lr_ratio`` of the lr, ``num_cycles`` cycles)."""
    warmup = warmup_steps(optim_cfg, total_steps)
    floor, cycles = float(optim_cfg.min_lr_ratio), float(optim_cfg.num_cycles)

    def factor(s: int) -> float:
        if warmup and s < warmup:
            return (s + 1) / warmup
        if optim_cfg.lr_scheduler_type == "cosine":
            progress = min(1.0, (s - warmup) / max(1, total_steps - warmup))
            return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * cycles * 2.0 * progress))
        return 1.0

    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def make_optimizer(params: Any, optim_cfg: Any) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters.  On a CPU with torch's fused kernel (one pass per parameter,
    no temporaries): the default single-tensor loop took 40 ms of a step where the fused one takes 12
    (13M parameters, 2 threads); the same update up to float rounding.  Elsewhere torch's default."""
    trainable = [p for p in params if p.requires_grad]
    fused = bool(trainable) and all(p.device.type == "cpu" and p.dtype in _FUSED_ADAMW_DTYPES for p in trainable)
    return torch.optim.AdamW(trainable, lr=optim_cfg.lr, weight_decay=optim_cfg.weight_decay,
                             betas=tuple(optim_cfg.betas), **({"fused": True} if fused else {}))


_FUSED_ADAMW_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)


def total_steps(cfg: Config, loader: PromptLoader) -> int:
    return cfg.trainer.total_training_steps or cfg.trainer.total_epochs * loader.steps_per_epoch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def resolve_model_path(cfg: Config, log: Any = print) -> str:
    if cfg.model.path != "tiny":
        return str(Path(cfg.model.path).expanduser())
    from rlcockpit.trainer.tiny import prepare_tiny

    tiny = cfg.model.tiny
    out_dir = None if tiny.cache else Path(cfg.trainer.default_local_dir) / "init_model"
    seed = cfg.trainer.seed if tiny.seed is None else tiny.seed
    return str(prepare_tiny(tiny, cfg.data.builtin, seed=seed, dtype=cfg.model.dtype,
                            out_dir=out_dir, log=log))


def make_engine(cfg: Config, actor: Any, tokenizer: Any, device: torch.device, autocast: Any, log: Any = print) -> Any:
    """``rollout.name``'s engine; vllm/sglang fall back to the built-in one (with one line) where missing."""
    name = cfg.rollout.name
    if vl_family(config_of(actor)) and name not in ("hf", "torch"):
        log(vl_engine_note(name))
        name = "hf"
    try:
        factory = ROLLOUT_ENGINES.get(name)
        return factory(actor, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                       device=device, autocast=autocast, config=cfg)
    except (KeyError, ImportError) as exc:
        if name not in ("vllm", "sglang"):
            raise
        reason = "not installed" if isinstance(exc, KeyError) else f"unavailable ({exc})"
        log(f"[rlcockpit] actor_rollout_ref.rollout.name={name}: {name} is {reason} here; using the built-in "
            "hf engine (same sampling settings)")
    return ROLLOUT_ENGINES.get("hf")(actor, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                                     device=device, autocast=autocast)


def set_cpu_threads(requested: int, log: Any = print) -> int:
    """torch's intra-op threads: ``trainer.num_threads`` as given, or for 0 the CPUs not kept busy by other
    processes (cpu_threads.py), with one line when other work lowered the count."""
    if requested > 0:
        torch.set_num_threads(requested)
        return requested
    choice = auto_threads()
    torch.set_num_threads(choice.threads)
    if choice.threads < min(choice.usable, choice.torch_default):
        log(choice.note())
    return choice.threads


def build(cfg: Config, log: Any = print) -> State:
    dist = setup_distributed(cfg, log)  # torchrun's process group, if launched that way (splits CPU threads)
    check_batch_layout(cfg, dist)
    set_cpu_threads(cfg.trainer.num_threads, log)  # the count used is recorded with the run (loop.py, config event)
    seed_everything(cfg.trainer.seed)
    device = resolve_device(cfg.trainer.device, log)
    if device.type == "cpu":
        return_freed_memory_to_os()  # RSS follows live tensors, not glibc's heap history (host_memory.py)
    import_external_lib(cfg)
    path = resolve_model_path(cfg, log)
    tokenizer = load_tokenizer(tokenizer_path(cfg, path), trust_remote_code=cfg.model.trust_remote_code,
                               chat_template=cfg.model.custom_chat_template)
    actor, ref = load_actor_and_ref(cfg, path, device)
    critic = load_critic(cfg, path, device) if cfg.algorithm.adv_estimator == "gae" else None
    # a vision-language policy (family from its config): its image processor encodes every row's images once,
    # so the rollout, the update and the reference all see the same pixel_values (vision/inputs.py)
    processor = load_vl_processor(path, tokenizer) if vl_family(config_of(actor)) else None
    train_rows, val_rows, data_stats = load_datasets(cfg.data, tokenizer, processor)
    loader = PromptLoader(train_rows, cfg.data.train_batch_size, shuffle=cfg.data.shuffle,
                          seed=1 if cfg.data.seed is None else cfg.data.seed)
    steps = total_steps(cfg, loader)
    actor_opt = make_optimizer(actor.parameters(), cfg.actor.optim)
    critic_opt = make_optimizer(critic.parameters(), cfg.critic.optim) if critic is not None else None
    autocast = autocast_factory(cfg.model.dtype, device)
    kc = cfg.algorithm.kl_ctrl
    for model in (actor, ref, critic):
        dist.broadcast_params(model)  # every rank starts from rank 0's weights
    # rollout and rewards: each rank its share of the rows, per-row seeds, gathered (distributed/rollout.py)
    engine = ShardedEngine(make_engine(cfg, actor, tokenizer, device, autocast, log), dist,
                           pad_token_id=tokenizer.pad_token_id)
    return State(
        cfg=cfg, device=device, tokenizer=tokenizer, model_path=path, actor=actor, ref=ref, critic=critic,
        actor_opt=actor_opt, actor_sched=make_scheduler(actor_opt, cfg.actor.optim, steps),
        critic_opt=critic_opt, critic_sched=make_scheduler(critic_opt, cfg.critic.optim, steps) if critic_opt else None,
        loader=loader, val_rows=val_rows, reward=ShardedReward(RewardManager.from_config(cfg, device=device), dist),
        val_reward=ShardedReward(RewardManager.from_config(cfg, validation=True, device=device), dist),
        engine=engine, kl_ctrl=clamp_kl(get_kl_controller(kc.type, kc.kl_coef, kc.target_kl, kc.horizon), cfg),
        autocast=autocast, data_stats=data_stats, dist=dist)


def clamp_kl(ctrl: Any, cfg: Config) -> Any:
    """``algorithm.kl_ctrl.kl_coef_range``: keep the (adaptive) coefficient inside [lo, hi]."""
    rng = cfg.algorithm.kl_ctrl.kl_coef_range
    if rng is not None:
        ctrl.value = min(max(float(ctrl.value), float(rng[0])), float(rng[1]))
    return ctrl


# --------------------------------------------------------------------------- checkpoints

def _ckpt_parts(st: State) -> dict[str, dict[str, Any]]:
    return {"models": {"actor": st.actor, "critic": st.critic},
            "optimizers": {"actor": st.actor_opt, "critic": st.critic_opt},
            "schedulers": {"actor": st.actor_sched, "critic": st.critic_sched}}


def ckpt_root(st: State) -> Path:
    return st.ckpt_dir or Path(st.cfg.trainer.default_local_dir)


def save(st: State, run_id: str, guard: Any = None) -> Path:
    """Checkpoint ``st``; with ``guard``, its last known-healthy checkpoint survives rotation and its
    interventions (rollbacks, applied overrides) travel with the checkpoint, next to the live config."""
    path = ckpt.save_checkpoint(ckpt_root(st), st.step, **_ckpt_parts(st), tokenizer=st.tokenizer,
                                keep=st.cfg.trainer.max_actor_ckpt_to_keep,
                                protect=guard.protected() if guard is not None else (),
                                trainer_state={"run_id": run_id, "loader": st.loader.state_dict(),
                                               "kl_coef": float(st.kl_ctrl.value), "model_path": st.model_path,
                                               "reward_counts": [st.reward.calls, st.reward.failures],
                                               "config": to_dict(st.cfg), "last_val": st.last_val,
                                               "guardrail": guard.state_dict() if guard is not None else None})
    if guard is not None:
        guard.note_checkpoint(st.step, healthy=st.step == 0)  # step 0: the model before any update
    return path


def restore(st: State, path: Path, *, full: bool = True) -> dict[str, Any]:
    """``full``: exact resume (RNG, data position, counters); else a rollback of the weights only."""
    state = ckpt.load_checkpoint(path, **_ckpt_parts(st), restore_rng=full)
    st.kl_ctrl.value = state["kl_coef"]
    if full:
        st.loader.load_state_dict(state["loader"])
        st.step = int(state["step"])
        st.reward.calls, st.reward.failures = state.get("reward_counts", [0, 0])
        last_val = state.get("last_val")  # checkpoints before this field: None (the final step re-validates)
        st.last_val = tuple(last_val) if last_val is not None else None
    return state


def branch_from(st: State, resumed: dict[str, Any]) -> dict[str, Any]:
    """A branch (``trainer.branch_of``) resumes a checkpoint but is a new run with its own settings: the
    optimizer's lr and the KL controller, which the checkpoint restored, are set back to this run's config
    (the change under test would otherwise not act), and the RNG is reseeded from ``trainer.seed`` (the
    checkpoint's RNG would make every seed's branch the same); returns ``resumed`` without the parent's run id."""
    seed_everything(st.cfg.trainer.seed + st.step)
    for key in ("actor_rollout_ref.actor.optim.lr", "critic.optim.lr"):
        optim = st.cfg.actor.optim if key.startswith("actor") else st.cfg.critic.optim
        apply_live(st, key, optim.lr)
    if st.cfg.algorithm.kl_ctrl.type == "fixed":  # an adaptive controller keeps the value it had adapted to
        apply_live(st, "algorithm.kl_ctrl.kl_coef", st.cfg.algorithm.kl_ctrl.kl_coef)
    return {k: v for k, v in resumed.items() if k not in ("run_id", "guardrail")}


def rollback(st: State, before_step: int) -> int | None:
    """Restore the weights and optimizer of the newest checkpoint before ``before_step``; the checkpoints
    of the abandoned trajectory after it are deleted (a later ``resume_mode=auto`` must not pick one)."""
    path = ckpt.find_before(ckpt_root(st), before_step, run_id=st.run_id)
    if path is None:
        return None
    restored = int(restore(st, path, full=False)["step"])
    ckpt.remove_after(ckpt_root(st), restored, run_id=st.run_id)
    return restored


# --------------------------------------------------------------------------- live config changes

def apply_live(st: State, key: str, value: Any) -> None:
    """Push a config change made by a guardrail into the objects that cached it (any key spelling)."""
    key = canonical(key)
    actor_keys = ("actor_rollout_ref.actor.optim.", "critic.optim.")
    if key.startswith(actor_keys) and key.endswith(("lr_warmup_steps_ratio", "lr_warmup_steps")):
        opt, sched = _opt_sched(st, key)
        if sched is not None:
            optim_cfg = st.cfg.actor.optim if key.startswith("actor") else st.cfg.critic.optim
            rewarm(opt, sched, warmup_steps(optim_cfg, total_steps(st.cfg, st.loader)))
    elif key in ("actor_rollout_ref.actor.optim.lr", "critic.optim.lr"):
        opt, sched = _opt_sched(st, key)
        if opt is not None:
            sched.base_lrs = [float(value)] * len(opt.param_groups)
            for g, base, fn in zip(opt.param_groups, sched.base_lrs, sched.lr_lambdas):
                g["lr"] = base * fn(sched.last_epoch)
    elif key.startswith("algorithm.kl_ctrl."):
        # rebuild the controller (type/target/horizon live in it, not only in the config); a change of
        # anything but kl_coef keeps the coefficient the controller had adapted to
        kc = st.cfg.algorithm.kl_ctrl
        current = float(st.kl_ctrl.value)
        st.kl_ctrl = get_kl_controller(kc.type, kc.kl_coef, kc.target_kl, kc.horizon)
        if key != "algorithm.kl_ctrl.kl_coef":
            st.kl_ctrl.value = current
        clamp_kl(st.kl_ctrl, st.cfg)
    if needs_reference(st.cfg) and st.ref is None and not hasattr(st.actor, "peft_config"):
        from transformers import AutoModelForCausalLM

        st.ref = AutoModelForCausalLM.from_pretrained(st.model_path, local_files_only=True).to(st.device).eval()


def _opt_sched(st: State, key: str) -> tuple[Any, Any]:
    return (st.actor_opt, st.actor_sched) if key.startswith("actor") else (st.critic_opt, st.critic_sched)


_ORIGINAL_LAMBDAS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # not in the scheduler: it pickles its dict


def rewarm(opt: torch.optim.Optimizer, sched: Any, warmup: int) -> None:
    """Warm the learning rate up again over ``warmup`` steps from now (after a guardrail rollback the
    restored policy meets the new settings with a cold start, not at full step size). Idempotent: a
    second call replaces the first re-warm-up instead of stacking on it."""
    base = _ORIGINAL_LAMBDAS.setdefault(sched, list(sched.lr_lambdas))
    start = sched.last_epoch
    if warmup > 0:
        sched.lr_lambdas = [lambda s, fn=fn: fn(s) * min(1.0, (s - start + 1) / warmup) for fn in base]
    else:
        sched.lr_lambdas = list(base)
    for g, lr0, fn in zip(opt.param_groups, sched.base_lrs, sched.lr_lambdas):
        g["lr"] = lr0 * fn(sched.last_epoch)
