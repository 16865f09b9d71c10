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


@pytest.fixture(scope="session")
def hf_assets(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A trained BPE tokenizer, tiny Qwen2 / Llama / GPT-2 model folders, GSM8K-schema train/val parquet files,
    and (built on first use, see ``warm_qwen2``) a Qwen2 warmed up to answer in GSM8K's ``#### N`` format."""
    import torch
    from hf_fixtures import gsm8k_rows, make_model_dir, train_bpe_tokenizer, write_parquet

    torch.set_num_threads(1)  # the tiny models run fastest single-threaded on a shared machine
    root = tmp_path_factory.mktemp("hf-assets")
    tok = train_bpe_tokenizer(root / "tokenizer")
    models = {arch: make_model_dir(arch, root / arch, tok) for arch in ("qwen2", "llama", "gpt2")}
    return {"root": root, "tokenizer": tok, "models": models,
            "train": write_parquet(gsm8k_rows(64, seed=1), root / "train.parquet"),
            "val": write_parquet(gsm8k_rows(8, seed=2, split="test"), root / "test.parquet")}


@pytest.fixture(scope="session")
def warm_qwen2(hf_assets: dict) -> str:
    import shutil

    from hf_fixtures import sft_gsm8k

    out = hf_assets["root"] / "qwen2-warm"
    shutil.copytree(hf_assets["models"]["qwen2"], out)
    return str(sft_gsm8k(out, hf_assets["tokenizer"], steps=150))
