"""The pieces of data-parallel training: per-row sampling seeds, the rank layout, gloo collectives, and the
config checks (one node; verl on Ray beyond it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from rlcockpit.trainer.config import load_config
from rlcockpit.trainer.distributed.group import Dist, setup
from rlcockpit.trainer.launch import check_launch, needs_launch, node_ranks
from rlcockpit.trainer.rollout.engine import HFRolloutEngine, SamplingParams
from rlcockpit.trainer.rollout.seeds import row_seed


def _engine():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                         num_key_value_heads=1, intermediate_size=32))
    return HFRolloutEngine(model, pad_token_id=0, eos_token_id=1, device="cpu")


def test_a_rows_samples_depend_on_its_seed_not_on_the_batch_split():
    torch.set_num_threads(1)
    engine = _engine()
    prompts = [[5, 6, 7], [5, 6, 7], [8, 9], [8, 9], [10, 11, 12, 13], [10, 11, 12, 13]]
    seeds = [row_seed(1234, i) for i in range(len(prompts))]
    params = SamplingParams(max_new_tokens=8, temperature=1.0, top_k=20, top_p=0.9, seeds=seeds)
    whole = engine.generate(prompts, params)
    torch.manual_seed(999)  # the global RNG plays no part
    first = engine.generate(prompts[:3], SamplingParams(**{**params.__dict__, "seeds": seeds[:3]}))
    second = engine.generate(prompts[3:], SamplingParams(**{**params.__dict__, "seeds": seeds[3:]}))
    for part, rows in ((first, range(0, 3)), (second, range(3, 6))):
        for j, i in enumerate(rows):
            n = int(whole.response_mask[i].sum())
            assert n == int(part.response_mask[j].sum())
            assert torch.equal(whole.responses[i, :n], part.responses[j, :n])
    assert not torch.equal(whole.responses[0], whole.responses[1])  # a group's rows draw different samples
    other = engine.generate(prompts, SamplingParams(**{**params.__dict__, "seeds": [s + 1 for s in seeds]}))
    assert not torch.equal(other.responses, whole.responses)


def test_seeded_draws_follow_the_distribution():
    from rlcockpit.trainer.rollout.sampling import sample_with_uniforms
    from rlcockpit.trainer.rollout.seeds import row_uniforms

    probs = torch.tensor([0.1, 0.0, 0.6, 0.3])
    u = row_uniforms([row_seed(7, i) for i in range(4000)], 1)[:, 0]
    logits = probs.clamp_min(1e-30).log().expand(4000, 4)
    toks = sample_with_uniforms(logits, SamplingParams(max_new_tokens=1), u)
    freq = torch.bincount(toks, minlength=4).float() / 4000
    assert freq[1] == 0 and torch.allclose(freq, probs, atol=0.03)
    edge = sample_with_uniforms(logits[:2], SamplingParams(max_new_tokens=1), torch.tensor([0.0, 1.0 - 1e-17]))
    assert edge.tolist() == [0, 3]


def test_each_rank_gets_a_contiguous_share():
    for n in (4, 5, 7, 8):
        shares = [Dist(rank=r, world_size=3).bounds(n) for r in range(3)]
        assert shares[0][0] == 0 and shares[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(shares, shares[1:]))
        assert max(hi - lo for lo, hi in shares) - min(hi - lo for lo, hi in shares) <= 1


def test_more_than_one_node_points_to_verl_on_ray_and_watch(monkeypatch):
    cfg = load_config(overrides=["trainer.nnodes=2", "trainer.n_gpus_per_node=8"], log=None)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with monkeypatch.context() as gpu_node:  # on a GPU node: refused (each node would train alone)
        gpu_node.setattr(torch.cuda, "is_available", lambda: True)
        with pytest.raises(ValueError, match=r"verl on Ray.*rlcockpit watch"):
            setup(cfg, log=None)
        with pytest.raises(ValueError, match="trainer.nnodes=2"):
            check_launch(cfg)
    if not torch.cuda.is_available():  # a cluster script tried on a machine without a GPU: here, said once
        notes: list[str] = []
        assert setup(cfg, log=notes.append).world_size == 1
        assert len(notes) == 1 and "trainer.nnodes=2" in notes[0] and "this node only" in notes[0]
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert needs_launch(load_config(overrides=["trainer.n_gpus_per_node=2", "trainer.device=cpu"], log=None))
    assert not needs_launch(load_config(overrides=[], log=None))
    # a verl script's GPU count on a machine without a GPU: one process, said once
    notes: list[str] = []
    verl_script = load_config(overrides=["trainer.n_gpus_per_node=8", "trainer.device=cuda"], log=None)
    if not torch.cuda.is_available():
        assert not needs_launch(verl_script, log=notes.append) and node_ranks(verl_script) == 1
        assert len(notes) == 1 and "no GPU" in notes[0] and "trainer.device=cpu" in notes[0]
    monkeypatch.setenv("WORLD_SIZE", "2")  # under torchrun the command is already a rank
    assert not needs_launch(load_config(overrides=["trainer.n_gpus_per_node=2"], log=None))


def _collectives(rank: int, world: int, init: str, out: str) -> None:
    import json

    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    d = Dist(rank=rank, world_size=world, backend="gloo")
    w = torch.nn.Parameter(torch.zeros(3))
    w.grad = torch.full((3,), float(rank + 1))
    d.all_reduce_grads([w])
    rows = torch.arange(5 * 2, dtype=torch.float32).reshape(5, 2)
    lo, hi = d.bounds(5)
    gathered = d.gather_rows(rows[lo:hi] * 1.0, 5)
    metrics = d.reduce_metrics({"actor/pg_loss": [float(rank)], "actor/entropy": [1.0 + rank, 3.0 + rank]},
                               ("actor/pg_loss",))
    result = {"grad": w.grad.tolist(), "gathered": gathered.tolist(), "metrics": metrics,
              "all_true": d.all_true(rank == 0), "obj": d.broadcast_object({"r": rank})}
    with open(f"{out}.{rank}", "w") as f:
        json.dump(result, f)
    torch.distributed.destroy_process_group()


def test_gloo_collectives_sum_gradients_and_gather_rows_in_order(tmp_path):
    import json

    import torch.multiprocessing as mp

    mp.spawn(_collectives, args=(2, f"file://{tmp_path / 'rdzv'}", str(tmp_path / "out")), nprocs=2, join=True)
    for rank in (0, 1):
        r = json.loads((tmp_path / f"out.{rank}").read_text())
        assert r["grad"] == [3.0, 3.0, 3.0]  # summed, not averaged
        assert r["gathered"] == torch.arange(10.0).reshape(5, 2).tolist()  # uneven shares, global order
        assert r["metrics"] == {"actor/pg_loss": 1.0, "actor/entropy": 2.5}  # partial sums add, the rest average
        assert r["all_true"] is False and r["obj"] == {"r": 0}


def _final_save(rank: int, world: int, init: str, roots: list[str], out: str) -> None:
    from types import SimpleNamespace

    from rlcockpit.trainer.loop import final_save_due

    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    cfg = SimpleNamespace(trainer=SimpleNamespace(save_freq=2, save_policy_model=False, default_local_dir=roots[rank]))
    st = SimpleNamespace(cfg=cfg, ckpt_dir=None, step=3, dist=Dist(rank=rank, world_size=world, backend="gloo"))
    Path(f"{out}.{rank}").write_text(str(final_save_due(st)))
    torch.distributed.destroy_process_group()


def test_every_rank_follows_rank_0_on_the_final_checkpoint(tmp_path):
    """Rank 1 already sees rank 0's ``global_step_3`` (rank 0 wrote it while rank 1 was slower): it must still
    enter the final save (and its barrier) with rank 0, or rank 0 waits for a rank that left the group."""
    import torch.multiprocessing as mp

    rank0, rank1 = tmp_path / "r0", tmp_path / "r1"
    (rank1 / "global_step_3").mkdir(parents=True)
    mp.spawn(_final_save, args=(2, f"file://{tmp_path / 'rdzv'}", [str(rank0), str(rank1)], str(tmp_path / "out")),
             nprocs=2, join=True)
    assert [(tmp_path / f"out.{r}").read_text() for r in (0, 1)] == ["True", "True"]
