"""The built-in vision task (``data.builtin.name=bars``) and its tiny Qwen2-VL, warmed up and cached.

The task: a picture with two bars of different colours; the question "Which bar is taller?"; the answer is the
taller bar's colour name. The pictures are drawn with PIL and stored in verl's geo3k schema (``images`` cells of
``{"bytes": png}``, an ``<image>`` placeholder in the prompt), so the built-in task goes through the same image
checks and processor as a verl parquet file.

Why a two-phase warm-up (as the text demo's, :mod:`rlcockpit.trainer.tiny`): a policy that reads the picture
but often names the wrong bar is the situation RL with a verifiable reward fixes in a few CPU minutes. Phase 1
teaches the task on correct answers; phase 2 ("sloppy" labels: a share ``sft_slip_rate`` of the answers name the
*shorter* bar) leaves the right colour in reach but no longer preferred. GRPO then learns from its own samples
to prefer it again. The warmed-up model is saved as an ordinary HF directory (model, tokenizer, image processor)
and cached by a fingerprint of its settings.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import time
from pathlib import Path
from typing import Any

import torch

from rlcockpit.trainer.config import BuiltinDataConfig, TinyModelConfig

COLORS = ("red", "green", "blue", "black")
SIZE = 56  # px: 4x4 patches of 14 px, 4 image tokens after the 2x2 merge
QUESTION = "<image>Which bar is taller?"


def draw_bars(left: int, right: int, colors: tuple[str, str]) -> Any:
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (SIZE, SIZE), "white")
    draw = ImageDraw.Draw(im)
    draw.rectangle((6, SIZE - left, 22, SIZE - 1), fill=colors[0])
    draw.rectangle((34, SIZE - right, 50, SIZE - 1), fill=colors[1])
    return im


def _png(im: Any) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def bars_examples(n: int, seed: int) -> list[tuple[Any, str, tuple[str, str]]]:
    """(image, answer, (left colour, right colour)) examples; heights differ by at least 6 px."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        colors = tuple(rng.sample(COLORS, 2))
        left = rng.randint(8, SIZE - 6)
        right = rng.choice([h for h in range(8, SIZE - 5) if abs(h - left) >= 6])
        out.append((draw_bars(left, right, colors), colors[0] if left > right else colors[1], colors))
    return out


def bars_rows(cfg: BuiltinDataConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Train and held-out rows in verl's geo3k layout (held-out pictures from their own seed)."""
    def row(im: Any, answer: str, colors: tuple[str, str]) -> dict[str, Any]:
        return {"prompt": [{"role": "user", "content": QUESTION}], "images": [{"bytes": _png(im)}],
                "data_source": "bars", "reward_model": {"style": "rule", "ground_truth": answer},
                "extra_info": {"colors": list(colors)}}

    return ([row(*e) for e in bars_examples(cfg.train_size, cfg.seed)],
            [row(*e) for e in bars_examples(cfg.val_size, cfg.seed + 7919)])


def _fingerprint(tiny: TinyModelConfig, data: BuiltinDataConfig, seed: int) -> str:
    blob = json.dumps([tiny.__dict__, data.__dict__, seed, "vl-bars-v1"], sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def sft_vl(model: Any, processor: Any, examples: list[tuple[Any, str]], *, steps: int, lr: float, batch: int,
           seed: int, log: Any = print) -> float:
    """Cross-entropy on the answer tokens (and EOS) of (image, answer) pairs, with the picture in the pass."""
    from rlcockpit.trainer.vision.model import prompt_inputs, response_logprobs

    rng = random.Random(seed)
    tok = processor.tokenizer
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    t0, loss_val = time.time(), float("nan")
    for step in range(steps):
        chosen = rng.sample(examples, min(batch, len(examples)))
        inputs = prompt_inputs(processor, [QUESTION] * len(chosen), [[im] for im, _ in chosen])
        answers = [tok(a, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for _, a in chosen]
        width = max(len(a) for a in answers)
        resp = torch.tensor([a + [tok.pad_token_id] * (width - len(a)) for a in answers])
        mask = torch.tensor([[1] * len(a) + [0] * (width - len(a)) for a in answers])
        loss = -(response_logprobs(model, inputs, resp, mask).sum() / mask.sum())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_val = float(loss.detach())
        if (step + 1) % 50 == 0 or step + 1 == steps:
            log(f"[rlcockpit] vision warm-up step {step + 1}/{steps} loss {loss_val:.3f} ({time.time() - t0:.0f}s)")
    model.eval()
    return loss_val


def prepare_tiny_vl(tiny: TinyModelConfig, data: BuiltinDataConfig, *, seed: int, out_dir: str | Path | None = None,
                    cache_root: Path, log: Any = print) -> Path:
    """Build + warm up the tiny Qwen2-VL on the bars task (or reuse the cached one); an HF model directory."""
    from rlcockpit.trainer.vision.model import build_tiny_processor, build_tiny_vl_model

    fp = _fingerprint(tiny, data, seed)
    target = Path(out_dir) if out_dir else cache_root / f"tiny-vl-{fp}"
    meta = target / "rlcockpit_tiny.json"
    if (tiny.cache or out_dir) and meta.is_file() and json.loads(meta.read_text()).get("fingerprint") == fp:
        log(f"[rlcockpit] reusing warmed-up tiny Qwen2-VL {target}")
        return target
    processor = build_tiny_processor()
    model = build_tiny_vl_model(processor, hidden=tiny.hidden_size, layers=tiny.num_layers, heads=tiny.num_heads,
                                seed=seed)
    log(f"[rlcockpit] built tiny Qwen2-VL ({sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters); "
        f"vision warm-up: {tiny.sft_steps} steps, then {tiny.sft_slip_steps} sloppy steps")
    examples = [(im, ans) for im, ans, _ in bars_examples(max(256, tiny.sft_batch_size * 4), data.seed + 1)]
    loss = sft_vl(model, processor, examples, steps=tiny.sft_steps, lr=tiny.sft_lr, batch=tiny.sft_batch_size,
                  seed=seed, log=log)
    if tiny.sft_slip_steps > 0:
        rng = random.Random(seed + 1)
        sloppy = [(im, other if rng.random() < tiny.sft_slip_rate else ans)
                  for im, ans, cs in bars_examples(len(examples), data.seed + 2)
                  for other in [cs[0] if cs[1] == ans else cs[1]]]
        loss = sft_vl(model, processor, sloppy, steps=tiny.sft_slip_steps, lr=tiny.sft_slip_lr,
                      batch=tiny.sft_batch_size, seed=seed + 1, log=log)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    processor.tokenizer.save_pretrained(target)
    processor.image_processor.save_pretrained(target)
    meta.write_text(json.dumps({"fingerprint": fp, "sft_loss": loss}))
    return target


__all__ = ["bars_examples", "bars_rows", "draw_bars", "prepare_tiny_vl", "sft_vl"]
