"""The distributed room: data-parallel training on one node over gloo / NCCL: the process group (``group``), the
sharded rollout (``rollout``) and the launcher (``run``).

The folder map: docs/architecture.md.
"""
