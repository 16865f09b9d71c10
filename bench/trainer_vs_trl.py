"""rlcockpit's GRPO vs TRL's GRPOTrainer on the same model, task, batch and precision, side by side.

``--shape demo`` (default): both start from the same warmed-up tiny Qwen2 (rlcockpit's demo model, saved
as an ordinary HF directory), train on 2-digit addition with 16 prompts x 8 samples per step for the same
number of steps, with equal update settings taken from the ``arith-grpo`` config: the same prompts in the
same order (our loader's; TRL's sampler does not shuffle), completion length, sampling (temperature, top-p/k),
one optimizer step per batch, loss aggregation (verl's token-mean = TRL's ``loss_type="dapo"``), group std
scaling, clip range, lr (constant), AdamW betas/weight decay, grad clip and fp32/bf16. Both trained models are
then scored with the same greedy held-out evaluation (``--val-every K``: also every K steps).  Reports median
seconds/step and accuracy.

``--shape realistic``: a 13M-parameter random-init Qwen2 (8 layers, 256 wide, GQA 4/2) and a byte-level BPE
tokenizer (8k vocabulary) built in code, ~47-token chat prompts, 64-token responses (a random model rarely
stops early), 8 prompts x n=4, fp32; each trainer in its own subprocess, interleaved ours/TRL for every
seed (the order alternates), with the machine's load average recorded around each run.  Reports s/step,
the per-seed ratio and our phase split (speed only: a random model learns nothing in a few steps).

    python bench/trainer_vs_trl.py --json [--steps 30] [--markdown]
    python bench/trainer_vs_trl.py --shape realistic --markdown [--seeds 3 --steps 12]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def _cfg(args: argparse.Namespace, workdir: str, extra: list[str] | None = None) -> Any:
    from rlcockpit.trainer.config import load_config

    return load_config(preset="arith-grpo", overrides=[
        f"trainer.total_training_steps={args.steps}", f"trainer.test_freq={getattr(args, 'val_every', 0) or args.steps}",
        f"trainer.rlcockpit_dir={workdir}/store", f"trainer.default_local_dir={workdir}/ckpt",
        f"actor.model.dtype={args.dtype}", f"trainer.num_threads={args.threads}", "health.enable=false",
        "trainer.logger=[rlcockpit]",
        "actor.optim.warmup_style=constant",  # TRL below runs lr_scheduler_type="constant": same schedule on both sides
        *getattr(args, "run_overrides", []), *(extra or [])])


def run_rlcockpit(args: argparse.Namespace, workdir: str) -> dict[str, Any]:
    import rlcockpit
    from rlcockpit.trainer.loop import train

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpu_vs_trl

    cpu = gpu_vs_trl._time_our_steps()  # CPU seconds per step (a shared machine's wall time is its neighbours')
    result = train(_cfg(args, workdir, ["trainer.save_policy_model=true"]))
    hist = rlcockpit.Api(f"{workdir}/store").run(result.run_id).history()
    times = hist["timing_s/step"].dropna().tolist()[1:]  # drop the first (warm-up) step
    # the final weights scored by the very evaluation TRL's model gets (a loop-side scoring defect would show)
    final = f"{workdir}/ckpt/global_step_{result.steps}/actor"
    return {"sec_per_step_median": statistics.median(times), "sec_per_step_min": min(times),
            "cpu_sec_per_step_median": statistics.median(cpu[1:] or cpu),
            "val_acc_start": result.val[0][1],
            "val_acc_end": result.val[-1][1], "val_acc_end_reloaded": evaluate(final, args, workdir),
            "val_curve": [list(v) for v in result.val], "steps": result.steps}


def evaluate(path: str, args: argparse.Namespace, workdir: str) -> float:
    """The same greedy held-out evaluation rlcockpit logs as val-core/arith/acc/mean@1."""
    import torch

    from rlcockpit.trainer.models import load_actor_and_ref, load_tokenizer

    model, _ = load_actor_and_ref(_cfg(args, workdir), path, torch.device("cpu"))
    return evaluate_model(model, load_tokenizer(path), args, workdir)


def evaluate_model(model: Any, tok: Any, args: argparse.Namespace, workdir: str) -> float:
    """:func:`evaluate` on a model in memory (TRL's, during its run: the validation curve)."""
    import torch

    from rlcockpit.trainer.collect import validate
    from rlcockpit.trainer.data import load_datasets
    from rlcockpit.trainer.models import autocast_factory
    from rlcockpit.trainer.reward.rewards import RewardManager
    from rlcockpit.trainer.rollout.engine import ROLLOUT_ENGINES

    cfg = _cfg(args, workdir)
    _, val, _ = load_datasets(cfg.data, tok)
    was_training = model.training
    model.eval()
    engine = ROLLOUT_ENGINES.get("hf")(model, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                                       device="cpu", autocast=autocast_factory(cfg.actor.model.dtype, torch.device("cpu")))
    metrics, _ = validate(cfg, engine, tok, RewardManager.from_config(cfg, validation=True), val)
    model.train(was_training)
    return metrics["val-core/arith/acc/mean@1"]


# verl's loss_agg_mode -> TRL's loss_type with the same aggregation (TRL's default "dapo" is verl's token-mean)
TRL_LOSS_TYPE = {"token-mean": "dapo", "seq-mean-token-mean": "grpo", "seq-mean-token-sum-norm": "dr_grpo"}


def trl_prompts(cfg: Any, tokenizer: Any, steps: int) -> list[dict[str, Any]]:
    """The very prompts rlcockpit trains on, step by step (its loader's order; TRL's sampler does not shuffle)."""
    from rlcockpit.trainer.data import PromptLoader, load_datasets

    train_rows, _, _ = load_datasets(cfg.data, tokenizer)
    loader = PromptLoader(train_rows, cfg.data.train_batch_size, shuffle=cfg.data.shuffle,
                          seed=1 if cfg.data.seed is None else cfg.data.seed)
    return [{"prompt": r.prompt, "ground_truth": str(r.ground_truth)} for _ in range(steps) for r in loader.next_batch()]


def trl_config(cfg: Any, args: argparse.Namespace, workdir: str) -> Any:
    """TRL's GRPOConfig with every setting that shapes the update taken from our config: one optimizer step per
    batch of train_batch_size x n completions, the same aggregation, std scaling, clip, lr, AdamW, clip norm."""
    from trl import GRPOConfig

    n, bsz = cfg.rollout.n, cfg.data.train_batch_size
    a, r = cfg.actor, cfg.rollout
    return GRPOConfig(
        output_dir=f"{workdir}/trl", per_device_train_batch_size=bsz * n, num_generations=n, gradient_accumulation_steps=1,
        steps_per_generation=1, num_iterations=a.ppo_epochs, max_completion_length=cfg.data.max_response_length,
        learning_rate=a.optim.lr, weight_decay=a.optim.weight_decay, adam_beta1=a.optim.betas[0],
        adam_beta2=a.optim.betas[1], max_steps=args.steps, beta=0.0, loss_type=TRL_LOSS_TYPE[a.loss_agg_mode],
        scale_rewards="group" if cfg.algorithm.norm_adv_by_std_in_grpo else "none", temperature=r.temperature,
        top_p=r.top_p, top_k=max(0, r.top_k), use_cpu=True, bf16=(args.dtype == "bf16"), shuffle_dataset=False,
        logging_steps=1, report_to=[], save_strategy="no", seed=cfg.trainer.seed, lr_scheduler_type="constant",
        max_grad_norm=a.grad_clip, epsilon=a.clip_ratio if a.clip_ratio_low is None else a.clip_ratio_low,
        epsilon_high=a.clip_ratio if a.clip_ratio_high is None else a.clip_ratio_high, dataloader_num_workers=0)


def run_trl(args: argparse.Namespace, workdir: str, model_path: str) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOTrainer

    from rlcockpit.trainer.models import load_tokenizer

    cfg = _cfg(args, workdir)
    ds = Dataset.from_list(trl_prompts(cfg, load_tokenizer(model_path), args.steps + 2))

    def exact_match(completions: list, ground_truth: list, **kw: Any) -> list[float]:
        return [1.0 if c[0]["content"].strip() == g else 0.0 for c, g in zip(completions, ground_truth)]

    times: list[float] = []
    cpu: list[float] = []
    curve: list[list[float]] = []
    every = getattr(args, "val_every", 0)
    tok = load_tokenizer(model_path)

    class StepTimer(TrainerCallback):
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            self.t0, self.c0 = time.perf_counter(), time.process_time()

        def on_step_end(self, targs: Any, state: Any, control: Any, **k: Any) -> None:
            times.append(time.perf_counter() - self.t0)
            cpu.append(time.process_time() - self.c0)
            if every and state.global_step % every == 0 and state.global_step < args.steps:
                curve.append([state.global_step, evaluate_model(k["model"], tok, args, workdir)])  # untimed

    targs = trl_config(cfg, args, workdir)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    trainer = GRPOTrainer(model=model, reward_funcs=[exact_match], args=targs, train_dataset=ds,
                          processing_class=tok, callbacks=[StepTimer()])
    trainer.train()
    out = f"{workdir}/trl-final"
    trainer.save_model(out)
    tok.save_pretrained(out)
    end = evaluate(out, args, workdir)
    return {"sec_per_step_median": statistics.median(times[1:] or times), "sec_per_step_min": min(times[1:] or times),
            "cpu_sec_per_step_median": statistics.median(cpu[1:] or cpu),
            "val_acc_end": end, "val_curve": curve + [[len(times), end]],
            "steps": len(times)}


REALISTIC = {"shape": "cpu-13m", "vocab": 8192, "prompts": 8, "n": 4, "response": 64, "prompt_max": 64,
             "micro": 32, "dtype": "fp32", "device": "cpu", "gpu_mem": 0.0}


def realistic(args: argparse.Namespace) -> dict[str, Any]:
    """The realistic shape: both trainers through bench/gpu_vs_trl.py's children, interleaved per seed."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpu_vs_trl

    s = {**REALISTIC, "steps": args.steps, "threads": args.threads, "dtype": args.dtype,
         "overrides": list(args.override)}
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rlcockpit-bench-") as tmp:
        from pathlib import Path

        workdir = Path(tmp)
        paths = gpu_vs_trl.prepare(workdir, s)
        n_params = gpu_vs_trl._count_params(paths["model"])
        for i in range(args.seeds):
            seed = args.seed + i
            order = ("ours", "trl") if i % 2 == 0 else ("trl", "ours")  # alternate who runs first
            pair: dict[str, Any] = {"seed": seed}
            for side in order:
                if args.only and side != args.only:
                    continue
                load0 = os.getloadavg()[0]
                r = gpu_vs_trl.run_side(side, workdir / f"{side}-{seed}", {**s, "seed": seed}, paths)
                if r is None:
                    raise SystemExit(1)
                r["loadavg_1min"] = [load0, os.getloadavg()[0]]
                pair[side] = r
                print(f"[bench] seed {seed} {side}: {r['sec_per_step']:.3f} s/step (load {load0:.1f})", file=sys.stderr)
            if "ours" in pair and "trl" in pair:
                pair["speedup"] = pair["trl"]["sec_per_step"] / pair["ours"]["sec_per_step"]
            runs.append(pair)

    def pooled(side: str) -> dict[str, Any]:
        times = [t for p in runs if side in p for t in p[side]["step_times"]]
        cpu = [t for p in runs if side in p for t in p[side]["step_cpu_times"]]
        return {"sec_per_step_median": statistics.median(times), "sec_per_step_min": min(times),
                "cpu_sec_per_step_median": statistics.median(cpu),
                "per_seed": [p[side]["sec_per_step"] for p in runs if side in p],
                "phases": {k: statistics.median(p[side]["phases"][k] for p in runs if side in p)
                           for k in runs[0][side]["phases"]} if side in runs[0] else {},
                "response_tokens_per_step": statistics.median(p[side]["response_tokens_per_step"]
                                                              for p in runs if side in p)}

    result: dict[str, Any] = {"task": f"realistic: random Qwen2 {n_params / 1e6:.1f}M, BPE 8k, ~47-token chat prompts, "
                                      f"{s['prompts']} prompts x n={s['n']}, {s['response']} new tokens",
                              "dtype": args.dtype, "threads": args.threads, "steps": args.steps, "seeds": args.seeds,
                              "n_params": n_params, "runs": runs}
    for side in ("ours", "trl"):
        if any(side in p for p in runs):
            result["rlcockpit" if side == "ours" else "trl"] = pooled(side)
    ratios = [p["speedup"] for p in runs if "speedup" in p]
    if ratios:
        result["speedup_steps_per_sec"] = statistics.median(ratios)
        result["speedup_per_seed"] = ratios
        result["speedup_pooled_median"] = (result["trl"]["sec_per_step_median"]
                                           / result["rlcockpit"]["sec_per_step_median"])
        result["speedup_fastest_step"] = result["trl"]["sec_per_step_min"] / result["rlcockpit"]["sec_per_step_min"]
        result["speedup_cpu_time"] = (result["trl"]["cpu_sec_per_step_median"]
                                      / result["rlcockpit"]["cpu_sec_per_step_median"])
    return result


def realistic_markdown(res: dict[str, Any]) -> str:
    lines = ["| trainer | s/step (median) | s/step (fastest) | steps/s | per seed s/step | CPU s/step (median) "
             "| load avg (1 min) |", "|---|---|---|---|---|---|---|"]
    for name, key, side in (("rlcockpit GRPO", "rlcockpit", "ours"), ("TRL GRPOTrainer", "trl", "trl")):
        if key in res:
            r = res[key]
            loads = [x for p in res["runs"] if side in p for x in p[side]["loadavg_1min"]]
            lines.append(f"| {name} | {r['sec_per_step_median']:.3f} | {r['sec_per_step_min']:.3f} | "
                         f"{1 / r['sec_per_step_median']:.2f} | {', '.join(f'{x:.3f}' for x in r['per_seed'])} | "
                         f"{r['cpu_sec_per_step_median']:.3f} | "
                         f"{min(loads):.1f}–{max(loads):.1f} |")
    if "speedup_steps_per_sec" in res:
        lines.append(f"\nrlcockpit / TRL steps per second: **{res['speedup_steps_per_sec']:.2f}x** (median of the "
                     f"per-seed ratios {', '.join(f'{x:.2f}' for x in res['speedup_per_seed'])}; pooled medians "
                     f"{res['speedup_pooled_median']:.2f}x, fastest step {res['speedup_fastest_step']:.2f}x, CPU seconds "
                     f"per step {res['speedup_cpu_time']:.2f}x; "
                     f"{res['dtype']}, {res['threads']} threads)")
    if "rlcockpit" in res:
        ph = res["rlcockpit"]["phases"]
        lines.append("\nrlcockpit phases (median s/step): " + ", ".join(
            f"{k} {v:.3f}" for k, v in sorted(ph.items(), key=lambda kv: -kv[1]) if v >= 0.001))
    if "trl" in res:
        ph = res["trl"]["phases"]
        lines.append("TRL phases (mean s/step, its own timers): " + ", ".join(
            f"{k} {v:.3f}" for k, v in sorted(ph.items(), key=lambda kv: -kv[1])[:6]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="demo", choices=["demo", "realistic"])
    ap.add_argument("--only", choices=["ours", "trl"], default=None, help="realistic shape: run one side only")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="realistic shape: an extra rlcockpit config override (e.g. to time a fast path off)")
    ap.add_argument("--steps", type=int, default=None, help="steps per run (demo 30, realistic 12)")
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=None,
                    help="repeat both trainers with this many seeds (demo 1: accuracy = mean; realistic 3)")
    ap.add_argument("--seed", type=int, default=42, help="first seed")
    ap.add_argument("--val-every", type=int, default=0, metavar="K",
                    help="demo shape: also score both models every K steps (val_curve; TRL's scoring is untimed)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table for BENCHMARKS.md")
    args = ap.parse_args(argv)
    if args.steps is None:
        args.steps = 30 if args.shape == "demo" else 12
    if args.seeds is None:
        args.seeds = 1 if args.shape == "demo" else 3
    if args.shape == "realistic":
        res = realistic(args)
        if args.json or not args.markdown:
            print(json.dumps(res, indent=2, default=float))
        if args.markdown:
            print(realistic_markdown(res))
        return 0

    import torch

    torch.set_num_threads(args.threads)
    from rlcockpit.trainer.state import resolve_model_path

    with tempfile.TemporaryDirectory(prefix="rlcockpit-bench-") as workdir:
        model_path = resolve_model_path(_cfg(args, workdir))
        per_seed = []
        for i in range(args.seeds):
            # same warmed-up model for every seed; the seed changes sampling, data order and TRL's RNG
            # the seed changes sampling and (data.seed) the prompt order, the same prompts on both sides
            args.run_overrides = [f"actor.model.path={model_path}", f"trainer.seed={args.seed + i}",
                                  f"data.seed={args.seed + i}"]
            per_seed.append((run_rlcockpit(args, f"{workdir}/s{i}"), run_trl(args, f"{workdir}/s{i}", model_path)))

    def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
        accs = [r["val_acc_end"] for r in runs]
        return {"sec_per_step_median": statistics.median(r["sec_per_step_median"] for r in runs),
                "sec_per_step_min": min(r["sec_per_step_min"] for r in runs),
                "cpu_sec_per_step_median": statistics.median(r["cpu_sec_per_step_median"] for r in runs),
                "val_acc_end": statistics.fmean(accs), "val_acc_end_per_seed": accs,
                "val_curve_per_seed": [r["val_curve"] for r in runs],
                **({"val_acc_end_reloaded_per_seed": [r["val_acc_end_reloaded"] for r in runs]}
                   if "val_acc_end_reloaded" in runs[0] else {}),
                "val_acc_start": runs[0].get("val_acc_start"), "steps": runs[0]["steps"]}

    ours, trl = summary([o for o, _ in per_seed]), summary([t for _, t in per_seed])
    speedup = trl["sec_per_step_median"] / ours["sec_per_step_median"]
    # the fastest step of each is the least disturbed by other processes on a shared machine
    speedup_fastest = trl["sec_per_step_min"] / ours["sec_per_step_min"]
    result = {"task": "2-digit addition, tiny Qwen2 4.2M, 16 prompts x 8 samples, max 8 new tokens",
              "dtype": args.dtype, "threads": args.threads, "steps": args.steps, "seeds": args.seeds,
              "val_acc_start": ours["val_acc_start"], "rlcockpit": ours, "trl": trl,
              "speedup_steps_per_sec": speedup, "speedup_fastest_step": speedup_fastest,
              "speedup_cpu_time": trl["cpu_sec_per_step_median"] / ours["cpu_sec_per_step_median"]}
    if args.json or not args.markdown:
        print(json.dumps(result, indent=2))
    if args.markdown:
        print(f"| trainer | s/step (median) | s/step (fastest) | steps/s | val acc @{args.steps} steps, mean of "
              f"{args.seeds} seed(s) (start {ours['val_acc_start']:.2f}) | per seed |")
        print("|---|---|---|---|---|---|")
        for name, r in (("rlcockpit GRPO", ours), ("TRL GRPOTrainer", trl)):
            print(f"| {name} | {r['sec_per_step_median']:.3f} | {r['sec_per_step_min']:.3f} | "
                  f"{1 / r['sec_per_step_median']:.2f} | {r['val_acc_end']:.3f} | "
                  f"{', '.join(f'{a:.3f}' for a in r['val_acc_end_per_seed'])} |")
        print(f"\nrlcockpit / TRL steps per second: **{speedup:.2f}x** median, {speedup_fastest:.2f}x fastest step, "
              f"CPU seconds per step {result['speedup_cpu_time']:.2f}x ({args.dtype}, {args.threads} threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
