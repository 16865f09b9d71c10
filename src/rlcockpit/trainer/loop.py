"""The RL training loop, readable top to bottom: rollout -> reward -> log-probs -> advantages -> update.

:func:`train` is the whole algorithm; :func:`build` prepares models, data, optimizers and the run.
Each step logs verl's metric keys through the tracking API, validates every ``trainer.test_freq``
steps, checkpoints every ``trainer.save_freq`` steps, and lets the guardrails stop or roll back.
"""

from __future__ import annotations

import math
import random
import time
import warnings
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlcockpit.algos import apply_kl_penalty, compute_advantage, get_kl_controller, scores_to_token_level
from rlcockpit.trainer import checkpoint as ckpt
from rlcockpit.trainer.collect import collect, validate
from rlcockpit.trainer.config import Config, to_dict
from rlcockpit.trainer.data import PromptLoader, load_datasets
from rlcockpit.trainer.guardrails import Guardrails
from rlcockpit.trainer.metrics import data_metrics, perf_metrics, sample_rows
from rlcockpit.trainer.models import (
    autocast_factory,
    forward_logprobs,
    forward_values,
    load_actor_and_ref,
    load_critic,
    load_tokenizer,
    needs_reference,
    reference_context,
    resolve_device,
)
from rlcockpit.trainer.rewards import RewardManager
from rlcockpit.trainer.rollout import ROLLOUT_ENGINES
from rlcockpit.trainer.update import update_actor, update_critic


class TrainingStopped(RuntimeError):
    """The run was ended by a safety limit (non-finite losses, reward failures)."""


@dataclass
class TrainResult:
    run_id: str
    steps: int
    val: list[tuple[int, float]] = field(default_factory=list)  # (step, mean val accuracy)
    wall_s: float = 0.0
    status: str = "finished"  # finished | stopped | failed
    reason: str | None = None
    checkpoint_dir: str = ""


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


def make_scheduler(opt: torch.optim.Optimizer, optim_cfg: Any, total_steps: int) -> Any:
    warmup = int(optim_cfg.lr_warmup_steps_ratio * total_steps)

    def factor(s: int) -> float:
        if warmup and s < warmup:
            return (s + 1) / warmup
        if optim_cfg.warmup_style == "cosine":
            progress = (s - warmup) / max(1, total_steps - warmup)
            return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
        return 1.0

    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def make_optimizer(params: Any, optim_cfg: Any) -> torch.optim.Optimizer:
    return torch.optim.AdamW([p for p in params if p.requires_grad], lr=optim_cfg.lr,
                             weight_decay=optim_cfg.weight_decay, betas=tuple(optim_cfg.betas))


def total_steps(cfg: Config, loader: PromptLoader) -> int:
    return cfg.trainer.total_training_steps or cfg.trainer.total_epochs * loader.steps_per_epoch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def resolve_model_path(cfg: Config, log: Any = print) -> str:
    if cfg.actor.model.path != "tiny":
        return cfg.actor.model.path
    from rlcockpit.trainer.tiny import prepare_tiny

    tiny = cfg.actor.model.tiny
    out_dir = None if tiny.cache else Path(cfg.trainer.default_local_dir) / "init_model"
    return str(prepare_tiny(tiny, cfg.data.builtin, seed=cfg.trainer.seed, dtype=cfg.actor.model.dtype,
                            out_dir=out_dir, log=log))


