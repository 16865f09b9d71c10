"""The metric guide: one canonical set of RL metrics, with aliases and explanations.

Canonical names are verl's keys (``actor/entropy``, ``critic/score/mean`` ...). Seed-style
(``train/kl_div``) and TRL (``kl``) names are aliases of them. Detectors, ``rlcockpit explain``
and the dashboard all read this one registry.
"""

from rlcockpit.metrics.guide import GUIDE, MetricInfo, canonical_name, explain, lookup, resolve_metrics

__all__ = ["GUIDE", "MetricInfo", "canonical_name", "explain", "lookup", "resolve_metrics"]
