"""The detector room: one module per detector family (policy, reward, length, loss, memory, off-policy, samples,
system, trend, held-out); each registers its detectors in ``DETECTORS`` and carries their thresholds' names, advice and
story.

The folder map: docs/architecture.md.
"""
