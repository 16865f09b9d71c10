"""The default reward by data source gives exactly what verl's ``default_compute_score`` gives.

``fixtures/verl_reward_cases.json`` was produced by verl's own functions (``fixtures/make_verl_reward_cases.py``,
run in the verl venv); the last test re-runs verl live when the verl venv is present, so a verl upgrade
that changes the rules shows up as a failure here.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rlcockpit.trainer.reward.rewards import REWARDS, RewardManager
from rlcockpit.trainer.reward.score import NoDefaultReward, default_compute_score

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VERL_PY = Path(__file__).resolve().parents[3] / ".venv-verl" / "bin" / "python"


def _ours(case: dict) -> object:
    try:
        result = default_compute_score(case["data_source"], case["solution"], case["ground_truth"])
    except Exception as exc:  # noqa: BLE001
        return {"error": type(exc).__name__}
    if isinstance(result, dict):
        return {"score": float(result["score"]), "acc": bool(result["acc"]), "pred": result["pred"]}
    return result


def test_every_fixture_case_scores_as_in_verl():
    data = json.loads((FIXTURES / "verl_reward_cases.json").read_text())
    cases = data["cases"]
    assert len(cases) > 700
    sources = {c["data_source"] for c in cases}
    assert {"openai/gsm8k", "lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "math_dapo", "aime2024"} <= sources
    wrong = [(c, _ours(c)) for c in cases if _ours(c) != c["result"]]
    assert not wrong, wrong[:5]
    # the fixture is not trivial: it has right, wrong and unformatted answers for each rule
    gsm = [c["result"] for c in cases if c["data_source"] == "openai/gsm8k"]
    assert 1.0 in gsm and 0.0 in gsm
    dapo = [c["result"]["score"] for c in cases if c["data_source"] == "math_dapo" and isinstance(c["result"], dict)]
    assert 1.0 in dapo and -1.0 in dapo


def test_auto_reward_is_the_default_and_unknown_sources_fail_clearly():
    assert REWARDS.canonical("default") == "auto"
    assert REWARDS.get("auto")(data_source="openai/gsm8k", solution_str="so #### 72", ground_truth="72") == 1.0
    with pytest.raises(NoDefaultReward, match="no built-in reward for data_source 'my_task'.*custom_reward_function"):
        default_compute_score("my_task", "x", "y")


def test_dict_rewards_keep_extra_keys_for_logging():
    from rlcockpit.trainer.config import load_config
    from rlcockpit.trainer.data import PromptRow
    from rlcockpit.trainer.reward.rewards import extra_metrics

    mgr = RewardManager.from_config(load_config(log=None))
    row = PromptRow(prompt="q", ground_truth="42", data_source="math_dapo")
    scores, extras = mgr([row, row], ["Answer: 42", "Answer: 41"])
    assert scores == [1.0, -1.0] and extras[0]["acc"] is True and extras[1]["pred"] == "41"
    assert extra_metrics(extras) == {"reward_extra/acc/mean": 0.5}


@pytest.mark.slow
@pytest.mark.skipif(not VERL_PY.exists(), reason="the verl venv is built by `make test` (scripts/setup_verl_env.sh)")
def test_fixture_is_what_verl_gives_today(tmp_path):
    script = FIXTURES / "make_verl_reward_cases.py"
    code = ("import json, runpy, sys; sys.argv=['x']; m = runpy.run_path(sys.argv[1] if len(sys.argv)>1 else "
            f"{str(script)!r}); from verl.utils.reward_score import default_compute_score as f; "
            "cases = m['cases'](); out=[]\n"
            "for c in cases:\n"
            "    try: r = f(c['data_source'], c['solution'], c['ground_truth'])\n"
            "    except Exception as e: r = {'error': type(e).__name__}\n"
            "    if isinstance(r, dict) and 'acc' in r: r = {'score': float(r['score']), 'acc': bool(r['acc']), "
            "'pred': r.get('pred')}\n"
            "    out.append(r)\n"
            "print(json.dumps(out))")
    proc = subprocess.run([str(VERL_PY), "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    live = json.loads(proc.stdout.strip().splitlines()[-1])
    stored = [c["result"] for c in json.loads((FIXTURES / "verl_reward_cases.json").read_text())["cases"]]
    assert live == stored


@pytest.mark.slow
def test_dict_reward_extras_are_logged_and_kept_in_samples(tiny_cfg, tmp_path):
    import rlcockpit
    from rlcockpit.trainer.loop import train

    f = tmp_path / "r.py"
    f.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                 "    ok = solution_str.strip() == str(ground_truth)\n"
                 "    return {'score': float(ok), 'acc': ok, 'length_ok': len(solution_str) <= 4, 'note': 'x'}\n")
    result = train(tiny_cfg(f"custom_reward_function.path={f}", "trainer.log_samples_freq=1"))
    run = rlcockpit.Api(str(tmp_path / "store")).run(result.run_id)
    hist = run.history()
    assert {"reward_extra/acc/mean", "reward_extra/length_ok/mean", "val-aux/arith/length_ok/mean@1",
            "val-core/arith/acc/mean@1"} <= set(hist.columns)
    sample = run.samples(step=1)[0]
    assert sample["note"] == "x" and "length_ok" in sample
