"""Agents running real programs: W&B's example sweeps, parallel agents, failures, early termination."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from sweeps_support import TRAIN_DUMMY, TRAIN_NESTED, WANDB_GRID, WANDB_NESTED, cli, env, start_agent, write

import rlcockpit
from rlcockpit.store import open_store
from rlcockpit.store.sql import open_database
from rlcockpit.sweeps import Agent
from rlcockpit.sweeps.config import load_yaml
from rlcockpit.sweeps.controller import next_trial
from rlcockpit.sweeps.state import SweepState


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with a store; the agent (in this process) and its trials use it."""
    for k, v in env(tmp_path / "store").items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_agent(sweep_id: str, **kw) -> str:
    out = io.StringIO()
    Agent(sweep_id, out=out, poll_s=0.2, **kw).run()
    return out.getvalue()


def trials(sweep_id: str) -> list[dict]:
    return SweepState(open_database()).trials(sweep_id)


def new_sweep(config: dict | str, **kw) -> str:
    return rlcockpit.sweep(load_yaml(config) if isinstance(config, str) else config, **kw)


def test_wandb_grid_example_runs_unchanged(ws: Path) -> None:
    write(ws / "train.py", TRAIN_DUMMY.replace("time.sleep(args.sleep)", "time.sleep(args.sleep / 50)"))
    sweep_id = new_sweep(WANDB_GRID, seed=1)
    out = run_agent(sweep_id, count=3)
    ts = trials(sweep_id)
    assert [t["state"] for t in ts] == ["finished"] * 3, out
    assert [t["params"]["increment"] for t in ts] == [0.1, 0.2, 0.3]  # grid order: the last name varies fastest
    store = open_store()
    for t in ts:
        run = store.get_run(t["run_id"])
        assert run["group"] == sweep_id and run["project"] == "sweeps-examples"  # the sweep file's project
        assert run["config"]["base"] == 10 and run["config"]["epochs"] == 5
        assert t["n_values"] == 5 and t["best"] == min(store.series(t["run_id"], "loss_metric")[1])
    assert "--base=10 --direction=-1 --epochs=5 --increment=0.1 --sleep=0.5 --variance=5" in out


def test_nested_parameters_reach_the_program_config(ws: Path) -> None:
    write(ws / "train-nested-cli.py", TRAIN_NESTED)
    sweep_id = new_sweep(WANDB_NESTED)
    run_agent(sweep_id, count=2)
    ts = trials(sweep_id)
    assert [t["state"] for t in ts] == ["finished", "finished"]
    run = open_store().get_run(ts[1]["run_id"])
    assert run["config"]["optimizer"] == {"lr": 0.001, "nadam": {"beta": 0.95}}
    assert run["config"]["batch_size"] == 32


ARGV_PROGRAM = """\
import json, os, sys
import rlcockpit
run = rlcockpit.init(system_interval=None, health=False, capture_meta=False)
json.dump({"argv": sys.argv[1:], "config": run.config}, open(os.environ["OUT"] + "/" + run.id + ".json", "w"))
run.log({"m": 1.0})
run.finish()
"""


