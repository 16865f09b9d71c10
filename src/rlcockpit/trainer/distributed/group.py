"""Data-parallel training on one node: N processes (GPUs with NCCL, or CPU processes with gloo).

``torchrun --nproc-per-node N -m rlcockpit train ...`` or ``trainer.n_gpus_per_node=N`` (which launches the
processes itself, :mod:`rlcockpit.trainer.launch`).  What each rank does in a step:

* **rollout, sharded**: :class:`ShardedEngine` gives rank ``r`` its contiguous share of the rows, generates
  them with per-row seeds (:mod:`rollout_seeds`: the samples do not depend on the world size) and
  all-gathers the outputs, so every rank holds the whole batch in the global order; rewards likewise
  (:class:`ShardedReward`).  Group advantages (GRPO, RLOO...) and batch statistics are then computed on
  the whole batch, identically on every rank: groups never straddle a rank boundary in the math.
* **no-grad passes, sharded**: old policy, reference and values run on the rank's rows and are gathered.
* **update**: each global mini-batch is split across ranks; each rank sums its micro-batch losses, which
  are aggregated with the *global* mini-batch's token/sequence counts (verl's ``global_batch_info``), and
  :meth:`Dist.all_reduce_grads` sums the gradients before the optimizer step.  The gradient is then the
  single-process gradient (up to float summation order) and every rank takes the same step.

Why gradients are all-reduced here rather than by wrapping the model in ``DistributedDataParallel``:
DDP's reducer needs every forward to go through its wrapper and exactly one forward per backward, while
the trainer's scoring pass runs the model in two calls (prompt once, responses on its KV cache:
``share_prefix``) and may call the decoder directly.  One bucketed SUM all-reduce per optimizer step is
what DDP's reducer does at the end of a ``no_sync`` accumulation; it is not overlapped with the backward
pass, which costs little in RL steps dominated by generation.  FSDP2's ``fully_shard`` would shard the
weights too, but it needs reduce-scatter, which gloo (CPU) lacks; on one node the models this trainer
targets (<= 7B with LoRA or 8 GPUs) fit replicated.

Only rank 0 logs, tracks, validates into the store and writes checkpoints (the unwrapped model in HF
format, so a checkpoint reloads on any world size); other ranks log nothing and mirror the guardrails'
decisions (:class:`GuardrailMirror`).  Per-rank process metrics are logged as ``system/rank{r}/...``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from rlcockpit.trainer.cpu_threads import usable_cpus

MULTI_NODE_MESSAGE = (
    "trainer.nnodes={n}: rlcockpit trains on one node (trainer.n_gpus_per_node processes). For several nodes "
    "run verl on Ray and watch it with rlcockpit: `rlcockpit watch <verl log or output dir>`, or add "
    "trainer.logger=['console','rlcockpit'] to verl's command line (docs/trainer.md, docs/integrations.md)")
NO_GPU_NODES_NOTE = ("[rlcockpit] trainer.nnodes={n}: this node has no GPU, so the script's cluster is not here; "
                     "training on this node only (for several nodes run verl on Ray and `rlcockpit watch` it)")


def check_nodes(cfg: Any, log: Callable[[str], None] | None = print) -> None:
    """``trainer.nnodes`` > 1: refused on a GPU node (every node would train alone and write the same
    checkpoints); on a machine without a GPU a verl cluster script is being tried out here, so it trains on
    this node, said once."""
    n = cfg.trainer.nnodes
    if n <= 1:
        return
    if torch.cuda.is_available():
        raise ValueError(MULTI_NODE_MESSAGE.format(n=n))
    if log is not None and int(os.environ.get("RANK", "0")) == 0:
        log(NO_GPU_NODES_NOTE.format(n=n))


@dataclass(frozen=True)
class Dist:
    """This process's place in the data-parallel group (world_size 1 = a plain single-process run)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None
    _bucket_bytes: int = field(default=64 << 20, repr=False)

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    # ------------------------------------------------------------------ layout
    def bounds(self, n: int, rank: int | None = None) -> tuple[int, int]:
        """Rank ``rank``'s contiguous share [lo, hi) of ``n`` items (the first ``n % W`` ranks get one more)."""
        r = self.rank if rank is None else rank
        base, extra = divmod(n, self.world_size)
        lo = r * base + min(r, extra)
        return lo, lo + base + (1 if r < extra else 0)

    def part(self, idx: torch.Tensor) -> torch.Tensor:
        """This rank's contiguous share of the index tensor ``idx`` (one mini-batch's rows)."""
        lo, hi = self.bounds(len(idx))
        return idx[lo:hi]

    # ------------------------------------------------------------------ collectives
    def barrier(self) -> None:
        if self.enabled:
            torch.distributed.barrier()

    def broadcast_object(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank."""
        if not self.enabled:
            return obj
        box = [obj]
        torch.distributed.broadcast_object_list(box, src=0)
        return box[0]

    def all_gather_object(self, obj: Any) -> list[Any]:
        if not self.enabled:
            return [obj]
        out: list[Any] = [None] * self.world_size
        torch.distributed.all_gather_object(out, obj)
        return out

    def all_true(self, flag: bool) -> bool:
        """Whether ``flag`` holds on every rank (a non-finite loss on one rank skips the step on all)."""
        if not self.enabled:
            return flag
        t = torch.tensor([0.0 if flag else 1.0], device=self._device())
        torch.distributed.all_reduce(t)
        return float(t) == 0.0

    def all_reduce_grads(self, params: list[torch.Tensor]) -> None:
        """Sum the gradients of ``params`` over the ranks, in flat buckets (parameters without a gradient
        contribute zeros, so every rank runs the same collectives)."""
        if not self.enabled:
            return
        bucket: list[torch.Tensor] = []
        size = 0
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            bucket.append(p.grad)
            size += p.grad.numel() * p.grad.element_size()
            if size >= self._bucket_bytes:
                _all_reduce_flat(bucket)
                bucket, size = [], 0
        if bucket:
            _all_reduce_flat(bucket)

    def reduce_metrics(self, values: dict[str, list[float]], summed: tuple[str, ...]) -> dict[str, float]:
        """One value per key over all ranks: the sum of ``summed`` keys (partial sums of one loss), the
        mean of the rest over all micro-batches of all ranks."""
        keys = sorted(values)
        local = [[sum(values[k]), float(len(values[k]))] for k in keys]
        if self.enabled:
            t = torch.tensor(local, dtype=torch.float64, device=self._device()).reshape(-1, 2)
            torch.distributed.all_reduce(t)
            local = t.cpu().tolist()
        return {k: (s if k in summed else s / max(c, 1.0)) for k, (s, c) in zip(keys, local)}

    def gather_rows(self, local: torch.Tensor, n: int) -> torch.Tensor:
        """The whole (n, ...) tensor from each rank's rows [bounds(n)) of it (same trailing shape)."""
        if not self.enabled:
            return local
        width = -(-n // self.world_size)
        padded = local.new_zeros((width, *local.shape[1:]))
        padded[: local.size(0)] = local
        if padded.device.type == "cpu" and self.backend == "nccl":
            padded = padded.to(self._device())
        parts = [torch.empty_like(padded) for _ in range(self.world_size)]
        torch.distributed.all_gather(parts, padded)
        rows = [p[: hi - lo] for p, (lo, hi) in zip(parts, (self.bounds(n, r) for r in range(self.world_size)))]
        return torch.cat(rows).to(local.device)

    def broadcast_params(self, module: Any) -> None:
        """Every rank starts from rank 0's weights (they are built from the same seed; this makes sure)."""
        if module is None or not self.enabled:
            return
        with torch.no_grad():
            for t in [*module.parameters(), *module.buffers()]:
                torch.distributed.broadcast(t.data, src=0)

    def _device(self) -> torch.device:
        return torch.device("cuda", torch.cuda.current_device()) if self.backend == "nccl" else torch.device("cpu")


def _all_reduce_flat(grads: list[torch.Tensor]) -> None:
    flat = torch.cat([g.reshape(-1) for g in grads])
    torch.distributed.all_reduce(flat)
    offset = 0
    for g in grads:
        g.copy_(flat[offset: offset + g.numel()].view_as(g))
        offset += g.numel()


SINGLE = Dist()


def env_world_size() -> int:
    """WORLD_SIZE as torchrun (or our launcher) set it; 1 when not launched that way."""
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def setup(cfg: Any, log: Callable[[str], None] | None = print) -> Dist:
    """Join the process group torchrun described in the environment (a no-op for a single process).

    Checks ``trainer.nnodes`` (one node only) and ``trainer.n_gpus_per_node`` against the launch, picks
    NCCL on CUDA and gloo otherwise, binds this rank to GPU ``LOCAL_RANK``, and splits the CPU cores
    between the local ranks when ``trainer.num_threads`` is 0."""
    tr = cfg.trainer
    check_nodes(cfg, log)
    world = env_world_size()
    if world <= 1:
        return SINGLE
    rank, local_rank = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
    if local_world != world:
        raise ValueError(MULTI_NODE_MESSAGE.format(n=world // max(local_world, 1)))
    if tr.n_gpus_per_node not in (1, world) and rank == 0 and log is not None:
        log(f"[rlcockpit] trainer.n_gpus_per_node={tr.n_gpus_per_node} but torchrun started {world} processes: "
            f"training on {world}")
    use_cuda = tr.device != "cpu" and torch.cuda.is_available()
    if use_cuda:
        if torch.cuda.device_count() <= local_rank:
            raise ValueError(f"rank {rank}: LOCAL_RANK={local_rank} but torch sees {torch.cuda.device_count()} "
                             "GPU(s); lower --nproc-per-node / trainer.n_gpus_per_node")
        torch.cuda.set_device(local_rank)
    elif tr.num_threads <= 0:
        tr.num_threads = max(1, usable_cpus() // local_world)  # ranks share the cores (affinity, cgroup quota)
    backend = "nccl" if use_cuda else "gloo"
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group(backend=backend)
    return Dist(rank=rank, world_size=world, local_rank=local_rank, backend=backend)


def shutdown(dist: Dist) -> None:
    if dist.enabled and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def check_batch_layout(cfg: Any, dist: Dist) -> None:
    """Each global mini-batch is split across ranks: every rank needs at least one sample of it."""
    if not dist.enabled:
        return
    rows = cfg.actor.ppo_mini_batch_size * cfg.rollout.n
    if rows < dist.world_size:
        raise ValueError(f"actor_rollout_ref.actor.ppo_mini_batch_size={cfg.actor.ppo_mini_batch_size} x "
                         f"rollout.n={cfg.rollout.n} = {rows} samples per mini-batch cannot be split over "
                         f"{dist.world_size} ranks; raise the mini-batch or lower trainer.n_gpus_per_node")
