"""A key that verl 0.9.1's config lacks is refused, as verl's own Hydra compose (in .venv-verl) refuses it, also under
the engine sections rlcockpit accepts by wildcard (``fsdp_config.*``, ``megatron.*``); with ``+`` both take it. (That
every key of verl's generated configs is accepted is test_trainer_verl_defaults.py's.)

Found by hand with verl's ``examples/grpo_trainer/run_qwen2-7b_sync_ref_model.sh``: its
``actor_rollout_ref.ref.sync_ref_model=True`` (with ``ref_model_sync_steps`` and ``ref_model_mixup_alpha``, keys
verl 0.9.1 no longer has) stops verl with "Could not override", while ``rlcockpit train`` took any key under
``actor_rollout_ref.ref.`` without a word (a wildcard), so the reference sync the user asked for silently never ran. Every other wildcard took typos the same way
(``fsdp_config.param_ofload``), and verl's own ``run_qwen3-8b_reorder.sh`` passes ``megatron.grad_offload``, which
verl 0.9.1 refuses: the wildcards now take only the keys listed in ``verl_keys.txt``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from verl_metric_keys import VERL_PY

from rlcockpit.trainer.config import ConfigError, load_config

SCRIPT = Path(__file__).parents[3] / "scripts" / "gen_verl_keys.py"
VERL_REF = r"""
import json, os, sys
import verl
from hydra import compose, initialize_config_dir

conf_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
verdicts = {}
with initialize_config_dir(config_dir=conf_dir, version_base=None):
    for override in json.loads(sys.argv[1]):
        try:
            name = "ppo_megatron_trainer" if ".megatron." in override else "ppo_trainer"
            compose(config_name=name, overrides=[override])
            verdicts[override] = "ok"
        except Exception as exc:
            verdicts[override] = str(exc).splitlines()[0]
print(json.dumps(verdicts))
"""
PROBES = ["actor_rollout_ref.ref.sync_ref_model=True", "actor_rollout_ref.ref.ref_model_sync_steps=128",
          "actor_rollout_ref.ref.ref_model_mixup_alpha=0.9", "actor_rollout_ref.ref.log_prob_micro_batchsize=8",
          "+actor_rollout_ref.ref.sync_ref_model=True", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8",
          "actor_rollout_ref.actor.fsdp_config.param_ofload=True", "actor_rollout_ref.actor.fsdp_config.param_offload=True",
          "actor_rollout_ref.actor.megatron.grad_offload=True", "+actor_rollout_ref.actor.megatron.grad_offload=True",
          "actor_rollout_ref.actor.megatron.param_offload=True", "actor_rollout_ref.rollout.engine_kwargs.vllm.swap=4",
          "trainer.ray_wait_register_center_timeout=300"]


@pytest.fixture(scope="module")
def verl_verdicts() -> dict[str, str]:
    proc = subprocess.run([str(VERL_PY), "-c", VERL_REF, json.dumps(PROBES)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("override", PROBES)
def test_a_ref_key_is_refused_exactly_where_verl_refuses_it(override: str, verl_verdicts: dict[str, str]) -> None:
    verl_ok = verl_verdicts[override] == "ok"
    try:
        load_config(overrides=[override])
        ours_ok, why = True, ""
    except ConfigError as exc:
        ours_ok, why = False, str(exc)
    assert ours_ok == verl_ok, (override, verl_verdicts[override], why)
    if not ours_ok:
        key = override.split("=", 1)[0]
        assert key in why and f"+{key}=" in why, why  # names the key, and the + that passes it as in verl


def test_the_verl_key_list_is_verls_own() -> None:
    """``verl_keys.txt`` is what ``scripts/gen_verl_keys.py`` writes from the verl in .venv-verl."""
    proc = subprocess.run([str(VERL_PY), str(SCRIPT), "--check"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"stale: run .venv-verl/bin/python {SCRIPT}\n{proc.stderr[-2000:]}"
