"""A key verl 0.9.1's config lacks, judged by verl's own Hydra compose (in .venv-verl): under the reference section it
is refused as verl refuses it (with ``+`` both take it); under an engine section rlcockpit takes by wildcard
(``fsdp_config.*``, ``megatron.*``) it is accepted, since other verl versions have such keys and they change nothing
here, and the user is told, with the near key when it looks like a typo. (That every key of verl's generated configs
is accepted is test_trainer_verl_defaults.py's.)

Found by hand with verl's ``examples/grpo_trainer/run_qwen2-7b_sync_ref_model.sh``: its
``actor_rollout_ref.ref.sync_ref_model=True`` (with ``ref_model_sync_steps`` and ``ref_model_mixup_alpha``, keys
verl 0.9.1 no longer has) stops verl with "Could not override", while ``rlcockpit train`` took any key under
``actor_rollout_ref.ref.`` without a word (a wildcard), so the reference sync the user asked for silently never ran.
The other wildcards took typos (``fsdp_config.param_ofload``) without a word too; verl's own
``run_qwen3-8b_reorder.sh`` passes ``megatron.grad_offload``, another verl version's key.
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


NOTED = {"actor_rollout_ref.actor.fsdp_config.param_ofload=True": "actor_rollout_ref.actor.fsdp_config.param_offload",
         "actor_rollout_ref.actor.megatron.grad_offload=True": "",
         "actor_rollout_ref.rollout.engine_kwargs.vllm.swap=4": ""}


def _load(override: str) -> tuple[bool, str]:
    notes: list[str] = []
    try:
        load_config(overrides=[override], log=notes.append)
    except ConfigError as exc:
        return False, str(exc)
    return True, "\n".join(notes)


@pytest.mark.parametrize("override", PROBES)
def test_a_key_verl_lacks_is_refused_or_told(override: str, verl_verdicts: dict[str, str]) -> None:
    verl_ok = verl_verdicts[override] == "ok"
    ours_ok, said = _load(override)
    key = override.split("=", 1)[0].lstrip("+")
    if verl_ok:
        assert ours_ok and key not in said, said  # taken, and nothing said about it
    elif override in NOTED:
        assert ours_ok and f"{key} is not in verl 0.9.1's config" in said and NOTED[override] in said, said
    else:
        assert not ours_ok and key in said and f"+{key}=" in said, said  # names the key, and the + that passes it


def test_the_verl_key_list_is_verls_own() -> None:
    """``verl_keys.txt`` is what ``scripts/gen_verl_keys.py`` writes from the verl in .venv-verl."""
    proc = subprocess.run([str(VERL_PY), str(SCRIPT), "--check"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"stale: run .venv-verl/bin/python {SCRIPT}\n{proc.stderr[-2000:]}"
