#!/usr/bin/env bash
# Create .venv-verl: a second virtual environment with the real `verl` package, for the verl integration
# tests (tests/integrations/test_verl_*.py run code in it as a subprocess).
#
# Why a second venv: verl pins transformers below 5.11 while the main venv has a newer one. verl's base
# install runs on CPU (Ray, hydra, tensordict... no CUDA kernels), so the tests use verl's own Tracking
# and FileLogger rather than a copy of them.
#
# Idempotent and fast when done: a stamp file records the inputs (this script, scripts/venv_common.sh,
# constraints.txt, the versions); when they are unchanged the script exits at once.
# Usage: scripts/setup_verl_env.sh [VENV_DIR]   (default: <repo>/.venv-verl; VERL_VERSION to override)
set -euo pipefail

# shellcheck source=scripts/venv_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/venv_common.sh"
VENV="${1:-${VERL_VENV:-$ROOT/.venv-verl}}"
VERL_VERSION="${VERL_VERSION:-0.9.1}"
STAMP="$VENV/.rlcockpit-verl-installed"

want="$(venv_want "$0" "verl=$VERL_VERSION" "torch=$TORCH_VERSION")"
venv_exit_if_current setup_verl_env "$VENV" "$STAMP" "$want" "verl $VERL_VERSION"

echo "setup_verl_env: creating $VENV (verl $VERL_VERSION, torch $TORCH_VERSION CPU); takes ~3 minutes"
venv_create_with_torch "$VENV"
# verl 0.9.1's PPO trainer (verl.trainer.ppo.ray_trainer) imports cachetools, uvicorn and fastapi, which verl
# does not declare
"$VENV/bin/pip" install -q -c "$CONSTRAINTS" "verl==$VERL_VERSION" cachetools uvicorn fastapi
venv_install_rlcockpit "$VENV"
HF_HUB_OFFLINE=1 "$VENV/bin/python" - <<'PY'
import verl
from verl.utils.tracking import Tracking
import verl.trainer.ppo.ray_trainer  # noqa: F401 - verl's PPO trainer, which verl users' scripts import
import rlcockpit
print(f"setup_verl_env: verl {verl.__version__} imports on CPU; Tracking backends: {Tracking.supported_backend}")
PY
venv_share "$VENV"
echo "$want" > "$STAMP"
