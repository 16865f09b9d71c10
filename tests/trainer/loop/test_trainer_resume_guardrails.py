from __future__ import annotations

import threading

import pytest
import torch

import rlcockpit
from rlcockpit.health import Action, Finding
from rlcockpit.trainer.checkpoints import checkpoint as ckpt
from rlcockpit.trainer.guardrails import Guardrails
from rlcockpit.trainer.loop import apply_live, build, save, train


def _weights(path):
    from safetensors.torch import load_file

    return load_file(path / "actor" / "model.safetensors")  # the actor is saved in Hugging Face format


def test_resume_continues_the_same_run_exactly(tiny_cfg, tmp_path):
    # reference: 4 uninterrupted steps
    straight = train(tiny_cfg("trainer.total_training_steps=4", "trainer.save_freq=2",
                              f"trainer.default_local_dir={tmp_path / 'a'}"))
    # interrupted after 2 steps, then resumed to 4 with resume_mode=auto
    first = train(tiny_cfg("trainer.total_training_steps=2", "trainer.save_freq=2",
                           f"trainer.default_local_dir={tmp_path / 'b'}"))
    resumed = train(tiny_cfg("trainer.total_training_steps=4", "trainer.save_freq=2", "trainer.resume_mode=auto",
                             f"trainer.default_local_dir={tmp_path / 'b'}"))
    assert resumed.run_id == first.run_id and resumed.steps == 4
    a, b = _weights(tmp_path / "a" / "global_step_4"), _weights(tmp_path / "b" / "global_step_4")
    for k in a:
        assert torch.equal(a[k], b[k]), k
    hist = rlcockpit.Api(str(tmp_path / "store")).run(first.run_id).history()
    assert {0, 1, 2, 3, 4} <= {int(i) for i in hist.index}  # one run, both halves
    assert hist["critic/score/mean"].notna().sum() == 4
    ref = rlcockpit.Api(str(tmp_path / "store")).run(straight.run_id).history()
    assert list(ref["critic/score/mean"].dropna()) == list(hist["critic/score/mean"].dropna())


def test_guardrail_rollback_restores_weights_and_applies_overrides(tiny_cfg, tmp_path):
    cfg = tiny_cfg("health.on_critical=rollback")
    st = build(cfg)
    run = rlcockpit.init(project="t", name="rollback", dir=str(tmp_path / "store"), health=False, loggers=["rlcockpit"])
    st.step = 3
    save(st, run.id)  # the healthy checkpoint (global_step_3)
    healthy = {k: v.clone() for k, v in st.actor.state_dict().items()}
    with torch.no_grad():
        for p in st.actor.parameters():
            p.add_(1.0)  # "the run went bad"
    st.step = 7

    from rlcockpit.trainer.loop import _rollback

    guard = Guardrails(cfg, run, rollback=lambda s: _rollback(st, s), apply_live=lambda k, v: apply_live(st, k, v))
    finding = Finding(detector="kl_spike", severity="critical", step=7, step_start=5, title="KL spike",
                      actions=[Action(title="lower the LR", overrides=["actor.optim.lr=5e-7", "actor.clip_ratio=0.1"])])
    t = threading.Thread(target=guard.on_finding, args=(finding,))  # findings arrive on another thread
    t.start()
    t.join()
    guard.poll(step=7)
    run.finish()
    for k, v in st.actor.state_dict().items():
        assert torch.equal(v, healthy[k]), k
    assert st.actor_opt.param_groups[0]["lr"] == pytest.approx(5e-7)
    assert cfg.actor.optim.lr == pytest.approx(5e-7) and cfg.actor.clip_ratio == pytest.approx(0.1)
    assert st.step == 7  # the step counter keeps moving forward
    events = rlcockpit.Api(str(tmp_path / "store")).run(run.id).events("guardrail")
    assert len(events) == 1 and events[0]["payload"]["action"] == "rollback" and events[0]["step"] == 7
    assert events[0]["payload"]["restored_step"] == 3
    assert guard.handled[0]["restored_step"] == 3 and guard.handled[0]["overrides"][0] == "actor.optim.lr=5e-7"
    assert not guard.stop_requested


