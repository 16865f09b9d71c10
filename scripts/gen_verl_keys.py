"""Write ``src/rlcockpit/trainer/config/verl_keys.txt``: every key path of verl's four generated trainer configs.

    .venv-verl/bin/python scripts/gen_verl_keys.py           # rewrite it from the installed verl
    .venv-verl/bin/python scripts/gen_verl_keys.py --check   # exit 1 if the committed file is stale

Why a file: ``rlcockpit train`` must know verl's keys without verl installed, so that a wildcard of
``trainer/config/keys.py`` (``actor_rollout_ref.actor.fsdp_config.*``) takes the keys verl has and refuses a typo,
as verl's Hydra compose does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import verl
import yaml

OUT = Path(__file__).resolve().parents[1] / "src" / "rlcockpit" / "trainer" / "config" / "verl_keys.txt"
NAMES = ("ppo", "ppo_megatron", "ppo_veomni", "ppo_torchtitan")


def key_paths(node: dict, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for key, value in node.items():
        out.add(prefix + str(key))
        if isinstance(value, dict):
            out |= key_paths(value, f"{prefix}{key}.")
    return out


def main() -> int:
    conf = Path(verl.__file__).parent / "trainer" / "config"
    keys: set[str] = set()
    for name in NAMES:
        keys |= key_paths(yaml.safe_load((conf / f"_generated_{name}_trainer.yaml").read_text()))
    text = f"# verl {verl.__version__}: key paths of {', '.join(NAMES)} (scripts/gen_verl_keys.py)\n"
    text += "\n".join(sorted(keys)) + "\n"
    if "--check" in sys.argv:
        return 0 if OUT.read_text() == text else 1
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(keys)} keys)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
