"""``update_size``'s *clipping stopped* rule on a clip fraction that was above 0 on every value of its window
(issue 29): one unclipped value is no longer impossible by the window's counts (half a count of each added), so a
single 0 does not warn, and a clip fraction that stays at 0 still does within a few logged values."""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream


def _stream(zeros_at: range, steps: int = 160) -> list[tuple[int, dict[str, float]]]:
    rnd = random.Random(3)
    return [(s, {"clip_ratio/region_mean": 0.0 if s in zeros_at else 0.05 + 0.1 * rnd.random(),
                 "learning_rate": 5e-5, "loss": 0.01 + 0.001 * rnd.random()}) for s in range(1, steps + 1)]


def _stopped(found) -> list[int]:
    return [f.step for f in found if f.detector == "update_size" and "clipping stopped" in f.title]


def test_one_unclipped_value_after_a_window_clipped_throughout_does_not_warn() -> None:
    assert _stopped(replay_stream(_stream(range(90, 91)))) == []


def test_clipping_that_stops_after_a_window_clipped_throughout_still_warns_at_once() -> None:
    steps = _stopped(replay_stream(_stream(range(90, 161))))
    assert steps and 90 <= steps[0] <= 93, steps


def test_trl11_cosine_restarts_run_single_unclipped_value_stays_quiet() -> None:
    """trl_cpu_settings11's healthy num_iterations=3 cosine-restarts run: its clip ratio above 0 on every logged
    value for 100, then 0 once at 414 (and once at 420): warned at 883e521."""
    run = real_run("healthy-gpt2s7-4prompt-4gen-iter3-cosinerestarts3-warmup20-600-log3-eval20", "trl_cpu_settings11")
    assert _stopped(replay(run)) == []