def test_guardrail_stop_and_warning_findings(tiny_cfg, tmp_path):
    cfg = tiny_cfg("health.on_critical=stop")
    events = []

    class FakeRunLog:  # only the event sink; the handler's decision is what is under test
        def log_event(self, kind, payload, step=None):
            events.append((kind, payload))

    guard = Guardrails(cfg, FakeRunLog(), rollback=lambda s: None, apply_live=lambda k, v: None)
    guard.on_finding(Finding(detector="x", severity="warning", step=1, title="meh"))
    guard.poll(1)
    assert not guard.stop_requested and not events
    guard.on_finding(Finding(detector="x", severity="critical", step=2, title="bad"))
    guard.poll(2)
    assert guard.stop_requested and events[0][1]["action"] == "stop"


def test_rollback_without_checkpoint_stops(tiny_cfg, tmp_path):
    cfg = tiny_cfg("health.on_critical=rollback")
    events = []

    class R:
        def log_event(self, kind, payload, step=None):
            events.append(payload)

    guard = Guardrails(cfg, R(), rollback=lambda s: ckpt.find_before(tmp_path / "none", s), apply_live=lambda k, v: None)
    guard.handle(Finding(detector="x", severity="critical", step=2, title="bad"), step=2)
    assert guard.stop_requested and "no checkpoint" in events[0]["reason"]


def test_nonfinite_losses_are_skipped_then_stop_the_run(tiny_cfg, tmp_path):
    cfg = tiny_cfg("trainer.total_training_steps=6", "trainer.max_consecutive_nonfinite=2", "trainer.test_freq=0")
    st = build(cfg)
    before = {k: v.clone() for k, v in st.actor.state_dict().items()}

    def poison(module, args, out):  # NaN logits only in training mode (the update), not in rollout
        if module.training:
            out.logits = out.logits * float("nan")
        return out

    st.actor.register_forward_hook(poison)
    result = train(cfg, state=st)
    assert result.status == "stopped" and "non-finite" in result.reason and result.steps == 2
    for k, v in st.actor.state_dict().items():
        assert torch.equal(v, before[k]), k  # no NaN update reached the weights
    hist = rlcockpit.Api(str(tmp_path / "store")).run(result.run_id).history()
    assert hist["actor/nonfinite_skipped"].dropna().tolist() == [1.0, 1.0]


