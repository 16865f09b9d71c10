"""verl 0.9.1's effective config for a command line, from verl itself (run in .venv-verl).

Hydra composes verl's own ``verl/trainer/config/ppo_trainer.yaml`` with the overrides, as ``main_ppo``'s
``@hydra.main`` does; an override of a key verl's config does not have is retried with ``+`` (what a verl user
adds to make an old script run). The result is resolved and flattened to dotted keys.
"""

from __future__ import annotations

import json
import subprocess

from verl_metric_keys import VERL_PY

SCRIPT = r"""
import json, os, re, sys
import verl
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

def composed(overrides):
    for _ in range(len(overrides) + 1):
        try:
            return compose(config_name="ppo_trainer", overrides=overrides)
        except Exception as exc:
            m = re.search(r"Could not override '([^']+)'", str(exc))
            if not m:
                raise
            overrides = ["+" + o if o.split("=", 1)[0] == m.group(1) else o for o in overrides]

def flat(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict) and v:
            yield from flat(v, prefix + str(k) + ".")
        else:
            yield prefix + str(k), v

out = {}
conf_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
with initialize_config_dir(config_dir=conf_dir, version_base=None):
    for case, overrides in json.loads(sys.argv[1]).items():
        tree = OmegaConf.to_container(composed(overrides), resolve=True, throw_on_missing=False)
        out[case] = dict(flat(tree))
print(json.dumps(out, default=str))
"""


def verl_effective_configs(cases: dict[str, list[str]]) -> dict[str, dict[str, object]]:
    """``{case: {dotted key: value}}``: verl's composed, resolved config for each case's overrides (one
    process: importing verl takes most of the time)."""
    proc = subprocess.run([str(VERL_PY), "-c", SCRIPT, json.dumps(cases)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
