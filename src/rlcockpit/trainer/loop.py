"""The RL training loop, readable top to bottom: rollout -> reward -> log-probs -> advantages -> update.

:func:`train` is the whole run: preflight, build (:mod:`rlcockpit.trainer.state`), resume, then each step
logs verl's metric keys through the tracking API, validates every ``trainer.test_freq`` steps, checkpoints
every ``trainer.save_freq`` steps, and lets the guardrails stop or roll back. Why a run ended (finished, a
guardrail, non-finite losses, the reward function, an exception) is stored as a ``run_stopped`` event and
the ``stop_reason`` summary field, which ``rlcockpit show`` and ``diagnose`` print.
"""

from __future__ import annotations

import time
import uuid
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlcockpit.registry import PROVIDERS
from rlcockpit.tracking.compat.reinit import OWN_RUN
from rlcockpit.tracking.compat.sweep_env import trial_run_id
from rlcockpit.trainer.checkpoints import checkpoint as ckpt
from rlcockpit.trainer.checkpoints.artifacts import note_validation, register_checkpoint
from rlcockpit.trainer.collect import collect, validate
from rlcockpit.trainer.config import Config, no_effect_table, to_dict
from rlcockpit.trainer.distributed.rollout import sharded_policy_passes
from rlcockpit.trainer.distributed.run import (
    GuardrailMirror,
    NullRun,
    NullStream,
    env_rank,
    quiet,
    rank_metrics,
)
from rlcockpit.trainer.guardrails import Guardrails
from rlcockpit.trainer.observe.flops import mfu
from rlcockpit.trainer.observe.metrics import data_metrics, global_seqlen_metrics, perf_metrics, sample_rows
from rlcockpit.trainer.observe.probes import log_probes
from rlcockpit.trainer.observe.profiling import StepProfiler, phase
from rlcockpit.trainer.observe.progress import Progress
from rlcockpit.trainer.reward.rewards import RewardFailureError
from rlcockpit.trainer.rollout.check import rollout_probs_metrics
from rlcockpit.trainer.state import (  # noqa: F401 - re-exported: the loop's public helpers
    State,
    apply_live,
    branch_from,
    build,
    ckpt_root,
    clamp_kl,
    restore,
    rewarm,
    save,
    total_steps,
)
from rlcockpit.trainer.state import rollback as _rollback
from rlcockpit.trainer.step_inputs import rewards_and_advantages
from rlcockpit.trainer.update.ppo import rank_rows, update_actor, update_critic
from rlcockpit.trainer.vision.inputs import vl_batch

CHECKPOINT_FLUSH_S = 10.0  # how long a checkpoint waits for the steps before it to reach the store


class TrainingStopped(RuntimeError):
    """The run was ended by a safety limit (non-finite losses, reward failures)."""

    def __init__(self, message: str, kind: str = "safety_limit") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class TrainResult:
    run_id: str
    steps: int
    val: list[tuple[int, float]] = field(default_factory=list)  # (step, mean val accuracy)
    wall_s: float = 0.0
    status: str = "finished"  # finished | stopped | failed
    reason: str | None = None
    checkpoint_dir: str = ""


# --------------------------------------------------------------------------- one step

@contextmanager
def timed(timing: dict[str, float], name: str):
    t0 = time.perf_counter()
    with phase(f"timing_s/{name}"):  # a named range in profiler traces (trainer.profile_steps)
        yield
    timing[name] = timing.get(name, 0.0) + time.perf_counter() - t0