def test_rollbacks_escalate_through_actions_and_ignore_stale_findings(tiny_cfg):
    """Each rollback applies the finding's first action on a lever not tried yet plus its lower learning
    rate; a repeated failure escalates to the next lever and a further lr cut, on top of the earlier
    changes. Findings about the abandoned trajectory (begun before the last rollback) are ignored."""
    cfg = tiny_cfg("health.on_critical=rollback")  # actor.optim.lr=1e-3
    events, restored_to, live = [], [], []

    class R:
        def log_event(self, kind, payload, step=None):
            events.append(payload)

    def rollback(before):
        restored_to.append(before)
        return before - 1

    def actions(lr):  # the advice derives the lr cut from the config current when the finding fires
        return [Action(title="raise KL", overrides=["algorithm.kl_ctrl.kl_coef=0.02"]),
                Action(title="lower lr", overrides=[f"actor.optim.lr={lr}"]),
                Action(title="smaller updates", overrides=["actor.ppo_epochs=1"])]

    guard = Guardrails(cfg, R(), rollback=rollback, apply_live=lambda k, v: live.append((k, v)))
    guard.handle(Finding(detector="kl_spike", severity="critical", step=5, step_start=4, title="KL",
                         actions=actions(2e-4)), step=6)
    # metrics at step 4 came from the weights saved at step 3: restore the newest checkpoint before 3
    assert events[-1]["overrides"] == ["algorithm.kl_ctrl.kl_coef=0.02", "actor.optim.lr=0.0002"]
    assert restored_to == [3]
    stale = guard.handle(Finding(detector="reward_cliff", severity="critical", step=7, step_start=5, title="cliff"),
                         step=7)
    assert stale is None and len(events) == 1 and restored_to == [3]
    guard.handle(Finding(detector="kl_spike", severity="critical", step=12, step_start=10, title="KL",
                         actions=actions(4e-5)), step=12)
    assert events[-1]["overrides"] == ["actor.ppo_epochs=1", "actor.optim.lr=4e-05"]
    assert events[-1]["overrides_total"] == ["algorithm.kl_ctrl.kl_coef=0.02", "actor.optim.lr=0.0002",
                                             "actor.ppo_epochs=1", "actor.optim.lr=4e-05"]
    assert cfg.actor.optim.lr == pytest.approx(4e-5) and cfg.algorithm.kl_ctrl.kl_coef == pytest.approx(0.02)
    assert cfg.actor.ppo_epochs == 1 and guard.rollbacks == 2
    # the second restore brought back the checkpoint's optimizer/KL state: earlier changes are pushed again
    assert [k for k, _ in live] == ["algorithm.kl_ctrl.kl_coef", "actor.optim.lr"] * 2 + ["actor.ppo_epochs",
                                                                                      "actor.optim.lr"]
    assert restored_to[-1] == 3  # the checkpoint the first rollback restored is the one known healthy


def test_guardrail_tracks_known_healthy_checkpoints(tiny_cfg):
    """A checkpoint becomes known healthy only after the monitor has looked past it without a finding
    covering it; a warning is enough to disqualify, and the rollback targets the healthy one, not the
    newest one before the event."""
    cfg = tiny_cfg("health.on_critical=rollback")
    asked = []

    class R:
        def log_event(self, kind, payload, step=None):
            pass

    guard = Guardrails(cfg, R(), rollback=lambda before: asked.append(before) or before - 1,
                       apply_live=lambda k, v: None, log=lambda m: None)
    guard.note_checkpoint(0, healthy=True)
    for step in range(1, 13):
        guard.note_checkpoint(step)
        guard.mark_observed(step)
        if step == 9:  # drift began at step 8, the warning arrives at 9
            guard.on_finding(Finding(detector="kl_rising", severity="warning", step=9, step_start=8, title="KL up"))
        guard.poll(step)
        if step == 7:
            assert guard.healthy == 4  # 5..7 wait for 3 more observed steps; rotation must keep them and 4
            assert guard.protected() == {4, 5, 6, 7}
    assert guard.healthy == 5  # 6 and later lie within LEAD_STEPS of the warning's start
    guard.handle(Finding(detector="reward_cliff", severity="critical", step=12, step_start=11, title="cliff",
                         actions=[Action(title="lower lr", overrides=["actor.optim.lr=1e-4"])]), step=12)
    assert asked == [6]  # "newest strictly before 6": checkpoint 5, not 9 or 10


# A model that learns 1-digit addition in ~150 short warm-up steps, trained with the arith-collapse preset
# (lr 3e-3, 4 PPO epochs, clip 10, kl_coef 1e-5): its first update destroys the policy.
COLLAPSE_SMALL = [
    "actor.model.tiny.hidden_size=64", "actor.model.tiny.num_layers=2", "actor.model.tiny.num_heads=2",
    "actor.model.tiny.intermediate_size=128", "actor.model.tiny.sft_steps=150", "actor.model.tiny.sft_batch_size=64",
    "actor.model.tiny.sft_lr=3e-3", "actor.model.tiny.sft_slip_steps=20", "data.builtin.digits=1",
    "data.builtin.train_size=2000", "data.builtin.val_size=30", "data.train_batch_size=8",
    "data.max_response_length=4", "trainer.total_training_steps=30", "trainer.test_freq=15",
    "trainer.save_freq=1", "trainer.max_actor_ckpt_to_keep=4", "trainer.log_samples_freq=5",
]


