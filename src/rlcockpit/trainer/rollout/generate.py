"""``rlcockpit generate --artifact policy:best --prompt "..."``: the article's inference test of a stored model.

Loads a ``model`` artifact version — a Hugging Face model directory (``config.json`` + weights, anywhere in
the artifact, e.g. verl's ``actor/``), a peft adapter, or an rlcockpit checkpoint (``actor.pt`` beside
``trainer_state.pt``) — samples ``--n`` responses per prompt and, when a reward is configured (``--reward``
or the producing run's config) and a ground truth is known (``--ground-truth``, a prompts file in verl's
row schema, or the built-in arithmetic task), prints each response's reward.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                "pytorch_model.bin.index.json", "adapter_model.safetensors", "adapter_model.bin")


def register(subparsers: Any) -> None:
    g = subparsers.add_parser("generate", help="sample from a stored model artifact (policy:best) with rewards",
                              description="Load a model artifact version and print generations for prompts, with "
                                          "the reward when one is configured and the ground truth is known.")
    g.add_argument("--artifact", required=True, help="artifact reference: policy:best, policy:v3, project/policy")
    g.add_argument("--prompt", action="append", default=[], help="a prompt (repeatable)")
    g.add_argument("--prompts", help="a file of prompts: .txt (one per line), .jsonl/.json/.parquet rows in verl's "
                                     "schema (prompt, reward_model.ground_truth, data_source)")
    g.add_argument("--n", type=int, default=1, help="samples per prompt (default 1)")
    g.add_argument("--temperature", type=float, default=1.0, help="0 = greedy")
    g.add_argument("--top-p", type=float, default=1.0)
    g.add_argument("--max-new-tokens", type=int, help="default: the producing run's data.max_response_length, else 64")
    g.add_argument("--reward", help="reward function by name (default: the producing run's reward)")
    g.add_argument("--ground-truth", help="ground truth for every --prompt")
    g.add_argument("--raw", action="store_true", help="do not apply the tokenizer's chat template")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--dir", help="store directory (default $RLCOCKPIT_DIR or ./rlcockpit)")
    g.add_argument("--json", action="store_true", help="print the generations as JSON")
    g.set_defaults(func=_generate)


# ---- loading ------------------------------------------------------------------------------------------

def _find_model_dir(root: Path) -> Path | None:
    candidates = [root, *sorted(p for p in root.rglob("*") if p.is_dir())]
    for d in candidates:
        names = {p.name for p in d.iterdir()} if d.is_dir() else set()
        if ("config.json" in names or "adapter_config.json" in names) and names & set(WEIGHT_FILES):
            return d
    return None


def load_policy(version: Any, workdir: Path) -> tuple[Any, Any, dict[str, Any]]:
    """``(model, tokenizer, trainer config or {})`` of a model artifact version."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    root = version.download(workdir / "files", mode="symlink")
    config: dict[str, Any] = {}
    hf = _find_model_dir(root)
    if hf is not None:
        if (hf / "adapter_config.json").is_file():
            from peft import AutoPeftModelForCausalLM

            model = AutoPeftModelForCausalLM.from_pretrained(str(hf), local_files_only=True)
        else:
            model = AutoModelForCausalLM.from_pretrained(str(hf), local_files_only=True)
        tok_dir = hf if (hf / "tokenizer_config.json").is_file() else _base_dir(hf)
        tokenizer = AutoTokenizer.from_pretrained(str(tok_dir), local_files_only=True)
        return model.eval(), tokenizer, config
    actor = next(iter(sorted(root.rglob("actor.pt"))), None)
    if actor is None:
        raise FileNotFoundError(f"{version.qualified_name} holds no model: expected a Hugging Face model directory "
                                "(config.json + weights) or an rlcockpit checkpoint (actor.pt)")
    state_file = actor.parent / "trainer_state.pt"
    state = torch.load(state_file, map_location="cpu", weights_only=False) if state_file.is_file() else {}
    config = state.get("config") or {}
    base = state.get("model_path")
    if not base or not (Path(base) / "config.json").is_file():
        base = _rebuild_base(config)
    model = AutoModelForCausalLM.from_pretrained(base, local_files_only=True)
    model.load_state_dict(torch.load(actor, map_location="cpu", weights_only=True))
    tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
    return model.eval(), tokenizer, config


