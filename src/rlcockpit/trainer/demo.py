"""``rlcockpit demo``: build the tiny model, warm it up, validate, run GRPO, validate, summarise.

The point is to show, on any laptop in a few minutes, RL doing something visible (accuracy on
held-out additions going up) and the cockpit recording it.
"""

from __future__ import annotations

import time


def run_demo(steps: int | None = None, store_dir: str | None = None, preset: str = "arith-grpo",
             overrides: list[str] | None = None) -> int:
    from rlcockpit.trainer.config import load_config
    from rlcockpit.trainer.loop import train

    extra = list(overrides or [])
    if steps is not None:
        extra.append(f"trainer.total_training_steps={steps}")
    if store_dir is not None:
        extra.append(f"trainer.rlcockpit_dir={store_dir}")
    cfg = load_config(preset=preset, overrides=extra)
    task = ("'which bar is taller?' pictures" if cfg.data.builtin.name == "bars"
            else f"{cfg.data.builtin.digits}-digit addition")
    print(f"[rlcockpit] demo: preset {preset}: {cfg.algorithm.adv_estimator} on {task}, "
          f"{cfg.data.train_batch_size} prompts x {cfg.rollout.n} samples per step, "
          f"{cfg.trainer.total_training_steps} steps, model {cfg.actor.model.path} ({cfg.actor.model.dtype})")
    t0 = time.time()
    result = train(cfg)
    wall = time.time() - t0
    from rlcockpit.store import resolve_dir

    store = resolve_dir(store_dir or cfg.trainer.rlcockpit_dir or None)
    lines = ["", "=" * 72, f"rlcockpit demo finished in {wall:.0f}s (run {result.run_id}, {result.status})"]
    if result.val:
        lines.append(f"  held-out accuracy (greedy): {result.val[0][1]:.2f} before RL -> {result.val[-1][1]:.2f} "
                     f"after {result.steps} GRPO steps")
    dir_flag = f" --dir {store_dir}" if store_dir else ""
    lines += [f"  tracking store: {store}",
              "  look at it:",
              f"    rlcockpit runs{dir_flag}",
              f"    rlcockpit show {result.run_id}{dir_flag}",
              f"    rlcockpit ui{dir_flag}",
              "=" * 72]
    print("\n".join(lines))
    return 0 if result.status == "finished" else 1
