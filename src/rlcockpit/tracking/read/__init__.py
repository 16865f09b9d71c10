"""The read room: the wandb-shaped read API (``api``: ``rlcockpit.Api``), W&B's public-API habits on top of it
(``api_wandb``: paths, filters, ``history``/``scan_history``) and ``rlcockpit runs/show/export`` (``cli``)."""
