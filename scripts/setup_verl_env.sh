#!/usr/bin/env bash
# Create .venv-verl: a second virtual environment with the real `verl` package, for the verl integration
# tests (tests/integrations/test_verl_*.py run code in it as a subprocess).
#
# Why a second venv: verl pins transformers below 5.11 while the main venv has a newer one. verl's base
# install runs on CPU (Ray, hydra, tensordict... no CUDA kernels), so the tests use verl's own Tracking
# and FileLogger rather than a copy of them.
#
# Idempotent and fast when done: a stamp file records the inputs (this script, constraints.txt, the verl
# version); when they are unchanged the script only makes sure rlcockpit is installed editable and exits.
# Usage: scripts/setup_verl_env.sh [VENV_DIR]   (default: <repo>/.venv-verl; VERL_VERSION to override)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-${VERL_VENV:-$ROOT/.venv-verl}}"
VERL_VERSION="${VERL_VERSION:-0.9.1}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
CONSTRAINTS="$ROOT/constraints.txt"
STAMP="$VENV/.rlcockpit-verl-installed"
export PIP_DISABLE_PIP_VERSION_CHECK=1

want="$(cat "$0" "$CONSTRAINTS" 2>/dev/null | sha256sum | cut -d' ' -f1) verl=$VERL_VERSION torch=$TORCH_VERSION"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" && -x "$VENV/bin/python" ]]; then
    echo "setup_verl_env: $VENV is up to date (verl $VERL_VERSION)"
    exit 0
fi

echo "setup_verl_env: creating $VENV (verl $VERL_VERSION, torch $TORCH_VERSION CPU); takes ~3 minutes"
test -x "$VENV/bin/python" || python3 -m venv "$VENV"
PIP="$VENV/bin/pip"
# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build
"$PIP" install -q -c "$CONSTRAINTS" "torch==$TORCH_VERSION"
"$PIP" install -q -c "$CONSTRAINTS" "verl==$VERL_VERSION"
# rlcockpit itself, editable, without its extras (its core deps numpy/pandas/pyarrow/psutil/rich/pyyaml)
"$PIP" install -q -c "$CONSTRAINTS" numpy pandas pyarrow psutil rich pyyaml
"$PIP" install -q --no-deps -e "$ROOT"
HF_HUB_OFFLINE=1 "$VENV/bin/python" - <<'EOF'
import verl
from verl.utils.tracking import Tracking
import rlcockpit
print(f"setup_verl_env: verl {verl.__version__} imports on CPU; Tracking backends: {Tracking.supported_backend}")
EOF
echo "$want" > "$STAMP"
