"""What a sweep agent adds to each trial beyond the program's own time.

    python bench/sweep_agent_overhead.py [--trials 8] [--json]

The program is a minimal tracked trial (``rlcockpit.init`` / 20 x ``log`` / ``finish``). Side by side in one
process: the same command run directly ``--trials`` times, then an agent running ``--trials`` trials of a
sweep (suggestion, trial bookkeeping in the store, process launch, output streaming, metric read, trial
record), for random search and Bayesian search with TPE and with the Gaussian process. Overhead per trial
= (agent wall - direct wall) / trials, after the agent's one-time imports (optuna; torch for the GP),
reported separately. Target: <= 1 s.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

PROGRAM = """\
import sys
import rlcockpit
run = rlcockpit.init(project="bench", system_interval=None, health=False, capture_meta=False)
x = float(sys.argv[1].split("=", 1)[1])
for i in range(20):
    run.log({"loss": (x - 0.3) ** 2 + 1.0 / (i + 1)})
run.finish()
"""


def overhead(trials: int = 12, method: str = "random", sampler: str = "auto") -> dict[str, Any]:
    import rlcockpit
    from rlcockpit.store.sql import open_database
    from rlcockpit.sweeps import Agent
    from rlcockpit.sweeps.state import SweepState

    with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
        root = Path(tmp)
        (root / "prog.py").write_text(PROGRAM)
        env = {**os.environ, "RLCOCKPIT_DIR": str(root / "direct"),
               "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
        old_cwd, old_env = os.getcwd(), dict(os.environ)
        os.chdir(root)
        try:
            t0 = time.perf_counter()
            for i in range(trials):
                subprocess.run([sys.executable, "prog.py", f"--x={i / trials}"], env=env, check=True,
                               capture_output=True)
            direct = time.perf_counter() - t0
            os.environ.update({"RLCOCKPIT_DIR": str(root / "swept"), "PYTHONPATH": env["PYTHONPATH"]})
            sweep_id = rlcockpit.sweep({"program": "prog.py", "method": method,
                                        "metric": {"name": "loss", "goal": "minimize"},
                                        "parameters": {"x": {"min": 0.0, "max": 1.0}}}, seed=0, sampler=sampler)
            warm_t0 = time.perf_counter()
            _warm_imports(method, sampler)  # one-time per agent process (optuna, torch for the GP)
            warm = time.perf_counter() - warm_t0
            t0 = time.perf_counter()
            Agent(sweep_id, count=trials, out=io.StringIO()).run()
            swept = time.perf_counter() - t0
            states = [t["state"] for t in SweepState(open_database()).trials(sweep_id)]
        finally:
            os.chdir(old_cwd)
            os.environ.clear()
            os.environ.update(old_env)
    return {"trials": trials, "method": method if method != "bayes" else f"bayes-{sampler}",
            "one_time_import_s": round(warm, 3), "direct_s_per_trial": round(direct / trials, 3),
            "agent_s_per_trial": round(swept / trials, 3),
            "overhead_s_per_trial": round((swept - direct) / trials, 3), "all_finished": states == ["finished"] * trials}


def _warm_imports(method: str, sampler: str) -> None:
    """What the agent pays once per process before its first Bayesian suggestion."""
    if method != "bayes":
        return
    import optuna  # noqa: F401

    if sampler == "gp":
        import torch  # noqa: F401
        from optuna._gp import gp  # noqa: F401


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=12)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    results = [overhead(args.trials, m, s) for m, s in (("random", "auto"), ("bayes", "tpe"), ("bayes", "gp"))]
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        for r in results:
            print(f"{r['method']:<10} direct {r['direct_s_per_trial']:.3f} s/trial, agent {r['agent_s_per_trial']:.3f} "
                  f"s/trial -> overhead {r['overhead_s_per_trial']:+.3f} s/trial (target <= 1 s); one-time imports "
                  f"{r['one_time_import_s']:.2f} s")
    return 0 if all(r["overhead_s_per_trial"] <= 1.0 and r["all_finished"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
