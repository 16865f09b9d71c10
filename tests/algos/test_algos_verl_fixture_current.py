"""The checked-in oracle fixture is what verl 0.9.1 computes today (runs the generator in .venv-verl).

If this fails after a verl upgrade or a change to ``verl_oracle/gen_fixture.py``, regenerate with
``.venv-verl/bin/python tests/algos/verl_oracle/gen_fixture.py`` and re-run ``test_algos_verl_oracle.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).parent
REPO = HERE.parents[1]
VERL_PY = REPO / ".venv-verl" / "bin" / "python"
GENERATOR = HERE / "verl_oracle" / "gen_fixture.py"
FIXTURE = HERE / "verl_oracle" / "fixture.npz"


@pytest.mark.slow
def test_checked_in_fixture_is_what_verl_computes(tmp_path):
    if not VERL_PY.exists():
        pytest.skip(".venv-verl is absent: run scripts/setup_verl_env.sh (make test does) to check the oracle")
    out = tmp_path / "fixture.npz"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}  # the generator must not see rlcockpit
    proc = subprocess.run([str(VERL_PY), str(GENERATOR), str(out)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(out) as fresh, np.load(FIXTURE) as stored:
        fresh_meta = json.loads(fresh["__manifest__"].tobytes())
        stored_meta = json.loads(stored["__manifest__"].tobytes())
        assert fresh_meta["names"] == stored_meta["names"], "verl's registered names changed"
        assert len(fresh_meta["cases"]) == len(stored_meta["cases"]), "the cases changed: regenerate"
        differ = [f"{a['id']} ({a['name']}, {a['tag']}): {why}"
                  for a, b in zip(fresh_meta["cases"], stored_meta["cases"])
                  for why in _case_differences(a, fresh, b, stored)]
        assert not differ, f"verl's outputs changed in {len(differ)} places, e.g. {differ[:5]}: regenerate"
    assert FIXTURE.stat().st_size < 2_000_000


ARRAY_KEYS = ("inputs", "outputs")


def _case_differences(a: dict, fresh, b: dict, stored) -> list[str]:
    """How case ``a`` (fresh) differs from ``b`` (checked in), within float tolerance.

    Arrays are compared by value, not by the fixture's array ids: the generator stores each distinct array
    once, so a last-bit difference in one output (a CPU with other SIMD kernels computes 1 ulp apart) shifts
    every later id without anything having changed. Metrics are floats and are compared the same way."""
    out = [f"{k}: {a.get(k)!r} != {b.get(k)!r}" for k in sorted(set(a) | set(b))
           if k not in (*ARRAY_KEYS, "metrics") and a.get(k) != b.get(k)]
    for group in ARRAY_KEYS:
        ga, gb = a.get(group) or {}, b.get(group) or {}
        if sorted(ga) != sorted(gb):
            out.append(f"{group} names {sorted(ga)} != {sorted(gb)}")
            continue
        for name in ga:
            x, y = fresh[ga[name]], stored[gb[name]]
            if x.shape != y.shape or x.dtype != y.dtype or not _close(x, y):
                out.append(f"{group}.{name} differs")
    ma, mb = a.get("metrics") or {}, b.get("metrics") or {}
    if sorted(ma) != sorted(mb):
        out.append(f"metric names {sorted(set(ma) ^ set(mb))} differ")
    else:
        out += [f"metric {k}: {ma[k]!r} != {mb[k]!r}" for k in ma if not _close(ma[k], mb[k])]
    return out


def _close(x, y) -> bool:
    try:
        return bool(np.allclose(np.asarray(x, dtype=float), np.asarray(y, dtype=float), atol=1e-6, rtol=1e-5,
                                equal_nan=True))
    except (TypeError, ValueError):  # strings, None, bool arrays of another kind: exact
        return bool(np.array_equal(np.asarray(x), np.asarray(y)))


def test_a_changed_output_or_metric_is_reported_and_a_last_bit_difference_is_not() -> None:
    with np.load(FIXTURE) as stored:
        arrays = {k: stored[k] for k in stored.files}
    cases = json.loads(arrays["__manifest__"].tobytes())["cases"]
    case = next(c for c in cases if c.get("metrics") and c.get("outputs"))
    key = next(iter(case["outputs"].values()))
    assert _case_differences(case, arrays, case, arrays) == []
    ulp = {**arrays, key: np.nextafter(arrays[key], np.inf).astype(arrays[key].dtype)}
    assert _case_differences(case, ulp, case, arrays) == []
    changed = {**arrays, key: arrays[key] + 1e-3}
    assert _case_differences(case, changed, case, arrays)
    metric = next(k for k, v in case["metrics"].items() if isinstance(v, float))
    other = {**case, "metrics": {**case["metrics"], metric: case["metrics"][metric] * 1.01 + 1e-3}}
    assert any(metric in d for d in _case_differences(other, arrays, case, arrays))
