"""The speed paths compute the same thing as the plain ones: fused log-probs (no (bs, T, V) logits), the
preallocated rollout KV cache, inverse-CDF sampling.  Each test compares against the plain computation."""

from __future__ import annotations

import pytest
import torch

import rlcockpit.trainer.models as models
from rlcockpit.trainer.rollout.engine import ROLLOUT_ENGINES, SamplingParams, cache_kwarg, left_pad
from rlcockpit.trainer.rollout.sampling import sample_categorical
from rlcockpit.trainer.update.fused_logprobs import chunk_rows, output_head, token_logprobs


def _qwen2(vocab: int = 300, seed: int = 0, tie: bool = True):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      tie_word_embeddings=tie)
    return Qwen2ForCausalLM(cfg).float()


def _batch(vocab: int, groups: int = 3, n: int = 4, P: int = 9, T: int = 7, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(5, vocab, (P - i,), generator=g).tolist() for i in range(groups)]
    p_ids, p_mask = left_pad([p for p in prompts for _ in range(n)], 0, "cpu")
    resp = torch.randint(5, vocab, (groups * n, T), generator=g)
    r_mask = (torch.arange(T)[None] < torch.randint(1, T + 1, (groups * n,), generator=g)[:, None]).long()
    return torch.cat([p_ids, resp], 1), torch.cat([p_mask, r_mask], 1), r_mask


def _loss_grads(model, ids, mask, r_mask, T, *, fused: bool, share: bool, monkeypatch, temperature=0.7):
    monkeypatch.setattr(models, "output_head", output_head if fused else (lambda m: None))
    model.zero_grad(set_to_none=True)
    out = models.forward_policy(model, ids, mask, T, temperature=temperature, with_entropy="grad", share_prefix=share)
    adv = torch.linspace(-1.0, 1.0, ids.size(0))[:, None]
    loss = -(out["log_probs"] * adv * r_mask).sum() / r_mask.sum() - 0.01 * (out["entropy"] * r_mask).sum()
    loss.backward()
    grads = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
    return out["log_probs"].detach(), out["entropy"].detach(), loss.detach(), grads


