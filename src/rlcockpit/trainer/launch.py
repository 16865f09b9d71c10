"""``trainer.n_gpus_per_node=N`` without torchrun: start the N ranks with ``torch.distributed.run``.

The same elastic agent as ``torchrun --standalone --nproc-per-node N -m rlcockpit train ...`` (a free
rendezvous port on localhost, every rank's environment: RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT),
run from this process, which waits for the ranks and returns their outcome.  Under torchrun (WORLD_SIZE
set) nothing is launched: the command line is already one of the ranks.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import torch

from rlcockpit.trainer.distributed.group import check_nodes, env_world_size

NO_GPU_NOTE = ("[rlcockpit] trainer.n_gpus_per_node={n} but this node has no GPU: training in one process "
               "(for CPU data-parallel say so: trainer.device=cpu trainer.n_gpus_per_node=N, or torchrun)")


def node_ranks(cfg: Any) -> int:
    """Data-parallel processes ``trainer.n_gpus_per_node`` asks for on this node.

    A verl launch script names the GPUs of the machine it was written for (``n_gpus_per_node=8``); run as it is on
    a machine without a GPU (``trainer.device`` auto, or verl's ``cuda`` which falls back to the CPU), 8 CPU
    processes sharing a few cores would only be slower and 8x the memory, so it means one process. CPU ranks are
    started when asked for: ``trainer.device=cpu``."""
    tr = cfg.trainer
    if tr.n_gpus_per_node > 1 and tr.device != "cpu" and not torch.cuda.is_available():
        return 1
    return max(1, int(tr.n_gpus_per_node))


def needs_launch(cfg: Any, log: Any = None) -> bool:
    """More than one rank asked for (:func:`node_ranks`) and this process is not already a rank."""
    if env_world_size() > 1 or cfg.trainer.n_gpus_per_node <= 1:
        return False
    if node_ranks(cfg) == 1:
        if log is not None:
            log(NO_GPU_NOTE.format(n=cfg.trainer.n_gpus_per_node))
        return False
    return True


def check_launch(cfg: Any) -> None:
    """One node only; on CUDA no more processes than GPUs (CPU ranks use gloo, any number)."""
    tr = cfg.trainer
    check_nodes(cfg, log=None)  # the ranks say it
    if tr.n_gpus_per_node < 1:
        raise ValueError(f"trainer.n_gpus_per_node={tr.n_gpus_per_node}: needs at least 1")
    if tr.device != "cpu" and torch.cuda.is_available() and torch.cuda.device_count() < tr.n_gpus_per_node:
        raise ValueError(f"trainer.n_gpus_per_node={tr.n_gpus_per_node} but torch sees {torch.cuda.device_count()} "
                         "GPU(s) on this node; lower it (or trainer.device=cpu for CPU processes)")


def launch(cfg: Any, argv: list[str], log: Any = print) -> int:
    """Run ``python -m rlcockpit <argv>`` as ``trainer.n_gpus_per_node`` ranks; 0 when every rank succeeded."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run

    check_launch(cfg)
    n = cfg.trainer.n_gpus_per_node
    where = "GPUs" if cfg.trainer.device != "cpu" and torch.cuda.is_available() else "CPU processes (gloo)"
    log(f"[rlcockpit] trainer.n_gpus_per_node={n}: launching {n} {where} with torch.distributed.run")
    args = get_args_parser().parse_args(["--standalone", f"--nproc-per-node={n}", "--module", "rlcockpit", *argv])
    try:
        run(args)
    except ChildFailedError as exc:
        failures = "; ".join(f"rank {r}: exit code {f.exitcode}" for r, f in sorted(exc.failures.items()))
        log(f"rlcockpit train: a rank failed ({failures}); its error is printed above")
        return 1
    return 0


LEAVE_TIMEOUT_S = 30  # how long a rank waits for the others at the end before leaving anyway


def finish_group() -> None:
    """Leave the process group at the end of a rank's run (quietly, so gloo/NCCL do not warn at exit). On gloo
    the ranks first meet in a bounded barrier: a rank that tore its group down while another was still talking
    to it aborted at exit ("terminate called without an active exception", 1 in 5 runs on a loaded machine); a
    rank that failed is not waited for past ``LEAVE_TIMEOUT_S``."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return
    if torch.distributed.get_backend() == "gloo":
        try:
            torch.distributed.monitored_barrier(timeout=timedelta(seconds=LEAVE_TIMEOUT_S))
        except RuntimeError:
            pass  # another rank failed or left: leave anyway
    torch.distributed.destroy_process_group()
