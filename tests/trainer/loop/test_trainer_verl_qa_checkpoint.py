"""verl's DAPO scripts set ``trainer.resume_mode=auto`` with ``trainer.default_local_dir`` = the folder where verl
keeps its checkpoints. With verl's own ``global_step_N`` there (FSDP shards), rlcockpit silently started from
step 0 and then wrote its checkpoints and ``latest_checkpointed_iteration.txt`` into verl's folder."""

from __future__ import annotations

import pytest

from rlcockpit.trainer.checkpoints import checkpoint as ckpt


def _verl_checkpoint(root, step: int = 20, hf: bool = True):
    """verl 0.9's FSDP checkpoint layout (files named as verl's FSDPCheckpointManager writes them)."""
    actor = root / f"global_step_{step}" / "actor"
    actor.mkdir(parents=True)
    for kind in ("model", "optim", "extra_state"):
        (actor / f"{kind}_world_size_8_rank_0.pt").write_bytes(b"")
    if hf:
        (actor / "huggingface").mkdir()
        (actor / "huggingface" / "config.json").write_text("{}")
    (root / f"global_step_{step}" / "data.pt").write_bytes(b"")
    (root / ckpt.LATEST).write_text(str(step))
    return root / f"global_step_{step}"


def test_auto_resume_onto_a_verl_checkpoint_says_what_to_do(tmp_path):
    step_dir = _verl_checkpoint(tmp_path)
    assert ckpt.is_verl_checkpoint(step_dir)
    with pytest.raises(ckpt.ForeignCheckpointError) as err:
        ckpt.find_latest(tmp_path)
    msg = str(err.value)
    assert "trainer.resume_mode=auto" in msg and "checkpoint verl wrote" in msg
    assert f"actor_rollout_ref.model.path={step_dir / 'actor' / 'huggingface'}" in msg


def test_a_fresh_run_never_writes_into_verls_checkpoint_folder(tmp_path):
    root = tmp_path / "ckpts"
    _verl_checkpoint(root, hf=False)
    assert ckpt.claim_dir(root, "abc123", resuming=False) == tmp_path / "ckpts-abc123"


def test_rlcockpit_checkpoints_are_still_found(tmp_path):
    assert ckpt.find_latest(tmp_path) is None  # empty: a fresh start, no error
    own = tmp_path / "global_step_3"
    own.mkdir()
    (own / ckpt.STATE).write_bytes(b"")
    (tmp_path / ckpt.LATEST).write_text("3")
    assert ckpt.find_latest(tmp_path) == own and not ckpt.is_verl_checkpoint(own)