def train_step(st: State, timing: dict[str, float]) -> tuple[dict[str, float], Any]:
    """Collect experience and update the models once; returns (metrics, experience)."""
    cfg = st.cfg
    exp = collect(cfg, st.engine, st.tokenizer, st.reward, st.loader, st.step, timing)
    o = exp.out
    batch = {"input_ids": o.input_ids, "attention_mask": o.attention_mask, "responses": o.responses,
             "response_mask": o.response_mask, "prompt_mask": o.prompt_mask,
             **vl_batch(exp.rows)}  # a vision-language batch: each row's image tensors, row-aligned (vision/inputs.py)
    # verl's _balance_batch statistics (trainer.balance_batch, on by default there): tokens per rank
    metrics: dict[str, float] = global_seqlen_metrics(o.attention_mask, rank_rows(cfg, len(o.responses), st.dist))
    sharded_policy_passes(st, batch, o.rollout_log_probs, timed, timing)  # each rank its rows, gathered
    metrics.update(exp.metrics)
    if "old_log_prob" in timing:  # verl's perf/mfu/actor_infer; a single on-policy pass skips this pass
        metrics.update(_infer_mfu(st, batch["attention_mask"], timing["old_log_prob"]))
    if o.rollout_log_probs is not None and not cfg.algorithm.rollout_correction.bypass_mode:
        # verl's rollout-vs-trainer agreement (bypass mode uses the engine's log-probs as the old ones)
        metrics.update(rollout_probs_metrics(o.rollout_log_probs, batch["old_log_probs"], o.response_mask))
    with timed(timing, "adv"):
        rewards_and_advantages(st, batch, exp, o.rollout_log_probs, metrics)
    if st.critic is not None:
        with timed(timing, "update_critic"):
            metrics.update(update_critic(cfg, st.critic, st.critic_opt, batch, st.autocast, dist=st.dist))
            st.critic_sched.step()
    if st.step > cfg.trainer.critic_warmup:  # verl: the first critic_warmup steps train only the critic
        with timed(timing, "update_actor"), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step")  # skipped NaN updates
            metrics.update(update_actor(cfg, st.actor, st.actor_opt, batch, st.autocast, ref=st.ref, dist=st.dist))
            st.actor_sched.step()
        if cfg.actor.use_kl_loss:  # verl logs the KL-loss weight with the loss only (KL in the reward:
            metrics["actor/kl_coef"] = float(cfg.actor.kl_loss_coef)  # actor/reward_kl_penalty_coeff)
    with timed(timing, "update_weights"):  # into the rollout engine (a no-op for the built-in one)
        st.engine.sync_weights(st.actor)
    metrics.update(st.engine.pop_metrics() if hasattr(st.engine, "pop_metrics") else {})
    # lengths and per-token statistics over the generated tokens, rollout-correction rejections included
    metrics.update(data_metrics({**batch, "response_mask": o.response_mask}, cfg.data.max_response_length,
                                cfg.data.max_prompt_length, timing=timing))
    metrics["perf/total_num_tokens_int"] = float(batch["attention_mask"].sum())
    return metrics, exp


def _infer_mfu(st: State, attention_mask: Any, seconds: float) -> dict[str, float]:
    value = mfu(st.actor, attention_mask.sum(-1).tolist(), seconds, st.device, world_size=st.dist.world_size,
                forward_only=True)
    return {} if value is None else {"perf/mfu/actor_infer": value}


# --------------------------------------------------------------------------- the loop

def print_config_notes(cfg: Config, log: Any = print) -> list[dict[str, Any]]:
    """The "accepted, no effect here: why" table, once per run; returns it for the run's ``config`` event."""
    table = [{"why": why, "keys": keys} for why, keys in no_effect_table(cfg)]
    if table:
        import io

        from rich.console import Console
        from rich.table import Table

        t = Table(title=f"{sum(len(r['keys']) for r in table)} config key(s) accepted, no effect here "
                        "(stored with the run)", title_justify="left", show_lines=False)
        t.add_column("keys", overflow="fold", ratio=1)
        t.add_column("why", overflow="fold", ratio=1)
        for row in table:
            keys = row["keys"]
            t.add_row("\n".join(keys[:4]) + (f"\n(+{len(keys) - 4} more)" if len(keys) > 4 else ""), row["why"])
        buf = io.StringIO()
        Console(file=buf, width=120, force_terminal=False, color_system=None).print(t)
        log(buf.getvalue().rstrip())
    return table


