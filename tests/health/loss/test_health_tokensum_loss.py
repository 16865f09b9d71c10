"""A token-sum policy-gradient loss (verl ``loss_agg_mode: token-sum``) is the sum over the batch's response tokens:
on a step whose advantages cancel it is float32 round-off of that sum, multiples of 1.2e-7 up to a few 1e-6, not 0
up to 1e-8 as a token-mean loss is; on the others it is 0.4-3. Its tied steps must not set the loss's noise scale
(issue 29: the healthy ``rlcockpit_trainer_cpu11`` kl_cov token-sum run got a loss_spike warning at step 37,
"Loss -0.351 is 228863 typical deviations")."""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream

EPS32 = 2.0 ** -23


def tokensum_stream(seed: int, steps: int = 200, blowup_from: int | None = None) -> list[tuple[int, dict]]:
    """The first ~20 steps all tied (round-off only), then a real loss on about one step in four."""
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        loss = rng.randint(-22, 12) * EPS32  # round-off of a sum of ~36 token terms
        if s > 22 and rng.random() < 0.25:
            loss = rng.choice((-1, 1)) * rng.uniform(0.4, 3.2)
        if blowup_from is not None and s >= blowup_from:
            loss = -rng.uniform(60.0, 90.0)  # the loss itself running away, on every step
        out.append((s, {"actor/pg_loss": loss, "actor/loss": loss, "actor/grad_norm": rng.uniform(50, 180),
                        "critic/score/mean": rng.uniform(0.3, 0.45), "actor/entropy": rng.uniform(56, 60)}))
    return out


def _loss_alerts(found):
    return [(f.step, f.severity) for f in found if f.detector == "loss_spike" and f.severity != "info"]


def test_tokensum_roundoff_does_not_make_ordinary_steps_a_loss_spike():
    for seed in range(5):
        assert _loss_alerts(replay_stream(tokensum_stream(seed))) == [], seed


def test_a_tokensum_loss_that_runs_away_is_still_a_loss_spike():
    found = _loss_alerts(replay_stream(tokensum_stream(0, blowup_from=150)))
    assert found and 150 <= found[0][0] <= 160, found


def test_healthy_cpu11_tokensum_run_gets_no_loss_spike():
    t = real_run("klcov-tokensum-resp32-500-val25", "rlcockpit_trainer_cpu11")
    assert _loss_alerts(replay(t)) == []
