"""The media room: W&B's rich values for ``log()`` (``Table``, ``Histogram``, ``Image`` in ``rich``), how images
are encoded and stored (``images``) and ``wandb.plot.*`` preset charts kept as their data tables (``plot``)."""