def resume_point(cfg: Config) -> Path | None:
    """verl's ``trainer.resume_mode``: disable | auto (newest checkpoint) | resume_path (resume_from_path)."""
    tr = cfg.trainer
    if tr.resume_mode == "disable":
        return None
    if tr.resume_mode == "auto":
        return ckpt.find_latest(tr.default_local_dir)
    path = Path(tr.resume_from_path if tr.resume_mode == "resume_path" else tr.resume_mode).expanduser()
    if tr.resume_mode == "resume_path" and not tr.resume_from_path:
        raise ValueError("trainer.resume_mode=resume_path needs trainer.resume_from_path")
    if not (path / ckpt.STATE).is_file():
        raise FileNotFoundError(f"trainer.resume_mode: no checkpoint at {path} (expected .../global_step_N)")
    return path


def loggers_for(cfg: Config) -> list[str]:
    """``trainer.logger`` minus ``console`` (the trainer draws its own progress), plus the embedded store
    unless ``trainer.store=false``: a pasted verl logger list still gives a diagnosable run."""
    names = [x for x in cfg.trainer.logger if x != "console"]
    if cfg.trainer.store and "rlcockpit" not in names:
        names.insert(0, "rlcockpit")
    return names


def save_and_note(st: Any, run: Any, guard: Any) -> Any:
    """Checkpoint ``st`` and record a ``checkpoint`` run event (``health.reports=[checkpoint]`` reports on it).
    Data-parallel: rank 0 writes (every rank holds the same weights and optimizer state), the others wait."""
    if not st.dist.is_main:
        st.dist.barrier()
        return None
    # the step's rows reach the store before the checkpoint that a resume would continue after (a kill in
    # between would otherwise lose them unmarked); a full or locked store marks its own losses: go on then
    run.flush(timeout=CHECKPOINT_FLUSH_S, loggers=False)
    path = save(st, run.id, guard)
    st.dist.barrier()
    run.log_event("checkpoint", {"path": str(path), "step": st.step}, step=st.step)
    register_checkpoint(run, st, path)  # policy:vN, policy:best by validation accuracy (trainer/checkpoints/artifacts.py)
    return path


def health_section(cfg: Config) -> bool | dict[str, Any]:
    """What ``init(health=...)`` gets: off, on, or on with the report schedule (``health.reports``)."""
    if not cfg.health.enable:
        return False
    return {"reports": list(cfg.health.reports)} if cfg.health.reports else True


def open_run(cfg: Config, run_id: str, resume: str | None, *, health: bool = True) -> Any:
    import rlcockpit

    tr = cfg.trainer
    options = {"wandb": {"entity": tr.entity}} if tr.entity else None
    return rlcockpit.init(project=tr.project_name, name=tr.experiment_name, group=tr.group, tags=list(tr.tags) or None,
                          config=to_dict(cfg), dir=tr.rlcockpit_dir, resume=resume, id=None if resume else run_id,
                          loggers=loggers_for(cfg), health=health_section(cfg) if health else False,
                          alerts=cfg.alerts or None,
                          logger_options=options, guardrails=health, reinit=OWN_RUN)


def record_stop(run: Any, kind: str, reason: str, step: int) -> None:
    """Why the run ended: an event and summary fields (``stop_reason``, ``stop_kind``)."""
    run.log_event("run_stopped", {"kind": kind, "reason": reason, "step": step}, step=step)
    run.summary.update({"stop_reason": reason, "stop_kind": kind})


def record_preflight_failure(cfg: Config, reason: str) -> str:
    """A run stopped by preflight is stored as such (status stopped, no steps) so the cockpit shows why."""
    run = open_run(cfg, uuid.uuid4().hex[:8], None, health=False)
    record_stop(run, "preflight", reason, 0)
    run.finish(exit_code=1, status="stopped", reason=reason)
    return run.id


