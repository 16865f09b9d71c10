"""Real runs of rlcockpit's own trainer on CPU in settings the rest of the corpus lacks, kept as the files it wrote.

Settings: one or two prompts per step, long runs (>= 500 steps of the corpus's random-init GPT-2 with its BPE tokenizer, built in code), validation every k
steps. The run logs through its TensorBoard sink (``trainer.logger=[tensorboard]``); the event file it wrote is
copied gzipped into ``bench/detection_corpus/real/rlcockpit_trainer_cpu/<name>/`` and read back by
``rlcockpit import``'s TensorBoard reader like any other real file. Nothing here labels a run: the labels in
``real/manifest.json`` were set by reading the event files (see the README). Faults use the corpus driver
(:class:`real_trainer.Fault`), switched on at the start of their step.

    nice python bench/detection_corpus/gen/real_cpu_trainer.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/real_cpu_trainer.py NAME ...   # only these specs
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from real_trainer import Fault, _memo_datasets, bpe_model_dir, digit_overlap

OUT = Path(__file__).resolve().parent.parent / "real" / "rlcockpit_trainer_cpu"

# A flat learning rate, for the later passes' specs whose fault or setting is read against an unchanging lr.
CONSTANT_LR = ("actor_rollout_ref.actor.optim.lr_scheduler_type=constant",)

SPECS: dict[str, dict[str, Any]] = {
    # one prompt x 8 samples per step, 600 steps, validation every 50
    "gpt2-1prompt-600": {"steps": 600, "overrides": ["data.train_batch_size=1", "actor_rollout_ref.rollout.n=8",
                                                      "actor_rollout_ref.actor.ppo_mini_batch_size=1",
                                                      "trainer.test_freq=50"], "seed": 21, "model": "gpt2"},
    # two prompts x 4 samples, 300 steps, validation every 25; lr x60, clip 10, 4 epochs from step 200
    "gpt2-2prompt-collapse-300": {"steps": 300, "overrides": ["data.train_batch_size=2", "actor_rollout_ref.rollout.n=4",
                                                               "actor_rollout_ref.actor.ppo_mini_batch_size=2",
                                                               "trainer.test_freq=25"], "seed": 22, "model": "gpt2",
                                  "fault": {"kind": "lr_jump", "step": 200,
                                            "params": {"factor": 60, "set": {"actor.clip_ratio": 10.0,
                                                                             "actor.ppo_epochs": 4}}}},
    # one prompt x 4 samples, 800 steps, validation every 100; lr x30 from step 500 (nothing else changed)
    "gpt2-1prompt-lr30-800": {"steps": 800, "overrides": ["data.train_batch_size=1", "actor_rollout_ref.rollout.n=4",
                                                           "actor_rollout_ref.actor.ppo_mini_batch_size=1",
                                                           "trainer.test_freq=100"], "seed": 23, "model": "gpt2",
                              "fault": {"kind": "lr_jump", "step": 500, "params": {"factor": 30}}},
}


def batch_overrides(prompts: int, n: int, *more: str) -> list[str]:
    """A spec's batch shape: ``prompts`` prompts a step, ``n`` samples each, one mini-batch a step; then ``more``."""
    return [f"data.train_batch_size={prompts}", f"actor_rollout_ref.rollout.n={n}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={prompts}", *more]


def _model_overrides(spec: dict[str, Any]) -> list[str]:
    """The corpus BPE model (``model`` arch, ``model_seed``) scored by digit overlap, or with ``model: tiny`` the
    preset's own built-in tiny Qwen2 and reward (its size set by the spec's ``actor.model.tiny.*`` overrides)."""
    if spec["model"] == "tiny":
        return []
    return [f"actor.model.path={bpe_model_dir(spec['model'], spec.get('model_seed', 0))}",
            "reward.name=corpus_digit_overlap"]


def run(name: str, spec: dict[str, Any], out: Path = OUT) -> Path:
    """Run one spec with health off and store the event file its TensorBoard sink wrote under ``out/name``."""
    import rlcockpit.trainer.loop as loop
    import rlcockpit.trainer.state as tstate
    from rlcockpit.trainer import load_config
    from rlcockpit.trainer.reward.rewards import REWARDS

    if "corpus_digit_overlap" not in REWARDS:
        REWARDS.register("corpus_digit_overlap")(digit_overlap)
    with tempfile.TemporaryDirectory(prefix="corpus-cpu-trainer-") as tmp:
        over = [f"trainer.rlcockpit_dir={tmp}/store", f"trainer.default_local_dir={tmp}/ckpt", "health.enable=false",
                "trainer.logger=[tensorboard]", "trainer.preflight=off", f"trainer.experiment_name={name}",
                "trainer.save_freq=0", f"data.seed={spec['seed']}", f"trainer.total_training_steps={spec['steps']}",
                "trainer.num_threads=1", *_model_overrides(spec), *spec["overrides"]]
        cfg = load_config(preset="arith-grpo", overrides=over)
        orig_load = tstate.load_datasets
        tstate.load_datasets = _memo_datasets(orig_load)
        try:
            st = tstate.build(cfg, log=lambda *_a: None)
        finally:
            tstate.load_datasets = orig_load
        tstate.seed_everything(spec["seed"])
        fault = Fault(spec["fault"]["kind"], spec["fault"]["step"], **spec["fault"]["params"]) if spec.get("fault") else None
        if spec.get("driver") is not None:  # a change applied at every step (sixth pass: ramps), ``before_step(st, k)``
            fault = spec["driver"]
        orig_collect = loop.collect

        def hooked(cfg_: Any, engine: Any, tokenizer: Any, reward: Any, loader: Any, step: int, timing: Any) -> Any:
            if fault is not None:
                fault.before_step(st, step)
            return orig_collect(cfg_, st.engine, tokenizer, st.reward, st.loader, step, timing)

        loop.collect = hooked
        t0 = time.time()
        try:
            loop.train(cfg, log=lambda *_a: None, state=st)
        finally:
            loop.collect = orig_collect
        print(f"[cpu-trainer] {name}: {spec['steps']} steps in {time.time() - t0:.0f}s", flush=True)
        (event,) = Path(tmp, "store").rglob("events.out.tfevents*")
        dest = out / name / "events.out.tfevents.gz"
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(event, "rb") as src, open(dest, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            shutil.copyfileobj(src, gz)
    return dest


def main(specs: dict[str, dict[str, Any]], out: Path, not_stored: Collection[str] = ()) -> None:
    """Run the specs named on the command line, or else every spec not stored yet (a pass's ``__main__``)."""
    names = sys.argv[1:] or [n for n in specs
                             if n not in not_stored and not (out / n / "events.out.tfevents.gz").exists()]
    for n in names:
        print(run(n, specs[n], out=out), flush=True)


if __name__ == "__main__":
    main(SPECS, OUT)
