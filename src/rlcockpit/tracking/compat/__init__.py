"""The W&B-habits room: what a script written for ``import wandb`` expects of the run beyond ``init/log/finish``
(``wandb_compat``), W&B's module-level objects and ``WANDB_*`` environment (``wandb_env``), ``init()`` while
another run is active (``reinit``) and a program launched by ``rlcockpit agent`` becoming its sweep's trial
(``sweep_env``)."""