@pytest.mark.parametrize("share", [True, False])
@pytest.mark.parametrize("tie", [True, False])
def test_fused_logprobs_entropy_loss_and_grads_match_the_logits_path(share, tie, monkeypatch):
    model = _qwen2(tie=tie)
    model.train()
    ids, mask, r_mask = _batch(300)
    T = r_mask.size(1)
    plain = _loss_grads(model, ids, mask, r_mask, T, fused=False, share=share, monkeypatch=monkeypatch)
    fused = _loss_grads(model, ids, mask, r_mask, T, fused=True, share=share, monkeypatch=monkeypatch)
    for a, b in zip(plain[:3], fused[:3]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert plain[3].keys() == fused[3].keys()
    for k in plain[3]:
        torch.testing.assert_close(plain[3][k], fused[3][k], atol=1e-5, rtol=1e-4, msg=k)


@pytest.mark.parametrize("save_bytes", [0, 2**20])
def test_fused_logprobs_over_several_chunks_match_log_softmax(save_bytes, monkeypatch):
    """Chunks smaller than the rows (the big-vocabulary case) give the same values and gradients, with the
    log-softmax kept for the backward or recomputed there."""
    monkeypatch.setattr("rlcockpit.trainer.update.fused_logprobs.SAVE_BYTES", save_bytes)
    monkeypatch.setattr("rlcockpit.trainer.update.fused_logprobs.MIN_CHUNK_ROWS", 3)
    monkeypatch.setattr("rlcockpit.trainer.update.fused_logprobs.CHUNK_BYTES", 4 * 50 * 3)
    assert chunk_rows(50, 20) == 3
    torch.manual_seed(0)
    head = torch.nn.Linear(16, 50, bias=True)
    h = torch.randn(2, 10, 16, requires_grad=True)
    labels = torch.randint(0, 50, (2, 10))
    out = token_logprobs(h, head, labels, temperature=0.5, with_entropy="grad")
    (out["log_probs"].sum() + 0.3 * out["entropy"].sum()).backward()
    got = (h.grad.clone(), head.weight.grad.clone(), head.bias.grad.clone())
    h.grad = head.weight.grad = head.bias.grad = None
    logp = torch.log_softmax(head(h) / 0.5, -1)
    ref_lp = logp.gather(-1, labels[..., None]).squeeze(-1)
    ref_ent = -(logp.exp() * logp).sum(-1)
    (ref_lp.sum() + 0.3 * ref_ent.sum()).backward()
    torch.testing.assert_close(out["log_probs"].detach(), ref_lp.detach(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out["entropy"].detach(), ref_ent.detach(), atol=1e-5, rtol=1e-5)
    for a, b in zip(got, (h.grad, head.weight.grad, head.bias.grad)):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_models_with_forward_hooks_or_adapters_keep_the_plain_path():
    model = _qwen2()
    assert output_head(model) is not None
    handle = model.register_forward_hook(lambda m, a, o: o)  # FSDP2 / a user's hook must still run
    assert output_head(model) is None
    handle.remove()
    from peft import LoraConfig, get_peft_model

    lora = get_peft_model(_qwen2(), LoraConfig(r=4, target_modules=["q_proj", "lm_head"], task_type="CAUSAL_LM"))
    assert output_head(lora) is None  # a LoRA-wrapped head is not a plain Linear


def test_inverse_cdf_sampling_has_the_categorical_distribution():
    """Same distribution as torch.multinomial (chi-square), zero-probability tokens never drawn, and the
    same draws for the same generator seed."""
    probs = torch.tensor([[0.5, 0.0, 0.2, 0.3, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0], [0.1, 0.1, 0.1, 0.1, 0.6]])
    draws = 20000
    rows = torch.arange(3).repeat_interleave(draws)
    g = torch.Generator().manual_seed(5)
    idx = sample_categorical(probs * 7.0, rows, generator=g)  # unnormalised rows are fine
    counts = torch.zeros(3, 5)
    counts.index_put_((rows, idx), torch.ones_like(idx, dtype=torch.float), accumulate=True)
    expected = probs * draws
    assert counts[probs == 0].sum() == 0
    pos = expected > 0
    chi2 = float(((counts[pos] - expected[pos]) ** 2 / expected[pos]).sum())
    assert chi2 < 30.0, chi2  # 8 degrees of freedom: p(chi2 > 30) ~ 2e-4
    again = sample_categorical(probs * 7.0, rows, generator=torch.Generator().manual_seed(5))
    assert torch.equal(idx, again)


def test_inverse_cdf_gives_each_draw_its_rows_token_whatever_the_row_order():
    """Draws that index their distributions in a permuted order (a rollout whose rows have all diverged),
    repeat them, or take them one to one: each draw gets the token its own row alone would give."""
    from rlcockpit.trainer.rollout.sampling import inverse_cdf

    g = torch.Generator().manual_seed(3)
    probs = torch.softmax(torch.randn(6, 50, generator=g) * 3, -1)
    probs[2, 10:] = 0.0  # a row with zeros at its end: a uniform near 1 takes its last positive token
    u = torch.rand(6, dtype=torch.float64, generator=g)
    u[4] = 1.0 - 1e-17
    alone = lambda row, x: int(inverse_cdf(probs[row:row + 1], x.reshape(1))[0])  # noqa: E731
    for rows in (torch.tensor([3, 0, 5, 1, 2, 4]), torch.tensor([2, 2, 0, 5, 5, 1]), torch.arange(6)):
        got = inverse_cdf(probs, u, rows)
        assert got.tolist() == [alone(int(r), u[i]) for i, r in enumerate(rows)]
    assert int(inverse_cdf(probs, u, torch.tensor([1, 0, 2, 3, 4, 5]))[2]) <= 9  # never a zero-probability token


def test_rollout_with_the_preallocated_cache_matches_transformers_dynamic_cache():
    """The built-in engine (preallocated cache, shared prompt prefill, nodes) gives the tokens and
    log-probs of transformers' own generation loop with a DynamicCache, one row at a time."""
    from transformers import DynamicCache

    model = _qwen2(vocab=200, seed=3).eval()
    prompts = [list(range(10 + i, 17 + 2 * i)) for i in range(3) for _ in range(3)]
    params = SamplingParams(max_new_tokens=8, temperature=1.0, logprobs=True)
    engine = ROLLOUT_ENGINES.get("hf")(model, pad_token_id=0, eos_token_id=1, device="cpu")
    torch.manual_seed(7)
    out = engine.generate(prompts, params)
    for r, p in enumerate(prompts):
        ids = torch.tensor([p])
        ck = {cache_kwarg(model): DynamicCache()}
        with torch.no_grad():
            logits = model(input_ids=ids, use_cache=True, **ck).logits[:, -1]
            for t in range(int(out.response_mask[r].sum())):
                logp = torch.log_softmax(logits.float(), -1)[0]
                tok = int(out.responses[r, t])
                assert abs(float(logp[tok]) - float(out.rollout_log_probs[r, t])) < 1e-5
                logits = model(input_ids=torch.tensor([[tok]]), use_cache=True, **ck).logits[:, -1]
    ids, mask = left_pad(prompts, 0, "cpu")
    assert torch.equal(out.prompts, ids) and torch.equal(out.prompt_mask, mask)


def _family(kind: str, seed: int = 0):
    import transformers

    torch.manual_seed(seed)
    common = dict(vocab_size=200, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=256)
    if kind == "qwen2":
        return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common)).eval()
    if kind == "qwen3":
        return transformers.Qwen3ForCausalLM(transformers.Qwen3Config(head_dim=16, **common)).eval()
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(attention_bias=True, **common)).eval()


