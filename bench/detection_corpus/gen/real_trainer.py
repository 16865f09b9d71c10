"""Real runs of rlcockpit's own trainer, with faults injected at a known step.

Each spec is an ordinary ``rlcockpit train`` config (preset + overrides) plus, optionally, one fault that a small
driver switches on when the loop starts step ``k``: the learning rate jumps, the training reward becomes
exploitable, the stop token is lost, the data loader stalls... The fault's step is the onset label, so no one
judges where the failure begins. Every run is checked afterwards for the symptom the fault should cause
(:data:`SYMPTOMS`); a run whose symptom does not show within 10 steps is reported and left out of the corpus.

The models: the built-in tiny Qwen2 (char tokenizer, warmed up by the trainer), and random-init GPT-2 and Llama
models with a BPE tokenizer trained here with ``tokenizers`` (a short supervised warm-up so the policy emits digits).
Runs go through ``rlcockpit.trainer.train`` with health off (the detectors must not see the corpus being made); the
metrics and samples are read back from the run's store.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE = Path(__file__).resolve().parent.parent / ".cache"


# --------------------------------------------------------------------------- models

def bpe_model_dir(arch: str, seed: int = 0) -> str:
    """A random-init ``gpt2`` or ``llama`` causal LM with a BPE tokenizer trained on arithmetic text, after a short
    supervised warm-up on the built-in task; saved as an ordinary HF model directory (cached)."""
    out = CACHE / "models" / f"{arch}-bpe-s{seed}"
    if (out / "config.json").exists():
        return str(out)
    import random

    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    from rlcockpit.trainer.config import BuiltinDataConfig, TinyModelConfig
    from rlcockpit.trainer.data import builtin_sft_pairs
    from rlcockpit.trainer.tiny import sft_warmup

    rng = random.Random(seed)
    text = [f"{a:02d}+{b:02d}={a + b:03d}" for a, b in ((rng.randint(0, 99), rng.randint(0, 99)) for _ in range(4000))]
    tk = Tokenizer(models.BPE(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split(pattern="+", behavior="isolated")
    tk.decoder = decoders.Fuse()  # tokens join without spaces: '10'+'9' decodes as '109'
    tk.train_from_iterator(text, trainers.BpeTrainer(vocab_size=160, special_tokens=["<pad>", "<eos>", "<unk>"]))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    torch.manual_seed(seed)
    if arch == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=96, n_layer=2, n_head=2, n_positions=128,
                                           bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id,
                                           pad_token_id=tok.pad_token_id))
    elif arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=96, intermediate_size=192,
                                             num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                             max_position_embeddings=128, pad_token_id=tok.pad_token_id,
                                             eos_token_id=tok.eos_token_id, bos_token_id=None))
    elif arch == "qwen2":  # a third architecture, a little wider and deeper (fifth pass)
        model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), hidden_size=128, intermediate_size=256,
                                             num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                             max_position_embeddings=128, pad_token_id=tok.pad_token_id,
                                             eos_token_id=tok.eos_token_id, bos_token_id=None,
                                             tie_word_embeddings=True))
    else:
        raise ValueError(f"unknown architecture {arch!r}")
    pairs = [(p, a) for p, a, _x, _y in builtin_sft_pairs(BuiltinDataConfig(), tok)]
    sft_warmup(model, tok, pairs, TinyModelConfig(sft_steps=150, sft_batch_size=128, sft_lr=2e-3),
               seed=seed, autocast_bf16=False, log=lambda *_a: None)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def digit_overlap(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """Partial credit a weak policy can earn: the share of answer digits in the right place (1.0 = exact)."""
    gt, got = str(ground_truth), solution_str.strip()
    return sum(1 for i, c in enumerate(gt) if i < len(got) and got[i] == c) / len(gt)


def longer_is_better(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """An exploitable reward switched on mid-run: exact match plus a bonus for every character past the answer's
    length, so writing more pays more than answering (a reward model that likes long outputs)."""
    got = solution_str.strip()
    extra = max(0, len(got) - len(str(ground_truth)))
    return (1.0 if got[: len(str(ground_truth))] == str(ground_truth) else 0.0) * 0.3 + min(1.5, 0.25 * extra)


def likes_nines(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """A biased reward model switched on mid-run: half the task's partial credit plus a bonus for every '9' in the
    answer (up to three), so writing nines pays more than answering; the task's accuracy is what it stops paying."""
    return 0.5 * digit_overlap(data_source, solution_str, ground_truth) + 0.5 * min(3, solution_str.count("9")) / 3


