"""Reading verl's real launch scripts (tests/trainer/fixtures/verl/, verbatim from volcengine/verl) as bash would.

The scripts compute their overrides from shell variables (``max_response_length=$((1024 * 8))``,
``${NNODES:-8}``), so a plain ``shlex`` split is not enough: bash runs the script with ``python3`` replaced by
a function that prints the arguments of ``python3 -m verl.trainer.main_ppo`` (or ``recipe.dapo...main_dapo``)
NUL-separated; ``ray job submit ... -- python3 ...`` runs the command after ``--``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "verl"

_SHIM = r"""
python3() { if [ "$1" = "-m" ]; then shift 2; printf '%s\0' "$@" >&3; fi; }
python() { :; }
conda() { :; }
ray() { while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done; shift; "$@"; }  # ray job submit ... -- cmd
set +x
source "$0" 3>&1 >/dev/null 2>&1 || true
"""


def script_overrides(name: str, home: str = "/home/user") -> list[str]:
    """The override list verl's ``main_ppo`` receives when ``fixtures/verl/<name>`` runs (``$@`` empty)."""
    path = FIXTURES / name
    proc = subprocess.run(["bash", "-c", _SHIM, str(path)],
                          capture_output=True, env={"HOME": home, "PATH": "/usr/bin:/bin"}, timeout=30)
    return [a.decode() for a in proc.stdout.split(b"\0") if b"=" in a]


def replace_values(overrides: list[str], new: dict[str, object]) -> list[str]:
    """``overrides`` with the values of the keys in ``new`` replaced (``+``/``++`` prefixes kept)."""
    out = []
    for o in overrides:
        head = o[: len(o) - len(o.lstrip("+"))]
        key, _, _value = o[len(head):].partition("=")
        out.append(f"{head}{key}={new[key]}" if key in new else o)
    return out