@pytest.mark.parametrize("layout", ["packed", "transposed", "model"])
@pytest.mark.parametrize("kind", ["qwen2", "qwen3", "llama"])
def test_lean_decoder_gives_the_models_own_logits_over_prefill_and_decode(kind, layout, monkeypatch):
    """Left-padded prompts, then decode steps with the preallocated cache: the same last-position logits
    as the model's forward over the whole sequence (with its mask and positions), with the decode step's
    weights pre-packed for MKL (packed for more rows than the steps have), transposed copies (a torch
    without MKL), and the model's own (a model too big for the copies)."""
    import rlcockpit.trainer.rollout.lean_decoder as lean
    from rlcockpit.trainer.rollout.kv_cache import preallocated_cache
    from rlcockpit.trainer.rollout.lean_decoder import lean_forward

    if layout == "packed":
        assert lean._mkl_packing(), "this x86 torch build has MKL's packed GEMM"
    monkeypatch.setattr(lean, "_mkl_packing", lambda: layout == "packed")
    monkeypatch.setattr(lean, "TRANSPOSED_BYTES", 0 if layout == "model" else lean.TRANSPOSED_BYTES)
    model = _family(kind)
    fwd = lean_forward(model, rows=8)
    assert fwd is not None
    plan = fwd.__closure__[0].cell_contents  # the rollout's weight layout really is the one under test
    assert {p.layout for layer in plan.layers for p in (layer["qkv"], layer["down"])} == {layout}
    prompts = [list(range(5, 12)), list(range(20, 24)), list(range(40, 49))]
    ids, mask = left_pad(prompts, 0, "cpu")
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = preallocated_cache(3, ids.size(1) + 4)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        logits = fwd(ids, mask, pos, cache)
        for _ in range(4):
            full = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -1]
            torch.testing.assert_close(logits, full, atol=1e-5, rtol=1e-5)
            new = torch.randint(5, 200, (3, 1), generator=g)
            ids, mask = torch.cat([ids, new], 1), torch.cat([mask, torch.ones_like(new)], 1)
            pos = torch.cat([pos, pos[:, -1:] + 1], 1)
            logits = fwd(new, mask, pos[:, -1:], cache)


def test_lean_decoder_rotary_table_grows_with_the_positions():
    """The cos/sin rows for positions past the first table (256) are the rotary module's own."""
    from rlcockpit.trainer.rollout.lean_decoder import _Plan

    model = _family("qwen2")
    plan = _Plan(model)
    x = torch.zeros(1, 1, 64)
    for top in (10, 255, 300, 700):
        pos = torch.tensor([[0, top // 2, top]])
        cos, sin = plan.rope(x, pos)
        want_cos, want_sin = model.model.rotary_emb(x, pos)
        assert torch.equal(cos.squeeze(1), want_cos) and torch.equal(sin.squeeze(1), want_sin)
    assert plan.cos.size(0) >= 701


def test_lean_decoder_under_bf16_autocast_matches_the_model():
    """Autocast (the trainer's bf16 on CPU): the projections run in bf16 as the model's would."""
    from rlcockpit.trainer.rollout.kv_cache import preallocated_cache
    from rlcockpit.trainer.rollout.lean_decoder import lean_forward

    model = _family("qwen2")
    ids, mask = left_pad([list(range(5, 12)), list(range(20, 24))], 0, "cpu")
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        lean = lean_forward(model)(ids, mask, pos, preallocated_cache(2, ids.size(1)))
        full = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -1]
    torch.testing.assert_close(lean.float(), full.float(), atol=1e-2, rtol=1e-2)


def test_lean_decoder_refuses_what_it_does_not_compute_exactly():
    from peft import LoraConfig, get_peft_model

    from rlcockpit.trainer.rollout.lean_decoder import lean_forward

    model = _family("qwen2")
    handle = model.model.layers[0].register_forward_hook(lambda m, a, o: o)
    assert lean_forward(model) is None
    handle.remove()
    lora = get_peft_model(_family("qwen2"), LoraConfig(r=4, target_modules=["q_proj"], task_type="CAUSAL_LM"))
    assert lean_forward(lora.eval()) is None
    import transformers

    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=32, n_layer=1, n_head=2, vocab_size=50)).eval()
    assert lean_forward(gpt2) is None
