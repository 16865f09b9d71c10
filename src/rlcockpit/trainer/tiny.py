"""The built-in demo model: a small Qwen2 created from a config and a character tokenizer built in code.

Why: the demo must run on a fresh 2-core machine with nothing downloaded.  The model is a real
``Qwen2ForCausalLM`` and the tokenizer a real ``PreTrainedTokenizerFast`` with a chat template, so
the rest of the trainer treats it exactly like any Hugging Face model from a local path.  A short
supervised warm-up on the task gives RL a policy to start from; the result is saved as an ordinary HF
model directory and cached.

The warm-up has two phases, because that is what makes RL's effect visible in a few CPU minutes:

1. ``sft_steps`` on correct sums: the model learns addition with carries (greedy accuracy ~0.95);
2. ``sft_slip_steps`` of "sloppy" fine-tuning where a share ``sft_slip_rate`` of the answers forget
   their carries (``07+45=`` -> ``042``), as in data scraped from careless sources.  The model still
   puts real probability on the right answer but now prefers the wrong one (greedy ~0.3).

GRPO with the exact-match reward then learns, from its own samples, to prefer the answer it already
knows how to produce, which takes it back above 0.8 in well under 100 steps.  Teaching carries from
scratch with a sequence-level 0/1 reward is far slower: a policy warmed up on correct sums only to
~0.45 barely moves in 100 steps at any learning rate we tried.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import string
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from rlcockpit.trainer.config import BuiltinDataConfig, TinyModelConfig

PAD, EOS, UNK = "<|pad|>", "<|endoftext|>", "<|unk|>"
ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}"
    "{% if m['role'] == 'assistant' %}<|endoftext|>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_char_tokenizer() -> Any:
    """One token per printable ASCII character (plus newline) and a few special tokens."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = [PAD, EOS, UNK, *ROLE_TOKENS]
    chars = list(string.printable[:95]) + ["\n"]  # digits, letters, punctuation, space, newline
    vocab = {tok: i for i, tok in enumerate(specials + chars)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(specials)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        additional_special_tokens=ROLE_TOKENS,
        padding_side="left",
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def build_tiny_model(tokenizer: Any, cfg: TinyModelConfig, seed: int = 0) -> Any:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_heads,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    return Qwen2ForCausalLM(config)


def _cache_root() -> Path:
    root = os.environ.get("RLCOCKPIT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "rlcockpit")
    return Path(root)


def tiny_fingerprint(tiny: TinyModelConfig, data: BuiltinDataConfig, seed: int, dtype: str) -> str:
    settings = {k: v for k, v in tiny.__dict__.items() if k != "seed"}  # the seed used is ``seed`` (same key as before)
    blob = json.dumps([settings, data.__dict__, seed, dtype, "v3-sloppy-phase"], sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def _warmup_cosine(total: int, warmup: int = 20) -> Any:
    def factor(s: int) -> float:
        if s < warmup:
            return (s + 1) / warmup
        return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, (s - warmup) / max(1, total - warmup))))

    return factor


def sft_warmup(model: Any, tokenizer: Any, pairs: list[tuple[str, str]], cfg: TinyModelConfig,
               *, seed: int, autocast_bf16: bool, log: Any = print) -> float:
    """Supervised warm-up: cross-entropy on the answer tokens of (prompt text, answer) pairs."""
    rng = random.Random(seed)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.sft_lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _warmup_cosine(cfg.sft_steps))
    enc = [(tokenizer(p, add_special_tokens=False)["input_ids"],
            tokenizer(a, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]) for p, a in pairs]
    t0, loss_val = time.time(), float("nan")
    for step in range(cfg.sft_steps):
        batch = rng.sample(enc, min(cfg.sft_batch_size, len(enc)))
        width = max(len(p) + len(a) for p, a in batch)
        ids = torch.full((len(batch), width), tokenizer.pad_token_id)
        labels = torch.full((len(batch), width), -100)
        attn = torch.zeros((len(batch), width), dtype=torch.long)
        for i, (p, a) in enumerate(batch):  # right padding: positions start at 0 for every row
            seq = p + a
            ids[i, : len(seq)] = torch.tensor(seq)
            labels[i, len(p): len(seq)] = torch.tensor(a)
            attn[i, : len(seq)] = 1
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast_bf16):
            loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        loss_val = float(loss.detach())
        if (step + 1) % 100 == 0 or step + 1 == cfg.sft_steps:
            log(f"[rlcockpit] warm-up SFT step {step + 1}/{cfg.sft_steps} loss {loss_val:.3f} ({time.time() - t0:.0f}s)")
    model.eval()
    return loss_val


