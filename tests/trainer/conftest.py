"""Shared tiny settings for the trainer tests: a 1-layer, 32-wide Qwen2 so a step takes ~0.1 s on CPU."""

from __future__ import annotations

import pytest

TINY_OVERRIDES = [
    "actor_rollout_ref.model.tiny.hidden_size=32",
    "actor_rollout_ref.model.tiny.num_layers=1",
    "actor_rollout_ref.model.tiny.num_heads=2",
    "actor_rollout_ref.model.tiny.intermediate_size=64",
    "actor_rollout_ref.model.tiny.sft_steps=10",
    "actor_rollout_ref.model.tiny.sft_batch_size=16",
    "actor_rollout_ref.model.tiny.sft_slip_steps=2",
    "data.builtin.train_size=200",
    "data.builtin.val_size=16",
    "data.train_batch_size=4",
    "data.max_prompt_length=32",
    "data.max_response_length=4",
    "actor_rollout_ref.actor.ppo_mini_batch_size=4",
    "actor_rollout_ref.rollout.n=4",
    "actor_rollout_ref.actor.optim.lr=1e-3",
    "trainer.total_training_steps=2",
    "trainer.test_freq=2",
    "trainer.logger=[rlcockpit]",
    "trainer.num_threads=2",
    "health.enable=false",
]


@pytest.fixture
def tiny_overrides() -> list[str]:
    return list(TINY_OVERRIDES)


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("tiny-cache"))


@pytest.fixture
def tiny_cfg(tmp_path, tiny_cache, monkeypatch):
    """Factory: a finalized Config for the tiny test model, writing everything under tmp_path."""
    monkeypatch.setenv("RLCOCKPIT_CACHE", tiny_cache)
    from rlcockpit.trainer.config import load_config

    def make(*extra: str):
        return load_config(overrides=[*TINY_OVERRIDES, f"trainer.rlcockpit_dir={tmp_path / 'store'}",
                                      f"trainer.default_local_dir={tmp_path / 'ckpt'}", *extra])

    return make
