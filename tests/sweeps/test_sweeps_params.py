"""W&B's distributions, sampled: ranges, shapes, rounding, and the quantile maps Bayesian search uses."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from rlcockpit.sweeps.params import parse_parameters


def param(spec: dict):
    return parse_parameters({"x": spec})[0]


def draws(spec: dict, n: int = 4000, seed: int = 0) -> list:
    p = param(spec)
    rng = np.random.default_rng(seed)
    return [p.sample(rng) for _ in range(n)]


def test_log_uniform_bounds_are_natural_logs() -> None:
    xs = np.array(draws({"distribution": "log_uniform", "min": math.log(1e-4), "max": math.log(1e-1)}))
    assert xs.min() >= 1e-4 * 0.999 and xs.max() <= 1e-1 * 1.001
    assert stats.kstest(np.log(xs), stats.uniform(math.log(1e-4), math.log(1e3)).cdf).pvalue > 0.01


def test_log_uniform_values_takes_the_values() -> None:
    xs = np.array(draws({"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-1}))
    assert xs.min() >= 1e-4 and xs.max() <= 1e-1
    assert np.mean(xs < 1e-3) == pytest.approx(1 / 3, abs=0.04)  # a third of the decades


def test_inv_log_uniform_is_exp_of_minus_uniform() -> None:
    xs = np.array(draws({"distribution": "inv_log_uniform", "min": 1.0, "max": 3.0}))
    assert xs.min() >= math.exp(-3) * 0.999 and xs.max() <= math.exp(-1) * 1.001
    assert stats.kstest(-np.log(xs), stats.uniform(1.0, 2.0).cdf).pvalue > 0.01


def test_inv_log_uniform_values_stays_within_min_max() -> None:
    xs = np.array(draws({"distribution": "inv_log_uniform_values", "min": 0.01, "max": 1.0}))
    assert xs.min() >= 0.01 and xs.max() <= 1.0


def test_q_uniform_rounds_and_integer_q_gives_ints() -> None:
    xs = draws({"distribution": "q_uniform", "min": 0, "max": 10, "q": 2})
    assert all(isinstance(x, int) and x % 2 == 0 for x in xs)
    assert set(xs) == {0, 2, 4, 6, 8, 10}
    fs = draws({"distribution": "q_uniform", "min": 0.0, "max": 1.0, "q": 0.25})
    assert all(isinstance(x, float) for x in fs) and set(fs) <= {0.0, 0.25, 0.5, 0.75, 1.0}


def test_q_log_uniform_values_rounds_to_q() -> None:
    xs = draws({"distribution": "q_log_uniform_values", "min": 16, "max": 256, "q": 16})
    assert all(isinstance(x, int) and x % 16 == 0 and 16 <= x <= 256 for x in xs)


def test_int_uniform_is_inclusive() -> None:
    xs = draws({"min": 1, "max": 3}, n=600)
    assert set(xs) == {1, 2, 3} and all(isinstance(x, int) for x in xs)


def test_normal_and_log_normal_moments() -> None:
    xs = np.array(draws({"distribution": "normal", "mu": 2.0, "sigma": 0.5}))
    assert xs.mean() == pytest.approx(2.0, abs=0.05) and xs.std() == pytest.approx(0.5, abs=0.05)
    ls = np.array(draws({"distribution": "log_normal", "mu": 0.0, "sigma": 1.0}))
    assert np.median(ls) == pytest.approx(1.0, abs=0.1) and ls.min() > 0


def test_q_normal_rounds() -> None:
    xs = draws({"distribution": "q_normal", "mu": 0.0, "sigma": 5.0, "q": 0.5}, n=500)
    assert all(abs(x * 2 - round(x * 2)) < 1e-9 for x in xs)


def test_beta_shape() -> None:
    xs = np.array(draws({"distribution": "beta", "a": 2.0, "b": 5.0}))
    assert stats.kstest(xs, stats.beta(2.0, 5.0).cdf).pvalue > 0.01


def test_categorical_probabilities_are_respected() -> None:
    xs = draws({"values": ["a", "b", "c"], "probabilities": [0.1, 0.6, 0.3]}, n=6000)
    freq = {v: xs.count(v) / len(xs) for v in "abc"}
    assert freq["a"] == pytest.approx(0.1, abs=0.02) and freq["b"] == pytest.approx(0.6, abs=0.02)


def test_categorical_uniform_and_any_value_type() -> None:
    xs = draws({"values": [[1, 2], {"a": 1}, None]}, n=900)
    assert {str(x) for x in xs} == {"[1, 2]", "{'a': 1}", "None"}


CONTINUOUS = [
    {"distribution": "uniform", "min": -3.0, "max": 7.0},
    {"distribution": "log_uniform", "min": -5.0, "max": 1.0},
    {"distribution": "log_uniform_values", "min": 1e-5, "max": 1e-2},
    {"distribution": "inv_log_uniform", "min": 0.5, "max": 4.0},
    {"distribution": "inv_log_uniform_values", "min": 0.1, "max": 10.0},
    {"distribution": "normal", "mu": 1.0, "sigma": 2.0},
    {"distribution": "log_normal", "mu": 0.5, "sigma": 0.7},
    {"distribution": "beta", "a": 2.0, "b": 3.0},
]


@pytest.mark.parametrize("spec", CONTINUOUS, ids=[s["distribution"] for s in CONTINUOUS])
@settings(max_examples=60, deadline=None)
@given(u=st.floats(min_value=1e-6, max_value=1 - 1e-6))
def test_cdf_inverts_ppf(spec: dict, u: float) -> None:
    p = param(spec)
    assert p.cdf(p.ppf(u)) == pytest.approx(u, abs=1e-6)


def test_cdf_of_impossible_values_is_none() -> None:
    assert param({"distribution": "log_uniform_values", "min": 1e-3, "max": 1.0}).cdf(-1.0) is None
    assert param({"values": [1, 2]}).cdf(3) is None
    assert param({"values": [1, 2]}).index_of(2.0) == 1  # 2.0 is the value 2 (YAML, JSON round trips)
    assert param({"values": [True, 1]}).index_of(1) == 1  # but True is not 1
