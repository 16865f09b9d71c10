"""A rollout KV cache allocated once, written in place (the built-in engine's cache).

Why not transformers' ``DynamicCache``: it grows by ``torch.cat`` on every decoded token, so a 64-token
rollout copies each layer's whole cache 64 times (O(T^2) bytes moved; measured 10% of the realistic
benchmark's generation time) and leaves a new, slightly larger tensor behind each step, which is what
fragments the CPU heap (``host_memory.py``).  ``StaticCache`` preallocates but attends over its whole
capacity every step and needs ``cache_position`` bookkeeping.  This cache allocates
``(rows, heads, capacity, head_dim)`` buffers on the prefill, writes each new token's keys/values into the
next column and hands the model a view of the filled part, so attention sees exactly what it would with
``DynamicCache``: the same keys and values, the same lengths, the same masks.

The rollout's row bookkeeping (rows that share a history share a cache row, see ``rollout.py``) becomes
an in-place gather on ``batch_select_indices`` that is skipped when the rows did not change, which is
every step once a group's samples have diverged.

Inference only: writes are in place, so nothing here may sit in an autograd graph (the update's
shared-prefix pass in ``models.py`` keeps ``DynamicCache``).
"""

from __future__ import annotations

import functools
from typing import Any

import torch


def _dynamic_layer() -> type:
    from transformers.cache_utils import DynamicLayer

    return DynamicLayer


@functools.cache
def _layer_class() -> type:
    """Built on first use so importing this module does not import transformers."""
    base = _dynamic_layer()

    class PreallocatedLayer(base):  # type: ignore[misc, valid-type]
        """One decoder layer's keys and values in buffers sized for the whole rollout."""

        def __init__(self, rows: int, capacity: int) -> None:
            super().__init__()
            self.rows, self.capacity = rows, capacity
            self.length = 0  # filled columns
            self.live = 0  # rows in use
            self._k: torch.Tensor | None = None
            self._v: torch.Tensor | None = None

        def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
            self.device = key_states.device
            rows = max(self.rows, key_states.size(0))
            cap = max(self.capacity, key_states.size(-2))
            self._k = key_states.new_empty((rows, key_states.size(1), cap, key_states.size(-1)))
            self._v = value_states.new_empty((rows, value_states.size(1), cap, value_states.size(-1)))
            self.live = key_states.size(0)
            self.is_initialized = True

        def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
                   ) -> tuple[torch.Tensor, torch.Tensor]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            n, end = key_states.size(0), self.length + key_states.size(-2)
            if n != self.live:
                raise ValueError(f"KV cache holds {self.live} rows, got keys for {n} "
                                 "(call batch_select_indices when rows change)")
            if end > self._k.size(2):
                self._grow(end)
            self._k[:n, :, self.length:end] = key_states
            self._v[:n, :, self.length:end] = value_states
            self.length = end
            self.keys, self.values = self._k[:n, :, :end], self._v[:n, :, :end]
            return self.keys, self.values

        def _grow(self, need: int) -> None:
            """More columns than planned (a caller generating past its capacity): reallocate once, doubling."""
            cap = max(need, 2 * self._k.size(2))
            for name in ("_k", "_v"):
                old = getattr(self, name)
                new = old.new_empty((old.size(0), old.size(1), cap, old.size(3)))
                new[:, :, :self.length] = old[:, :, :self.length]
                setattr(self, name, new)

        def get_seq_length(self) -> int:
            return self.length

        def get_max_length(self) -> int:
            return -1

        def batch_select_indices(self, indices: torch.Tensor) -> None:
            """Row i becomes old row ``indices[i]`` (rows can be repeated, dropped or reordered)."""
            if not self.is_initialized or self.length == 0:
                return
            m = indices.numel()
            if m == self.live and bool((indices == torch.arange(m, device=indices.device)).all()):
                return  # the same rows in the same order: nothing moves
            if m > self._k.size(0):
                for name in ("_k", "_v"):
                    old = getattr(self, name)
                    setattr(self, name, torch.cat([old, old.new_empty((m - old.size(0), *old.shape[1:]))]))
            L = self.length
            self._k[:m, :, :L] = self._k[indices, :, :L]  # the index reads a copy first: safe in place
            self._v[:m, :, :L] = self._v[indices, :, :L]
            self.live = m
            self.keys, self.values = self._k[:m, :, :L], self._v[:m, :, :L]

        def reset(self) -> None:
            self.length, self.live = 0, 0
            self._k = self._v = self.keys = self.values = None
            self.is_initialized = False

    return PreallocatedLayer


def preallocated_cache(rows: int, capacity: int) -> Any:
    """A transformers ``Cache`` whose layers (created as the model reaches them) hold ``rows`` x ``capacity``
    tokens without reallocating; pass it as the model's cache, as a ``DynamicCache`` would be."""
    from transformers.cache_utils import Cache

    return Cache(layer_class_to_replicate=functools.partial(_layer_class(), rows, capacity))


def cache_bytes(cache: Any) -> int:
    """Bytes the cache's buffers hold (for tests and the memory benchmark)."""
    total = 0
    for layer in getattr(cache, "layers", []):
        for t in (getattr(layer, "_k", None), getattr(layer, "_v", None)):
            if t is not None:
                total += t.numel() * t.element_size()
    return total
