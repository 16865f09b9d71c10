"""`rlcockpit artifact ls|get|rm|gc|alias` and `rlcockpit generate --artifact policy:best` on a stored model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.cli import main


def log_versions(store: Path, tmp_path: Path, n: int = 3) -> str:
    run = rlcockpit.init(project="proj", dir=store, system_interval=None, health=False, capture_meta=False)
    for i in range(n):
        f = tmp_path / f"w{i}.bin"
        f.write_bytes(os.urandom(2048))
        run.log_artifact(f, name="weights", type="model", aliases=["best"] if i == 1 else None,
                         metadata={"step": i * 10})
    run.finish()
    return run.id


def test_artifact_commands(tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    monkeypatch.chdir(tmp_path)
    run_id = log_versions(store, tmp_path)
    d = ["--dir", str(store)]
    assert main(["artifact", "ls", *d]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines] == ["proj/weights:v0", "proj/weights:v1", "proj/weights:v2"]
    assert lines[1].endswith("best") and lines[2].endswith("latest") and f"run {run_id}" in lines[0]
    assert main(["artifact", "get", "weights:best", *d]) == 0
    assert "proj/weights:v1 (best): 1 files, 2.0 KB" in capsys.readouterr().out
    assert (tmp_path / "artifacts" / "weights:v1" / "w1.bin").read_bytes() == (tmp_path / "w1.bin").read_bytes()
    assert main(["artifact", "get", "weights:v0", "--json", *d]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["metadata"] == {"step": 0} and info["files"][0]["path"] == "w0.bin" and info["used_by"] == []
    assert main(["artifact", "rm", "weights:best", *d]) == 2  # refused: it has an alias
    assert "has aliases (best)" in capsys.readouterr().err
    assert main(["artifact", "alias", "weights:v2", "best", *d]) == 0
    assert main(["artifact", "rm", "weights:v1", *d]) == 0
    assert main(["artifact", "gc", "--dry-run", "--grace-s", "0", *d]) == 0
    assert "would free 1 files" in capsys.readouterr().out
    assert main(["artifact", "gc", "--grace-s", "0", *d]) == 0
    assert "freed 1 files (2.0 KB)" in capsys.readouterr().out
    assert main(["artifact", "get", "weights:v7", *d]) == 2
    assert "no artifact 'weights:v7' in project 'proj' (it has: v0, v2, best, latest)" in capsys.readouterr().err


def tiny_model_dir(root: Path) -> Path:
    from rlcockpit.trainer.config import TinyModelConfig
    from rlcockpit.trainer.tiny import build_char_tokenizer, build_tiny_model

    tok = build_char_tokenizer()
    model = build_tiny_model(tok, TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64))
    model.save_pretrained(root / "actor")
    tok.save_pretrained(root / "actor")
    return root


@pytest.mark.slow
def test_generate_from_a_model_artifact_with_rewards(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    store = tmp_path / "store"
    run = rlcockpit.init(project="arith", dir=store, system_interval=None, health=False, capture_meta=False,
                         config={"reward": {"name": "arith"}, "data": {"max_response_length": 3,
                                                                        "builtin": {"name": "arith"}}})
    run.log_artifact(tiny_model_dir(tmp_path / "ck"), name="policy", type="model", aliases=["best"],
                     metadata={"step": 40})
    run.finish()
    d = ["--dir", str(store)]
    assert main(["generate", "--artifact", "policy:best", "--prompt", "07+45=", "--n", "3", *d]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "arith/policy:v0 (best, latest; step 40), reward: reward.name=arith"
    assert out[1] == "prompt 1: '<|user|>07+45=<|assistant|>'  (ground truth '052')"  # the trainer's chat template
    assert len(out) == 6 and all("reward " in line for line in out[2:5])
    assert out[5].startswith("mean reward ") and "over 3 samples" in out[5]
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"prompt": [{"role": "user", "content": "11+22="}],
                                   "reward_model": {"ground_truth": "033"}, "data_source": "arith"}) + "\n")
    assert main(["generate", "--artifact", "arith/policy", "--prompts", str(prompts), "--temperature", "0",
                 "--json", *d]) == 0
    res = json.loads(capsys.readouterr().out)
    (r,) = res["results"]
    assert r["ground_truth"] == "033" and len(r["samples"]) == 1 and r["samples"][0]["reward"] in (0.0, 1.0)
    assert len(r["samples"][0]["response"]) <= 3  # max_new_tokens from the run's data.max_response_length
    assert main(["generate", "--artifact", "policy:v0", "--prompt", "hello", "--reward", "nope", *d]) == 2


@pytest.mark.slow
def test_generate_from_an_rlcockpit_state_dict_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Checkpoints written before the Hugging Face layout: ``actor.pt`` + ``trainer_state.pt`` naming the base."""
    import torch
    from transformers import AutoModelForCausalLM

    base = tiny_model_dir(tmp_path / "base") / "actor"
    model = AutoModelForCausalLM.from_pretrained(base)
    with torch.no_grad():
        model.lm_head.weight.mul_(0.0)  # a recognisably different policy: all logits equal -> token 0 always
    ck = tmp_path / "global_step_4"
    ck.mkdir()
    torch.save(model.state_dict(), ck / "actor.pt")
    torch.save({"step": 4, "model_path": str(base), "config": {"reward": {"name": "arith"}}}, ck / "trainer_state.pt")
    run = rlcockpit.init(project="p", dir=tmp_path / "store", system_interval=None, health=False, capture_meta=False)
    run.log_artifact(ck, name="policy", type="model")
    run.finish()
    assert main(["generate", "--artifact", "policy", "--prompt", "1+2=", "--ground-truth", "03", "--temperature", "0",
                 "--max-new-tokens", "2", "--json", "--dir", str(tmp_path / "store")]) == 0
    res = json.loads(capsys.readouterr().out)
    sample = res["results"][0]["samples"][0]
    assert res["reward"] == "reward.name=arith" and sample["reward"] == 0.0 and sample["response"] == ""  # token 0 = <pad>
