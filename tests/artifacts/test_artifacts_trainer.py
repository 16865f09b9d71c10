"""The trainer registers each checkpoint as a `policy` model artifact and moves `best` by validation;
`rlcockpit generate --artifact policy:best` loads it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rlcockpit.cli import main
from rlcockpit.store.artifacts import ArtifactRegistry

pytestmark = pytest.mark.slow

TINY = [
    "actor.model.tiny.hidden_size=32", "actor.model.tiny.num_layers=1", "actor.model.tiny.num_heads=2",
    "actor.model.tiny.intermediate_size=64", "actor.model.tiny.sft_steps=10", "actor.model.tiny.sft_batch_size=16",
    "actor.model.tiny.sft_slip_steps=2", "data.builtin.train_size=200", "data.builtin.val_size=16",
    "data.train_batch_size=4", "data.max_prompt_length=32", "data.max_response_length=4",
    "actor.ppo_mini_batch_size=4", "rollout.n=2", "trainer.logger=[rlcockpit]", "trainer.num_threads=1",
    "health.enable=false", "trainer.preflight=off",
]


PARTIAL = """\
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return sum(a == b for a, b in zip(solution_str.strip(), str(ground_truth))) / len(str(ground_truth))
"""


def test_checkpoints_become_policy_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("RLCOCKPIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    (tmp_path / "partial.py").write_text(PARTIAL)  # a dense reward: every step changes the weights
    args = ["train", "--preset", "arith-grpo", *TINY, "actor.optim.lr=1e-2", "actor.model.tiny.sft_steps=60",
            f"reward.custom_fn={tmp_path / 'partial.py'}:compute_score", "trainer.total_training_steps=6",
            "trainer.save_freq=2",
            "trainer.test_freq=2", "trainer.max_actor_ckpt_to_keep=2", f"trainer.rlcockpit_dir={store}",
            f"trainer.default_local_dir={tmp_path / 'ckpt'}"]
    assert main(args) == 0
    reg = ArtifactRegistry(store)
    versions = reg.versions(name="policy")
    # steps 2, 4, 6 were saved; rotation keeps the newest 2 versions of this run, and any version holding `best`
    kept_steps = sorted(v.metadata["step"] for v in versions)
    assert kept_steps[-2:] == [4, 6] and all(v.type == "model" for v in versions)
    assert all(isinstance(v.metadata["val_acc"], float) for v in versions)
    best = reg.resolve("policy:best")
    assert best.metadata["val_acc"] == max(v.metadata["val_acc"] for v in versions)
    files = {f["path"] for f in best.files()}
    assert "config.json" in files and any(p.endswith(".safetensors") for p in files)  # the HF actor folder
    latest = reg.resolve("policy:latest")
    assert latest.metadata["step"] == 6 and latest.logged_by() is not None
    stored = reg.blobs.path(next(f["sha256"] for f in latest.files() if f["path"].endswith(".safetensors")))
    assert os.stat(stored).st_nlink >= 2  # hard-linked with the checkpoint folder: no second copy on disk

    assert main(["generate", "--artifact", "policy:best", "--prompt", "07+45=", "--n", "2", "--json",
                 "--dir", str(store)]) == 0
    res = json.loads(_last_json(capsys))
    (r,) = res["results"]
    assert r["ground_truth"] == "052" and len(r["samples"]) == 2
    assert all(0.0 <= s["reward"] <= 1.0 for s in r["samples"])
    assert "partial.py" in res["reward"]  # the producing run's reward function scored them


def _last_json(capsys: pytest.CaptureFixture) -> str:
    out = capsys.readouterr().out
    return out[out.index("{\n"):]
