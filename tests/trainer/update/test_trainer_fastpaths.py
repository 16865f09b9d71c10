"""The speed paths must be the same math as the plain ones.

Shared-prefix scoring (each distinct prompt run once, its KV cache copied to its responses) and
duplicate-row scoring must give the log-probs, entropies and gradients of one plain full-sequence
forward; the shared-prefix rollout must sample from the same distribution as a cache-free forward.
"""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch

from rlcockpit.trainer.config import TinyModelConfig
from rlcockpit.trainer.models import forward_logprobs, forward_policy
from rlcockpit.trainer.rollout.engine import ROLLOUT_ENGINES, SamplingParams, left_pad
from rlcockpit.trainer.tiny import build_char_tokenizer, build_tiny_model

SMALL = TinyModelConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64)


def _model(seed: int = 3):
    tok = build_char_tokenizer()
    return tok, build_tiny_model(tok, SMALL, seed=seed)


def _group_batch(tok, prompts: list[str], n: int, T: int, seed: int = 0, dup_share: float = 0.5):
    """GRPO-shaped rows: each prompt n times (left-padded to a common width), random responses with
    an EOS at a random place and padding after it; about ``dup_share`` of the responses repeat."""
    g = torch.Generator().manual_seed(seed)
    ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    rows = [p for p in ids for _ in range(n)]
    prompt_ids, prompt_mask = left_pad(rows, tok.pad_token_id, "cpu")
    responses = torch.randint(10, len(tok), (len(rows), T), generator=g)
    lengths = torch.randint(1, T + 1, (len(rows),), generator=g)
    for i in range(len(rows)):
        if i % n and torch.rand(1, generator=g).item() < dup_share:  # copy the group's first response
            responses[i], lengths[i] = responses[i - i % n], lengths[i - i % n]
    resp_mask = (torch.arange(T)[None] < lengths[:, None]).long()
    responses = torch.where(resp_mask.bool(), responses, torch.full_like(responses, tok.pad_token_id))
    eos_at = (lengths - 1).clamp(max=T - 1)
    responses[torch.arange(len(rows)), eos_at] = tok.eos_token_id
    return torch.cat([prompt_ids, responses], 1), torch.cat([prompt_mask, resp_mask], 1), resp_mask


PROMPTS = ["<|user|>12+3=<|assistant|>", "<|user|>7+45=<|assistant|>", "<|user|>99+99=<|assistant|>",
           "<|user|>1+1=<|assistant|>"]


def _grads(model) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _loss_and_grads(model, ids, mask, resp_mask, T, share: bool, with_entropy: str = "grad"):
    model.zero_grad(set_to_none=True)
    logp, ent = forward_logprobs(model, ids, mask, T, temperature=0.7, with_entropy=with_entropy, share_prefix=share)
    weights = torch.linspace(-1.0, 1.0, ids.size(0))[:, None]  # distinct advantages per row
    loss = (logp * weights * resp_mask).sum() - 0.01 * (ent * resp_mask).sum()
    loss.backward()
    return logp.detach(), ent.detach(), _grads(model)


