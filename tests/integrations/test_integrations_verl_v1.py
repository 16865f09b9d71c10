"""verl 0.9's V1 trainer and agent loop, watched: the guide knows every key, trajectory staleness and the
on-policy log-prob mismatch are diagnosed, V1's timing_s/gen is not read as generation, and a multi-turn
rollout dump shows turn by turn.

The job (verl_v1_job.py) runs in .venv-verl and logs through verl's own Tracking file backend, metric helpers,
agent-loop timing aggregation and rollout-dump writer. Before: agent_loop/*, rollout/moe/*, fully_async/* were
unknown to the guide, no detector read training/off_policy/*, V1's replay-buffer sampling (timing_s/gen) counted
as generation, and a multi-turn response was one run-on string.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from integrations_support import VERL_PY

from rlcockpit.integrations.watch import VerlWatcher
from rlcockpit.store import open_store

JOB = Path(__file__).parent / "verl_v1_job.py"


def _watch(tmp: Path, scenario: str, steps: int, dumps: bool) -> tuple[object, str]:
    log, rollouts = tmp / f"{scenario}.jsonl", tmp / f"{scenario}-rollouts"
    args = [str(VERL_PY), str(JOB), "--scenario", scenario, "--steps", str(steps)]
    if dumps:
        args += ["--rollout-dir", str(rollouts)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=tmp,
                          env={**os.environ, "VERL_FILE_LOGGER_PATH": str(log), "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    config = json.loads(proc.stdout.strip().splitlines()[-1])["config"]
    w = VerlWatcher(file_log=log, rollout_dir=rollouts if dumps else None, dir=tmp / "store", project="v1",
                    name=scenario, config=config)
    w.poll_once()
    w.poll_once()
    w.close()
    return open_store(tmp / "store"), w.run.id


@pytest.fixture(scope="module")
def stale_run(tmp_path_factory):
    return _watch(tmp_path_factory.mktemp("v1-stale"), "stale", 30, dumps=True)


@pytest.mark.slow
def test_every_v1_and_agent_loop_key_is_in_the_guide(stale_run):
    from rlcockpit.metrics.guide import match

    store, run_id = stale_run
    keys = store.keys(run_id)
    families = ("training/off_policy/", "agent_loop/", "num_turns/", "tool_call_counts/", "timing_s/")
    v1 = [k for k in keys if k.startswith(families)]
    assert any(k.startswith("agent_loop/") for k in v1) and "timing_s/wait_for_enough_samples" in v1
    assert [k for k in v1 if match(k) is None] == []
    assert match("agent_loop/tool_calls/max").info.key == "agent_loop/<phase>/<agg>"


@pytest.mark.slow
def test_growing_staleness_is_diagnosed_with_verls_knobs(stale_run):
    store, run_id = stale_run
    found = [f for f in store.findings(run_id) if f["detector"] == "off_policy_staleness"]
    assert found and found[-1]["severity"] == "critical", [f["detector"] for f in store.findings(run_id)]
    overrides = [o for a in found[-1]["actions"] for o in a["overrides"]]
    assert "trainer.v1.sampler.max_off_policy_threshold=4" in overrides


@pytest.mark.slow
def test_v1_gen_time_is_a_wait_for_samples_not_generation(stale_run):
    store, run_id = stale_run
    labels = [json.dumps(f.get("evidence", {}).get("values", {}).get("bottleneck")) for f in store.findings(run_id)
              if f["detector"] in ("bottleneck", "throughput_drop")]
    assert not [x for x in labels if "generation-bound" in x]
    from rlcockpit.health.base import DetectorContext, Track
    from rlcockpit.health.config_view import RunConfigView
    from rlcockpit.health.detectors.system import attribute_bottleneck

    ctx = DetectorContext(RunConfigView({}))
    tracks = ctx.tracks
    for key in ("timing_s/step", "timing_s/gen", "timing_s/wait_for_enough_samples", "timing_s/update_actor",
                "training/off_policy/trajectory_staleness/mean"):
        steps, values, _ = store.series(run_id, key, with_ts=False)
        tracks[key] = Track(key)
        for s, v in zip(steps, values):
            tracks[key].push(int(s), float(v))
    label, shares = attribute_bottleneck(ctx)
    assert label.startswith("rollout-bound") and "generation" not in shares


@pytest.mark.slow
def test_multi_turn_rollout_dump_shows_turn_by_turn(stale_run):
    store, run_id = stale_run
    rows = store.samples(run_id, step=2)
    row = next(r for r in rows if r["reward"] == 1.0)
    turns = row["turns"]
    assert [t["role"] for t in turns] == ["assistant", "tool", "assistant"]
    call = turns[0]["tool_calls"][0]
    assert call["name"] == "calc" and call["arguments"] == {"expr": "3*3"} and call["result"] == "9"
    assert turns[2]["content"] == "The answer is #### 9" and row["tool_calls"] == 1 and row["tool_errors"] == 0
    failed = next(r for r in rows if r["reward"] == 0.0)
    assert failed["tool_errors"] == 1 and "division by zero" in failed["turns"][1]["content"]


@pytest.mark.slow
def test_on_policy_logprob_mismatch_names_the_micro_batch_override(tmp_path):
    store, run_id = _watch(tmp_path, "mismatch", 12, dumps=False)
    found = [f for f in store.findings(run_id) if f["detector"] == "on_policy_mismatch"]
    assert found, [f["detector"] for f in store.findings(run_id)]
    assert "log_prob_micro_batch_size_per_gpu" in found[0]["causes"][0]["title"]
    overrides = [o for a in found[0]["actions"] for o in a["overrides"]]
    assert overrides == ["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4"]
