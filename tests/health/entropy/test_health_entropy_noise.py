"""An entropy at noise level from the first steps (issue 29): a public verl GRPO run of Qwen2.5-1.5B on math with
lr 3e-5 (bench corpus source verl_console_public12, the ``collapse-math-grpo-qwen1.5b-lr3e-5-21`` run) went from an
entropy of 0.46 at step 1 to 6.1 at step 5 and 11.6 (near-uniform over a 150k vocabulary) by step 16, its KL to the
reference to 0.9, every response to the 512-token cap and every sample scored 0 from step 3. Nothing fired: every
rule was still warming up, and by the end of its warm-up the noise was the level the run was judged against. An
entropy held above the guide's ``noise_above`` (nats per token) and above 3x its first logged value is now a
critical from the first step, with no warm-up; a per-response entropy summed over tokens (high from the start), a
small model's ordinary entropy of 2-3 and a noisy rise to twice the start stay quiet.
"""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream


def noise_alerts(found):
    return [(f.step, f.severity, f.step_start) for f in found
            if f.detector == "entropy_explosion" and f.title.startswith("Entropy at noise level")]


def test_the_real_verl_run_turned_to_noise_in_its_first_steps_is_a_critical_within_the_window():
    run = real_run("collapse-math-grpo-qwen1.5b-lr3e-5-21", "verl_console_public12")
    found = noise_alerts(replay(run))
    assert found, "no noise-level critical"
    step, sev, start = found[0]
    assert sev == "critical" and step <= run["onset"] + 15 and start == 5, found
    assert len(found) == 1, found  # one event, said once


def stream(seed: int, first: float, level: float, rise_to: float | None = None, steps: int = 60):
    """An entropy starting at ``first``, settling near ``level`` (noise 8 %), optionally rising linearly to
    ``rise_to`` over the run."""
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        base = first if s == 1 else level + ((rise_to - level) * s / steps if rise_to is not None else 0.0)
        out.append((s, {"actor/entropy": base * (1 + rng.gauss(0.0, 0.08)), "critic/score/mean": 0.3}))
    return out


def test_high_but_ordinary_entropies_are_not_noise():
    for seed in range(4):
        # a per-response entropy summed over tokens: high from the first step, growing with the answers
        assert noise_alerts(replay_stream(stream(seed, 5.1, 5.4, rise_to=9.0))) == [], seed
        # a small model's entropy of 2-3, rising to twice its start
        assert noise_alerts(replay_stream(stream(seed, 1.6, 2.2, rise_to=3.2))) == [], seed
        # one step above the bar is no level
        spike = stream(seed, 0.5, 0.6)
        spike[20][1]["actor/entropy"] = 8.0
        assert noise_alerts(replay_stream(spike)) == [], seed


def test_a_synthetic_blow_up_from_the_start_is_said_once():
    found = noise_alerts(replay_stream(stream(0, 0.5, 9.0, steps=200)))
    assert [(sev, start) for _s, sev, start in found] == [("critical", 2)], found