def build(cfg: Config, log: Any = print) -> State:
    if cfg.trainer.num_threads > 0:
        torch.set_num_threads(cfg.trainer.num_threads)
    seed_everything(cfg.trainer.seed)
    device = resolve_device(cfg.trainer.device)
    path = resolve_model_path(cfg, log)
    tokenizer = load_tokenizer(path)
    actor, ref = load_actor_and_ref(cfg, path, device)
    critic = load_critic(cfg, path, device) if cfg.algorithm.adv_estimator == "gae" else None
    train_rows, val_rows, data_stats = load_datasets(cfg.data, tokenizer)
    loader = PromptLoader(train_rows, cfg.data.train_batch_size, shuffle=cfg.data.shuffle, seed=cfg.data.seed)
    steps = total_steps(cfg, loader)
    actor_opt = make_optimizer(actor.parameters(), cfg.actor.optim)
    critic_opt = make_optimizer(critic.parameters(), cfg.critic.optim) if critic is not None else None
    autocast = autocast_factory(cfg.actor.model.dtype, device)
    engine = ROLLOUT_ENGINES.get(cfg.rollout.name)(actor, pad_token_id=tokenizer.pad_token_id,
                                                  eos_token_id=tokenizer.eos_token_id, device=device, autocast=autocast)
    kc = cfg.algorithm.kl_ctrl
    return State(
        cfg=cfg, device=device, tokenizer=tokenizer, model_path=path, actor=actor, ref=ref, critic=critic,
        actor_opt=actor_opt, actor_sched=make_scheduler(actor_opt, cfg.actor.optim, steps),
        critic_opt=critic_opt, critic_sched=make_scheduler(critic_opt, cfg.critic.optim, steps) if critic_opt else None,
        loader=loader, val_rows=val_rows, reward=RewardManager(cfg.reward, device=device),
        val_reward=RewardManager(cfg.reward, name=cfg.reward.val_name, device=device) if cfg.reward.val_name
        else RewardManager(cfg.reward, device=device),
        engine=engine, kl_ctrl=get_kl_controller(kc.type, kc.kl_coef, kc.target_kl, kc.horizon),
        autocast=autocast, data_stats=data_stats)


# --------------------------------------------------------------------------- checkpoint plumbing

def _ckpt_parts(st: State) -> dict[str, dict[str, Any]]:
    return {"models": {"actor": st.actor, "critic": st.critic},
            "optimizers": {"actor": st.actor_opt, "critic": st.critic_opt},
            "schedulers": {"actor": st.actor_sched, "critic": st.critic_sched}}


def save(st: State, run_id: str, guard: Guardrails | None = None, run: Any = None) -> Path:
    """Checkpoint ``st``; with ``guard``, its last known-healthy checkpoint survives rotation and its
    interventions (rollbacks, applied overrides) travel with the checkpoint, next to the live config."""
    path = ckpt.save_checkpoint(st.cfg.trainer.default_local_dir, st.step, **_ckpt_parts(st),
                                keep=st.cfg.trainer.max_actor_ckpt_to_keep,
                                protect=guard.protected() if guard is not None else (),
                                trainer_state={"run_id": run_id, "loader": st.loader.state_dict(),
                                               "kl_coef": float(st.kl_ctrl.value), "model_path": st.model_path,
                                               "reward_counts": [st.reward.calls, st.reward.failures],
                                               "config": to_dict(st.cfg),
                                               "guardrail": guard.state_dict() if guard is not None else None})
    if guard is not None:
        guard.note_checkpoint(st.step, healthy=st.step == 0)  # step 0: the model before any update
    if run is not None:  # health.reports=[checkpoint] reports on it
        run.log_event("checkpoint", {"path": str(path), "step": st.step}, step=st.step)
    return path


def restore(st: State, path: Path, *, full: bool = True) -> dict[str, Any]:
    """``full``: exact resume (RNG, data position, counters); else a rollback of the weights only."""
    state = ckpt.load_checkpoint(path, **_ckpt_parts(st), restore_rng=full)
    st.kl_ctrl.value = state["kl_coef"]
    if full:
        st.loader.load_state_dict(state["loader"])
        st.step = int(state["step"])
        st.reward.calls, st.reward.failures = state.get("reward_counts", [0, 0])
    return state


