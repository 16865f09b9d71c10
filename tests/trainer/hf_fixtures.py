"""Real Hugging Face inputs built in the test, nothing downloaded: a byte-level BPE tokenizer trained with
``tokenizers``, tiny randomly initialised Qwen2 / Llama / GPT-2 models saved with ``save_pretrained``, and
GSM8K-schema parquet files laid out exactly as verl's ``examples/data_preprocess/gsm8k.py`` writes them."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pandas as pd

INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
NAMES = ["Tom", "Ana", "Li", "Sara", "Omar", "Mia"]
ITEMS = ["apples", "pens", "books", "coins", "cards"]


def gsm8k_problem(rng: random.Random) -> tuple[str, str, str]:
    """(question, worked solution ending in ``#### N``, N) with small numbers."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    if rng.random() < 0.5:
        q = f"{name} has {a} {item} and gets {b} more. How many {item} does {name} have now?"
        return q, f"{a} + {b} = {a + b}\n#### {a + b}", str(a + b)
    a, b = max(a, b), min(a, b)
    q = f"{name} has {a} {item} and gives away {b}. How many {item} are left?"
    return q, f"{a} - {b} = {a - b}\n#### {a - b}", str(a - b)


def gsm8k_rows(n: int, seed: int = 0, split: str = "train") -> list[dict[str, Any]]:
    """verl's GSM8K parquet schema: data_source, prompt (chat), ability, reward_model, extra_info."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        q, solution, truth = gsm8k_problem(rng)
        rows.append({"data_source": "openai/gsm8k",
                     "prompt": [{"role": "user", "content": f"{q} {INSTRUCTION}"}],
                     "ability": "math",
                     "reward_model": {"style": "rule", "ground_truth": truth},
                     "extra_info": {"split": split, "index": i, "answer": solution, "question": q}})
    return rows


def write_parquet(rows: list[dict[str, Any]], path: Path) -> str:
    pd.DataFrame(rows).to_parquet(path)
    return str(path)


def train_bpe_tokenizer(out: Path, vocab_size: int = 400) -> Any:
    """A byte-level BPE tokenizer trained on GSM8K-style text, with a chat template, saved to ``out``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    rng = random.Random(123)
    corpus = []
    for _ in range(400):
        q, sol, _truth = gsm8k_problem(rng)
        corpus += [f"{q} {INSTRUCTION}", sol, "user assistant system"]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    core.train_from_iterator(corpus, trainer=trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|pad|>",
                                  bos_token=None, unk_token=None, additional_special_tokens=SPECIALS[:3])
    tok.chat_template = CHAT_TEMPLATE
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out)
    return tok


def make_model_dir(arch: str, out: Path, tokenizer: Any, *, hidden: int = 64, layers: int = 2, seed: int = 0) -> Path:
    """A tiny randomly initialised causal LM of ``arch`` (qwen2 | llama | gpt2) with ``tokenizer``, saved to ``out``."""
    import torch
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    torch.manual_seed(seed)
    common = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
              "eos_token_id": tokenizer.eos_token_id, "bos_token_id": None}
    if arch == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(n_embd=hidden, n_layer=layers, n_head=4, n_positions=256,
                                           resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **common))
    elif arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                             **common))
    elif arch == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                             tie_word_embeddings=True, **common))
    else:
        raise ValueError(arch)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def sft_gsm8k(model_dir: Path, tokenizer: Any, *, steps: int = 150, seed: int = 0) -> Path:
    """Warm the model up on worked solutions so it answers in GSM8K's ``#### N`` format; saved in place."""
    from types import SimpleNamespace

    import torch
    from transformers import AutoModelForCausalLM

    from rlcockpit.trainer.tiny import sft_warmup

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    pairs = []
    for row in gsm8k_rows(600, seed=seed + 7):
        text = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False)
        pairs.append((text, row["extra_info"]["answer"]))
    cfg = SimpleNamespace(sft_lr=3e-3, sft_steps=steps, sft_batch_size=32)
    sft_warmup(model, tokenizer, pairs, cfg, seed=seed, autocast_bf16=False, log=lambda *_: None)
    model.save_pretrained(model_dir)
    return model_dir
