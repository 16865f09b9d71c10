"""The update room: the PPO / GRPO actor and critic update (``ppo``), fused log-probs (``fused_logprobs``) and
sequence packing (``packing``).

The folder map: docs/architecture.md.
"""
