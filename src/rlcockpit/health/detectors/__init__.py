"""The detector room: one module per detector family (KL and update size, entropy, reward, length, loss, memory,
off-policy, samples, system, trend, held-out); each registers its detectors in ``DETECTORS`` and carries their thresholds' names, advice and
story. What a collapse shares across families, its ranked causes and fixes, is in ``collapse``.

The folder map: docs/architecture.md.
"""