def _base_dir(adapter_dir: Path) -> Path:
    cfg = json.loads((adapter_dir / "adapter_config.json").read_text()) if (adapter_dir / "adapter_config.json").is_file() else {}
    base = cfg.get("base_model_name_or_path")
    return Path(base) if base and Path(base).is_dir() else adapter_dir


def _rebuild_base(config: dict[str, Any]) -> str:
    """The initial model of an rlcockpit checkpoint whose base directory is gone (the built-in tiny model)."""
    from rlcockpit.trainer.config import from_dict
    from rlcockpit.trainer.loop import resolve_model_path

    if not config:
        raise FileNotFoundError("the checkpoint does not say which model it started from (no trainer_state.pt)")
    return resolve_model_path(from_dict(config), log=lambda *_: None)


# ---- prompts and rewards ------------------------------------------------------------------------------

def read_prompts(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = [{"prompt": p, "ground_truth": args.ground_truth, "data_source": None} for p in args.prompt]
    if args.prompts:
        rows += _read_prompt_file(Path(args.prompts))
    if not rows:
        raise ValueError("give --prompt TEXT (repeatable) or --prompts FILE")
    return rows


def _read_prompt_file(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"prompts file not found: {path}")
    if path.suffix == ".txt":
        return [{"prompt": line, "ground_truth": None, "data_source": None}
                for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if path.suffix == ".parquet":
        import pandas as pd

        raw = pd.read_parquet(path).to_dict("records")
    elif path.suffix == ".jsonl":
        raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    elif path.suffix == ".json":
        raw = json.loads(path.read_text(encoding="utf-8"))
    else:
        raise ValueError(f"{path}: prompts file must be .txt, .jsonl, .json or .parquet")
    out = []
    for i, r in enumerate(raw):
        if not isinstance(r, dict) or "prompt" not in r:
            raise ValueError(f"{path} row {i}: needs a 'prompt' field")
        prompt = r["prompt"]
        prompt = prompt.tolist() if hasattr(prompt, "tolist") else prompt
        rm = r.get("reward_model") or {}
        gt = rm.get("ground_truth") if isinstance(rm, dict) else None
        out.append({"prompt": prompt, "ground_truth": r.get("ground_truth", gt), "data_source": r.get("data_source"),
                    "extra_info": r.get("extra_info")})
    return out


def _reward_fn(name: str | None, config: dict[str, Any]) -> tuple[Any, str | None]:
    """``(function, label)``: ``--reward NAME``, else the reward the producing run's config selects, as the
    trainer resolves it (a custom function file first, then ``reward.name``); ``(None, None)`` if none."""
    from rlcockpit.trainer.reward.rewards import REWARDS, load_custom_fn, resolve_reward_fn

    if name:
        return REWARDS.get(name), name
    if not config:
        return None, None
    try:
        from rlcockpit.trainer.config import from_dict

        fn, label, kwargs = resolve_reward_fn(from_dict(config))
    except (ValueError, KeyError, TypeError):  # a config of an older or foreign trainer: read the usual keys
        custom = config.get("custom_reward_function") or {}
        legacy = (config.get("reward") or {}).get("custom_fn")
        if custom.get("path"):
            return load_custom_fn(custom["path"], custom.get("name")), custom["path"]
        if legacy:
            path, _, fname = str(legacy).rpartition(":")
            return load_custom_fn(path, fname or None), legacy
        rname = (config.get("reward") or {}).get("name")
        return (REWARDS.get(rname), rname) if rname else (None, None)
    if kwargs:
        return (lambda *a, _fn=fn, _kw=kwargs: _fn(*a, **_kw)), label
    return fn, label


_ARITH = re.compile(r"^\s*(\d+)\+(\d+)=\s*$")


def builtin_ground_truth(text: str, config: dict[str, Any]) -> str | None:
    """The answer of a prompt of the built-in addition task (``07+45=`` -> ``052``)."""
    data = config.get("data") or {}
    if data.get("train_files") or (data.get("builtin") or {}).get("name", "arith") != "arith":
        return None
    m = _ARITH.match(text)
    if not m:
        return None
    width = len(m.group(1))
    return f"{int(m.group(1)) + int(m.group(2)):0{width + 1}d}"


# ---- the command --------------------------------------------------------------------------------------

def _render(prompt: Any, tokenizer: Any, raw: bool) -> str:
    if isinstance(prompt, str):
        if raw or not getattr(tokenizer, "chat_template", None):
            return prompt
        prompt = [{"role": "user", "content": prompt}]
    if getattr(tokenizer, "chat_template", None) and not raw:
        return tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=False)
    return "\n".join(m["content"] for m in prompt)


def _last_user_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    users = [m.get("content", "") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
    return users[-1] if users else ""


def generate(model: Any, tokenizer: Any, text: str, *, n: int, temperature: float, top_p: float,
             max_new_tokens: int) -> list[str]:
    import torch

    enc = tokenizer(text, return_tensors="pt", add_special_tokens=False)
    kwargs: dict[str, Any] = {"max_new_tokens": max_new_tokens, "num_return_sequences": n,
                              "pad_token_id": tokenizer.pad_token_id if tokenizer.pad_token_id is not None
                              else tokenizer.eos_token_id}
    if temperature > 0:
        kwargs.update(do_sample=True, temperature=temperature, top_p=top_p)
    else:
        kwargs.update(do_sample=False)
    with torch.no_grad():
        out = model.generate(**enc, **kwargs)
    prompt_len = enc["input_ids"].shape[1]
    return [tokenizer.decode(seq[prompt_len:], skip_special_tokens=True) for seq in out]


def _generate(args: argparse.Namespace) -> int:
    import torch

    from rlcockpit.tracking.read.api import Api

    if args.n < 1:
        raise ValueError("--n must be >= 1")
    api = Api(args.dir)
    version = api.artifact(args.artifact)
    prompts = read_prompts(args)
    torch.manual_seed(args.seed)
    with tempfile.TemporaryDirectory(prefix="rlcockpit-generate-") as tmp:
        model, tokenizer, config = load_policy(version, Path(tmp))
        if not config and version.producer_run:
            try:
                config = api.run(version.producer_run).config
            except KeyError:
                config = {}
        fn, reward_name = _reward_fn(args.reward, config)
        max_new = args.max_new_tokens or int((config.get("data") or {}).get("max_response_length") or 64)
        results = []
        for row in prompts:
            text = _render(row["prompt"], tokenizer, args.raw)
            gt = row["ground_truth"]
            if gt is None:
                gt = builtin_ground_truth(_last_user_text(row["prompt"]), config)
            outs = generate(model, tokenizer, text, n=args.n, temperature=args.temperature, top_p=args.top_p,
                            max_new_tokens=max_new)
            samples = []
            for resp in outs:
                reward = None
                if fn is not None and gt is not None:
                    score = fn(row.get("data_source") or "", resp, gt, row.get("extra_info"))
                    reward = float(score["score"] if isinstance(score, dict) else score)
                samples.append({"response": resp, "reward": reward})
            results.append({"prompt": text, "ground_truth": gt, "samples": samples})
    _print(args, version, reward_name, fn, results)
    return 0


def _print(args: argparse.Namespace, version: Any, reward_name: str | None, fn: Any, results: list[dict]) -> None:
    if args.json:
        print(json.dumps({"artifact": f"{version.project}/{version.qualified_name}", "reward": reward_name,
                          "results": results}, indent=1, ensure_ascii=False))
        return
    print(f"{version.project}/{version.qualified_name} ({', '.join(version.aliases) or 'no aliases'}; step "
          f"{version.metadata.get('step', version.step)})" + (f", reward: {reward_name}" if fn is not None else
                                                               ", no reward configured"))
    rewards = []
    for i, r in enumerate(results, 1):
        print(f"prompt {i}: {r['prompt']!r}" + (f"  (ground truth {r['ground_truth']!r})" if r["ground_truth"] else ""))
        for j, s in enumerate(r["samples"], 1):
            tail = "" if s["reward"] is None else f"   reward {s['reward']:.3f}"
            print(f"  [{j}] {s['response']!r}{tail}")
            if s["reward"] is not None:
                rewards.append(s["reward"])
    if rewards:
        print(f"mean reward {sum(rewards) / len(rewards):.3f} over {len(rewards)} samples")
    elif fn is not None:
        print("no rewards: the prompts have no ground truth (give --ground-truth or a prompts file with "
              "reward_model.ground_truth)", file=sys.stderr)
