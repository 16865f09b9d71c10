"""Engine-level checks of the vLLM rollout, run by tests/trainer/rollout/test_rollout_vllm.py inside .venv-vllm.

Prints one JSON object (the last stdout line) with what the test asserts: sampling semantics against the
built-in engine, log-prob agreement with the trainer, weight sync after an update (and a control where
the sync is skipped), KV-cache release, seeded reproducibility.
"""

from __future__ import annotations

import copy
import json
import sys

import torch


def main(argv: list[str]) -> int:
    from rlcockpit.trainer.config import load_config
    from rlcockpit.trainer.data import load_datasets
    from rlcockpit.trainer.models import forward_logprobs, load_tokenizer
    from rlcockpit.trainer.rollout.check import rollout_probs_metrics
    from rlcockpit.trainer.rollout.engine import HFRolloutEngine, SamplingParams
    from rlcockpit.trainer.rollout.vllm import VLLMRolloutEngine, _weight_versions, make_vllm_engine
    from rlcockpit.trainer.state import resolve_model_path

    torch.set_num_threads(2)
    cfg = load_config(overrides=argv)
    path = resolve_model_path(cfg, log=lambda *_: None)
    tok = load_tokenizer(path)
    from transformers import AutoModelForCausalLM

    actor = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, local_files_only=True)
    rows, _, _ = load_datasets(cfg.data, tok)
    prompts = [r.input_ids for r in rows[:3] for _ in range(4)]  # 3 prompts x n=4, as GRPO sends them
    engine = make_vllm_engine(actor, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                              device="cpu", config=cfg)
    assert isinstance(engine, VLLMRolloutEngine), type(engine)
    res: dict = {"kv_bytes_at_start": engine.kv_cache_bytes()}
    T = cfg.data.max_response_length
    sample = SamplingParams(max_new_tokens=T, temperature=1.0)

    def trainer_logp(model, out):
        with torch.no_grad():
            return forward_logprobs(model, out.input_ids, out.attention_mask, out.responses.size(1))[0]

    def agreement(model, out):
        return rollout_probs_metrics(out.rollout_log_probs, trainer_logp(model, out), out.response_mask)

    torch.manual_seed(0)
    out = engine.generate(prompts, sample)
    res["kv_bytes_after_generate"] = engine.kv_cache_bytes()
    eos = tok.eos_token_id
    res["shape"] = list(out.responses.shape)
    res["prompt_equal"] = bool(all(out.prompts[i][out.prompt_mask[i].bool()].tolist() == prompts[i]
                                   for i in range(len(prompts))))
    lengths = out.response_mask.sum(-1).tolist()
    res["lengths"] = lengths
    # a row shorter than the limit stopped at EOS, which is its last real token; padding after it
    res["stops_at_eos"] = all(out.responses[i, n - 1].item() == eos for i, n in enumerate(lengths) if n < T)
    res["no_eos_inside"] = all(eos not in out.responses[i, : n - 1].tolist() for i, n in enumerate(lengths))
    res["pad_after"] = all(set(out.responses[i, n:].tolist()) <= {tok.pad_token_id} for i, n in enumerate(lengths))
    res["logp_nonzero_share"] = float((out.rollout_log_probs[out.response_mask.bool()] < 0).float().mean())
    res["agree_initial"] = agreement(actor, out)

    # an update: the actor's weights move in place (as optimizer.step does); the engine must follow
    before = copy.deepcopy(actor)
    opt = torch.optim.SGD(actor.parameters(), lr=0.5)
    logp = forward_logprobs(actor, out.input_ids, out.attention_mask, out.responses.size(1))[0]
    (-(logp * out.response_mask).sum()).backward()  # push up the sampled tokens
    opt.step()
    opt.zero_grad()
    engine.sync_weights(actor)  # what the loop calls after update_actor
    out2 = engine.generate(prompts, sample)
    res["agree_after_update"] = agreement(actor, out2)
    res["agree_after_update_vs_old_weights"] = agreement(before, out2)
    res["update_weights_timed"] = "timing_s/update_weights" in engine.pop_metrics()

    # control: the weights move but the sync is skipped -> the engine samples from stale weights
    with torch.no_grad():
        for p in actor.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    engine._synced_versions = _weight_versions(actor)
    out3 = engine.generate(prompts, sample)
    res["agree_stale_control"] = agreement(actor, out3)
    engine._synced_versions = None
    engine.sync_weights(actor)

    # greedy and top_k=1 match the built-in engine's greedy tokens; seeded sampling repeats
    greedy = SamplingParams(max_new_tokens=T, greedy=True)
    hf = HFRolloutEngine(actor, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, device="cpu")
    g_v, g_h = engine.generate(prompts[::4], greedy), hf.generate(prompts[::4], greedy)
    res["greedy_equal_builtin"] = _rows(g_v) == _rows(g_h)
    res["greedy_has_no_logprobs"] = g_v.rollout_log_probs is None
    res["top_k1_equal_greedy"] = _rows(engine.generate(prompts[::4], SamplingParams(max_new_tokens=T, top_k=1))) \
        == _rows(g_h)
    torch.manual_seed(123)
    a = _rows(engine.generate(prompts, sample))
    torch.manual_seed(123)
    b = _rows(engine.generate(prompts, sample))
    torch.manual_seed(124)
    c = _rows(engine.generate(prompts, sample))
    res["seeded_repeat"], res["other_seed_differs"] = a == b, a != c
    res["threads_kept"] = torch.get_num_threads()
    print(json.dumps(res))
    return 0


def _rows(out) -> list[list[int]]:
    return [r[: int(n)] for r, n in zip(out.responses.tolist(), out.response_mask.sum(-1).tolist())]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
