"""The metric guide: one canonical set of RL metrics, with aliases and explanations.

Canonical names are verl's keys (``actor/entropy``, ``critic/score/mean`` ...). Seed-style
(``train/kl_div``) and TRL (``kl``) names are aliases of them; keys with variable parts
(``system/gpu/<i>/utilization``, ``val-core/<source>/<metric>/mean@<N>``) are pattern entries.
Detectors, ``rlcockpit explain`` and the dashboard all read this one registry.
"""

from rlcockpit.metrics.guide import (
    GUIDE,
    Knob,
    Match,
    MetricInfo,
    all_entries,
    canonical_name,
    entry_as_dict,
    explain,
    guide_as_dict,
    healthy_range,
    lookup,
    match,
    resolve_metrics,
    suggest,
    to_verl_key,
)

__all__ = [
    "GUIDE",
    "Knob",
    "Match",
    "MetricInfo",
    "all_entries",
    "canonical_name",
    "entry_as_dict",
    "explain",
    "guide_as_dict",
    "healthy_range",
    "lookup",
    "match",
    "resolve_metrics",
    "suggest",
    "to_verl_key",
]
