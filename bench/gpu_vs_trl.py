"""GPU benchmark: rlcockpit GRPO with vLLM rollout vs TRL's GRPOTrainer with vLLM colocate, same settings.

A Qwen2.5-0.5B-shaped model built from its config with random weights (nothing is downloaded), a
byte-level BPE tokenizer trained in code, GRPO with 64 prompts x n=8, 256-token responses, bf16, one GPU.
Each trainer runs in its own subprocess (GPU memory and vLLM state do not leak between them); the parent
prints tokens/s, s/step split into phases, peak memory (torch.cuda.max_memory_allocated / reserved, and
the device's total), MFU, the ratio ours/TRL, and preflight's memory estimate next to the measured peak.

    python bench/gpu_vs_trl.py --json                 # the benchmark (needs CUDA, vllm, trl)
    python bench/gpu_vs_trl.py --smoke --json         # the same code on CPU at a toy size (a test runs it)

Needs on the device: torch with CUDA, vllm (GPU build), trl, transformers, and rlcockpit on PYTHONPATH.
Goal (issue 18): >= 1.5x TRL's tokens/s at equal settings, peak memory <= 80% of the device.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_shapes  # noqa: E402 - the bench folder's own helper module

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# dense bf16 tensor-core peak per device, TFLOP/s (vendor datasheets); --peak-tflops overrides
PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "A10": 125.0, "L4": 121.0}


def settings(args: argparse.Namespace) -> dict[str, Any]:
    if args.smoke:
        return {"shape": "toy", "vocab": 512, "prompts": 4, "n": 2, "response": 16, "prompt_max": 96, "micro": 8,
                "dtype": "fp32", "steps": 3, "device": "cpu", "gpu_mem": 0.05}
    return {"shape": "qwen2.5-0.5b", "vocab": 8192, "prompts": args.prompts, "n": args.n, "response": args.response,
            "prompt_max": 128, "micro": args.micro, "dtype": "bf16", "steps": args.steps, "device": "cuda",
            "gpu_mem": args.gpu_memory_utilization}


def prepare(workdir: Path, s: dict[str, Any]) -> dict[str, str]:
    tok = bench_shapes.build_bpe_tokenizer(workdir / "tok", vocab_size=s["vocab"])
    model = bench_shapes.build_model_dir(workdir / "model", s["shape"], tok, dtype=s["dtype"])
    data = bench_shapes.write_dataset(workdir / "train.jsonl", s["prompts"] * (s["steps"] + 2))
    reward = bench_shapes.write_reward(workdir / "reward.py")
    return {"model": str(model), "data": str(data), "reward": reward, "reward_file": str(workdir / "reward.py")}


def uses_vllm(s: dict[str, Any]) -> bool:
    """vLLM on both sides on a GPU; on CPU (smoke) only where the vLLM CPU build is installed."""
    return importlib.util.find_spec("vllm") is not None


# ------------------------------------------------------------------------------------------- the two sides

def run_ours(workdir: Path, s: dict[str, Any], paths: dict[str, str]) -> dict[str, Any]:
    import torch

    import rlcockpit
    from rlcockpit.trainer.config import load_config
    from rlcockpit.trainer.loop import train

    cfg = load_config(overrides=[
        f"actor.model.path={paths['model']}", f"data.train_files=[{paths['data']}]", f"reward.custom_fn={paths['reward']}",
        f"data.train_batch_size={s['prompts']}", f"rollout.n={s['n']}", f"data.max_response_length={s['response']}",
        f"data.max_prompt_length={s['prompt_max']}", f"actor.ppo_mini_batch_size={s['prompts']}",
        f"actor.ppo_micro_batch_size={s['micro']}", f"actor.model.dtype={s['dtype']}", "actor.optim.lr=1e-6",
        f"rollout.name={'vllm' if uses_vllm(s) else 'hf'}", f"rollout.gpu_memory_utilization={s['gpu_mem']}",
        f"trainer.total_training_steps={s['steps']}", "trainer.test_freq=0", f"trainer.device={s['device']}",
        f"trainer.seed={s.get('seed', 42)}", f"actor.model.enable_gradient_checkpointing={s.get('gradient_checkpointing', False)}", f"trainer.num_threads={s.get('threads', 0)}", *s.get("overrides", []),
        "trainer.logger=[rlcockpit]", "health.enable=false", "trainer.preflight=off",
        f"trainer.rlcockpit_dir={workdir / 'store'}", f"trainer.default_local_dir={workdir / 'ckpt'}"])
    cpu_steps = _time_our_steps()
    result = train(cfg)
    hist = rlcockpit.Api(str(workdir / "store")).run(result.run_id).history().iloc[1:]  # step 0 = data stats
    steady = hist.iloc[1:] if len(hist) > 1 else hist  # the first step warms kernels and the engine up
    phases = {c.split("/", 1)[1]: float(steady[c].median()) for c in steady.columns if c.startswith("timing_s/")}
    return {"engine": cfg.rollout.name, "sec_per_step": phases.pop("step"), "phases": phases,
            "step_times": [float(x) for x in steady["timing_s/step"]], "step_cpu_times": cpu_steps[1:] or cpu_steps,
            "response_tokens_per_step": float(steady["response_length/mean"].median()) * s["prompts"] * s["n"],
            "prompt_tokens_per_step": float(steady["prompt_length/mean"].median()) * s["prompts"] * s["n"],
            **_peak_memory(torch), "memory_estimate": _estimate(cfg)}


def _time_our_steps() -> list[float]:
    """Process CPU seconds of each of our training steps (both threads' work): on a shared machine the
    wall time says how busy the neighbours were, the CPU time what the step cost."""
    from rlcockpit.trainer import loop

    cpu: list[float] = []
    plain = loop.train_step

    def timed_step(*a: Any, **k: Any) -> Any:
        c0 = time.process_time()
        try:
            return plain(*a, **k)
        finally:
            cpu.append(time.process_time() - c0)

    loop.train_step = timed_step
    return cpu


def run_trl(workdir: Path, s: dict[str, Any], paths: dict[str, str]) -> dict[str, Any]:
    import torch
    import trl.trainer.grpo_trainer as grpo_mod
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    rows = [json.loads(ln) for ln in Path(paths["data"]).read_text().splitlines()]
    ds = Dataset.from_list([{"prompt": r["prompt"], "ground_truth": r["reward_model"]["ground_truth"]} for r in rows])
    phases: dict[str, list[float]] = {}
    plain_ctx = grpo_mod.profiling_context

    class Timed:  # TRL's own phase timers (sync_weights, vLLM.generate...), recorded here
        def __init__(self, trainer: Any, name: str) -> None:
            self.name, self.inner = name, plain_ctx(trainer, name)

        def __enter__(self) -> Any:
            self.t0 = time.perf_counter()
            return self.inner.__enter__()

        def __exit__(self, *exc: Any) -> Any:
            phases.setdefault(self.name, []).append(time.perf_counter() - self.t0)
            return self.inner.__exit__(*exc)

    grpo_mod.profiling_context = Timed
    steps: list[float] = []
    cpu_steps: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            self.t0, self.c0 = time.perf_counter(), time.process_time()

        def on_step_end(self, *a: Any, **k: Any) -> None:
            steps.append(time.perf_counter() - self.t0)
            cpu_steps.append(time.process_time() - self.c0)

    total = s["prompts"] * s["n"]
    vllm = uses_vllm(s)
    targs = GRPOConfig(
        output_dir=str(workdir / "trl"), per_device_train_batch_size=min(total, s["micro"]), num_generations=s["n"],
        gradient_accumulation_steps=max(1, total // s["micro"]), max_completion_length=s["response"],
        learning_rate=1e-6, beta=0.0, temperature=1.0, bf16=s["dtype"] == "bf16", use_cpu=s["device"] == "cpu",
        max_steps=s["steps"], logging_steps=1, report_to=[], save_strategy="no", seed=s.get("seed", 42),
        dataloader_num_workers=0,
        use_vllm=vllm, vllm_mode="colocate", vllm_gpu_memory_utilization=s["gpu_mem"],
        vllm_enable_sleep_mode=vllm and s["device"] == "cuda",
        # TRL turns gradient checkpointing on by default; equal settings = ours (off unless asked)
        gradient_checkpointing=s.get("gradient_checkpointing", False))
    tok = AutoTokenizer.from_pretrained(paths["model"])
    model = AutoModelForCausalLM.from_pretrained(paths["model"], dtype=torch.bfloat16 if s["dtype"] == "bf16"
                                                 else torch.float32)
    trainer = GRPOTrainer(model=model, reward_funcs=[bench_shapes.reward_fn_for_trl(paths["reward_file"])],
                          args=targs, train_dataset=ds, processing_class=tok, callbacks=[StepTimer()])
    trainer.train()
    steady = steps[1:] or steps
    # TRL generates once per gradient_accumulation_steps micro-steps: sum its phases over a step
    per_step = {k: sum(v) / max(1, len(steps)) for k, v in phases.items()}
    resp = [m["completions/mean_length"] for m in trainer.state.log_history if "completions/mean_length" in m]
    return {"engine": "vllm colocate" if vllm else "transformers.generate", "sec_per_step": statistics.median(steady),
            "step_times": steady, "step_cpu_times": cpu_steps[1:] or cpu_steps,
            "phases": per_step, "response_tokens_per_step": statistics.median(resp[1:] or resp) * total
            if resp else float("nan"), **_peak_memory(torch)}


def _peak_memory(torch: Any) -> dict[str, Any]:
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        return {"peak_allocated_gib": torch.cuda.max_memory_allocated() / 2**30,
                "peak_reserved_gib": torch.cuda.max_memory_reserved() / 2**30,
                "device_total_gib": props.total_memory / 2**30, "device": props.name}
    import resource

    return {"peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "device": "cpu"}


def _estimate(cfg: Any) -> dict[str, Any]:
    from rlcockpit.preflight.memory import estimate_memory
    from rlcockpit.preflight.runner import model_shape_for, train_shape_for

    dev = "cuda" if cfg.trainer.device == "cuda" else "cpu"
    est = estimate_memory(model_shape_for(cfg), train_shape_for(cfg, dev, None))
    return {"peak_gib": est.peak_gib, "phases_gib": {k: v / 2**30 for k, v in est.phases.items()}}


# ------------------------------------------------------------------------------------------- parent

def flops_per_step(n_params: int, r: dict[str, Any]) -> float:
    """6N per trained token (forward + backward) + 2N per token of the old-log-prob pass and of generation."""
    tokens = r["prompt_tokens_per_step"] + r["response_tokens_per_step"] if "prompt_tokens_per_step" in r else \
        r["response_tokens_per_step"] * 1.2
    return 6 * n_params * tokens + 2 * n_params * tokens + 2 * n_params * r["response_tokens_per_step"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="CPU, toy model, 3 steps: checks the script end to end")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--response", type=int, default=256)
    ap.add_argument("--micro", type=int, default=64, help="samples per forward/backward on both sides")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    ap.add_argument("--peak-tflops", type=float, default=None)
    ap.add_argument("--only", choices=["ours", "trl"], default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        side, spec = args.child[0], json.loads(args.child[1])
        if spec["settings"].get("threads"):
            import torch

            torch.set_num_threads(spec["settings"]["threads"])  # before TRL or the trainer start any work
        out = (run_ours if side == "ours" else run_trl)(Path(spec["workdir"]), spec["settings"], spec["paths"])
        print("RESULT " + json.dumps(out, default=float))
        return 0
    s = settings(args)
    if s["device"] == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("gpu_vs_trl: no CUDA device (use --smoke on CPU)", file=sys.stderr)
            return 2
    results: dict[str, Any] = {"settings": s}
    with tempfile.TemporaryDirectory(prefix="rlcockpit-gpu-bench-") as tmp:
        workdir = Path(tmp)
        paths = prepare(workdir, s)
        n_params = _count_params(paths["model"])
        for side in ("ours", "trl"):
            if args.only and side != args.only:
                continue
            r = run_side(side, workdir / side, s, paths)
            if r is None:
                return 1
            peak = args.peak_tflops or next((v for k, v in PEAK_TFLOPS.items() if k in str(r.get("device"))), None)
            r["mfu"] = flops_per_step(n_params, r) / r["sec_per_step"] / (peak * 1e12) if peak else None
            results[side] = r
    results["n_params"] = n_params
    if "ours" in results and "trl" in results:
        results["tokens_per_s_ratio"] = results["ours"]["tokens_per_s"] / results["trl"]["tokens_per_s"]
    print(json.dumps(results, indent=2, default=float) if args.json else _table(results))
    return 0


def run_side(side: str, workdir: Path, s: dict[str, Any], paths: dict[str, str]) -> dict[str, Any] | None:
    """One trainer (``ours`` | ``trl``) in its own subprocess; its figures, or None (the error is printed)."""
    spec = {"workdir": str(workdir), "settings": s, "paths": paths}
    t0 = time.time()
    proc = subprocess.run([sys.executable, __file__, "--child", side, json.dumps(spec)], capture_output=True,
                          text=True, timeout=3600)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        print(f"{Path(__file__).name}: {side} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}", file=sys.stderr)
        return None
    r = json.loads(line[0][7:])
    r["wall_s"] = time.time() - t0
    r["tokens_per_s"] = r["response_tokens_per_step"] / r["sec_per_step"]
    return r


def _count_params(path: str) -> int:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(path))
    return sum(p.numel() for p in model.parameters())


def _table(res: dict[str, Any]) -> str:
    lines = [f"model {res['settings']['shape']} ({res['n_params'] / 1e6:.0f}M), {res['settings']['prompts']} prompts x "
             f"n={res['settings']['n']}, {res['settings']['response']} tokens, {res['settings']['dtype']}"]
    for side in ("ours", "trl"):
        if side in res:
            r = res[side]
            mem = (f"peak {r['peak_allocated_gib']:.1f} GiB allocated / {r['device_total_gib']:.0f} GiB"
                   if "peak_allocated_gib" in r else f"peak RSS {r['peak_rss_gib']:.2f} GiB")
            phases = ", ".join(f"{k} {v:.2f}s" for k, v in sorted(r["phases"].items(), key=lambda kv: -kv[1])[:5])
            lines.append(f"{side:5} [{r['engine']}] {r['sec_per_step']:.2f} s/step, {r['tokens_per_s']:.0f} tok/s, "
                         f"{mem}, MFU {r['mfu'] if r['mfu'] is None else format(r['mfu'], '.1%')}; {phases}")
    if "tokens_per_s_ratio" in res:
        lines.append(f"ours / TRL tokens/s: {res['tokens_per_s_ratio']:.2f}x")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
