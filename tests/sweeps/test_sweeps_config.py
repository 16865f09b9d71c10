"""The sweep file schema: W&B's files load unchanged, mistakes fail naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweeps_support import ARTICLE_SWEEP, WANDB_GRID, WANDB_HYPERBAND, WANDB_NESTED

from rlcockpit.sweeps.config import load_sweep_file, load_yaml, parse_sweep
from rlcockpit.sweeps.params import SweepConfigError


def test_article_sweep_file_loads_with_scientific_notation_as_numbers(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(ARTICLE_SWEEP)
    cfg = load_sweep_file(path)
    assert cfg.method == "bayes" and cfg.program == "ppo_main.py"
    assert cfg.metric is not None and cfg.metric.name == "reward/mean" and cfg.metric.maximize
    params = {p.name: p for p in cfg.parameters}
    assert params["lr"].kind == "uniform"  # float min/max; PyYAML alone would read 1e-6 as the string "1e-6"
    assert params["lr"].spec == {"min": 1e-6, "max": 1e-4}
    assert params["kl_coef"].kind == "categorical" and params["kl_coef"].values == [0.01, 0.02, 0.05]
    assert params["rollout_batch_size"].values == [512, 1024, 2048]


def test_yaml_12_floats_but_strings_stay_strings() -> None:
    data = load_yaml("a: 1e-6\nb: 5E+3\nc: '1e-6'\nd: 3\ne: 1.5\nf: abc\ng: -2e-3")
    assert data == {"a": 1e-6, "b": 5e3, "c": "1e-6", "d": 3, "e": 1.5, "f": "abc", "g": -2e-3}
    assert isinstance(data["d"], int)


@pytest.mark.parametrize("text", [WANDB_GRID, WANDB_HYPERBAND, WANDB_NESTED])
def test_wandb_example_files_load(text: str) -> None:
    cfg = parse_sweep(load_yaml(text))
    assert cfg.method == "grid" and cfg.parameters


def test_nested_parameters_are_flattened_with_their_paths() -> None:
    cfg = parse_sweep(load_yaml(WANDB_NESTED))
    assert [p.path for p in cfg.parameters] == [("batch_size",), ("optimizer", "lr"), ("optimizer", "nadam", "beta")]
    assert cfg.parameters[2].name == "optimizer.nadam.beta"


def test_hyperband_block_gives_wandb_bands() -> None:
    cfg = parse_sweep(load_yaml(WANDB_HYPERBAND))
    et = cfg.early_terminate
    assert et is not None and et.type == "hyperband" and et.strict  # W&B's default since 2024
    assert et.bands == (1, 3)  # 10/3 = 3.33 -> 3, 3.33/3 = 1.11 -> 1


@pytest.mark.parametrize(("spec", "kind"), [
    ({"values": [1, 2]}, "categorical"),
    ({"values": [1, 2], "probabilities": [0.3, 0.7]}, "categorical_w_probabilities"),
    ({"value": 3}, "constant"),
    ({"min": 1, "max": 10}, "int_uniform"),
    ({"min": 1.0, "max": 10.0}, "uniform"),
    ({"min": 1, "max": 10.5}, "uniform"),
    ({"distribution": "log_uniform", "min": -9.2, "max": -2.3}, "log_uniform"),
    ({"distribution": "q_log_uniform_values", "min": 16, "max": 256, "q": 16}, "q_log_uniform_values"),
    ({"distribution": "normal"}, "normal"),
    ({"distribution": "beta", "a": 2, "b": 5}, "beta"),
])
def test_distribution_is_inferred_as_wandb_does(spec: dict, kind: str) -> None:
    cfg = parse_sweep({"program": "t.py", "method": "random", "parameters": {"x": spec}})
    assert cfg.parameters[0].kind == kind


def test_defaults_are_filled() -> None:
    cfg = parse_sweep({"program": "t.py", "method": "random", "parameters": {
        "n": {"distribution": "normal"}, "q": {"distribution": "q_uniform", "min": 0, "max": 4}}})
    spec = {p.name: dict(p.spec) for p in cfg.parameters}
    assert spec["n"] == {"mu": 0.0, "sigma": 1.0}
    assert spec["q"] == {"min": 0, "max": 4, "q": 1.0}
    assert cfg.metric is None and cfg.run_cap is None


@pytest.mark.parametrize(("raw", "needle"), [
    ({"program": "t.py", "method": "random", "parameters": {"x": {"values": [1]}}, "paramters": {}},
     "'paramters' (did you mean 'parameters'?)"),
    ({"program": "t.py", "method": "bayes", "parameters": {"x": {"min": 0.0, "max": 1.0}}}, "needs a metric"),
    ({"program": "t.py", "method": "grid", "parameters": {"x": {"min": 0.0, "max": 1.0}}}, "parameters.x: grid"),
    ({"program": "t.py", "method": "random", "parameters": {"x": {"min": 0.0, "max": 1.0, "step": 2}}},
     "parameters.x: unknown key(s) step"),
    ({"program": "t.py", "method": "random", "parameters": {"x": {"distribution": "loguniform", "min": 1, "max": 2}}},
     "Did you mean 'log_uniform'?"),
    ({"program": "t.py", "method": "random", "parameters": {"x": {"min": "1e-6", "max": 1.0}}},
     "parameters.x.min must be a number"),
    ({"program": "t.py", "method": "random", "parameters": {"x": {"min": 2.0, "max": 1.0}}}, "must be less than max"),
    ({"program": "t.py", "method": "random",
      "parameters": {"x": {"distribution": "log_uniform_values", "min": 0, "max": 1.0}}}, "min must be > 0"),
    ({"program": "t.py", "method": "random", "parameters": {"x": {"values": [1, 2], "probabilities": [0.5, 0.6]}}},
     "must sum to 1"),
    ({"program": "t.py", "method": "custom", "parameters": {"x": {"values": [1]}}}, "not supported"),
    ({"program": "t.py", "method": "random", "parameters": {"x": {"values": [1]}}, "job": "a/b:v0"}, "Launch"),
    ({"program": "t.py", "method": "random", "parameters": {"x": {"values": [1]}}, "command": ["${argz}"]},
     "unknown macro ${argz}. Did you mean ${args}?"),
    ({"program": "t.py", "method": "random", "parameters": {"x": {"values": [1]}}, "run_cap": 0}, "run_cap"),
    ({"program": "t.py", "method": "random", "metric": {"name": "m", "goal": "max"},
      "parameters": {"x": {"values": [1]}}}, "minimize or maximize"),
    ({"program": "t.py", "method": "random", "metric": {"name": "m"}, "parameters": {"x": {"values": [1]}},
      "early_terminate": {"type": "hyperband", "eta": 3}}, "min_iter, or max_iter and s"),
    ({"program": "t.py", "method": "random", "metric": {"name": "m"}, "parameters": {"x": {"values": [1]}},
      "early_terminate": {"type": "hyperband", "min_iter": 3, "max_itr": 9}}, "unknown key(s) max_itr"),
    ({"program": "t.py", "method": "random", "parameters": {"x": {"values": [1]}},
      "early_terminate": {"type": "health", "severity": "fatal"}}, "critical or warning"),
])
def test_mistakes_name_the_key(raw: dict, needle: str) -> None:
    with pytest.raises(SweepConfigError) as exc:
        parse_sweep(raw)
    assert needle in str(exc.value)


def test_command_without_program_macro_needs_no_program() -> None:
    cfg = parse_sweep({"method": "grid", "command": ["${env}", "rlcockpit", "train", "${args_no_hyphens}"],
                       "parameters": {"actor.optim.lr": {"values": [1e-5, 3e-5]}}})
    assert cfg.program is None and cfg.parameters[0].name == "actor.optim.lr"


def test_flow_style_command_with_macros_is_read_as_meant() -> None:
    """`command: [${env}, rlcockpit, train, ...]` is not valid YAML (`{` opens a mapping); read it as the list."""
    cfg = parse_sweep(load_yaml("program: rlcockpit\nmethod: grid\n"
                                "command: [${env}, rlcockpit, train, --preset, arith-grpo, ${args_no_hyphens}]\n"
                                "parameters: {rollout.n: {values: [2, 4]}}\n"))
    assert cfg.command == ["${env}", "rlcockpit", "train", "--preset", "arith-grpo", "${args_no_hyphens}"]


def test_program_is_needed_only_by_process_agents(tmp_path, monkeypatch) -> None:
    import rlcockpit
    from rlcockpit.sweeps import Agent
    from rlcockpit.sweeps.config import check_runnable

    cfg = parse_sweep({"method": "random", "parameters": {"x": {"values": [1]}}})  # as wandb.sweep(config) takes it
    with pytest.raises(SweepConfigError, match="rlcockpit.agent\\(SWEEP_ID, function=train\\)"):
        check_runnable(cfg)
    monkeypatch.setenv("RLCOCKPIT_DIR", str(tmp_path))
    sweep_id = rlcockpit.sweep({"method": "random", "parameters": {"x": {"values": [1]}}})
    with pytest.raises(SweepConfigError, match="has no 'program'"):
        Agent(sweep_id)
