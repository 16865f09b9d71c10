"""Models, tokenizers and data for the benchmarks' realistic shapes, all built in code (nothing downloaded).

- a byte-level BPE tokenizer trained with the ``tokenizers`` library on generated chat text, with a chat
  template, saved as an ordinary ``PreTrainedTokenizerFast`` (what a real Qwen/Llama tokenizer is);
- Qwen2 configs: ``qwen2.5-0.5b`` (the published Qwen2.5-0.5B shape: 24 layers, 896 wide, GQA 14/2,
  151,936 vocab) and small ones for CPU, initialised with random weights;
- chat prompts of ~47 tokens with a verifiable answer, in verl's row schema (jsonl), and a reward
  function file with verl's ``compute_score`` signature, so rlcockpit and TRL score the same way.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SHAPES: dict[str, dict[str, Any]] = {
    # Qwen/Qwen2.5-0.5B's config.json values
    "qwen2.5-0.5b": {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                     "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
                     "max_position_embeddings": 32768, "rope_theta": 1000000.0, "tie_word_embeddings": True},
    # 13.1M parameters with an 8k BPE vocabulary, Qwen2.5's proportions scaled down (MLP 6x wide, GQA 4/2,
    # tied embeddings): the CPU "realistic" shape of bench/trainer_vs_trl.py
    "cpu-13m": {"hidden_size": 256, "intermediate_size": 1536, "num_hidden_layers": 8, "num_attention_heads": 4,
                "num_key_value_heads": 2, "vocab_size": 8192, "max_position_embeddings": 1024,
                "tie_word_embeddings": True},
    # a toy for smoke runs (head size 32: vLLM's CPU attention has kernels for it)
    "toy": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
            "num_key_value_heads": 2, "vocab_size": 1024, "max_position_embeddings": 512, "tie_word_embeddings": True},
}
WORDS = ("the a an of to in and or is are was what how many which number sum total each every apples boxes "
         "train station hours minutes price costs more less than twice half remaining left after before "
         "students class teacher books pages read write answer question step explain carefully final").split()


def lexicon(n: int = 6000, seed: int = 1) -> list[str]:
    """``n`` made-up words of 1-4 syllables: enough distinct text for a BPE to learn a real-sized vocabulary
    (the few English words above alone stop it after ~500 merges), and words a prompt splits into pieces."""
    rng = random.Random(seed)
    onsets, vowels, codas = "b c d f g h j k l m n p r s t v w z br ch pl st tr sh".split(), "a e i o u ai ea ou".split(), \
        ["", "", "n", "r", "s", "t", "l", "ng"]
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
                          for _ in range(rng.choice((1, 2, 2, 3, 3, 4)))))
    return sorted(words)


LEXICON = lexicon()


def filler_word(rng: random.Random) -> str:
    """Mostly common words, sometimes a rarer one (Zipf-like: low lexicon indices are drawn more often)."""
    if rng.random() < 0.7:
        return rng.choice(WORDS)
    return LEXICON[min(len(LEXICON) - 1, int(rng.paretovariate(1.0)) - 1)] if rng.random() < 0.5 else \
        rng.choice(LEXICON)


def question(rng: random.Random) -> tuple[str, str]:
    """A short word problem (~30 words, ~47 tokens as a chat prompt) and its integer answer."""
    a, b, c = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 9)
    filler = " ".join(filler_word(rng) for _ in range(rng.randint(5, 9)))
    text = (f"A shop has {a} boxes with {c} apples in each box and sells {b} apples. {filler}. "
            f"How many apples are left? Put the final answer after ####.")
    return text, str(a * c - b)


def build_bpe_tokenizer(out_dir: str | Path, vocab_size: int = 8192, seed: int = 0) -> Any:
    """Train a byte-level BPE on generated chat text; saved to ``out_dir`` and returned."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    rng = random.Random(seed)
    corpus = [question(rng)[0] + " " + " ".join(filler_word(rng) for _ in range(30)) for _ in range(4000)]
    corpus += [" ".join(rng.choice(LEXICON) for _ in range(40)) for _ in range(max(1000, vocab_size))]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    core.train_from_iterator(corpus, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|pad|>",
                                  bos_token=None, padding_side="left")
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(str(out_dir))
    return tok


def build_model_dir(out_dir: str | Path, shape: str, tokenizer: Any, *, dtype: str = "fp32", seed: int = 0) -> Path:
    """A random-init Qwen2 of ``shape`` saved with ``tokenizer`` as a local HF model directory."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    spec = dict(SHAPES[shape])
    spec["vocab_size"] = max(spec["vocab_size"], len(tokenizer))
    torch.manual_seed(seed)
    config = Qwen2Config(**spec, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=None)
    model = Qwen2ForCausalLM(config)
    if dtype == "bf16":
        model = model.to(torch.bfloat16)
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def write_dataset(path: str | Path, n: int, seed: int = 0) -> Path:
    """``n`` chat prompts in verl's row schema (jsonl)."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(n):
            text, answer = question(rng)
            f.write(json.dumps({"data_source": "bench/apples", "prompt": [{"role": "user", "content": text}],
                                "reward_model": {"style": "rule", "ground_truth": answer}}) + "\n")
    return Path(path)


REWARD_SOURCE = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """1 for the right number after ####, else a small credit for writing digits at all."""
    tail = solution_str.rsplit("####", 1)[-1].strip().split()
    if tail and tail[0] == str(ground_truth):
        return 1.0
    return 0.1 * min(1.0, sum(ch.isdigit() for ch in solution_str) / 10)
'''


def write_reward(path: str | Path) -> str:
    """The reward as a file (verl's ``custom_reward_function`` / rlcockpit's ``reward.custom_fn``)."""
    Path(path).write_text(REWARD_SOURCE)
    return f"{path}:compute_score"


def reward_fn_for_trl(path: str | Path) -> Any:
    """The same reward for TRL's ``reward_funcs`` signature (completions as chat messages)."""
    ns: dict[str, Any] = {}
    exec(compile(Path(path).read_text(), str(path), "exec"), ns)  # noqa: S102 - our own generated file
    score = ns["compute_score"]

    def reward(completions: list, ground_truth: list, **_: Any) -> list[float]:
        texts = [c[0]["content"] if isinstance(c, list) else str(c) for c in completions]
        return [score("bench/apples", t, g) for t, g in zip(texts, ground_truth)]

    return reward
