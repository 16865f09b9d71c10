"""Validate the preflight memory estimate against measured peak memory of real short RL steps on CPU.

Each scenario runs in a fresh subprocess: it builds a Qwen2 model of the given shape (the trainer's
tiny-model builder), records RSS as the baseline *before* the model exists, then runs two RL steps
with the trainer's own components — ``HFRolloutEngine.generate`` for the whole rollout batch (KV
cache) and ``update_actor`` (micro-batched forward/backward + AdamW) — and reports peak RSS
(``ru_maxrss`` and a 2 ms psutil sampler) minus the baseline, with the peak of each phase (rollout,
update forward/backward, optimizer step) in the JSON. The parent compares it with
``rlcockpit.preflight.memory.estimate_memory`` for the same shapes. The child fixes glibc's mmap threshold
as the trainer does on CPU (``rlcockpit.trainer.host_memory``; ``RLCOCKPIT_BENCH_ALLOCATOR=glibc-default``
measures without it). ``--device cuda`` measures ``torch.cuda.max_memory_allocated`` instead of RSS.

    python bench/memory_estimate.py            # table
    python bench/memory_estimate.py --json     # machine-readable (BENCHMARKS.md)
    python bench/memory_estimate.py --device cuda --json   # on a GPU
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

SCENARIOS: list[dict[str, Any]] = [
    {"name": "fp32 full", "hidden": 512, "layers": 8, "heads": 8, "intermediate": 2048, "vocab": None,
     "batch": 8, "n": 4, "micro": 16, "prompt": 48, "response": 48, "dtype": "fp32"},
    {"name": "fp32 + KL ref", "hidden": 512, "layers": 8, "heads": 8, "intermediate": 2048, "vocab": None,
     "batch": 8, "n": 4, "micro": 32, "prompt": 48, "response": 48, "dtype": "fp32", "ref": True},
    {"name": "grad ckpt, big micro", "hidden": 512, "layers": 8, "heads": 8, "intermediate": 2048, "vocab": None,
     "batch": 8, "n": 8, "micro": 64, "prompt": 64, "response": 64, "dtype": "fp32", "ckpt": True},
    {"name": "LoRA r8", "hidden": 512, "layers": 8, "heads": 8, "intermediate": 2048, "vocab": None,
     "batch": 8, "n": 4, "micro": 32, "prompt": 48, "response": 48, "dtype": "fp32", "lora": 8},
    {"name": "32k vocab, long", "hidden": 384, "layers": 6, "heads": 6, "intermediate": 1536, "vocab": 32000,
     "batch": 4, "n": 4, "micro": 8, "prompt": 96, "response": 96, "dtype": "fp32"},
    {"name": "152k vocab (Qwen2.5), GQA", "hidden": 256, "layers": 4, "heads": 4, "kv_heads": 2, "intermediate": 1024,
     "vocab": 151936, "batch": 4, "n": 4, "micro": 4, "prompt": 64, "response": 64, "dtype": "fp32"},
]


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    import resource
    import threading

    import psutil
    import torch

    torch.set_num_threads(2)
    torch.manual_seed(0)
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from rlcockpit.trainer.config import load_config
    from rlcockpit.trainer.host_memory import return_freed_memory_to_os
    from rlcockpit.trainer.rollout import HFRolloutEngine, SamplingParams
    from rlcockpit.trainer.tiny import build_char_tokenizer
    from rlcockpit.trainer.update import update_actor

    if os.environ.get("RLCOCKPIT_BENCH_ALLOCATOR") != "glibc-default":
        return_freed_memory_to_os()  # as the trainer does on CPU (trainer/host_memory.py)

    tok = build_char_tokenizer()
    vocab = spec["vocab"] or len(tok)
    overrides = [f"data.train_batch_size={spec['batch']}", f"rollout.n={spec['n']}",
                 f"actor.ppo_mini_batch_size={spec['batch']}", f"actor.ppo_micro_batch_size={spec['micro']}",
                 f"actor.model.dtype={spec['dtype']}", f"data.max_response_length={spec['response']}"]
    cfg = load_config(overrides=overrides)
    x = torch.randn(64, 64)
    (x @ x).sum().item()  # thread pools up before the baseline
    proc = psutil.Process()
    baseline = proc.memory_info().rss
    peak = [baseline]
    phase = ["build"]
    phase_peak: dict[str, int] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            rss = proc.memory_info().rss
            peak[0] = max(peak[0], rss)
            phase_peak[phase[0]] = max(phase_peak.get(phase[0], 0), rss)
            time.sleep(0.002)

    def enter(name: str) -> None:
        rss = proc.memory_info().rss
        phase_peak[phase[0]] = max(phase_peak.get(phase[0], 0), rss)
        phase[0] = name
        phase_peak[name] = max(phase_peak.get(name, 0), rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    config = Qwen2Config(vocab_size=vocab, hidden_size=spec["hidden"], intermediate_size=spec["intermediate"],
                         num_hidden_layers=spec["layers"], num_attention_heads=spec["heads"],
                         num_key_value_heads=spec.get("kv_heads", spec["heads"]), max_position_embeddings=1024,
                         tie_word_embeddings=True, pad_token_id=tok.pad_token_id)
    dev = torch.device(spec.get("device", "cpu"))
    if dev.type == "cuda":  # GPU mode: torch's own accounting of the tensors, from an empty device
        torch.cuda.reset_peak_memory_stats()
        cuda_base = torch.cuda.memory_allocated()
    model = Qwen2ForCausalLM(config).to(dev)
    if spec.get("ckpt"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = True  # generation still uses the cache; the trainer does the same
    ref = None
    if spec.get("lora"):
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=spec["lora"], lora_alpha=16, task_type="CAUSAL_LM",
                                                 target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    elif spec.get("ref"):
        import copy

        ref = copy.deepcopy(model).eval()
        for p in ref.parameters():
            p.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-6)
    # phase tags inside update_actor: forward (until the loss exists), backward, optimizer step
    import rlcockpit.trainer.update as upd

    plain_fwd, plain_step = upd.forward_policy, opt.step

    def tagged_fwd(*a: Any, **k: Any) -> Any:
        enter("update_fwd")
        out = plain_fwd(*a, **k)
        enter("update_bwd")
        return out

    def tagged_step(*a: Any, **k: Any) -> Any:
        enter("optimizer_step")
        out = plain_step(*a, **k)
        enter("update_other")
        return out

    upd.forward_policy, opt.step = tagged_fwd, tagged_step
    if ref is not None:
        ref = ref.to(dev)
    engine = HFRolloutEngine(model, pad_token_id=tok.pad_token_id, eos_token_id=[-1], device=dev)
    g = torch.Generator().manual_seed(0)
    for _ in range(2):
        prompts = [torch.randint(7, min(vocab, 100), (spec["prompt"],), generator=g).tolist()
                   for _ in range(spec["batch"] * spec["n"])]
        enter("rollout")
        out = engine.generate(prompts, SamplingParams(max_new_tokens=spec["response"], temperature=1.0))
        enter("after_rollout")
        ids, mask = out.input_ids, out.attention_mask
        batch = {"input_ids": ids, "attention_mask": mask, "responses": out.responses,
                 "response_mask": out.response_mask, "advantages": torch.randn(out.responses.shape, device=dev)}
        if ref is not None:
            with torch.no_grad():
                from rlcockpit.trainer.models import forward_logprobs

                batch["ref_log_prob"] = torch.cat([
                    forward_logprobs(ref, ids[i:i + spec["micro"]], mask[i:i + spec["micro"]],
                                     out.responses.size(1))[0] for i in range(0, ids.size(0), spec["micro"])])
        update_actor(cfg, model, opt, batch, __import__("contextlib").nullcontext)
        enter("after_update")
    stop.set()
    sampler.join()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if dev.type == "cuda":  # compare like with like: max_memory_allocated above the empty device
        baseline, peak[0], maxrss = cuda_base, torch.cuda.max_memory_allocated(), 0
    return {"baseline_rss": baseline, "peak_rss": max(peak[0], maxrss), "vocab": vocab,
            "n_params": sum(p.numel() for p in model.parameters()),
            "response_tokens": int(out.responses.size(1)),
            "phase_peak_mib": {k: round((v - baseline) / 2**20, 1) for k, v in phase_peak.items()}}


def _estimate(spec: dict[str, Any], vocab: int) -> Any:
    from rlcockpit.preflight.memory import ModelShape, TrainShape, estimate_memory

    shape = ModelShape(hidden=spec["hidden"], layers=spec["layers"], heads=spec["heads"],
                       kv_heads=spec.get("kv_heads", spec["heads"]),
                       intermediate=spec["intermediate"], vocab=vocab, tie_embeddings=True, attention_bias=True)
    train = TrainShape(train_batch_size=spec["batch"], rollout_n=spec["n"], micro_batch_size=spec["micro"],
                       prompt_length=spec["prompt"], response_length=spec["response"], compute_dtype=spec["dtype"],
                       weight_dtype="fp32", grad_checkpointing=bool(spec.get("ckpt")),
                       lora_rank=int(spec.get("lora") or 0), needs_ref=bool(spec.get("ref")),
                       device=spec.get("device", "cpu"))
    return estimate_memory(shape, train)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--only", help="run only scenarios whose name contains this")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="cuda: measure torch.cuda.max_memory_allocated on a GPU (the estimate without the CUDA context)")
    args = ap.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(_child(json.loads(args.child))))
        return 0
    rows = []
    for spec in SCENARIOS:
        if args.only and args.only not in spec["name"]:
            continue
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "2"}
        t0 = time.time()
        spec = {**spec, "device": args.device}
        proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                              text=True, env=env, timeout=2400)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode != 0 or not line:
            print(f"scenario {spec['name']!r} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
            return 1
        measured = json.loads(line[0][7:])
        est = _estimate(spec, measured["vocab"])
        if args.device == "cuda":  # max_memory_allocated does not see the CUDA context
            est.peak_bytes -= est.components.get("framework_overhead", 0)
        delta = measured["peak_rss"] - measured["baseline_rss"]
        rows.append({"scenario": spec["name"], "n_params": measured["n_params"],
                     "measured_mib": round(delta / 2**20, 1), "estimated_mib": round(est.peak_bytes / 2**20, 1),
                     "error_pct": round(100 * (est.peak_bytes - delta) / delta, 1),
                     "seconds": round(time.time() - t0, 1), "phase_peak_mib": measured["phase_peak_mib"],
                     "estimate_mib": {k: round(v / 2**20, 1) for k, v in {**est.components, **est.phases}.items()},
                     "spec": spec})
    if args.json:
        errs = [abs(r["error_pct"]) for r in rows]
        print(json.dumps({"scenarios": rows, "mean_abs_error_pct": round(sum(errs) / len(errs), 1),
                          "max_abs_error_pct": max(errs)}, indent=2))
    else:
        print(f"{'scenario':24} {'params':>10} {'measured MiB':>13} {'estimated MiB':>14} {'error':>7}")
        for r in rows:
            print(f"{r['scenario']:24} {r['n_params']:>10,} {r['measured_mib']:>13} {r['estimated_mib']:>14} "
                  f"{r['error_pct']:>+6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
