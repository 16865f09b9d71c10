"""The validation probe set: the same validation prompts stored as samples at every validation."""

from __future__ import annotations

from rlcockpit.store import open_store
from rlcockpit.trainer.loop import train
from rlcockpit.trainer.observe.probes import PROBE_KIND, probe_rows


def test_probe_rows_mark_and_number_prompts() -> None:
    rows = probe_rows([{"prompt": "a", "response": "1"}, {"prompt": "a", "response": "2"}, {"prompt": "b"}, {"prompt": "c"}], 3)
    assert [r["probe_id"] for r in rows] == [0, 0, 1]
    assert all(r["kind"] == PROBE_KIND and r["split"] == "val" for r in rows)
    assert probe_rows([{"prompt": "a"}], 0) == []


def test_training_logs_the_same_probe_prompts_at_each_validation(tiny_cfg, tmp_path) -> None:
    result = train(tiny_cfg("trainer.total_training_steps=4", "trainer.test_freq=2", "trainer.log_val_generations=3"))
    store = open_store(tmp_path / "store")
    probes = [r for r in store.samples(result.run_id) if r.get("kind") == PROBE_KIND]
    by_step: dict[int, list[str]] = {}
    for r in probes:
        by_step.setdefault(r["step"], []).append(r["prompt"])
    assert sorted(by_step) == [0, 2, 4]  # before training, every test_freq, and after the last step
    first = by_step[0]
    assert len(first) == 3 and all(prompts == first for prompts in by_step.values())
