"""``actor_rollout_ref.model.use_remove_padding``: packed rows score exactly like padded ones (Qwen2, Llama,
sdpa), gradients included, with fewer tokens; it is a real config key, not a no-effect one."""

from __future__ import annotations

import pytest
import torch

from rlcockpit.trainer.config import load_config, no_effect_table
from rlcockpit.trainer.models import forward_policy
from rlcockpit.trainer.update.packing import forward_packed, pack_rows, packed_inputs

# (prompt length, response length) per row of a (6, 7 + 5) batch: left-padded prompts, right-padded responses
LENGTHS = [(7, 5), (3, 2), (5, 5), (1, 1), (7, 3), (3, 2)]
P, T = 7, 5


def _model(arch: str):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    cls, cfg_cls = {"qwen2": (Qwen2ForCausalLM, Qwen2Config), "llama": (LlamaForCausalLM, LlamaConfig)}[arch]
    torch.manual_seed(0)
    return cls(cfg_cls(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, intermediate_size=64, attn_implementation="sdpa"))


def _batch(duplicate: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 97, (len(LENGTHS), P + T), generator=g)
    mask = torch.ones_like(ids)
    for i, (pl, rl) in enumerate(LENGTHS):
        mask[i, : P - pl] = 0
        mask[i, P + rl:] = 0
    if duplicate:  # a GRPO group often repeats a row: scored once, as in the padded path
        ids[5], mask[5] = ids[1], mask[1]
    return ids, mask


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_packed_log_probs_entropy_and_gradients_match_the_padded_path(arch):
    torch.set_num_threads(1)
    model = _model(arch)
    ids, mask = _batch()
    kw = {"temperature": 0.7, "with_entropy": "grad"}
    padded = forward_policy(model, ids, mask, T, share_prefix=False, **kw)
    packed = forward_packed(model, ids, mask, T, **kw)
    resp = mask[:, P:].bool()
    assert resp.sum() > 0
    for key in ("log_probs", "entropy"):
        assert torch.allclose(packed[key][resp], padded[key][resp], atol=1e-5, rtol=0), key
    params = [p for p in model.parameters() if p.requires_grad]
    g_pad = torch.autograd.grad(padded["log_probs"][resp].sum(), params)
    g_pack = torch.autograd.grad(packed["log_probs"][resp].sum(), params)
    assert max(float((a - b).abs().max()) for a, b in zip(g_pad, g_pack)) < 1e-5
    # the extras (full distribution, sum pi^2) too
    full_pad = forward_policy(model, ids, mask, T, share_prefix=False, full_log_probs=True, sum_pi_squared=True)
    full_pack = forward_packed(model, ids, mask, T, full_log_probs=True, sum_pi_squared=True)
    assert torch.allclose(full_pack["full_log_probs"][resp], full_pad["full_log_probs"][resp], atol=1e-5)
    assert torch.allclose(full_pack["sum_pi_squared"][resp], full_pad["sum_pi_squared"][resp], atol=1e-5)


def test_packing_positions_restart_per_row_and_cut_the_padding():
    ids, mask = _batch(duplicate=False)
    packed, pos, flat = packed_inputs(ids, mask)
    real = int(mask.sum())
    assert packed.numel() < ids.numel()  # fewer tokens than the padded batch
    assert packed.size(1) <= ids.size(1)  # bins no wider than a padded row: attention never grows
    assert packed.numel() - real < ids.numel() - real  # less padding
    for i in range(ids.size(0)):  # each row's tokens, in order, at positions 0..n-1
        where = flat[i][mask[i].bool()]
        assert torch.equal(packed.reshape(-1)[where], ids[i][mask[i].bool()])
        assert torch.equal(pos.reshape(-1)[where], torch.arange(int(mask[i].sum())))
    bins, starts, n = pack_rows([5, 4, 3, 2, 1], 6)
    assert n == 3 and all(0 <= s < 6 for s in starts)


def test_breaking_the_restart_changes_the_result(monkeypatch):
    """The comparison above can fail: positions that do not restart mix rows inside a bin."""
    import rlcockpit.trainer.update.packing as packing

    model = _model("qwen2")
    ids, mask = _batch()
    padded = forward_policy(model, ids, mask, T, share_prefix=False)
    real = packing.packed_inputs

    def no_restart(i, m):
        p, _, f = real(i, m)
        return p, torch.arange(p.size(1)).repeat(p.size(0), 1), f

    monkeypatch.setattr(packing, "packed_inputs", no_restart)
    packed = packing.forward_packed(model, ids, mask, T)
    resp = mask[:, P:].bool()
    assert float((packed["log_probs"][resp] - padded["log_probs"][resp]).detach().abs().max()) > 1e-3


