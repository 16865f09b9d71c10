"""Regenerate the labelled detection corpus: one command, seeded, real runs cached.

    python bench/detection_corpus/gen/build.py                 # everything (real runs only where not cached)
    python bench/detection_corpus/gen/build.py --synthetic-only  # regenerate the synthetic sources, keep the real
                                                               # traces already in the corpus files
Real runs (rlcockpit's trainer, TRL) are cached per run under ``bench/detection_corpus/.cache/`` (not in git):
an interrupted build continues where it stopped. Without a cache, real traces already committed in the corpus
are kept unless ``--rerun-real`` is given.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus_schema as schema  # noqa: E402
import synth_verl  # noqa: E402
import synth_wandb  # noqa: E402

REAL = ("rlcockpit_trainer", "trl_grpo")


def real_traces(source: str, rerun: bool) -> list[dict]:
    cache = HERE.parent / ".cache" / source
    if not rerun and not cache.exists():
        kept = [t for t in schema.load_corpus() if t["source"] == source]
        if kept:
            print(f"[corpus] {source}: keeping {len(kept)} committed traces (no cache; --rerun-real to run them again)")
            return [_plain(t) for t in kept]
    if source == "rlcockpit_trainer":
        from trainer_specs import run_trainer_corpus

        return run_trainer_corpus()
    from real_trl import run_trl_corpus

    return run_trl_corpus()


def _plain(t: dict) -> dict:
    """A decoded trace back into the writable form (lists, not tuples)."""
    return {**t, "metrics": [[s, m] for s, m in t["metrics"]], "samples": [[s, r] for s, r in t["samples"]]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--synthetic-only", action="store_true", help="do not run real trainers; keep committed real traces")
    ap.add_argument("--rerun-real", action="store_true", help="run real traces that are not cached even if committed")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    traces = synth_verl.generate() + synth_wandb.generate()
    for source in REAL:
        if args.synthetic_only:
            traces += [_plain(t) for t in schema.load_corpus() if t["source"] == source]
        else:
            traces += real_traces(source, args.rerun_real)
    ids = Counter(t["id"] for t in traces)
    dup = [i for i, n in ids.items() if n > 1]
    if dup:
        raise SystemExit(f"duplicate trace ids: {dup[:5]}")
    schema.assign_splits(traces)
    sizes = schema.write_corpus(traces)
    by = Counter((t["split"], t["source"]) for t in traces)
    print(f"{len(traces)} traces; " + ", ".join(f"{sp}/{so}: {n}" for (sp, so), n in sorted(by.items())))
    print("classes:", dict(sorted(Counter(t["class"] for t in traces).items())))
    print(f"files: {sum(sizes.values()) / 1e6:.2f} MB", {k: f"{v / 1e3:.0f} kB" for k, v in sizes.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
