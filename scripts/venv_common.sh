# shellcheck shell=bash
# What the side venvs' setup scripts (setup_verl_env.sh -> .venv-verl, setup_vllm_env.sh -> .venv-vllm) share:
# the repo paths and pins, the stamp that makes a re-run instant, torch's CPU wheel first, rlcockpit's core
# deps and rlcockpit itself editable. Sourced by those scripts, not run.
#
# Why a stamp: `make test` calls both scripts every time; a venv takes minutes and ~1 GB of downloads to build,
# so a script exits at once when its stamp file holds the same inputs (the calling script, this file,
# constraints.txt, the pinned versions) as the build that wrote it.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
CONSTRAINTS="$ROOT/constraints.txt"
MAIN_VENV="${MAIN_VENV:-$ROOT/.venv}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# No wheel/http cache: every install here is a fresh venv, and a GB of cached downloads is disk CI may not have.
export PIP_NO_CACHE_DIR=1

# venv_share VENV: hard-link VENV's files to identical ones in the main venv (scripts/share_venv_files.py);
# run after each big install so the next one has the room.
venv_share() {
    python3 "$ROOT/scripts/share_venv_files.py" "$1" "$MAIN_VENV"
}

# venv_want SCRIPT PINS...: the stamp text of a build from these inputs ("<sha256> name=version ...").
venv_want() {
    local script="$1" hash
    shift
    hash="$(cat "$script" "${BASH_SOURCE[0]}" "$CONSTRAINTS" 2>/dev/null | sha256sum | cut -d' ' -f1)"
    echo "$hash $*"
}

# venv_exit_if_current NAME VENV STAMP WANT WHAT: exit (the calling script, status 0) when VENV was built from WANT.
venv_exit_if_current() {
    local name="$1" venv="$2" stamp="$3" want="$4" what="$5"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/python" ]]; then
        echo "$name: $venv is up to date ($what)"
        exit 0
    fi
}

# venv_create_with_torch VENV: the venv (kept if it exists), torch first, pinned: an unpinned torch (or one a
# package pulls in) would be a multi-GB CUDA build.
venv_create_with_torch() {
    local venv="$1"
    test -x "$venv/bin/python" || python3 -m venv "$venv"
    "$venv/bin/pip" install -q -c "$CONSTRAINTS" "torch==$TORCH_VERSION"
    venv_share "$venv"
}

# venv_install_rlcockpit VENV [DEPS...]: rlcockpit's core deps (+ DEPS) under constraints.txt, then rlcockpit
# itself editable without deps (its extras would drag the main venv's newer transformers in).
venv_install_rlcockpit() {
    local venv="$1"
    shift
    "$venv/bin/pip" install -q -c "$CONSTRAINTS" numpy pandas pyarrow psutil rich pyyaml "$@"
    "$venv/bin/pip" install -q --no-deps -e "$ROOT"
}