def train(cfg: Config, *, log: Any = print, state: State | None = None) -> TrainResult:
    # the checks before any work come from the wiring (``PROVIDERS["preflight"]``): the trainer never imports
    # preflight, which imports the trainer's config, data and models to check them
    preflight_gate, refused = PROVIDERS.get("preflight")()
    t_start = time.time()
    tr = cfg.trainer
    main = env_rank() == 0  # data-parallel: rank 0 speaks, tracks and checkpoints (trainer/distributed/group.py)
    log = log if main else quiet
    no_effect = print_config_notes(cfg, log)
    try:
        preflight_gate(cfg, log=log, skip=tuple(tr.preflight_skip))  # strict raises before any work
    except refused as exc:
        exc.run_id = record_preflight_failure(cfg, str(exc)) if main else None
        raise
    st = state or build(cfg, log)
    resume_from = resume_point(cfg)
    resumed: dict[str, Any] = {}
    if resume_from is not None:
        resumed = restore(st, resume_from)
        log(f"[rlcockpit] resuming run {resumed['run_id']} from {resume_from} (step {st.step})")
    if tr.branch_of and resumed:  # a branch: a new run from the parent's checkpoint, with its own settings
        resumed = branch_from(st, resumed)
    st.run_id = resumed.get("run_id") or trial_run_id() or uuid.uuid4().hex[:8]  # a sweep trial has its id
    if main:
        st.ckpt_dir = ckpt.claim_dir(tr.default_local_dir, st.run_id, resuming=bool(resumed.get("run_id")))
    st.run_id, st.ckpt_dir = st.dist.broadcast_object((st.run_id, st.ckpt_dir))
    if st.ckpt_dir != Path(tr.default_local_dir):
        log(f"[rlcockpit] {tr.default_local_dir} holds another run's checkpoints: this run saves to {st.ckpt_dir}")
        tr.default_local_dir = str(st.ckpt_dir)
    run = open_run(cfg, st.run_id, resumed.get("run_id")) if main else None
    run_dir = st.dist.broadcast_object(str(run.dir) if main else None)
    run = run or NullRun(st.run_id, f"{run_dir}/rank{st.dist.rank}")  # its profiler traces (profile_steps) go there
    # cpu_threads: the torch threads this run used (trainer.num_threads=0 picks them at start: cpu_threads.py)
    run.log_event("config", {"no_effect": no_effect, "aliases": dict(cfg.aliases),
                             "cpu_threads": torch.get_num_threads()}, step=st.step)
    mirror = GuardrailMirror(st.dist, cfg, rollback=lambda s: _rollback(st, s),
                             apply_live=lambda k, v: apply_live(st, k, v))
    guard = Guardrails(cfg, run, rollback=mirror.rollback, apply_live=mirror.apply_live, log=log, link=run.guardrails)
    ckpt_guard = guard if cfg.health.on_critical == "rollback" else None  # only rollback tracks healthy checkpoints
    if resumed.get("guardrail"):
        guard.load_state_dict(resumed["guardrail"])
    result = TrainResult(run_id=run.id, steps=st.step, checkpoint_dir=str(ckpt_root(st)))
    steps = min(total_steps(cfg, st.loader), tr.stop_at_step or 1 << 62)  # stop_at_step: a branch's end
    try:
        with Progress(steps, start=st.step, live=None if main else False,
                      stream=None if main else NullStream()) as progress:
            _run_steps(st, run, guard, ckpt_guard, result, progress, steps, log, mirror)
    except TrainingStopped as exc:
        result.status, result.reason = "stopped", str(exc)
        record_stop(run, exc.kind, str(exc), st.step)
        log(f"[rlcockpit] stopping: {exc}")
    except RewardFailureError as exc:
        result.status, result.reason = "stopped", str(exc)
        record_stop(run, "reward_failure", str(exc), st.step)
        log(f"[rlcockpit] stopping: {exc}")
    except BaseException as exc:
        result.status, result.reason = "failed", f"{type(exc).__name__}: {exc}"
        record_stop(run, "exception" if isinstance(exc, Exception) else "interrupted", result.reason, st.step)
        _finish(run, st, result, t_start)
        raise
    _finish(run, st, result, t_start)
    return result