def forget_carries(answer: str, a: int, b: int) -> str:
    """``answer`` as a careless adder writes it: each digit is the digit sum mod 10, carries dropped."""
    width = len(answer)
    digits = [((a // 10 ** i) % 10 + (b // 10 ** i) % 10) % 10 for i in range(width)]
    return "".join(str(d) for d in reversed(digits))


def sloppy_pairs(pairs: list[tuple[str, str, int, int]], rate: float, seed: int) -> list[tuple[str, str]]:
    """(prompt, answer) pairs where a share ``rate`` of the answers forget their carries."""
    rng = random.Random(seed)
    return [(p, forget_carries(ans, a, b) if rng.random() < rate else ans) for p, ans, a, b in pairs]


def prepare_tiny(tiny: TinyModelConfig, data: BuiltinDataConfig, *, seed: int, dtype: str,
                 out_dir: str | Path | None = None, log: Any = print) -> Path:
    """Build + warm up the tiny model (or reuse a cached one); returns an HF model directory."""
    from rlcockpit.trainer.data import builtin_sft_pairs

    if data.name == "bars":  # the vision task: a tiny Qwen2-VL (vision/task.py)
        from rlcockpit.trainer.vision.task import prepare_tiny_vl

        return prepare_tiny_vl(tiny, data, seed=seed, out_dir=out_dir, cache_root=_cache_root(), log=log)
    fp = tiny_fingerprint(tiny, data, seed, dtype)
    target = Path(out_dir) if out_dir else _cache_root() / f"tiny-{fp}"
    if (tiny.cache or out_dir) and (target / "config.json").is_file() and (target / "rlcockpit_tiny.json").is_file():
        meta = json.loads((target / "rlcockpit_tiny.json").read_text())
        if meta.get("fingerprint") == fp:
            log(f"[rlcockpit] reusing warmed-up tiny model {target}")
            return target
    tokenizer = build_char_tokenizer()
    model = build_tiny_model(tokenizer, tiny, seed=seed)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"[rlcockpit] built tiny Qwen2 ({n_params / 1e6:.1f}M parameters, hidden {tiny.hidden_size}, "
        f"{tiny.num_layers} layers); warm-up SFT for {tiny.sft_steps} steps")
    pairs = builtin_sft_pairs(data, tokenizer)
    bf16 = dtype == "bf16"
    loss = sft_warmup(model, tokenizer, [(p, ans) for p, ans, _, _ in pairs], tiny, seed=seed,
                      autocast_bf16=bf16, log=log)
    if tiny.sft_slip_steps > 0:
        log(f"[rlcockpit] sloppy warm-up phase: {tiny.sft_slip_steps} steps, {tiny.sft_slip_rate:.0%} of answers "
            "forget their carries (the model keeps the right answer in reach but stops preferring it)")
        sloppy = replace(tiny, sft_steps=tiny.sft_slip_steps, sft_lr=tiny.sft_slip_lr)
        loss = sft_warmup(model, tokenizer, sloppy_pairs(pairs, tiny.sft_slip_rate, seed + 1), sloppy,
                          seed=seed + 1, autocast_bf16=bf16, log=log)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    (target / "rlcockpit_tiny.json").write_text(json.dumps({"fingerprint": fp, "sft_loss": loss}))
    return target
