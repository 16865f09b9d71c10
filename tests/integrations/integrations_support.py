"""Helpers shared by the integration tests (imported as a plain module: pytest puts this folder on
sys.path): the health-engine gate and a verl-keyed failure pattern."""

from __future__ import annotations

import random
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VERL_PY = REPO / ".venv-verl" / "bin" / "python"


def require_findings(findings: list, *detectors: str) -> None:
    """The findings include one of ``detectors`` (any finding when none is named)."""
    names = {f.get("detector") for f in findings}
    assert findings, "expected findings from the health engine, got none"
    if detectors:
        assert names & set(detectors), f"expected one of {detectors} among findings {sorted(names)}"


def failure_rows(n: int = 60, cliff: int = 40, seed: int = 0):
    """verl-keyed metrics: a healthy climb, then at ``cliff`` the reward falls off and KL spikes."""
    import random

    rng = random.Random(seed)
    for s in range(1, n + 1):
        if s < cliff:
            r, kl, ent = 0.3 + 0.3 * s / cliff + rng.gauss(0, 0.01), 0.01 + rng.gauss(0, 0.001), 1.2 - 0.005 * s
        else:
            r, kl, ent = 0.05 + rng.gauss(0, 0.01), 0.6 + rng.gauss(0, 0.05), 0.2
        yield s, {"critic/score/mean": r, "critic/rewards/mean": r, "actor/kl_loss": kl, "actor/entropy": ent,
                  "actor/pg_loss": rng.gauss(0, 0.05), "actor/grad_norm": 0.5 + rng.random() * 0.1,
                  "response_length/mean": 200 + rng.gauss(0, 5)}


CHAT = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def tiny_qwen2_dir(path) -> str:
    """A user's local model folder: random-init Qwen2 (hidden 64) + byte-level BPE with a chat template."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    words = "the a shop has boxes apples sells how many left answer is one two three four five".split()
    rng = random.Random(0)
    corpus = [" ".join(rng.choice(words) for _ in range(30)) + f" {rng.randint(0, 999)}" for _ in range(1000)]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = CHAT
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, tie_word_embeddings=True)
    torch.manual_seed(0)
    Qwen2ForCausalLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)
