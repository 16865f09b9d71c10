"""``diagnose --verify`` for runs rlcockpit watched but did not train: the exact resume command (verl, TRL), and
reruns imported later linked as branches and compared. Real store, real detectors, a labelled synthetic collapse."""

from __future__ import annotations

import json
import shlex

import rlcockpit
from rlcockpit.health.diagnosis.diagnose import diagnose_run
from rlcockpit.health.synthetic import make_trace
from rlcockpit.health.verify.resume_command import external_verify
from rlcockpit.health.verify.verdict import CONFIRMED, FIX_LEAD, NOT_CONFIRMED
from rlcockpit.integrations.importer import import_run
from rlcockpit.store import open_store

SAVE = 20


def _verl_config(**trainer):
    base = {"framework": "verl",
            "algorithm": {"adv_estimator": "grpo", "use_kl_in_reward": True, "kl_ctrl": {"kl_coef": 0.001}},
            "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "use_kl_loss": False,
                                            "clip_ratio_low": 0.2, "clip_ratio_high": 0.2},
                                  "rollout": {"n": 8, "temperature": 1.0}},
            "trainer": {"project_name": "p", "experiment_name": "grpo", "save_freq": SAVE,
                        "default_local_dir": "/ckpts/${trainer.project_name}/${trainer.experiment_name}"}}
    base["trainer"].update(trainer)
    return base


def _set(config, override):
    key, value = override.split("=", 1)
    node = config
    *parents, leaf = key.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = json.loads(value) if value[:1].isdigit() or value in ("true", "false") else value


def _log(store_dir, name, config, steps):
    run = rlcockpit.init(project="p", name=name, dir=str(store_dir), config=config, health=False,
                         loggers=["rlcockpit"])
    for step, metrics, samples in steps:
        if samples:
            run.log_samples(samples, step=step)
        run.log(metrics, step=step)
    run.finish()
    return run.id


def test_verl_run_gets_the_resume_command_and_a_rerun_is_linked_and_compared(tmp_path):
    trace = make_trace("collapse", 0, steps=120)
    rows = [(s, m, trace.samples.get(s)) for s, m in trace.metrics]
    parent = _log(tmp_path, "verl-collapse", _verl_config(), rows)
    store = open_store(str(tmp_path))
    diagnosis = diagnose_run(store, parent)
    onset = diagnosis["root_cause"]["root"]["step"]
    n = (onset - FIX_LEAD) // SAVE * SAVE
    report, text = external_verify(store, parent, diagnosis)
    first = diagnosis["overrides"]["apply"]  # the printed line to paste: try 1
    cmd = shlex.split(report["commands"][0]["command"])
    assert cmd[:3] == ["python", "-m", "verl.trainer.main_ppo"]
    assert cmd[-len(first) - 2:] == ["trainer.resume_mode=resume_path",
                                     f"trainer.resume_from_path=/ckpts/p/grpo/global_step_{n}", *first]
    assert report["tries"] == [] and "Import or watch the rerun" in text

    # the user reruns it: one rerun unchanged (collapses again), one with the fix (the healthy stretch goes on)
    ckpt = f"/ckpts/p/grpo/global_step_{n}"
    resumed = {"resume_mode": "resume_path", "resume_from_path": ckpt}
    _log(tmp_path, "rerun-unchanged", _verl_config(**resumed), [r for r in rows if r[0] > n])
    fixed_cfg = _verl_config(**resumed)
    for o in first:
        _set(fixed_cfg, o)
    healthy = [(n + 1 + i, m, None) for i, (_s, m, _x) in enumerate(rows[n - 40 + 1:n + 1])]  # pre-onset, again
    fixed = _log(tmp_path, "rerun-fixed", fixed_cfg, healthy)
    _log(tmp_path, "unrelated", _verl_config(resume_mode="resume_path", resume_from_path="/elsewhere/global_step_20"),
         healthy)
    report, text = external_verify(store, parent, diagnose_run(store, parent))
    assert len(report["branches"]) == 2 and store.get_run(fixed)["meta"]["verify_of"] == parent
    (t,) = report["tries"]
    root = next(r for r in t["findings"] if r["detector"] == report["finding"]["detector"])
    assert root["reproduced"] == root["unchanged_runs"] == 2 and root["avoided"] == 1
    assert t["verdict"] == CONFIRMED and report["verdict"] == CONFIRMED and report["worked"] == 1
    assert "linked as branches" in text


