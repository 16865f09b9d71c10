"""Background system-metrics sampler (keys under ``system/``).

Every ``interval`` seconds (default 10): CPU %, process RSS, system memory, disk and network
IO rates via psutil; per-GPU utilisation, memory, power and temperature via NVML when a GPU and
driver exist (fails soft otherwise: the GPU keys are simply absent); torch's CUDA allocator
figures when CUDA is in use. Samples go through the run's queue like any other metrics (and its byte
budget), stamped with the run's current step.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any

from rlcockpit.tracking.write.entries import metrics_cost

logger = logging.getLogger("rlcockpit")
GB = 1024**3
MB = 1024**2


class NvmlReader:
    """Per-GPU readings through NVML; ``available`` is False when there is no GPU or driver."""

    def __init__(self) -> None:
        self.available = False
        self.handles: list[Any] = []
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self.available = bool(self.handles)
        except Exception as exc:  # noqa: BLE001 - no library, no driver, no GPU: all mean "no GPU metrics"
            self.reason = f"{type(exc).__name__}: {exc}"

    def read(self) -> dict[str, float]:
        out: dict[str, float] = {}
        nv = getattr(self, "_nvml", None)
        for i, h in enumerate(self.handles):
            p = f"system/gpu/{i}/"
            for key, fn in (
                ("utilization", lambda h=h: nv.nvmlDeviceGetUtilizationRates(h).gpu),
                ("power_w", lambda h=h: nv.nvmlDeviceGetPowerUsage(h) / 1000.0),
                ("temperature_c", lambda h=h: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
            ):
                try:
                    out[p + key] = float(fn())
                except Exception:  # noqa: BLE001
                    pass
            try:
                mem = nv.nvmlDeviceGetMemoryInfo(h)
                out[p + "memory_used_gb"] = mem.used / GB
                out[p + "memory_total_gb"] = mem.total / GB
                out[p + "memory_percent"] = 100.0 * mem.used / mem.total if mem.total else 0.0
            except Exception:  # noqa: BLE001
                pass
        return out


def torch_cuda_memory() -> dict[str, float]:
    """Allocator figures of the current CUDA device, only if torch is already imported and CUDA in use."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    try:
        if not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return {}
        return {
            "system/torch/allocated_gb": torch.cuda.memory_allocated() / GB,
            "system/torch/reserved_gb": torch.cuda.memory_reserved() / GB,
            "system/torch/max_allocated_gb": torch.cuda.max_memory_allocated() / GB,
        }
    except Exception:  # noqa: BLE001
        return {}


class SystemSampler(threading.Thread):
    def __init__(self, run: Any, interval: float = 10.0) -> None:
        super().__init__(name="rlcockpit-system", daemon=True)
        import psutil

        self._run = run
        self.interval = float(interval)
        self._stop = threading.Event()
        self._psutil = psutil
        self._proc = psutil.Process()
        self._proc.cpu_percent(None)
        psutil.cpu_percent(None)
        self._last_io = self._io_counters()
        self._last_t = time.monotonic()
        self.nvml = NvmlReader()

    def _io_counters(self) -> tuple[float, float, float, float]:
        ps = self._psutil
        try:
            d = ps.disk_io_counters()
            disk = (d.read_bytes, d.write_bytes) if d else (0, 0)
        except Exception:  # noqa: BLE001
            disk = (0, 0)
        try:
            n = ps.net_io_counters()
            net = (n.bytes_sent, n.bytes_recv) if n else (0, 0)
        except Exception:  # noqa: BLE001
            net = (0, 0)
        return (*disk, *net)

    def sample(self) -> dict[str, float]:
        ps = self._psutil
        vm = ps.virtual_memory()
        out = {
            "system/cpu_percent": ps.cpu_percent(None),
            "system/proc_cpu_percent": self._proc.cpu_percent(None),
            "system/proc_rss_gb": self._proc.memory_info().rss / GB,
            "system/memory_percent": vm.percent,
            "system/memory_used_gb": (vm.total - vm.available) / GB,
            "system/memory_total_gb": vm.total / GB,
        }
        io, now = self._io_counters(), time.monotonic()
        dt = max(now - self._last_t, 1e-6)
        for i, key in enumerate(("disk_read_mb_s", "disk_write_mb_s", "net_sent_mb_s", "net_recv_mb_s")):
            out[f"system/{key}"] = max(io[i] - self._last_io[i], 0) / MB / dt
        self._last_io, self._last_t = io, now
        if self.nvml.available:
            out.update(self.nvml.read())
        out.update(torch_cuda_memory())
        return out

    def run(self) -> None:  # noqa: D401 - thread body
        while not self._stop.wait(self.interval):
            try:
                data = self.sample()
            except Exception as exc:  # noqa: BLE001
                logger.debug("system sample failed: %s", exc)
                continue
            step = max(self._run.step, 0)
            self._run._charge((step, time.time(), data), metrics_cost(len(data)), step, len(data), "metrics")

    def stop(self) -> None:
        self._stop.set()
