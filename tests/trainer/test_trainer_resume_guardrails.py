from __future__ import annotations

import threading

import pytest
import torch

import rlcockpit
from rlcockpit.health import Action, Finding
from rlcockpit.trainer import checkpoint as ckpt
from rlcockpit.trainer.guardrails import Guardrails
from rlcockpit.trainer.loop import apply_live, build, save, train


def _weights(path):
    return torch.load(path / "actor.pt", weights_only=True)


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
    """A repeated failure applies the next recommended action; findings about the abandoned trajectory
    (begun before the last rollback) are ignored instead of triggering another rollback."""
    cfg = tiny_cfg("health.on_critical=rollback")
    events, restored_to, live = [], [], []

    class R:
        def log_event(self, kind, payload, step=None):
            events.append(payload)

    def rollback(before):
        restored_to.append(before)
        return before - 1

    guard = Guardrails(cfg, R(), rollback=rollback, apply_live=lambda k, v: live.append((k, v)))
    actions = [Action(title="raise KL", overrides=["algorithm.kl_ctrl.kl_coef=0.02"]),
               Action(title="lower lr", overrides=["actor.optim.lr=1e-6"])]
    guard.handle(Finding(detector="kl_spike", severity="critical", step=5, step_start=4, title="KL", actions=actions),
                 step=6)
    assert events[-1]["overrides"] == ["algorithm.kl_ctrl.kl_coef=0.02"] and restored_to == [4]
    stale = guard.handle(Finding(detector="reward_cliff", severity="critical", step=7, step_start=5, title="cliff"),
                         step=7)
    assert stale is None and len(events) == 1 and restored_to == [4]
    guard.handle(Finding(detector="kl_spike", severity="critical", step=12, step_start=10, title="KL", actions=actions),
                 step=12)
    assert events[-1]["overrides"] == ["actor.optim.lr=1e-6"] and cfg.actor.optim.lr == pytest.approx(1e-6)
    assert cfg.algorithm.kl_ctrl.kl_coef == pytest.approx(0.02) and guard.rollbacks == 2
    assert [k for k, _ in live] == ["algorithm.kl_ctrl.kl_coef", "actor.optim.lr"]
