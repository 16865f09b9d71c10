"""Step phases: which ``timing_s/*`` keys time which part of a training step.

verl times each part of a step as ``timing_s/<name>``; other producers use a few other names for the same part
(``timing_s/generate``, ``timing_s/dataloader``). The dashboard's phase timeline draws :data:`PHASES` in order,
and the bottleneck detector sums them into the coarser :data:`BOTTLENECK_GROUPS` (generation-, update-,
inference-, data- or rollout-bound). This is the one table of them (``tests/structure/test_structure_one_home.py``
fails if a copy appears elsewhere in ``src``).
"""

from __future__ import annotations

# phase -> the timing names (after ``timing_s/``) that time it, in the order a step runs them
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("data", ("data", "dataloader", "data_loading")),
    ("generation", ("gen", "generate", "rollout")),
    ("sample_wait", ("wait_for_enough_samples",)),  # verl's fully-async / V1 trainers: waiting for rollouts
    ("reward", ("reward",)),
    ("log_prob", ("old_log_prob",)),
    ("reference", ("ref",)),
    ("values", ("values",)),
    ("advantage", ("adv",)),
    ("update", ("update_actor", "update_critic", "update")),
    ("sync", ("update_weights", "sync_weights", "reshard", "param_sync")),
    ("validation", ("testing",)),
    ("checkpoint", ("save_checkpoint",)),
)

# verl's V1 trainer logs training/off_policy/*; it times sampling from its replay buffer as timing_s/gen while
# generation runs concurrently elsewhere, so on such a run ``gen`` is a wait for samples, not generation
V1_MARKER = "training/off_policy/"

# bottleneck group -> the phases it sums (validation and checkpoint time is taken out of the step before the split)
BOTTLENECK_GROUPS: dict[str, tuple[str, ...]] = {
    "generation": ("generation",),
    "update": ("update", "sync"),
    "inference": ("log_prob", "reference", "values", "reward", "advantage"),
    "data": ("data",),
    "sample_wait": ("sample_wait",),
}


def timing_keys(phase_names: tuple[str, ...]) -> tuple[str, ...]:
    """The ``timing_s/*`` keys of the named phases, in :data:`PHASES` order within each phase."""
    names = dict(PHASES)
    return tuple(f"timing_s/{t}" for phase in phase_names for t in names[phase])


# bottleneck group -> its ``timing_s/*`` keys
BOTTLENECK_KEYS: dict[str, tuple[str, ...]] = {group: timing_keys(p) for group, p in BOTTLENECK_GROUPS.items()}