def test_command_macros_expand_as_wandb(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(ws / "prog.py", ARGV_PROGRAM)
    monkeypatch.setenv("OUT", str(ws))
    monkeypatch.setenv("MODE", "fast")
    sweep_id = new_sweep({
        "program": "prog.py", "method": "grid",
        "command": ["${env}", "${interpreter}", "${program}", "--mode=${envvar:MODE}", "${args_no_boolean_flags}",
                    "${args_json_file}", "${args_json}", "${args_no_hyphens}"],
        "parameters": {"flag": {"values": [True]}, "off": {"value": False}, "lr": {"value": 1e-5},
                       "opt": {"parameters": {"name": {"value": "adam"}}}}})
    run_agent(sweep_id, count=1)
    (t,) = trials(sweep_id)
    got = json.loads((ws / f"{t['run_id']}.json").read_text())
    argv = got["argv"]
    assert argv[0] == "--mode=fast"
    assert argv[1:4] == ["--flag", "--lr=1e-05", "--opt={'name': 'adam'}"]  # False booleans omitted
    assert json.loads(Path(argv[4]).read_text()) == t["params"]  # ${args_json_file}
    assert json.loads(argv[5]) == {"flag": True, "lr": 1e-05, "off": False, "opt": {"name": "adam"}}
    assert argv[6:] == ["flag=True", "lr=1e-05", "off=False", "opt={'name': 'adam'}"]
    assert got["config"]["opt"] == {"name": "adam"} and got["config"]["lr"] == 1e-5


FLAKY = """\
import os, signal, sys
import rlcockpit
mode = sys.argv[1].split("=", 1)[1]
if mode == "no_init":
    print("forgot to call init"); sys.exit(0)
run = rlcockpit.init(system_interval=None, health=False, capture_meta=False)
run.log({"acc": 0.5 if mode == "ok" else 0.2})
run.flush()
if mode == "fail":
    raise RuntimeError("CUDA out of memory (simulated)")
if mode == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
run.finish()
"""


def test_failures_are_recorded_and_the_sweep_goes_on(ws: Path) -> None:
    write(ws / "flaky.py", FLAKY)
    sweep_id = new_sweep({"program": "flaky.py", "method": "grid", "metric": {"name": "acc", "goal": "maximize"},
                          "parameters": {"mode": {"values": ["fail", "no_init", "kill", "ok"]}}})
    run_agent(sweep_id)
    ts = {t["params"]["mode"]: t for t in trials(sweep_id)}
    assert {k: t["state"] for k, t in ts.items()} == {"fail": "failed", "no_init": "finished", "kill": "crashed",
                                                      "ok": "finished"}
    assert "CUDA out of memory" in ts["fail"]["reason"] and ts["fail"]["exit_code"] == 1
    assert ts["kill"]["reason"] == "killed by SIGKILL"
    store = open_store()
    assert store.get_run(ts["fail"]["run_id"])["status"] == "failed"
    assert store.get_run(ts["kill"]["run_id"])["status"] == "crashed"
    ghost = store.get_run(ts["no_init"]["run_id"])  # a program that never called init still leaves a run
    assert ghost["group"] == sweep_id and "forgot to call init" in "\n".join(ghost["meta"]["output_tail"])
    assert ts["ok"]["best"] == 0.5
    assert SweepState(open_database()).get(sweep_id)["state"] == "finished"


def test_run_cap_and_target_stop_the_sweep(ws: Path) -> None:
    write(ws / "flaky.py", FLAKY)
    capped = new_sweep({"program": "flaky.py", "method": "random", "run_cap": 2,
                        "parameters": {"mode": {"values": ["ok"]}}})
    out = run_agent(capped, count=10)
    assert len(trials(capped)) == 2 and "run_cap 2 reached" in out
    target = new_sweep({"program": "flaky.py", "method": "random",
                        "metric": {"name": "acc", "goal": "maximize", "target": 0.4},
                        "parameters": {"mode": {"values": ["ok"]}}})
    out = run_agent(target, count=10)
    assert len(trials(target)) == 1 and "metric.target 0.4 reached by trial 0" in out


SLOW_LOSS = """\
import sys, time
import rlcockpit
quality = float(sys.argv[1].split("=", 1)[1])
run = rlcockpit.init(system_interval=None, health=False, capture_meta=False)
for i in range(40):
    run.log({"loss": quality + 1.0 / (i + 1)})
    if quality > 5 and i == 1:
        run.log_finding({"detector": "test", "severity": "critical", "title": "loss exploded", "step": i})
    run.flush()
    time.sleep(0.1 if quality < 5 else 0.25)
run.finish()
"""


def test_hyperband_stops_a_bad_trial(ws: Path) -> None:
    write(ws / "slow.py", SLOW_LOSS)
    sweep_id = new_sweep({"program": "slow.py", "method": "grid", "metric": {"name": "loss", "goal": "minimize"},
                          "early_terminate": {"type": "hyperband", "min_iter": 3, "eta": 3},
                          "parameters": {"quality": {"values": [0.0, 3.0]}}})
    run_agent(sweep_id)
    good, bad = trials(sweep_id)
    assert good["state"] == "finished" and good["n_values"] == 40
    assert bad["state"] == "stopped" and bad["n_values"] < 40
    assert bad["reason"].startswith("hyperband: loss = ") and "at iteration 3" in bad["reason"]
    run = open_store().get_run(bad["run_id"])
    assert run["status"] == "stopped" and run["meta"]["end_reason"] == bad["reason"]


def test_health_findings_stop_a_trial(ws: Path) -> None:
    write(ws / "slow.py", SLOW_LOSS)
    sweep_id = new_sweep({"program": "slow.py", "method": "grid", "early_terminate": {"type": "health"},
                          "parameters": {"quality": {"values": [9.0]}}})
    run_agent(sweep_id)
    (t,) = trials(sweep_id)
    assert t["state"] == "stopped" and "health: critical finding 'loss exploded' (test, step 1)" == t["reason"]
    assert t["n_values"] < 40


def test_two_agents_share_a_grid_without_duplicates(ws: Path) -> None:
    write(ws / "train.py", TRAIN_DUMMY)
    sweep_id = new_sweep({"program": "train.py", "method": "grid", "metric": {"name": "loss_metric"},
                          "parameters": {"base": {"values": [1, 2, 3]}, "increment": {"values": [0.1, 0.2]},
                                         "epochs": {"value": 2}, "sleep": {"value": 0.05}}})
    store = ws / "store"
    agents = [start_agent(sweep_id, cwd=ws, store=store) for _ in range(2)]
    outs = [a.communicate(timeout=240)[0] for a in agents]
    assert all(a.returncode == 0 for a in agents), outs
    ts = trials(sweep_id)
    points = {(t["params"]["base"], t["params"]["increment"]) for t in ts}
    assert len(ts) == 6 and len(points) == 6 and all(t["state"] == "finished" for t in ts)
    assert len({t["agent_id"] for t in ts}) == 2  # both agents worked
    assert all("grid exhausted (6 points)" in o for o in outs)


def test_pause_resume_and_cancel_from_the_cli(ws: Path) -> None:
    write(ws / "slow.py", SLOW_LOSS.replace("range(40)", "range(400)"))
    store = ws / "store"
    sweep_id = new_sweep({"program": "slow.py", "method": "random", "parameters": {"quality": {"value": 1.0}}})
    assert cli(["sweep", "--pause", sweep_id], cwd=ws, store=store).returncode == 0
    agent = start_agent(sweep_id, cwd=ws, store=store)
    time.sleep(3)
    assert trials(sweep_id) == []  # paused: the agent waits
    assert cli(["sweep", "--resume", sweep_id], cwd=ws, store=store).returncode == 0
    deadline = time.time() + 60
    while not trials(sweep_id) and time.time() < deadline:
        time.sleep(0.2)
    assert cli(["sweep", "--cancel", sweep_id], cwd=ws, store=store).returncode == 0
    out = agent.communicate(timeout=90)[0]
    assert "is paused; waiting" in out and "sweep cancelled" in out
    (t,) = trials(sweep_id)
    assert t["state"] == "killed" and t["reason"] == "sweep cancelled"
    status = cli(["sweep", "--status", sweep_id], cwd=ws, store=store)
    assert "killed" in status.stdout and sweep_id in status.stdout


def test_silent_agents_trial_becomes_crashed(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    st = SweepState(open_database())
    sweep_id = new_sweep({"program": "x.py", "method": "random", "parameters": {"a": {"min": 0.0, "max": 1.0}}})
    claim = next_trial(st, sweep_id, "dead-agent")
    assert not isinstance(claim, str)
    with st.db.transaction() as cur:
        cur.execute("UPDATE sweep_trials SET heartbeat_at = heartbeat_at - 1000 WHERE sweep_id = ?", (sweep_id,))
    monkeypatch.setenv("RLCOCKPIT_SWEEP_STALE_S", "100")
    second = next_trial(st, sweep_id, "alive")
    assert not isinstance(second, str) and second.number == 1
    first = st.trials(sweep_id)[0]
    assert first["state"] == "crashed" and "heartbeats" in first["reason"]


def test_function_agent_and_resume_reproduce_a_seeded_sweep(ws: Path) -> None:
    config = {"method": "random", "metric": {"name": "score", "goal": "maximize"},
              "parameters": {"x": {"min": 0.0, "max": 1.0}, "k": {"values": ["a", "b"]}}}
    seen = []

    def train() -> None:
        run = rlcockpit.init(system_interval=None, health=False, capture_meta=False)
        seen.append(dict(run.config))
        run.log({"score": run.config["x"]})

    first = new_sweep(config, seed=42)
    rlcockpit.agent(first, function=train, count=2)
    rlcockpit.agent(first, function=train, count=2)  # a second agent later resumes the sweep
    ts = trials(first)
    assert [t["number"] for t in ts] == [0, 1, 2, 3] and all(t["state"] == "finished" for t in ts)
    assert [s["x"] for s in seen] == [t["params"]["x"] for t in ts]
    again = new_sweep(config, seed=42)
    rlcockpit.agent(again, function=train, count=4)
    assert [t["params"] for t in trials(again)] == [t["params"] for t in ts]
    assert all(open_store().get_run(t["run_id"])["group"] == first for t in ts)


def test_sigkilled_agent_leaves_no_trial_running_and_others_take_over(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import signal

    write(ws / "slow.py", SLOW_LOSS.replace("range(40)", "range(4000)"))
    store = ws / "store"
    sweep_id = new_sweep({"program": "slow.py", "method": "grid", "parameters": {"quality": {"values": [1.0, 2.0]}}})
    agent = start_agent(sweep_id, cwd=ws, store=store)
    deadline = time.time() + 60
    run_id = None
    while time.time() < deadline and run_id is None:
        ts = trials(sweep_id)
        if ts and _has_run(ts[0]["run_id"]) and open_store().keys(ts[0]["run_id"]):  # the trial is logging
            run_id = ts[0]["run_id"]
        time.sleep(0.2)
    assert run_id is not None
    os.kill(agent.pid, signal.SIGKILL)
    agent.wait(timeout=30)
    deadline = time.time() + 30  # the trial's program got SIGTERM from the kernel and finished its run
    while time.time() < deadline and open_store().get_run(run_id)["stored_status"] == "running":
        time.sleep(0.2)
    assert open_store().get_run(run_id)["stored_status"] == "failed"
    assert "SIGTERM" in (open_store().get_run(run_id)["meta"].get("end_reason") or "")
    monkeypatch.setenv("RLCOCKPIT_SWEEP_STALE_S", "1")
    time.sleep(1.5)
    write(ws / "slow.py", SLOW_LOSS)  # the next agent's trial is short
    run_agent(sweep_id)
    first, second = trials(sweep_id)
    assert first["state"] == "crashed" and "heartbeats" in first["reason"]
    assert second["state"] == "finished"


def _has_run(run_id: str) -> bool:
    try:
        open_store().get_run(run_id)
        return True
    except KeyError:
        return False


def test_secrets_in_commands_and_output_are_masked(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(ws / "leak.py", "import sys\nprint('using token sk-abcdefghijklmnopqrstuvwx')\nsys.exit(3)\n")
    monkeypatch.setenv("MY_API_KEY", "sk-zyxwvutsrqponmlkjihgfedc")
    sweep_id = new_sweep({"program": "leak.py", "method": "grid", "parameters": {"x": {"values": [1]}},
                          "command": ["${env}", "${interpreter}", "${program}", "--api_key=${envvar:MY_API_KEY}"]})
    out = run_agent(sweep_id)
    assert "sk-zyxwvutsrqponmlkjihgfedc" not in out  # the printed command
    (t,) = trials(sweep_id)
    stored = json.dumps(open_store().get_run(t["run_id"])) + json.dumps(t)
    assert "sk-abcdefghijklmnopqrstuvwx" not in stored and "sk-zyxwvutsrqponmlkjihgfedc" not in stored
    assert t["state"] == "failed" and "using token" in t["reason"]
