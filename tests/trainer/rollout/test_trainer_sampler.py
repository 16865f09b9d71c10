from __future__ import annotations

import torch

from rlcockpit.trainer.config import TinyModelConfig
from rlcockpit.trainer.rollout.engine import ROLLOUT_ENGINES, SamplingParams, response_mask_from_eos
from rlcockpit.trainer.rollout.sampling import filter_logits, sample_next_token
from rlcockpit.trainer.tiny import build_char_tokenizer, build_tiny_model


def test_top_k_keeps_exactly_k_tokens():
    logits = torch.tensor([[1.0, 5.0, 3.0, 4.0, 2.0]])
    out = filter_logits(logits, top_k=2)
    assert torch.isfinite(out).tolist() == [[False, True, False, True, False]]


def test_top_p_keeps_the_smallest_nucleus():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    out = filter_logits(probs.log(), top_p=0.7)  # 0.5 < 0.7, 0.5+0.3 >= 0.7 -> keep two
    assert torch.isfinite(out).tolist() == [[True, True, False, False]]
    out = filter_logits(probs.log(), top_p=0.1)  # always at least the top token
    assert torch.isfinite(out).tolist() == [[True, False, False, False]]


def test_sampling_respects_the_masks():
    torch.manual_seed(0)
    logits = torch.zeros(2000, 6)
    logits[:, 4] = 0.1
    toks = sample_next_token(logits, SamplingParams(max_new_tokens=1, top_k=1))
    assert (toks == 4).all()
    toks = sample_next_token(torch.zeros(2000, 6), SamplingParams(max_new_tokens=1, temperature=1.0))
    assert len(set(toks.tolist())) == 6  # no mask: every token is reachable


def test_response_mask_stops_after_first_eos():
    resp = torch.tensor([[5, 1, 0, 0], [5, 6, 7, 8], [1, 0, 0, 0]])
    assert response_mask_from_eos(resp, torch.tensor([1])).tolist() == [[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]]


def _model():
    tok = build_char_tokenizer()
    model = build_tiny_model(tok, TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64), seed=1)
    return tok, model.eval()


def test_kv_cached_greedy_matches_full_forward_and_stops_at_eos():
    tok, model = _model()
    engine = ROLLOUT_ENGINES.get("hf")(model, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, device="cpu")
    prompts = [tok("<|user|>12+3=<|assistant|>", add_special_tokens=False)["input_ids"],
               tok("<|user|>7+45=<|assistant|>", add_special_tokens=False)["input_ids"]]
    out = engine.generate(prompts, SamplingParams(max_new_tokens=6, greedy=True))
    assert out.responses.shape[1] <= 6 and out.prompts.shape == (2, max(len(p) for p in prompts))
    for i, p in enumerate(prompts):  # recompute greedily without any cache, one token at a time
        seq = list(p)
        for _ in range(out.responses.shape[1]):
            with torch.no_grad():
                nxt = int(model(input_ids=torch.tensor([seq])).logits[0, -1].argmax())
            seq.append(nxt)
            if nxt == tok.eos_token_id:
                break
        gen = seq[len(p):]
        assert out.responses[i, : len(gen)].tolist() == gen
        assert int(out.response_mask[i].sum()) == len(gen)
        assert (out.responses[i, len(gen):] == tok.pad_token_id).all()


def test_eos_bias_stops_generation_early():
    tok, model = _model()
    eos = tok.eos_token_id
    hook = model.register_forward_hook(lambda m, i, o: o.logits.__setitem__((..., eos), 1e4) or o)
    engine = ROLLOUT_ENGINES.get("hf")(model, pad_token_id=tok.pad_token_id, eos_token_id=eos, device="cpu")
    out = engine.generate([[4, 7, 8, 5]] * 3, SamplingParams(max_new_tokens=8, temperature=1.0))
    hook.remove()
    assert out.responses.shape == (3, 1) and (out.responses == eos).all()
    assert out.response_mask.tolist() == [[1], [1], [1]]
