"""``value_divergence`` on a critic whose mean prediction swings (issue 29, the twenty-first CPU pass of
bench/detection_corpus/real/): the critic's lr typed 1000x at step 160 of a GAE run makes the batch-mean value
prediction jump past the returns and back (0.41 -> 0.67 -> -0.01 -> 0.33 -> 0.74) while the returns' mean holds
0.35-0.50; the value loss's 5-step median rises only to ~3x its level for a step or two, under its sustained rule.
The healthy GAE runs of the developed-on sources move their mean prediction with the returns (spread ratio <= 1.3)."""

from __future__ import annotations

import random

from health_corpus_runs import real_where, replay

from rlcockpit.health import HealthMonitor

VALUES, RETURNS, VF_LOSS = "critic/values/mean", "critic/returns/mean", "critic/vf_loss"


def swings(found) -> list[tuple[int, str]]:
    return [(f.step, f.severity) for f in found if f.detector == "value_divergence" and f.severity != "info"]


def stream(swing_from: int | None, steps: int = 200, seed: int = 3) -> list[tuple[int, dict[str, float]]]:
    rnd = random.Random(seed)
    rows = []
    for s in range(1, steps + 1):
        ret = 0.42 + rnd.gauss(0, 0.06)
        val = ret + rnd.gauss(0, 0.03)
        if swing_from is not None and s >= swing_from:
            val = ret + rnd.choice((-1, 1)) * (0.2 + rnd.random() * 0.2)
        rows.append((s, {RETURNS: ret, VALUES: val, VF_LOSS: 0.02 + abs(rnd.gauss(0, 0.005)),
                         "critic/score/mean": ret}))
    return rows


def replay_rows(rows) -> list:
    mon = HealthMonitor()
    return [f for step, m in rows for f in mon.observe(step, m)] + mon.close()


def test_critic_lr_typed_large_found_near_onset():
    (run,) = real_where(lambda e: e["source"] == "rlcockpit_trainer_cpu16" and "criticlr1000x" in e["id"])
    found = swings(replay(run))
    assert found, "the swinging critic is not reported"
    assert run["onset"] - 5 <= found[0][0] <= run["onset"] + 15, (run["onset"], found)


def test_healthy_gae_runs_stay_quiet():
    sources = {f"rlcockpit_trainer_cpu{n}" for n in (4, 6, 8, 15, 16)}  # developed-on sources with GAE runs
    runs = real_where(lambda e: e["class"] == "healthy" and "gae" in e["id"] and e["source"] in sources)
    assert len(runs) >= 4
    for run in runs:
        assert swings(replay(run)) == [], run["id"]


def test_synthetic_swing_warns_and_tracking_critic_does_not():
    assert swings(replay_rows(stream(None))) == []
    found = swings(replay_rows(stream(120)))
    assert found and found[0][1] == "warning" and 120 <= found[0][0] <= 135, found
