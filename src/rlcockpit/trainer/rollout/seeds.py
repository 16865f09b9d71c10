"""Per-row sampling seeds: a row's samples depend on (seed, row), never on how the batch was split.

Data-parallel training generates each rank's share of the prompts on that rank.  With one global RNG
the draws of a row would depend on which rank it landed on and on the rows generated before it, so the
same config on 1 and on N processes would train on different samples.  Instead each rollout call takes
one base seed from torch's (seeded, checkpointed) RNG, identical on every rank, and row ``i`` of the
*global* batch draws its uniforms from ``torch.Generator`` seeded with ``row_seed(base, i)``.  Tokens
are then drawn by inverse-CDF sampling with those uniforms: the same distribution as
``torch.multinomial``, and the same tokens whatever the batch composition or world size.
vLLM takes the seed of a request's first row (``SamplingParams.seed``).
"""

from __future__ import annotations

from typing import Any

import torch

_MIX = 0x9E3779B97F4A7C15  # golden-ratio increment (splitmix64): neighbouring rows get unrelated streams
_MASK = (1 << 63) - 1


def base_seed() -> int:
    """One draw from torch's global RNG (seeded by ``trainer.seed``, restored on resume)."""
    return int(torch.randint(0, 2**62, (1,)))


def row_seed(base: int, row: int) -> int:
    """The seed of global row ``row`` in the rollout call seeded ``base``."""
    x = (base + (row + 1) * _MIX) & ((1 << 64) - 1)
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & ((1 << 64) - 1)
    return (x ^ (x >> 31)) & _MASK


def row_uniforms(seeds: list[int], steps: int, device: Any = "cpu") -> torch.Tensor:
    """(len(seeds), steps) uniforms in [0, 1): row ``r``'s come from its own generator."""
    out = torch.empty((len(seeds), max(1, steps)), dtype=torch.float64)
    gen = torch.Generator()
    for r, seed in enumerate(seeds):
        gen.manual_seed(int(seed))
        out[r] = torch.rand(out.size(1), dtype=torch.float64, generator=gen)
    return out.to(device)