@pytest.mark.parametrize("T", [1, 2, 5])
def test_shared_prefix_logprobs_entropy_and_grads_match_the_plain_forward(T):
    tok, model = _model()
    model.train()
    ids, mask, resp_mask = _group_batch(tok, PROMPTS, n=4, T=T)
    assert (mask[:, 0] == 0).any() and (mask[:, 0] == 1).any()  # prompts of different lengths: left padding
    plain = _loss_and_grads(model, ids, mask, resp_mask, T, share=False)
    shared = _loss_and_grads(model, ids, mask, resp_mask, T, share=True)
    m = resp_mask.bool()
    torch.testing.assert_close(shared[0][m], plain[0][m], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(shared[1][m], plain[1][m], atol=1e-5, rtol=1e-4)
    assert plain[2].keys() == shared[2].keys() and len(plain[2]) > 0
    for name in plain[2]:
        torch.testing.assert_close(shared[2][name], plain[2][name], atol=1e-5, rtol=1e-4, msg=name)


def test_the_shared_path_really_runs_fewer_tokens():
    tok, model = _model()
    ids, mask, resp_mask = _group_batch(tok, PROMPTS, n=8, T=4, dup_share=0.0)
    seen: list[tuple[int, int]] = []
    hook = model.model.register_forward_pre_hook(lambda m, a, kw: seen.append(tuple(kw["input_ids"].shape)),
                                                 with_kwargs=True)
    forward_logprobs(model, ids, mask, 4)
    hook.remove()
    distinct_rows = torch.unique(torch.cat([ids, mask], 1), dim=0).size(0)
    assert 24 < distinct_rows <= ids.size(0)
    # the 4 prompts once, then only 3 response tokens (the last one predicts nothing) of each distinct row
    assert seen == [(len(PROMPTS), ids.size(1) - 4), (distinct_rows, 3)]


def test_identical_rows_are_scored_once_without_a_shared_prompt():
    tok, model = _model()
    ids, mask, resp_mask = _group_batch(tok, PROMPTS[:1], n=6, T=3, dup_share=1.0)  # 6 copies of one row
    model.config.use_cache = False
    shapes: list[tuple[int, int]] = []
    hook = model.model.register_forward_pre_hook(lambda m, a, kw: shapes.append(tuple(kw["input_ids"].shape)),
                                                 with_kwargs=True)
    logp, _ = forward_logprobs(model, ids, mask, 3)
    hook.remove()
    assert shapes == [(1, ids.size(1))]
    ref, _ = forward_logprobs(model, ids, mask, 3, share_prefix=False)
    torch.testing.assert_close(logp, ref, atol=1e-5, rtol=1e-4)


def test_dropout_falls_back_to_the_plain_path():
    tok = build_char_tokenizer()
    model = build_tiny_model(tok, SMALL, seed=1)
    model.config.attention_dropout = 0.1
    model.train()
    ids, mask, _ = _group_batch(tok, PROMPTS, n=4, T=3)
    shapes: list[tuple[int, int]] = []
    hook = model.model.register_forward_pre_hook(lambda m, a, kw: shapes.append(tuple(kw["input_ids"].shape)),
                                                 with_kwargs=True)
    forward_logprobs(model, ids, mask, 3)
    model.eval()  # no dropout at eval: sharing is exact again
    forward_logprobs(model, ids, mask, 3)
    hook.remove()
    assert shapes[0] == tuple(ids.shape) and shapes[1][0] < ids.size(0)


def test_shared_prefix_matches_with_lora_adapters():
    peft = pytest.importorskip("peft")
    tok, base = _model(seed=5)
    model = peft.get_peft_model(base, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                      task_type="CAUSAL_LM", init_lora_weights=False))
    model.train()
    ids, mask, resp_mask = _group_batch(tok, PROMPTS, n=4, T=4)
    plain = _loss_and_grads(model, ids, mask, resp_mask, 4, share=False)
    shared = _loss_and_grads(model, ids, mask, resp_mask, 4, share=True)
    torch.testing.assert_close(shared[0][resp_mask.bool()], plain[0][resp_mask.bool()], atol=1e-5, rtol=1e-4)
    assert any("lora" in n for n in plain[2]) and plain[2].keys() == shared[2].keys()
    for name in plain[2]:
        torch.testing.assert_close(shared[2][name], plain[2][name], atol=1e-5, rtol=1e-4, msg=name)


def _reference_sample(model, prompts: list[list[int]], params: SamplingParams, pad: int, eos: int) -> torch.Tensor:
    """One cache-free forward per row per step, sampled with the same calls as the engine."""
    from rlcockpit.trainer.rollout.sampling import sample_next_token

    seqs = [list(p) for p in prompts]
    finished = torch.zeros(len(seqs), dtype=torch.bool)
    out = []
    for _ in range(params.max_new_tokens):
        with torch.no_grad():
            logits = torch.stack([model(input_ids=torch.tensor([s])).logits[0, -1] for s in seqs])
        tok = torch.where(finished, torch.full((len(seqs),), pad), sample_next_token(logits, params))
        out.append(tok)
        finished |= tok == eos
        for s, x in zip(seqs, tok.tolist()):
            s.append(x)
        if finished.all():
            break
    return torch.stack(out, 1)


@pytest.mark.parametrize("params", [SamplingParams(max_new_tokens=6, temperature=1.0),
                                    SamplingParams(max_new_tokens=5, temperature=0.8, top_k=8, top_p=0.9)])
def test_shared_prefix_rollout_draws_the_same_samples_as_per_row_forwards(params):
    tok, model = _model(seed=11)
    model.eval()
    with torch.no_grad():  # make EOS likely enough that rows finish at different steps
        model.lm_head.weight[tok.eos_token_id] *= 0  # tied embeddings: a zero row gives logit 0
        model.model.norm.weight.mul_(3.0)
    prompts = [tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS[:3] for _ in range(5)]
    engine = ROLLOUT_ENGINES.get("hf")(model, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                                       device="cpu")
    torch.manual_seed(123)
    out = engine.generate(prompts, params)
    torch.manual_seed(123)
    ref = _reference_sample(model, prompts, params, tok.pad_token_id, tok.eos_token_id)
    assert out.responses.tolist() == ref.tolist()
    assert len({tuple(r) for r in out.responses.tolist()}) > 5  # samples of one prompt really diverged
    assert not out.responses.is_inference()  # usable as input of a training forward