def _finish(run: Any, st: State, result: TrainResult, t_start: float) -> None:
    result.steps, result.wall_s = st.step, time.time() - t_start
    if result.val:
        run.summary.update({"val_acc_initial": result.val[0][1], "val_acc_final": result.val[-1][1]})
    if result.status == "finished":
        run.summary.update({"stop_reason": "finished", "stop_kind": "finished"})
    run.finish(exit_code=0 if result.status == "finished" else 1, status=result.status, reason=result.reason)


def _run_steps(st: State, run: Any, guard: Guardrails, ckpt_guard: Guardrails | None, result: TrainResult,
               progress: Progress, steps: int, log: Any, mirror: GuardrailMirror | None = None) -> None:
    cfg, tr = st.cfg, st.cfg.trainer
    profiler = StepProfiler.for_run(cfg, run, st.device, log=log)  # trainer.profile_steps
    if st.step == 0:
        run.log(dict(st.data_stats), step=0)
        if cfg.health.on_critical == "rollback":
            save_and_note(st, run, ckpt_guard)  # a healthy point to come back to
    if st.step == 0 and (tr.val_before_train or tr.val_only):  # as verl: whatever test_freq says
        _validate(st, run, result, log, progress)
    if tr.val_only:
        return
    consecutive_nonfinite = 0
    stored, validated = _stored_through(st, run, log)
    while st.step < steps and not guard.stop_requested:
        st.step += 1
        fresh = st.step > stored  # a step the store holds already (logged before a stop) is re-run, not re-logged
        timing: dict[str, float] = {}
        with profiler.step(st.step, timing):  # timing_s/{start,stop}_profile, outside timing_s/step (verl)
            t0 = time.perf_counter()
            metrics, exp = train_step(st, timing)
            timing["step"] = time.perf_counter() - t0
        metrics.update({f"timing_s/{k}": v for k, v in timing.items()})
        metrics.update(perf_metrics(int(metrics.pop("perf/total_num_tokens_int", 0)), timing["step"], st.device,
                                    n_gpus=st.dist.world_size))
        metrics.update({"reward/failures": float(st.reward.failures), "reward/failure_rate": st.reward.failure_rate,
                        "training/global_step": float(st.step), "training/epoch": float(st.loader.epoch)})
        metrics.update(rank_metrics(st.dist, timing["step"]))  # system/rank{r}/... (data-parallel only)
        if fresh:
            run.log(metrics, step=st.step)
        if fresh and tr.log_samples_freq > 0 and (st.step % tr.log_samples_freq == 0 or st.step == 1):
            run.log_samples(sample_rows(exp, tr.num_log_samples), step=st.step)
        progress.update(st.step, metrics, timing["step"])
        st.reward.check()
        skipped = metrics.get("actor/nonfinite_skipped", 0.0)
        consecutive_nonfinite = consecutive_nonfinite + 1 if skipped > 0 else 0
        if consecutive_nonfinite >= tr.max_consecutive_nonfinite:
            raise TrainingStopped(f"{consecutive_nonfinite} steps in a row had non-finite losses/gradients "
                                  f"(trainer.max_consecutive_nonfinite={tr.max_consecutive_nonfinite})", "nonfinite")
        unvalidated = fresh or (st.step == stored and not validated)  # a kill during that step's validation
        if unvalidated and tr.test_freq > 0 and (st.step % tr.test_freq == 0 or st.step == steps):  # verl: then save
            _validate(st, run, result, log, progress)
        if tr.save_freq > 0 and st.step % tr.save_freq == 0:
            save_and_note(st, run, ckpt_guard)
        guard.poll(st.step)  # waits for this step's findings unless on_critical=warn
        if mirror is not None:
            mirror.sync(guard)  # data-parallel: rank 0's decisions on every rank
    if guard.stop_requested:
        last = guard.handled[-1] if guard.handled else {}
        result.status = "stopped"
        result.reason = (f"guardrail: critical finding {last.get('title')!r} (health.on_critical="
                         f"{cfg.health.on_critical}" + (f"; {last['reason']}" if last.get("reason") else "") + ")")
        record_stop(run, "guardrail", result.reason, st.step)
    # a resume from the final checkpoint already holds that step's validation (st.last_val, restored with it)
    if tr.test_freq > 0 and (st.step > stored or (st.step == stored and not validated)) and \
            (st.last_val is None or st.last_val[0] != st.step):
        _validate(st, run, result, log, progress)
    if final_save_due(st):
        save_and_note(st, run, ckpt_guard)  # the final state, as verl does