def apply_live(st: State, key: str, value: Any) -> None:
    """Push a config change made by a guardrail into the objects that cached it."""
    if key in ("actor.optim.lr_warmup_steps_ratio", "critic.optim.lr_warmup_steps_ratio"):
        opt, sched = (st.actor_opt, st.actor_sched) if key.startswith("actor") else (st.critic_opt, st.critic_sched)
        if sched is not None:
            rewarm(opt, sched, int(float(value) * total_steps(st.cfg, st.loader)))
    elif key in ("actor.optim.lr", "critic.optim.lr"):
        opt, sched = (st.actor_opt, st.actor_sched) if key.startswith("actor") else (st.critic_opt, st.critic_sched)
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
    if needs_reference(st.cfg) and st.ref is None and not hasattr(st.actor, "peft_config"):
        from transformers import AutoModelForCausalLM

        st.ref = AutoModelForCausalLM.from_pretrained(st.model_path, local_files_only=True).to(st.device).eval()


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


# --------------------------------------------------------------------------- one step

@contextmanager
def timed(timing: dict[str, float], name: str):
    t0 = time.perf_counter()
    yield
    timing[name] = timing.get(name, 0.0) + time.perf_counter() - t0


def train_step(st: State, timing: dict[str, float]) -> tuple[dict[str, float], Any]:
    """Collect experience and update the models once; returns (metrics, experience)."""
    cfg = st.cfg
    exp = collect(cfg, st.engine, st.tokenizer, st.reward, st.loader, st.step, timing)
    if exp is None:
        return {"train/skipped_no_signal": 1.0}, None
    o = exp.out
    batch = {"input_ids": o.input_ids, "attention_mask": o.attention_mask, "responses": o.responses,
             "response_mask": o.response_mask, "prompt_mask": o.prompt_mask}
    T, bs = o.responses.size(1), o.responses.size(0)
    mask = o.response_mask.float()
    single_pass = cfg.actor.ppo_epochs == 1 and bs <= cfg.actor.ppo_mini_batch_size * cfg.rollout.n
    with torch.no_grad():
        if not single_pass or cfg.algorithm.use_kl_in_reward:
            with timed(timing, "old_log_prob"), st.autocast():
                st.actor.eval()
                batch["old_log_probs"] = forward_logprobs(st.actor, batch["input_ids"], batch["attention_mask"], T,
                                                          temperature=cfg.rollout.temperature,
                                                          share_prefix=cfg.actor.share_prefix)[0]
        if needs_reference(cfg):
            with timed(timing, "ref"):
                model, ctx = reference_context(st.actor, st.ref)
                with ctx, st.autocast():
                    batch["ref_log_prob"] = forward_logprobs(model, batch["input_ids"], batch["attention_mask"], T,
                                                             temperature=cfg.rollout.temperature,
                                                             share_prefix=cfg.actor.share_prefix)[0]
        if st.critic is not None:
            with timed(timing, "values"), st.autocast():
                st.critic.eval()
                batch["values"] = forward_values(st.critic, batch["input_ids"], batch["attention_mask"], T)
    metrics: dict[str, float] = dict(exp.metrics)
    with timed(timing, "adv"):
        batch["token_level_scores"] = scores_to_token_level(exp.scores.to(mask.device), mask)
        rewards = batch["token_level_scores"]
        if cfg.algorithm.use_kl_in_reward:
            rewards, kl_m = apply_kl_penalty(rewards, batch["old_log_probs"], batch["ref_log_prob"], mask,
                                             st.kl_ctrl, cfg.algorithm.kl_penalty)
            st.kl_ctrl.update(kl_m["actor/reward_kl_penalty"], n_steps=bs)
            metrics.update(kl_m)
        batch["token_level_rewards"] = rewards
        a = cfg.algorithm
        batch["advantages"], batch["returns"] = compute_advantage(
            a.adv_estimator, token_level_rewards=rewards, response_mask=mask, index=exp.uids,
            values=batch.get("values"),
            reward_baselines=None if exp.baselines is None else exp.baselines.to(mask.device), gamma=a.gamma, lam=a.lam,
            norm_adv_by_std_in_grpo=a.norm_adv_by_std_in_grpo)
    if st.critic is not None:
        with timed(timing, "update_critic"):
            metrics.update(update_critic(cfg, st.critic, st.critic_opt, batch, st.autocast))
            st.critic_sched.step()
    with timed(timing, "update_actor"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step")  # skipped NaN updates
        metrics.update(update_actor(cfg, st.actor, st.actor_opt, batch, st.autocast))
        st.actor_sched.step()
    metrics["actor/kl_coef"] = float(st.kl_ctrl.value if cfg.algorithm.use_kl_in_reward else cfg.actor.kl_loss_coef)
    metrics.update(data_metrics(batch, cfg.data.max_response_length, cfg.data.max_prompt_length))
    metrics["perf/total_num_tokens_int"] = float(batch["attention_mask"].sum())
    return metrics, exp


# --------------------------------------------------------------------------- the loop

def train(cfg: Config, *, log: Any = print, state: State | None = None) -> TrainResult:
    import rlcockpit
    from rlcockpit.preflight import preflight_gate

    t_start = time.time()
    preflight_gate(cfg, log=log, skip=tuple(cfg.trainer.preflight_skip))  # strict raises before any work
    st = state or build(cfg, log)
    tr = cfg.trainer
    steps = total_steps(cfg, st.loader)
    run_id = None
    resume_from = None
    if tr.resume_mode == "auto":
        resume_from = ckpt.find_latest(tr.default_local_dir)
    elif tr.resume_mode not in ("disable", "auto"):
        resume_from = Path(tr.resume_mode)
    resumed: dict[str, Any] = {}
    if resume_from is not None:
        resumed = restore(st, resume_from)
        run_id = resumed["run_id"]
        log(f"[rlcockpit] resuming run {run_id} from {resume_from} (step {st.step})")
    run = rlcockpit.init(project=tr.project_name, name=tr.experiment_name, tags=list(tr.tags) or None,
                         config=to_dict(cfg), dir=tr.rlcockpit_dir, resume=run_id, loggers=list(tr.logger),
                         health=({"reports": list(cfg.health.reports)} if cfg.health.enable and cfg.health.reports
                                 else cfg.health.enable), alerts=cfg.alerts or None)
    guard = Guardrails(cfg, run, rollback=lambda s: _rollback(st, s), apply_live=lambda k, v: apply_live(st, k, v), log=log)
    run.on_finding(guard.on_finding)
    # only rollback needs to know which checkpoints are healthy (and to keep them out of rotation)
    ckpt_guard = guard if cfg.health.on_critical == "rollback" else None
    if resumed.get("guardrail"):
        guard.load_state_dict(resumed["guardrail"])
    result = TrainResult(run_id=run.id, steps=st.step, checkpoint_dir=tr.default_local_dir)
    exit_code = 0
    try:
        if st.step == 0:
            run.log(dict(st.data_stats), step=0)
            if cfg.health.on_critical == "rollback":
                save(st, run.id, ckpt_guard, run=run)  # a healthy point to come back to
        if st.step == 0 and tr.test_freq > 0:
            _validate(st, run, result, log)
        consecutive_nonfinite = 0
        while st.step < steps and not guard.stop_requested:
            st.step += 1
            timing: dict[str, float] = {}
            t0 = time.perf_counter()
            metrics, exp = train_step(st, timing)
            timing["step"] = time.perf_counter() - t0
            metrics.update({f"timing_s/{k}": v for k, v in timing.items()})
            metrics.update(perf_metrics(int(metrics.pop("perf/total_num_tokens_int", 0)), timing["step"], st.device))
            metrics.update({"reward/failures": float(st.reward.failures), "reward/failure_rate": st.reward.failure_rate,
                            "training/global_step": float(st.step), "training/epoch": float(st.loader.epoch)})
            run.log(metrics, step=st.step)
            if exp is not None and tr.log_samples_freq > 0 and (st.step % tr.log_samples_freq == 0 or st.step == 1):
                run.log_samples(sample_rows(exp, tr.num_log_samples), step=st.step)
            _progress(st, metrics, log)
            st.reward.check()
            skipped = metrics.get("actor/nonfinite_skipped", 0.0)
            consecutive_nonfinite = consecutive_nonfinite + 1 if skipped > 0 else 0
            if consecutive_nonfinite >= tr.max_consecutive_nonfinite:
                raise TrainingStopped(f"{consecutive_nonfinite} steps in a row had non-finite losses/gradients "
                                      f"(trainer.max_consecutive_nonfinite={tr.max_consecutive_nonfinite})")
            if tr.test_freq > 0 and st.step % tr.test_freq == 0 and st.step < steps:
                _validate(st, run, result, log)
            if tr.save_freq > 0 and st.step % tr.save_freq == 0:
                save(st, run.id, ckpt_guard, run=run)
            if ckpt_guard is not None:  # after this step's metrics and samples
                run.call_in_writer(lambda s=st.step: ckpt_guard.mark_observed(s))
            if cfg.health.on_critical != "warn":
                run.flush(timeout=10.0)  # act on this step's findings now: same decisions on every rerun
            guard.poll(st.step)
        if guard.stop_requested:
            last = guard.handled[-1] if guard.handled else {}
            result.status = "stopped"
            result.reason = (f"guardrail: critical finding {last.get('title')!r} (health.on_critical="
                             f"{cfg.health.on_critical}" + (f"; {last['reason']}" if last.get("reason") else "") + ")")
        if tr.test_freq > 0 and (not result.val or result.val[-1][0] != st.step):
            _validate(st, run, result, log)
        if tr.save_freq > 0 and not (Path(tr.default_local_dir) / f"global_step_{st.step}").is_dir():
            save(st, run.id, ckpt_guard, run=run)  # the final state, as verl does
    except TrainingStopped as exc:
        result.status, result.reason, exit_code = "stopped", str(exc), 1
        log(f"[rlcockpit] stopping: {exc}")
    except Exception as exc:
        from rlcockpit.trainer.rewards import RewardFailureError

        result.status, result.reason, exit_code = "failed", str(exc), 1
        if not isinstance(exc, RewardFailureError):
            run.finish(exit_code=1)
            raise
        log(f"[rlcockpit] stopping: {exc}")
    finally:
        result.steps, result.wall_s = st.step, time.time() - t_start
        if result.val:
            run.summary["val_acc_initial"] = result.val[0][1]
            run.summary["val_acc_final"] = result.val[-1][1]
        run.finish(exit_code=exit_code)
    return result


def _rollback(st: State, before_step: int) -> int | None:
    """Restore the weights and optimizer of the newest checkpoint before ``before_step``; the checkpoints
    of the abandoned trajectory after it are deleted (a later ``resume_mode=auto`` must not pick one)."""
    path = ckpt.find_before(st.cfg.trainer.default_local_dir, before_step)
    if path is None:
        return None
    restored = int(restore(st, path, full=False)["step"])
    ckpt.remove_after(st.cfg.trainer.default_local_dir, restored)
    return restored


def _validate(st: State, run: Any, result: TrainResult, log: Any) -> None:
    t0 = time.perf_counter()
    metrics, samples = validate(st.cfg, st.engine, st.tokenizer, st.val_reward, st.val_rows)
    if not metrics:
        return
    metrics["timing_s/testing"] = time.perf_counter() - t0
    run.log(metrics, step=st.step)
    accs = [v for k, v in metrics.items() if k.endswith("/acc/mean@1")]
    acc = float(np.mean(accs))
    result.val.append((st.step, acc))
    log(f"[rlcockpit] step {st.step}: validation accuracy {acc:.3f} ({len(st.val_rows)} prompts, greedy)")


def _progress(st: State, m: dict[str, float], log: Any) -> None:
    if "console" in st.cfg.trainer.logger or not (st.step % 10 == 0 or st.step == 1):
        return
    log(f"[rlcockpit] step {st.step}: score {m.get('critic/score/mean', float('nan')):.3f} "
        f"entropy {m.get('actor/entropy', float('nan')):.3f} kl {m.get('actor/ppo_kl', float('nan')):+.4f} "
        f"len {m.get('response_length/mean', float('nan')):.1f} ({m['timing_s/step']:.2f}s/step)")