def test_rollout_ids_can_be_trained_on():
    tok, model = _model()
    engine = ROLLOUT_ENGINES.get("hf")(model, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                                       device="cpu")
    out = engine.generate([tok(PROMPTS[0], add_special_tokens=False)["input_ids"]] * 4,
                          SamplingParams(max_new_tokens=3))
    assert model.training  # the engine restores the mode it found
    logp, _ = forward_logprobs(model, out.input_ids, out.attention_mask, out.responses.size(1))
    (logp * out.response_mask).sum().backward()
    assert model.model.embed_tokens.weight.grad is not None


def test_shared_prefix_under_bf16_autocast_stays_close_to_the_plain_forward():
    tok, model = _model()
    ids, mask, resp_mask = _group_batch(tok, PROMPTS, n=4, T=4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        shared, _ = forward_logprobs(model, ids, mask, 4)
        plain, _ = forward_logprobs(model, ids, mask, 4, share_prefix=False)
    assert shared.dtype == torch.float32
    torch.testing.assert_close(shared[resp_mask.bool()], plain[resp_mask.bool()], atol=0.1, rtol=0.05)


def test_critic_values_of_duplicate_rows_are_computed_once_and_match():
    from transformers import Qwen2ForTokenClassification

    from rlcockpit.trainer.models import forward_values

    tok, actor = _model()
    config = copy.deepcopy(actor.config)
    config.num_labels = 1
    critic = Qwen2ForTokenClassification(config).eval()  # its classifier has dropout: training scores every row
    ids, mask, _ = _group_batch(tok, PROMPTS[:2], n=4, T=3, dup_share=1.0)
    rows: list[int] = []
    hook = critic.model.embed_tokens.register_forward_pre_hook(lambda m, a: rows.append(a[0].size(0)))
    values = forward_values(critic, ids, mask, 3)
    hook.remove()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    plain = critic(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -4:-1, 0]
    assert rows == [2] and values.shape == (8, 3)
    torch.testing.assert_close(values, plain, atol=1e-5, rtol=1e-4)


def test_update_actor_takes_the_same_step_with_and_without_sharing(monkeypatch):
    """The whole PPO update (micro-batches, clipping, metrics) is unchanged by the fast path."""
    from rlcockpit.trainer.config import load_config
    from rlcockpit.trainer.update import ppo as update

    cfg = load_config(overrides=["actor.ppo_mini_batch_size=4", "rollout.n=4", "actor.ppo_micro_batch_size=6",
                                 "actor.entropy_coeff=0.01", "actor.ppo_epochs=2"])
    tok, model = _model()
    ids, mask, resp_mask = _group_batch(tok, PROMPTS, n=4, T=4)
    with torch.no_grad():
        old = forward_logprobs(model, ids, mask, 4, share_prefix=False)[0] + 0.05 * torch.randn(ids.size(0), 4)
    batch = {"input_ids": ids, "attention_mask": mask, "responses": ids[:, -4:], "response_mask": resp_mask,
             "advantages": torch.randn(ids.size(0), 1).expand(-1, 4).contiguous(), "old_log_probs": old}
    results = {}
    for share in (True, False):
        m = copy.deepcopy(model)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        cfg.actor.share_prefix = share  # the `actor.share_prefix` switch
        calls: list[bool] = []
        monkeypatch.setattr(update, "forward_policy",
                            lambda *a, _c=calls, **k: _c.append(k["share_prefix"]) or forward_policy(*a, **k))
        metrics = update.update_actor(cfg, m, opt, batch, contextlib.nullcontext)
        assert calls and set(calls) == {share}
        results[share] = (metrics, dict(m.named_parameters()))
    (m_shared, p_shared), (m_plain, p_plain) = results[True], results[False]
    assert m_shared.keys() == m_plain.keys()
    for key in m_plain:
        if "perf/" in key:  # MFU and host memory: measurements of the run, not results of the update
            continue
        assert m_shared[key] == pytest.approx(m_plain[key], rel=1e-3, abs=1e-5), key
    for name in p_plain:
        torch.testing.assert_close(p_shared[name], p_plain[name], atol=1e-5, rtol=1e-4, msg=name)
