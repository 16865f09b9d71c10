"""The rollout room: generating responses: the engine interface and the hf engine (``engine``), the lean decoder,
vLLM (``vllm``), sampling, the KV cache, per-row seeds (``seeds``), the rollout-vs-trainer probability check
(``check``) and ``rlcockpit generate``.

The folder map: docs/architecture.md.
"""
