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
        assert fresh_meta["cases"] == stored_meta["cases"], "the cases or verl's metrics changed: regenerate"
        assert sorted(fresh.files) == sorted(stored.files)
        differ = [k for k in fresh.files if not np.allclose(fresh[k], stored[k], atol=1e-6, rtol=1e-6, equal_nan=True)]
        assert not differ, f"verl's outputs changed for {len(differ)} arrays: regenerate the fixture"
    assert FIXTURE.stat().st_size < 2_000_000
