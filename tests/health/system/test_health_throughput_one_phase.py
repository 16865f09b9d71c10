"""``throughput_drop`` warns when one phase of the step grows by itself while the others hold (issue 29, h-entropyup).

``rlcockpit_trainer_cpu9``'s dedupscan run re-hashes a history that grows by 256 KB a step from step 150, inside the
trainer's own step (no ``timing_s/*`` phase times it): the time outside every timed phase goes from 0.0007 s to
0.03 s a step by 250 (44x) while generation and the update hold (about 1.2x). The speed rule never warned: its
reference (the 30 steps before) moves along with the slow ramp, and the machine's other jobs make every low stretch
look like "every phase slower alike" (info). The labelled onset is 245 (the step time's 10-step mean out of its range
for good); the one-phase rule warns at 257. Other processes on the same cores stretch every phase alike: a stream
whose phases all double stays quiet.
"""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run

STEP, GEN, UPDATE = "timing_s/step", "timing_s/gen", "timing_s/update_actor"


def _one_phase(found):
    return [f for f in found if f.detector == "throughput_drop" and f.severity == "warning"
            and f.title.startswith("Step time grown by one phase")]


def test_the_dedup_scan_run_warns_on_the_time_outside_every_phase_near_its_onset():
    run_ = real_run("throughput_drop-qwen2s5-2prompt-4sample-dedupscan150-400-val25", "rlcockpit_trainer_cpu9")
    found = _one_phase(replay(run_))
    assert found, "no one-phase warning"
    first = found[0]
    assert 240 <= first.step <= 260, first.step  # onset 245, scored window [240, 260]
    values = first.evidence["values"]
    assert values["phase"] == "other" and values["growth"] > 10 and values["others_growth"] < 2


def _stream(kind: str, seed: int = 3):
    """0.05 s generation + 0.06 s update + 1 ms host time a step (10 % noise), 400 steps; from 150 either the host
    time grows by 0.3 ms a step (``scan``) or every phase takes 2x-3x as long (``load``: other jobs)."""
    rng = random.Random(seed)
    out = []
    for s in range(1, 401):
        gen, upd, host = 0.05, 0.06, 0.001
        if s >= 150 and kind == "scan":
            host += 0.0003 * (s - 150)
        if s >= 150 and kind == "load":
            f = 2.0 + rng.random()
            gen, upd, host = gen * f, upd * f, host * f
        gen, upd, host = (x * (1 + 0.1 * rng.gauss(0, 1)) for x in (gen, upd, host))
        out.append((s, {STEP: gen + upd + host, GEN: gen, UPDATE: upd}))
    return out


def test_synthetic_one_phase_ramp_warns_and_a_uniform_slowdown_does_not():
    scan = _one_phase(run(_stream("scan")))
    # host time adds a quarter of the 0.111 s step (0.028 s) at about step 240; the 20-step median and 5 steps later
    assert scan and 240 <= scan[0].step <= 270, [f.step for f in scan]
    assert _one_phase(run(_stream("load"))) == []
    assert _one_phase(run(_stream("none"))) == []