@pytest.mark.slow
def test_collapse_preset_rolls_back_and_recovers(tmp_path, tiny_cache, monkeypatch):
    """health.on_critical=rollback on a run built to collapse: the guardrail restores a checkpoint from
    before the collapse, lowers the step size (and escalates on a repeat), and the run ends healthy."""
    monkeypatch.setenv("RLCOCKPIT_CACHE", tiny_cache)
    from rlcockpit.trainer.config import load_config

    store, ckpt_dir = tmp_path / "store", tmp_path / "ckpt"
    cfg = load_config(preset="arith-collapse", overrides=[
        *COLLAPSE_SMALL, "health.on_critical=rollback", f"trainer.rlcockpit_dir={store}",
        f"trainer.default_local_dir={ckpt_dir}"])
    result = train(cfg, log=lambda msg: None)
    assert result.status == "finished" and result.steps == 30, result.reason

    run = rlcockpit.Api(str(store)).run(result.run_id)
    assert run.status == "finished"
    events = [e for e in run.events("guardrail") if e["payload"]["action"] == "rollback"]
    assert events, "no rollback happened"
    score = run.history()["critic/score/mean"].dropna()
    collapse_start = events[0]["payload"]["finding_step_start"]
    before = score[score.index < collapse_start]
    assert len(before) and score[(score.index >= collapse_start) & (score.index <= events[0]["step"])].max() < 0.05
    for e in events:
        p = e["payload"]
        # restored: a checkpoint older than the weights that produced the first bad metrics
        assert p["restored_step"] < p["finding_step_start"] - 1 and p["restored_step"] < e["step"]
        assert any(o.startswith("actor.optim.lr=") for o in p["overrides"]), p["overrides"]
    last = events[-1]
    final_lr = float(next(o for o in reversed(last["payload"]["overrides_total"]) if o.startswith("actor.optim.lr="))
                     .split("=", 1)[1])
    # the override reached the config: the live one, the run's stored one and the final checkpoint's
    assert cfg.actor.optim.lr == pytest.approx(final_lr) and final_lr < 3e-3
    assert run.config["actor_rollout_ref"]["actor"]["optim"]["lr"] == pytest.approx(final_lr)
    saved = torch.load(ckpt_dir / "global_step_30" / "trainer_state.pt", weights_only=False)
    assert saved["config"]["actor_rollout_ref"]["actor"]["optim"]["lr"] == pytest.approx(final_lr)
    assert saved["guardrail"]["rollbacks"] == len(events)
    # recovered: no critical finding after the last intervention, reward back above its pre-collapse level
    late = [f for f in run.findings() if f["severity"] == "critical" and f["step_start"] > last["step"]]
    assert not late, late
    # the reward after the first intervention is typically back above its pre-collapse level (the median, not the
    # steps after the last rollback: a late dip the guardrail answers at the final step leaves none after it)
    assert score[score.index > events[0]["step"]].median() >= before.mean()
    assert ckpt.list_checkpoints(ckpt_dir)  # rotation kept checkpoints and the run saved its final state


def test_rotation_keeps_protected_checkpoints_and_rollback_prunes_abandoned_ones(tmp_path):
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(model.parameters())
    for step in range(1, 7):
        ckpt.save_checkpoint(tmp_path, step, models={"actor": model}, optimizers={"actor": opt}, schedulers={},
                             trainer_state={}, keep=2, protect={2})
    assert [ckpt.checkpoint_step(p) for p in ckpt.list_checkpoints(tmp_path)] == [2, 5, 6]
    assert ckpt.remove_after(tmp_path, 2) == [5, 6]
    assert [ckpt.checkpoint_step(p) for p in ckpt.list_checkpoints(tmp_path)] == [2]
    assert (tmp_path / ckpt.LATEST).read_text() == "2"
