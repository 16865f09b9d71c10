"""Validate preflight's memory estimate against the measured peak memory of real RL steps.

Each scenario runs in a fresh subprocess that does what ``rlcockpit train`` does in a step, with the
trainer's own components: a model of the scenario's Hugging Face config (random weights, saved to a temp
dir and loaded with ``trainer.models.load_actor_and_ref`` — reference copy, LoRA, gradient checkpointing as
the trainer sets them up), ``state.make_optimizer``, the rollout engine from ``state.make_engine``
(GRPO-shaped batches: every prompt ``n`` times, prompt lengths varying up to the maximum), the no-grad
passes of ``step_inputs.policy_passes`` (old log-probs when the config needs them, the reference) and
``update.update_actor`` (micro-batched forward/backward + AdamW). Two steps; the peak RSS growth over the
process's RSS before the model existed (``ru_maxrss`` and a 2 ms sampler) is compared with
``estimate_memory(ModelShape.from_hf_config(config), train_shape_for(cfg, ...))`` — exactly what
``rlcockpit preflight`` computes for that config. Phases (rollout, old_log_prob, ref, update forward /
backward, optimizer step) are tagged by wrapping ``update.forward_policy`` and the optimizer's ``step``.

Scenarios are split: ``tune`` (the estimator's constants were fitted on these) and ``heldout`` (never used
to fit anything; run them to check the estimate generalises).

    python bench/memory_estimate.py                      # all scenarios, table
    python bench/memory_estimate.py --split heldout --json
    python bench/memory_estimate.py --only "152k" --jobs 2
    python bench/memory_estimate.py --device cuda --json # on a GPU: torch.cuda.max_memory_allocated, bf16 cases

``RLCOCKPIT_BENCH_ALLOCATOR=glibc-default`` measures without the trainer's fixed mmap threshold
(``trainer/host_memory.py``); ``=live`` fixes it (and the trim threshold) at 128 KiB so RSS follows the live
tensors (diagnosis).
glibc's own ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` / ``MALLOC_TOP_PAD_`` in the environment reach
every scenario's process and, as in the trainer, win over its setting: that measures a user's allocator choice
(``bench/allocator_ab.py`` measures its CPU cost at the realistic shape).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

# model: Hugging Face config fields (AutoConfig.for_model); train: verl config overrides (short names here)
SCENARIOS: list[dict[str, Any]] = [
    # ---- tune: the estimator's constants were fitted on these
    {"name": "qwen2 32k fp32", "split": "tune",
     "model": {"model_type": "qwen2", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
               "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 32000, "tie_word_embeddings": True},
     "train": {"batch": 4, "n": 4, "micro": 8, "prompt": 64, "response": 64}},
    {"name": "llama 8k untied + KL ref", "split": "tune",
     "model": {"model_type": "llama", "hidden_size": 384, "num_hidden_layers": 4, "num_attention_heads": 6,
               "num_key_value_heads": 6, "intermediate_size": 1024, "vocab_size": 8192, "tie_word_embeddings": False},
     "train": {"batch": 4, "n": 4, "micro": 8, "prompt": 48, "response": 48, "kl_loss": True}},
    {"name": "qwen2 4k grad-ckpt micro 32", "split": "tune",
     "model": {"model_type": "qwen2", "hidden_size": 384, "num_hidden_layers": 4, "num_attention_heads": 6,
               "num_key_value_heads": 6, "intermediate_size": 1536, "vocab_size": 4096, "tie_word_embeddings": True},
     "train": {"batch": 4, "n": 4, "micro": 16, "prompt": 64, "response": 64, "ckpt": True}},
    {"name": "qwen2 152k bf16", "split": "tune",
     "model": {"model_type": "qwen2", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
               "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 151936, "tie_word_embeddings": True},
     "train": {"batch": 2, "n": 4, "micro": 4, "prompt": 48, "response": 64, "dtype": "bf16"}},
    {"name": "qwen2 16k LoRA r8 + KL", "split": "tune",
     "model": {"model_type": "qwen2", "hidden_size": 384, "num_hidden_layers": 4, "num_attention_heads": 6,
               "num_key_value_heads": 2, "intermediate_size": 1536, "vocab_size": 16384, "tie_word_embeddings": True},
     "train": {"batch": 2, "n": 8, "micro": 16, "prompt": 48, "response": 48, "lora": 8, "kl_loss": True}},
    {"name": "qwen2 32k 2 epochs, entropy, T=0.7", "split": "tune",
     "model": {"model_type": "qwen2", "hidden_size": 384, "num_hidden_layers": 4, "num_attention_heads": 6,
               "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 32000, "tie_word_embeddings": True},
     "train": {"batch": 4, "n": 4, "mini": 2, "micro": 8, "prompt": 48, "response": 48, "epochs": 2,
               "entropy": 0.01, "temperature": 0.7}},
    {"name": "llama 32k 80M params, short", "split": "tune",
     "model": {"model_type": "llama", "hidden_size": 768, "num_hidden_layers": 8, "num_attention_heads": 12,
               "num_key_value_heads": 4, "intermediate_size": 2048, "vocab_size": 32000, "tie_word_embeddings": False},
     "train": {"batch": 2, "n": 2, "micro": 4, "prompt": 32, "response": 32}},
    {"name": "llama 8k bf16 + KL ref", "split": "tune",
     "model": {"model_type": "llama", "hidden_size": 384, "num_hidden_layers": 4, "num_attention_heads": 6,
               "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 8192, "tie_word_embeddings": True},
     "train": {"batch": 4, "n": 4, "micro": 8, "prompt": 48, "response": 64, "dtype": "bf16", "kl_loss": True}},
    # ---- heldout: never used to fit the estimator
    {"name": "qwen2 50k GQA 5/1 + KL ref, r96", "split": "heldout",
     "model": {"model_type": "qwen2", "hidden_size": 320, "num_hidden_layers": 3, "num_attention_heads": 5,
               "num_key_value_heads": 1, "intermediate_size": 960, "vocab_size": 50257, "tie_word_embeddings": True},
     "train": {"batch": 4, "n": 4, "micro": 4, "prompt": 40, "response": 96, "kl_loss": True}},
    {"name": "llama 12k bf16 LoRA r16 ckpt", "split": "heldout",
     "model": {"model_type": "llama", "hidden_size": 448, "num_hidden_layers": 4, "num_attention_heads": 7,
               "num_key_value_heads": 7, "intermediate_size": 1536, "vocab_size": 12000, "tie_word_embeddings": False},
     "train": {"batch": 4, "n": 4, "micro": 8, "prompt": 56, "response": 56, "dtype": "bf16", "lora": 16,
               "ckpt": True}},
    {"name": "qwen2 100k entropy bonus", "split": "heldout",
     "model": {"model_type": "qwen2", "hidden_size": 640, "num_hidden_layers": 3, "num_attention_heads": 10,
               "num_key_value_heads": 2, "intermediate_size": 1792, "vocab_size": 100000, "tie_word_embeddings": True},
     "train": {"batch": 2, "n": 4, "micro": 8, "prompt": 40, "response": 48, "entropy": 0.01}},
    {"name": "qwen2 152k rollout 4x8", "split": "heldout",
     "model": {"model_type": "qwen2", "hidden_size": 192, "num_hidden_layers": 3, "num_attention_heads": 3,
               "num_key_value_heads": 3, "intermediate_size": 768, "vocab_size": 151936, "tie_word_embeddings": True},
     "train": {"batch": 4, "n": 8, "micro": 16, "prompt": 40, "response": 32}},
    # ---- vision-language (issue 28): fitted on nothing; the vision terms follow the decoder layer's
    {"name": "qwen2-vl 8k, 112 px images", "split": "vl",
     "model": {"model_type": "qwen2_vl",
               "text_config": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                               "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 8192},
               "vision_config": {"depth": 4, "embed_dim": 192, "hidden_size": 256, "num_heads": 4, "mlp_ratio": 4}},
     "train": {"batch": 4, "n": 4, "micro": 8, "prompt": 48, "response": 32, "image_px": 112}},
    {"name": "qwen2.5-vl 16k, 224 px images + KL ref", "split": "vl",
     "model": {"model_type": "qwen2_5_vl",
               "text_config": {"hidden_size": 320, "num_hidden_layers": 3, "num_attention_heads": 5,
                               "num_key_value_heads": 1, "intermediate_size": 960, "vocab_size": 16384},
               "vision_config": {"depth": 4, "hidden_size": 160, "intermediate_size": 480, "num_heads": 4,
                                 "out_hidden_size": 320, "fullatt_block_indexes": [3], "window_size": 112}},
     "train": {"batch": 2, "n": 4, "micro": 8, "prompt": 40, "response": 32, "image_px": 224, "kl_loss": True}},
    {"name": "mistral 32k 2 epochs mini 2", "split": "heldout",
     "model": {"model_type": "mistral", "hidden_size": 384, "num_hidden_layers": 4, "num_attention_heads": 8,
               "num_key_value_heads": 4, "intermediate_size": 1280, "vocab_size": 32768, "tie_word_embeddings": False},
     "train": {"batch": 4, "n": 4, "mini": 2, "micro": 8, "prompt": 64, "response": 48, "epochs": 2}},
]


def overrides_for(train: dict[str, Any], model_path: str = "tiny") -> list[str]:
    """The verl-path overrides of a scenario (what a user would type)."""
    a = "actor_rollout_ref.actor"
    out = [f"actor_rollout_ref.model.path={model_path}", f"data.train_batch_size={train['batch']}",
           f"actor_rollout_ref.rollout.n={train['n']}", f"{a}.ppo_mini_batch_size={train.get('mini', train['batch'])}",
           f"{a}.ppo_micro_batch_size_per_gpu={train['micro']}", f"{a}.ppo_epochs={train.get('epochs', 1)}",
           f"actor_rollout_ref.model.dtype={train.get('dtype', 'fp32')}",
           f"data.max_prompt_length={train['prompt']}", f"data.max_response_length={train['response']}",
           f"actor_rollout_ref.model.enable_gradient_checkpointing={bool(train.get('ckpt'))}",
           f"actor_rollout_ref.model.lora_rank={int(train.get('lora', 0))}",
           f"{a}.use_kl_loss={bool(train.get('kl_loss'))}", f"{a}.entropy_coeff={train.get('entropy', 0.0)}",
           f"actor_rollout_ref.rollout.temperature={train.get('temperature', 1.0)}", "trainer.num_threads=2"]
    if train.get("device"):
        out.append(f"trainer.device={train['device']}")
    return out


def hf_config(model: dict[str, Any]) -> Any:
    from transformers import AutoConfig

    if "vision_config" in model:  # a VL model: its vision tokens are the vocabulary's last four ids
        v = model["text_config"]["vocab_size"]
        text = {**model["text_config"], "max_position_embeddings": 1024, "pad_token_id": 0, "bos_token_id": None,
                "eos_token_id": None, "tie_word_embeddings": True,
                "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                    "mrope_section": _mrope(model["text_config"])}}
        return AutoConfig.for_model(model["model_type"], text_config=text, vision_config=model["vision_config"],
                                    image_token_id=v - 3, vision_start_token_id=v - 2, vision_end_token_id=v - 1,
                                    video_token_id=v - 4, tie_word_embeddings=True)
    fields = {k: v for k, v in model.items() if k != "model_type"}
    return AutoConfig.for_model(model["model_type"], max_position_embeddings=1024, pad_token_id=0, **fields)


def _mrope(text: dict[str, Any]) -> list[int]:
    """M-RoPE sections (time, height, width) over head_dim / 2 rotary pairs, in Qwen2-VL's 2:3:3 proportion."""
    pairs = text["hidden_size"] // text["num_attention_heads"] // 2
    t = pairs * 2 // 8
    return [t, (pairs - t) // 2, pairs - t - (pairs - t) // 2]


def vl_inputs(spec: dict[str, Any], rows: int) -> tuple[list[int], dict[str, Any]]:
    """A VL scenario's image part of a prompt (vision start, image tokens, vision end) and ``rows`` rows' padded
    image tensors as ``trainer/vision/inputs.vl_batch`` gives them (one ``image_px`` square picture a row)."""
    import torch

    v, side = spec["model"]["text_config"]["vocab_size"], spec["train"]["image_px"] // 14
    tokens = [v - 2] + [v - 3] * (side * side // 4) + [v - 1]
    mm = {"pixel_values": torch.randn(rows, side * side, 3 * 2 * 14 * 14),
          "image_grid_thw": torch.tensor([[[1, side, side]]] * rows)}
    return tokens, mm


class PhaseSampler:
    """Peak memory overall and per phase. CPU: RSS from a 2 ms sampling thread plus a reading at every
    phase change; CUDA: ``torch.cuda.max_memory_allocated`` per phase (reset at each change)."""

    def __init__(self, cuda: bool = False) -> None:
        import threading

        import psutil

        self.cuda, self.proc = cuda, psutil.Process()
        self.phase, self.peaks = "build", {}
        self.baseline = self._now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        if not cuda:
            self._thread.start()

    def _now(self) -> int:
        if self.cuda:
            import torch

            return int(torch.cuda.max_memory_allocated())
        return int(self.proc.memory_info().rss)

    def _read(self) -> None:
        self.peaks[self.phase] = max(self.peaks.get(self.phase, 0), self._now())

    def _run(self) -> None:
        while not self._stop.is_set():
            self._read()
            time.sleep(0.002)

    def enter(self, name: str) -> None:
        self._read()
        self.phase = name
        if self.cuda:
            import torch

            torch.cuda.reset_peak_memory_stats()
        self._read()

    def stop(self) -> dict[str, int]:
        self._stop.set()
        if not self.cuda:
            self._thread.join()
        self._read()
        return self.peaks


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    import contextlib
    import gc
    import resource
    import types

    import torch

    torch.set_num_threads(2)
    torch.manual_seed(0)
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    import rlcockpit.trainer.update.ppo as upd
    from rlcockpit.trainer.config import load_config
    from rlcockpit.trainer.host_memory import return_freed_memory_to_os
    from rlcockpit.trainer.models import autocast_factory, load_actor_and_ref
    from rlcockpit.trainer.rollout.engine import SamplingParams
    from rlcockpit.trainer.state import make_engine, make_optimizer
    from rlcockpit.trainer.step_inputs import policy_passes

    allocator = os.environ.get("RLCOCKPIT_BENCH_ALLOCATOR", "trainer")
    if allocator == "live":
        return_freed_memory_to_os(128 * 1024, trim_threshold=128 * 1024, top_pad=128 * 1024)
    elif allocator != "glibc-default":
        return_freed_memory_to_os()  # as state.build does on CPU (trainer/host_memory.py)
    dev = torch.device(spec.get("device", "cpu"))
    train, tmp = spec["train"], tempfile.mkdtemp(prefix="model-")
    vision = "vision_config" in spec["model"]
    auto = AutoModelForImageTextToText if vision else AutoModelForCausalLM
    auto.from_config(hf_config(spec["model"])).save_pretrained(tmp)  # random weights, on disk
    gc.collect()
    cfg = load_config(overrides=overrides_for(train, tmp), log=lambda *_: None)
    x = torch.randn(64, 64)
    (x @ x).sum().item()  # thread pools up before the baseline
    if dev.type == "cuda":
        torch.cuda.init()
        torch.cuda.reset_peak_memory_stats()
    s = PhaseSampler(cuda=dev.type == "cuda")
    actor, ref = load_actor_and_ref(cfg, tmp, dev)
    opt = make_optimizer(actor.parameters(), cfg.actor.optim)
    autocast = autocast_factory(cfg.model.dtype, dev)
    plain_fwd, plain_step = upd.forward_policy, opt.step

    def tagged_fwd(*a: Any, **k: Any) -> Any:
        s.enter("update_fwd")
        out = plain_fwd(*a, **k)
        s.enter("update_bwd")
        return out

    def tagged_step(*a: Any, **k: Any) -> Any:
        s.enter("optimizer_step")
        out = plain_step(*a, **k)
        s.enter("update_other")
        return out

    @contextlib.contextmanager
    def timed(_timing: dict, name: str) -> Any:
        s.enter(name)
        yield

    upd.forward_policy, opt.step = tagged_fwd, tagged_step
    tok = types.SimpleNamespace(pad_token_id=0, eos_token_id=[-1])  # never stops: full-length responses
    engine = make_engine(cfg, actor, tok, dev, autocast, log=lambda *_: None)
    st = types.SimpleNamespace(cfg=cfg, actor=actor, ref=ref, critic=None, autocast=autocast)
    vocab = int((spec["model"].get("text_config") or spec["model"])["vocab_size"]) - (4 if vision else 0)
    g = torch.Generator().manual_seed(0)
    params = SamplingParams(max_new_tokens=train["response"], temperature=cfg.rollout.temperature)
    image = vl_inputs(spec, 0)[0] if vision else []
    for _ in range(2):
        prompts = []
        for _ in range(train["batch"]):  # GRPO: each prompt n times, lengths from half the maximum up
            length = int(torch.randint(train["prompt"] // 2, train["prompt"] + 1, (1,), generator=g))
            prompts += [image + torch.randint(3, vocab, (length,), generator=g).tolist()] * train["n"]
        mm = vl_inputs(spec, len(prompts))[1] if vision else {}
        s.enter("rollout")
        out = engine.generate(prompts, params, **({"mm": mm} if vision else {}))
        s.enter("after_rollout")
        batch = {"input_ids": out.input_ids, "attention_mask": out.attention_mask, "responses": out.responses,
                 "response_mask": out.response_mask, "prompt_mask": out.prompt_mask, **mm}
        policy_passes(st, batch, out.rollout_log_probs, timed, {})
        s.enter("after_passes")
        batch["advantages"] = torch.randn(out.responses.shape, device=dev)
        upd.update_actor(cfg, actor, opt, batch, autocast, ref=ref)
        s.enter("after_update")
        del out, batch
    peaks = s.stop()
    # CPU: ru_maxrss catches a peak between two samples; CUDA: max_memory_allocated above the empty device
    maxrss = 0 if s.cuda else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    baseline, peak = s.baseline, max(max(peaks.values()), maxrss)
    return {"baseline_rss": baseline, "peak": peak, "n_params": sum(p.numel() for p in actor.parameters()),
            "phase_peak_mib": {k: round((v - s.baseline) / 2**20, 1) for k, v in peaks.items()}}


def estimate_for(spec: dict[str, Any]) -> Any:
    """What ``rlcockpit preflight`` estimates for the scenario's config (the model's config.json + overrides)."""
    from rlcockpit.preflight.memory import ModelShape, estimate_memory
    from rlcockpit.preflight.runner import train_shape_for
    from rlcockpit.trainer.config import load_config

    cfg = load_config(overrides=overrides_for(spec["train"]), log=lambda *_: None)
    shape = ModelShape.from_hf_config(hf_config(spec["model"]).to_dict())
    patches = (spec["train"].get("image_px", 0) // 14) ** 2
    return estimate_memory(shape, train_shape_for(cfg, spec.get("device", "cpu"), spec["train"]["prompt"], patches))


def run_scenario(spec: dict[str, Any]) -> dict[str, Any]:
    t0 = time.time()
    # The child saves its random model (tens of MB) under TMPDIR: a folder of ours, removed even when the child
    # is killed, so repeated benchmark and test runs do not fill /tmp.
    with tempfile.TemporaryDirectory(prefix="rlc-membench-") as tmp:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "2", "TMPDIR": tmp}
        proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                              text=True, env=env, timeout=1800)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise RuntimeError(f"scenario {spec['name']!r} failed:\n{proc.stderr[-3000:]}")
    measured = json.loads(line[0][7:])
    measured["seconds"] = round(time.time() - t0, 1)
    row = compare(spec, measured)
    print(f"done {spec['name']!r}: {row['measured_mib']} MiB measured, {row['error_pct']:+}%", file=sys.stderr)
    if spec.get("out"):  # one JSON line per finished scenario: a long run loses nothing when stopped
        with open(spec["out"], "a") as f:
            f.write(json.dumps(row) + "\n")
    return row


def rescore(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row compared again with the current estimator (the measurement is kept)."""
    measured = row.get("measured") or {"peak": int(row["measured_mib"] * 2**20), "baseline_rss": 0,
                                       "n_params": row["n_params"], "seconds": row["seconds"],
                                       "phase_peak_mib": row["phase_peak_mib"]}
    return compare(row["spec"], measured)


def compare(spec: dict[str, Any], measured: dict[str, Any]) -> dict[str, Any]:
    est = estimate_for(spec)
    if spec.get("device") == "cuda":  # max_memory_allocated does not see the CUDA context
        est.peak_bytes -= est.components.get("framework_overhead", 0)
    delta = measured["peak"] - measured["baseline_rss"]
    return {"scenario": spec["name"], "split": spec["split"], "n_params": measured["n_params"],
            "measured_mib": round(delta / 2**20, 1), "estimated_mib": round(est.peak_bytes / 2**20, 1),
            "error_pct": round(100 * (est.peak_bytes - delta) / delta, 1), "seconds": measured["seconds"],
            "phase_peak_mib": measured["phase_peak_mib"],
            "estimate_mib": {k: round(v / 2**20, 1) for k, v in {**est.components, **est.phases}.items()},
            "spec": spec, "measured": measured}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for split in ("tune", "heldout", "vl"):
        errs = [r["error_pct"] for r in rows if r["split"] == split]
        if errs:
            out[split] = {"n": len(errs), "mean_abs_error_pct": round(sum(map(abs, errs)) / len(errs), 1),
                          "worst_under_pct": min(errs), "worst_over_pct": max(errs)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--only", help="run only scenarios whose name contains this")
    ap.add_argument("--split", choices=["tune", "heldout", "vl", "all"], default="all")
    ap.add_argument("--jobs", type=int, default=1, help="scenarios run at once (RSS is per process)")
    ap.add_argument("--rescore", metavar="JSON", help="re-estimate the measurements of an earlier --json output "
                    "with the current estimator (no runs)")
    ap.add_argument("--out", help="append each finished scenario's row to this JSON-lines file")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="cuda: torch.cuda.max_memory_allocated on a GPU (estimate without the CUDA context)")
    args = ap.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(_child(json.loads(args.child))))
        return 0
    if args.rescore:
        with open(args.rescore) as f:
            text = f.read()
        try:
            stored = json.loads(text)["scenarios"]  # a --json output
        except json.JSONDecodeError:  # an --out file: one row a line
            stored = [json.loads(ln) for ln in text.splitlines() if ln.strip()]
        rows = [rescore(r) for r in stored
                if args.split in ("all", r["split"]) and (not args.only or args.only in r["scenario"])]
        return report(rows, args.json)
    specs = [{**s, "device": args.device, "out": args.out} for s in SCENARIOS
             if (args.split in ("all", s["split"])) and (not args.only or args.only in s["name"])]
    if args.device == "cuda":  # on a GPU the trainer runs bf16 autocast
        specs = [{**s, "train": {**s["train"], "dtype": "bf16", "device": "cuda"}} for s in specs]
    import transformers  # noqa: F401  (imported once here: transformers' lazy imports race when two threads start them)
    from transformers import AutoConfig  # noqa: F401

    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            rows = list(pool.map(run_scenario, specs))
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    return report(rows, args.json)


def report(rows: list[dict[str, Any]], as_json: bool) -> int:
    if as_json:
        print(json.dumps({"scenarios": rows, **summary(rows)}, indent=2))
        return 0
    print(f"{'scenario':38} {'split':8} {'params':>11} {'measured MiB':>13} {'estimated MiB':>14} {'error':>7}")
    for r in rows:
        print(f"{r['scenario']:38} {r['split']:8} {r['n_params']:>11,} {r['measured_mib']:>13} "
              f"{r['estimated_mib']:>14} {r['error_pct']:>+6.1f}%")
    for split, s in summary(rows).items():
        print(f"{split}: MAE {s['mean_abs_error_pct']}% over {s['n']}, worst under {s['worst_under_pct']:+}%, "
              f"worst over {s['worst_over_pct']:+}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