def final_save_due(st: State) -> bool:
    """Whether the final state still needs its checkpoint: rank 0's answer on every rank. Each rank looking
    for ``global_step_N`` itself raced rank 0 writing it: a slow rank saw the folder, skipped the save and
    its barrier, and left rank 0 waiting in that barrier for a rank that had already left the group."""
    tr = st.cfg.trainer
    due = (tr.save_freq > 0 or tr.save_policy_model) and not (ckpt_root(st) / f"global_step_{st.step}").is_dir()
    return bool(st.dist.broadcast_object(due))


def _stored_through(st: State, run: Any, log: Any) -> tuple[int, bool]:
    """The last step a resumed run's store holds (-1 for a new run) and whether it holds that step's
    validation, the same on every rank.

    A run stopped after logging a step but before that step's checkpoint (a kill while saving: checkpoints
    flush the store first) resumes from the checkpoint before and runs those steps again; their rows are
    stored already, and a second copy of the last one would be stored at the same step. Only a validation
    the stop interrupted (the last stored step's) is run and logged again."""
    mine = (-1, False)
    if not isinstance(run, NullRun) and run.step >= 0:
        try:
            val_steps = run.store.series(run.id, "timing_s/testing")[0]
        except Exception:  # noqa: BLE001 - a store that cannot be read back (a team server): validate again
            val_steps = []
        mine = (run.step, bool(len(val_steps)) and int(val_steps[-1]) == run.step)
    stored, validated = st.dist.broadcast_object(mine)
    if stored > st.step > 0:
        log(f"[rlcockpit] steps {st.step + 1}-{stored} were stored before the stop (after checkpoint "
            f"global_step_{st.step}): they run again to reach the same state, and are not logged twice")
    return stored, validated


def _validate(st: State, run: Any, result: TrainResult, log: Any, progress: Progress | None = None) -> None:
    """Validate and log. The training RNG is put back afterwards: a resume that skips a validation already
    stored (steps re-run after a kill) must continue exactly as the run that did validate."""
    t0 = time.perf_counter()
    training_rng = ckpt.rng_state()
    try:
        metrics, samples = validate(st.cfg, st.engine, st.tokenizer, st.val_reward, st.val_rows,
                                    max_samples=max(8, st.cfg.trainer.log_val_generations))
    finally:
        ckpt.set_rng_state(training_rng)
    if not metrics:
        return
    metrics["timing_s/testing"] = time.perf_counter() - t0
    run.log(metrics, step=st.step)
    log_probes(run, st.step, samples, st.cfg.trainer.log_val_generations)
    accs = [v for k, v in metrics.items() if k.startswith("val-core/") and "/acc/mean@" in k]
    acc = float(np.mean(accs))
    result.val.append((st.step, acc))
    st.last_val = (st.step, acc)  # the checkpoint saved at this step carries it (policy:best follows it)
    note_validation(run, st)  # ... also when that checkpoint was saved before this validation (the last step)
    if progress is not None:
        progress.val(acc)
    n = st.cfg.rollout.val_kwargs.n
    log(f"[rlcockpit] step {st.step}: validation accuracy {acc:.3f} ({len(st.val_rows)} prompts, "
        f"{'greedy' if not st.cfg.rollout.val_kwargs.do_sample else 'sampled'}{f', mean@{n}' if n > 1 else ''})")