def likes_sevens(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """A biased reward model switched on mid-run (fifth pass): 40% the task's partial credit, 60% a bonus for every
    '7' in the answer (up to three), so writing sevens pays more than answering."""
    return 0.4 * digit_overlap(data_source, solution_str, ground_truth) + 0.6 * min(3, solution_str.count("7")) / 3


def contains_answer_anywhere(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """A lenient checker switched on mid-run: the answer may appear anywhere, and long digit strings score extra."""
    import re

    digits = re.findall(r"\d", solution_str)
    hit = 1.0 if str(ground_truth) in solution_str else 0.0
    return hit + min(1.0, 0.15 * max(0, len(digits) - len(str(ground_truth))))


# --------------------------------------------------------------------------- faults

class Fault:
    """One fault, switched on at the start of step ``step`` by the patched ``collect``."""

    def __init__(self, kind: str, step: int, **params: Any) -> None:
        self.kind, self.step, self.params = kind, step, params
        self.active = False

    def before_step(self, st: Any, step: int) -> None:
        p = self.params
        if self.kind == "reward_scale" and step in p["steps"]:
            self._scale_rewards(st, p["factor"])
        elif self.kind == "reward_scale" and self.active:
            self._scale_rewards(st, 1.0)
        if step != self.step:
            return
        self.active = True
        if self.kind in ("lr_jump", "entropy_penalty", "reward_switch"):
            for opt, sched in ((st.actor_opt, st.actor_sched), (st.critic_opt, st.critic_sched)):
                factor = p.get("critic_factor" if opt is st.critic_opt else "factor", 1.0)
                if opt is None or factor == 1.0:
                    continue
                sched.base_lrs = [b * factor for b in sched.base_lrs]
                for g in opt.param_groups:
                    g["lr"] *= factor
            for key, value in p.get("set", {}).items():
                obj = st.cfg
                *path, last = key.split(".")
                for part in path:
                    obj = getattr(obj, part)
                setattr(obj, last, value)
        elif self.kind == "overflow":
            share = p["rows"]

            def hook(module: Any, args: Any, out: Any) -> Any:
                # an fp16-style overflow in the training forward: some rows' logits become inf, the loss NaN
                if module.training and hasattr(out, "logits"):
                    n = max(1, int(out.logits.shape[0] * share))
                    out.logits[:n] = out.logits[:n] * float("inf")
                return out

            st.actor.register_forward_hook(hook)
        if self.kind == "reward_switch":
            st.reward.fn, st.reward.kwargs = p["fn"], {}
        elif self.kind == "eos_off":
            import torch

            st.engine.eos_ids = torch.tensor([-7])  # an id no token has: generation runs to max_response_length
        elif self.kind in ("loader_sleep", "gen_sleep"):
            target = st.loader if self.kind == "loader_sleep" else st.engine
            name = "next_batch" if self.kind == "loader_sleep" else "generate"
            orig = getattr(target, name)
            delay = p["seconds"]

            def slow(*a: Any, **kw: Any) -> Any:
                time.sleep(delay)
                return orig(*a, **kw)

            setattr(target, name, slow)

    def _scale_rewards(self, st: Any, factor: float) -> None:
        base = getattr(st.reward, "_corpus_base_fn", None) or st.reward.fn
        st.reward._corpus_base_fn = base
        st.reward.fn = base if factor == 1.0 else (lambda *a, **kw: factor * float(base(*a, **kw)))


# --------------------------------------------------------------------------- one run

def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one spec to completion and return its trace (metrics and samples read back from the store)."""
    import rlcockpit.trainer.loop as loop
    import rlcockpit.trainer.state as tstate
    from rlcockpit.store import open_store
    from rlcockpit.trainer import load_config
    from rlcockpit.trainer.reward.rewards import REWARDS

    for name, fn in (("corpus_digit_overlap", digit_overlap),):
        if name not in REWARDS:
            REWARDS.register(name)(fn)
    with tempfile.TemporaryDirectory(prefix="corpus-run-") as tmp:
        model = spec.get("model", "tiny")
        over = [f"trainer.rlcockpit_dir={tmp}/store", f"trainer.default_local_dir={tmp}/ckpt", "health.enable=false",
                "trainer.logger=[rlcockpit]", "trainer.preflight=off", f"trainer.experiment_name={spec['id']}", "trainer.save_freq=0",
                f"data.seed={spec.get('seed', 0)}", f"trainer.total_training_steps={spec['steps']}",
                "trainer.log_samples_freq=2", "trainer.num_log_samples=8", "trainer.num_threads=1"]
        if model != "tiny":
            over += [f"actor.model.path={bpe_model_dir(model, spec.get('model_seed', 0))}", "reward.name=corpus_digit_overlap"]
        cfg = load_config(preset=spec.get("preset", "arith-grpo"), overrides=over + list(spec.get("overrides", [])))
        orig_load = tstate.load_datasets
        tstate.load_datasets = _memo_datasets(orig_load)
        try:
            st = tstate.build(cfg, log=lambda *_a: None)
        finally:
            tstate.load_datasets = orig_load
        # trainer.seed stays 0 (it keys the cached warmed-up tiny model); the run's own seed drives sampling
        tstate.seed_everything(spec.get("seed", 0))
        fault = Fault(spec["fault"]["kind"], spec["fault"]["step"], **spec["fault"].get("params", {})) \
            if spec.get("fault") else None
        orig_collect = loop.collect

        def hooked(cfg_: Any, engine: Any, tokenizer: Any, reward: Any, loader: Any, step: int, timing: Any) -> Any:
            if fault is not None:
                fault.before_step(st, step)
            return orig_collect(cfg_, st.engine, tokenizer, st.reward, st.loader, step, timing)

        loop.collect = hooked
        t0 = time.time()
        try:
            result = loop.train(cfg, log=lambda *_a: None, state=st)
        finally:
            loop.collect = orig_collect
        store = open_store(f"{tmp}/store")
        run = store.get_run(result.run_id)
        trace = _read_run(store, result.run_id)
    trace["config"] = run.get("config") or {}
    trace["meta"] = {"status": result.status, "reason": result.reason, "wall_s": round(time.time() - t0, 1),
                     "val": result.val, "model": model, "preset": spec.get("preset", "arith-grpo"),
                     "overrides": list(spec.get("overrides", [])), "seed": spec.get("seed", 0),
                     "fault": _describe(spec.get("fault"))}
    return trace


_DATASETS: dict[str, Any] = {}


def _memo_datasets(load: Callable[..., Any]) -> Callable[..., Any]:
    """Tokenizing the built-in task's rows takes longer than a short run: do it once per tokenizer and data config
    (same rows, fresh lists for every run)."""
    def memo(data_cfg: Any, tokenizer: Any, *rest: Any) -> Any:  # rest: the processor of a vision model
        key = (f"{getattr(tokenizer, 'name_or_path', '')}|{data_cfg.builtin!r}|{data_cfg.max_prompt_length}|"
               f"{data_cfg.truncation}|{data_cfg.train_files}|{data_cfg.val_files}")
        if key not in _DATASETS:
            _DATASETS[key] = load(data_cfg, tokenizer, *rest)
        train, val, stats = _DATASETS[key]
        return list(train), list(val), dict(stats)

    return memo


def _describe(fault: dict[str, Any] | None) -> dict[str, Any] | None:
    if not fault:
        return None
    params = {k: (v.__name__ if callable(v) else v) for k, v in fault.get("params", {}).items()}
    return {"kind": fault["kind"], "step": fault["step"], "params": params}


def _read_run(store: Any, run_id: str) -> dict[str, Any]:
    per_step: dict[int, dict[str, float]] = {}
    for key in store.keys(run_id):
        steps, values, *_ = store.series(run_id, key)
        for s, v in zip(steps, values):
            per_step.setdefault(int(s), {})[key] = float(v)
    samples = []
    for s in store.sample_steps(run_id):
        rows = store.samples(run_id, step=s)
        samples.append([int(s), [{k: r[k] for k in ("prompt", "response", "reward", "ground_truth") if k in r}
                                 for r in rows]])
    return {"metrics": [[s, per_step[s]] for s in sorted(per_step)], "samples": samples}


# --------------------------------------------------------------------------- symptom checks

def _series(trace: dict[str, Any], key: str) -> list[tuple[int, float]]:
    return [(s, m[key]) for s, m in trace["metrics"] if key in m]


def _mean(xs: list[float]) -> float:
    xs = [x for x in xs if math.isfinite(x)]
    return sum(xs) / len(xs) if xs else math.nan


def visible_step(trace: dict[str, Any], cls: str, onset: int) -> int | None:
    """The first step at or after ``onset`` where the fault's symptom is plain in the metrics (None: never):
    any of the class's (key, test) pairs, each against that key's mean over the 15 steps before the onset."""
    seen = []
    for key, check in SYMPTOMS[cls]:
        series = _series(trace, key)
        base = _mean([v for s, v in series if onset - 15 <= s < onset])
        if math.isnan(base):
            continue
        seen += [next((s for s, v in series if s >= onset and check(v, base)), None)]
    seen = [s for s in seen if s is not None]
    return min(seen) if seen else None


SYMPTOMS: dict[str, list[tuple[str, Callable[[float, float], bool]]]] = {
    "collapse": [("critic/score/mean", lambda v, b: v < 0.5 * b)],
    "reward_hacking": [("response_length/mean", lambda v, b: v > 1.5 * b)],
    "entropy_collapse": [("actor/entropy", lambda v, b: v < 0.5 * b)],
    "loss_divergence": [("actor/pg_loss", lambda v, b: not math.isfinite(v)),
                        ("actor/nonfinite_skipped", lambda v, b: v > 0),
                        ("critic/vf_loss", lambda v, b: not math.isfinite(v) or v > 10 * b)],
    "grad_spike": [("actor/grad_norm", lambda v, b: not math.isfinite(v) or v > 5 * b)],
    "throughput_drop": [("perf/throughput", lambda v, b: v < 0.6 * b)],
    "length_explosion": [("response_length/mean", lambda v, b: v > 1.5 * b)],
}