def test_use_remove_padding_and_gpu_keys_are_real_config_fields():
    cfg = load_config(overrides=["actor_rollout_ref.model.use_remove_padding=True", "trainer.n_gpus_per_node=1",
                                 "trainer.nnodes=1"])
    assert cfg.model.use_remove_padding is True
    flagged = {k for _, keys in no_effect_table(cfg) for k in keys}
    assert not flagged & {"actor_rollout_ref.model.use_remove_padding", "trainer.n_gpus_per_node", "trainer.nnodes"}
    assert "critic.model.use_remove_padding" in {k for _, keys in no_effect_table(
        load_config(overrides=["+critic.model.use_remove_padding=True"])) for k in keys}


def test_training_with_use_remove_padding_matches_the_padded_run(hf_assets, tmp_path):
    import rlcockpit
    from rlcockpit.trainer.loop import train

    def run(name: str, *extra: str):
        cfg = load_config(overrides=[
            f"data.train_files={hf_assets['train']}", f"data.val_files={hf_assets['val']}",
            f"actor_rollout_ref.model.path={hf_assets['models']['qwen2']}", "data.train_batch_size=4",
            "data.max_response_length=8", "actor_rollout_ref.actor.ppo_mini_batch_size=2",
            "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.actor.optim.lr=1e-3", "trainer.total_training_steps=2",
            "algorithm.adv_estimator=grpo",
            "trainer.test_freq=0", "trainer.val_before_train=false", "trainer.logger=[rlcockpit]",
            "trainer.num_threads=1", "health.enable=false", "trainer.preflight=off", f"trainer.experiment_name={name}",
            "actor_rollout_ref.actor.use_kl_loss=true", f"trainer.rlcockpit_dir={tmp_path / 'store'}",
            f"trainer.default_local_dir={tmp_path / name}", *extra], log=None)
        result = train(cfg, log=lambda *_: None)
        return rlcockpit.Api(str(tmp_path / "store")).run(result.run_id).history()

    plain, packed = run("padded"), run("packed", "actor_rollout_ref.model.use_remove_padding=True")
    for key in ("actor/pg_loss", "actor/kl_loss", "actor/grad_norm", "actor/ppo_kl"):
        for step in (1, 2):
            a, b = float(plain.loc[step, key]), float(packed.loc[step, key])
            assert abs(a - b) <= 1e-4 + 1e-3 * abs(a), (key, step, a, b)


def test_a_grpo_batch_takes_the_cheaper_of_packing_and_prompt_sharing(monkeypatch):
    """n samples of one prompt with full-length answers: running the prompt once beats packing it n times,
    so forward_packed takes the shared-prefix pass (same log-probs); with distinct prompts it packs."""
    import rlcockpit.trainer.update.packing as packing

    model = _model("qwen2").eval()
    g = torch.Generator().manual_seed(3)
    prompt = torch.randint(1, 97, (P,), generator=g)
    ids = torch.cat([prompt.repeat(4, 1), torch.randint(1, 97, (4, T), generator=g)], dim=1)
    mask = torch.ones_like(ids)
    assert packing.sharing_beats_packing(model, ids, mask, T, share_prefix=True)
    assert not packing.sharing_beats_packing(model, ids, mask, T, share_prefix=False)
    packed_calls = []
    real = packing.packed_inputs
    monkeypatch.setattr(packing, "packed_inputs", lambda i, m: packed_calls.append(1) or real(i, m))
    with torch.no_grad():
        shared = packing.forward_packed(model, ids, mask, T)
        padded = forward_policy(model, ids, mask, T, share_prefix=False)
        assert not packed_calls
        assert torch.allclose(shared["log_probs"], padded["log_probs"], atol=1e-5)
        distinct, dmask = _batch(duplicate=False)
        assert not packing.sharing_beats_packing(model, distinct, dmask, T, share_prefix=True)
        packing.forward_packed(model, distinct, dmask, T)
        assert packed_calls