def test_a_rerun_that_collapses_anyway_is_not_confirmed(tmp_path):
    trace = make_trace("collapse", 1, steps=120)
    rows = [(s, m, trace.samples.get(s)) for s, m in trace.metrics]
    parent = _log(tmp_path, "verl-collapse", _verl_config(), rows)
    store = open_store(str(tmp_path))
    diagnosis = diagnose_run(store, parent)
    n = (diagnosis["root_cause"]["root"]["step"] - FIX_LEAD) // SAVE * SAVE
    cfg = _verl_config(resume_mode="resume_path", resume_from_path=f"/ckpts/p/grpo/global_step_{n}")
    for o in diagnosis["overrides"]["apply"]:
        _set(cfg, o)
    _log(tmp_path, "rerun-fixed-but-collapses", cfg, [r for r in rows if r[0] > n])
    report, _text = external_verify(store, parent, diagnosis)
    assert report["tries"][0]["verdict"] == NOT_CONFIRMED and report["worked"] is None


def test_trl_trainer_state_gets_resume_from_checkpoint(tmp_path):
    trace = make_trace("collapse", 2, steps=120)
    out = tmp_path / "grpo-out"
    (out / "checkpoint-120").mkdir(parents=True)
    history = [{"step": s, **m} for s, m in trace.metrics]
    (out / "checkpoint-120" / "trainer_state.json").write_text(json.dumps(
        {"global_step": 120, "save_steps": 25, "log_history": history}))
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"output_dir": str(out), "save_steps": 25, "learning_rate": 1e-6, "beta": 0.0,
                                "num_generations": 8, "per_device_train_batch_size": 8}))
    result = import_run(str(out), dir=str(tmp_path / "store"), config_file=str(args), health=False)
    store = open_store(str(tmp_path / "store"))
    diagnosis = diagnose_run(store, result.run_id)
    n = (diagnosis["root_cause"]["root"]["step"] - FIX_LEAD) // 25 * 25
    report, text = external_verify(store, result.run_id, diagnosis)
    assert report["framework"] == "trl"
    cmd = report["commands"][0]["command"]
    assert f"--resume_from_checkpoint {out}/checkpoint-{n}" in cmd
    first = diagnosis["overrides"]["apply"]  # the printed line to paste: try 1
    assert all(f"--{o.split('=', 1)[0]} {o.split('=', 1)[1]}" in cmd for o in first)
    assert "actor_rollout_ref" not in cmd  # TRL's own argument names, not verl's


def test_a_rerun_is_matched_to_the_try_it_applied():
    """A rerun that pasted the merged line is try 1's; one that applied only a ranked action (a subset of the
    line's keys) is that action's try, not the line's; one that changed none of the keys is unchanged."""
    from rlcockpit.health.verify.resume_command import _tried

    parent = _verl_config()
    tries = [{"rank": 1, "overrides": ["actor_rollout_ref.actor.optim.lr=1e-7", "algorithm.kl_ctrl.kl_coef=0.02"]},
             {"rank": 2, "overrides": ["algorithm.kl_ctrl.kl_coef=0.02"]},
             {"rank": 3, "overrides": ["actor_rollout_ref.actor.optim.lr=1e-7"]}]
    both, kl_only = _verl_config(), _verl_config()
    for o in tries[0]["overrides"]:
        _set(both, o)
    _set(kl_only, tries[1]["overrides"][0])
    assert _tried(parent, both, tries) == 1
    assert _tried(parent, kl_only, tries) == 2
    assert _tried(parent, _verl_config(), tries) is None
