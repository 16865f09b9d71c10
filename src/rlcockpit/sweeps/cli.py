"""``rlcockpit sweep``, ``rlcockpit agent`` and ``rlcockpit importance`` (heavy imports inside handlers)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    s = subparsers.add_parser(
        "sweep", help="register a W&B-style sweep (or pause/resume/stop/cancel one, or show its trials)",
        description="Register a sweep from a W&B sweep file and print its id; run it with `rlcockpit agent ID`. "
                    "For trainer sweeps (program: rlcockpit, or verl's ppo_main.py), --preset/--config/overrides "
                    "are the base of every trial, as in `rlcockpit train`.")
    s.add_argument("config", nargs="?", help="the sweep YAML file")
    _sweep_options(s)
    s.add_argument("overrides", nargs=argparse.REMAINDER,
                   help="trainer overrides added to every trial (key=value), before or after the options")
    s.set_defaults(func=_sweep)

    a = subparsers.add_parser("agent", help="run trials of a sweep (several agents may share one sweep)",
                              description="Take trials from a sweep and run each as a program; stops when the "
                                          "sweep has none left or after --count trials.")
    a.add_argument("sweep_id", help="the id printed by `rlcockpit sweep` (project/ID also works)")
    a.add_argument("--count", type=int, help="run at most this many trials")
    a.add_argument("--dir", help="store directory (default $RLCOCKPIT_DIR or ./rlcockpit)")
    a.set_defaults(func=_agent)

    i = subparsers.add_parser("importance", help="which hyperparameters matter for a metric",
                              description="Random-forest importance and correlation (as W&B shows), out-of-bag "
                                          "permutation importance and PED-ANOVA for each varying config key.")
    i.add_argument("--project", required=True)
    i.add_argument("--sweep", help="only the trials of this sweep")
    i.add_argument("--metric", required=True, help="the summary metric, e.g. val-core/arith/acc/mean@1")
    i.add_argument("--goal", choices=("max", "min"),
                   help="which way is better (default: the sweep's metric.goal for its metric, else the metric "
                        "guide's direction, else max)")
    i.add_argument("--dir", help="store directory (default $RLCOCKPIT_DIR or ./rlcockpit)")
    i.add_argument("--json", action="store_true", help="print the result as JSON")
    i.set_defaults(func=_importance)


def _sweep_options(s: argparse.ArgumentParser) -> None:
    s.add_argument("--project", help="project of the sweep and its trials (default: the file's, "
                                     "$RLCOCKPIT_PROJECT, else 'default')")
    s.add_argument("--name", help="a name for the sweep (default: the file's)")
    s.add_argument("--dir", help="store directory (default $RLCOCKPIT_DIR or ./rlcockpit)")
    s.add_argument("--store", dest="dir", metavar="URL",
                   help="store URL (sqlite:///DIR, postgresql://...) or directory; same as --dir")
    s.add_argument("--seed", type=int, help="seed of the search (default: random, stored with the sweep)")
    s.add_argument("--sampler", default="auto", choices=("auto", "tpe", "gp"),
                   help="Bayesian sampler: auto = Gaussian process for a few numeric parameters, else TPE")
    s.add_argument("--preset", help="trainer preset for every trial (trainer sweeps)")
    s.add_argument("--train-config", dest="train_config", help="trainer YAML for every trial (trainer sweeps)")
    for flag, state in (("--pause", "paused"), ("--resume", "running"), ("--stop", "stopped"),
                        ("--cancel", "cancelled")):
        s.add_argument(flag, metavar="SWEEP_ID", dest=f"set_{state}",
                       help=f"set a sweep {state}" + (" (running trials are killed)" if state == "cancelled" else
                                                      " (running trials finish)" if state == "stopped" else ""))
    s.add_argument("--status", nargs="?", const="", metavar="SWEEP_ID",
                   help="show a sweep's trials (without an id: list the sweeps)")


def _state(dir: str | None) -> Any:
    from rlcockpit.store.sql import open_database
    from rlcockpit.sweeps.state import SweepState

    return SweepState(open_database(dir))


def _split_overrides(args: argparse.Namespace) -> None:
    """Options written after the first override (``s.yaml a=b --project P``) are options, not overrides."""
    opts = argparse.ArgumentParser(prog="rlcockpit sweep", add_help=False)
    _sweep_options(opts)
    found, rest = opts.parse_known_args(args.overrides)
    for key, value in vars(found).items():
        if value is not None and value != opts.get_default(key):
            setattr(args, key, value)
    flags = [r for r in rest if r.startswith("-") and "=" not in r]
    if flags:
        raise ValueError(f"unknown option(s) {', '.join(flags)} (see rlcockpit sweep --help)")
    args.overrides = rest


def _sweep(args: argparse.Namespace) -> int:
    _split_overrides(args)
    for state in ("paused", "running", "stopped", "cancelled"):
        sweep_id = getattr(args, f"set_{state}")
        if sweep_id:
            st = _state(args.dir)
            sweep = st.get(sweep_id)
            st.set_state(sweep["id"], state, reason="set by the user")
            print(f"rlcockpit: sweep {sweep['id']} is {state}", file=sys.stderr)
            return 0
    if args.status is not None:
        return _status(args)
    if not args.config:
        raise ValueError("give a sweep YAML file (or --status / --pause / --resume / --stop / --cancel ID)")
    return _create(args)


def _create(args: argparse.Namespace) -> int:
    import os

    from rlcockpit.sweeps.command import command_runs_trainer, is_trainer_program
    from rlcockpit.sweeps.config import load_sweep_file
    from rlcockpit.sweeps.controller import create_sweep

    cfg = load_sweep_file(args.config)
    base: list[str] = []
    if args.preset:
        base += ["--preset", args.preset]
    if args.train_config:
        base += ["--config", str(Path(args.train_config).resolve())]
    base += list(args.overrides)
    trainer = is_trainer_program(cfg.program, cfg.command) or bool(cfg.command and command_runs_trainer(cfg.command))
    if base and not trainer:
        raise ValueError("--preset/--train-config/overrides are for sweeps that run rlcockpit's trainer "
                         "(program: rlcockpit, or a command calling `rlcockpit train`)")
    project = args.project or cfg.project or os.environ.get("RLCOCKPIT_PROJECT") or "default"
    if args.name:
        cfg.name = args.name
    print(f"rlcockpit: creating sweep from {args.config} ({cfg.method}, {len(cfg.searchable)} parameters searched)",
          file=sys.stderr)
    if is_trainer_program(cfg.program, cfg.command) and cfg.program != "rlcockpit":
        print(f"rlcockpit: program {cfg.program} is verl's PPO entry point: trials run `rlcockpit train` with the "
              "parameters as verl overrides", file=sys.stderr)
    sweep_id = create_sweep(_state(args.dir), cfg, project=project, seed=args.seed, sampler=args.sampler,
                            base_args=base)
    print(f"rlcockpit: created sweep {sweep_id} in project {project!r}; run agents with: "
          f"rlcockpit agent {sweep_id}", file=sys.stderr)
    print(sweep_id)
    return 0


def _status(args: argparse.Namespace) -> int:
    from rlcockpit.sweeps.data import sweep_summary

    st = _state(args.dir)
    if not args.status:
        for sw in st.list(args.project):
            n = len(st.trials(sw["id"]))
            print(f"{sw['id']}  {sw['project']:<16} {sw['method']:<6} {sw['state']:<9} {n:>4} trials  "
                  f"{sw['name'] or ''}")
        return 0
    summary = sweep_summary(st, args.status)
    print(f"sweep {summary['id']} ({summary['method']}, {summary['state']}"
          + (f": {summary['reason']}" if summary["reason"] else "") + f") in project {summary['project']!r}")
    metric = summary["metric"]
    for t in summary["trials"]:
        value = "" if t["best"] is None else f"{metric['name']}={t['best']:.6g}"
        params = ", ".join(f"{k}={v}" for k, v in t["params_flat"].items())
        print(f"  #{t['number']:<3} {t['run_id']}  {t['state']:<8} {value:<28} {params}"
              + (f"  ({t['reason']})" if t["reason"] else ""))
    if summary["best"]:
        print(f"best: trial {summary['best']['number']} (run {summary['best']['run_id']})")
    return 0


def _agent(args: argparse.Namespace) -> int:
    from rlcockpit.sweeps.agent import Agent

    if args.count is not None and args.count < 1:
        raise ValueError("--count must be >= 1")
    n = Agent(args.sweep_id, dir=args.dir, count=args.count).run()
    print(f"rlcockpit agent: ran {n} trial(s)", file=sys.stderr)
    return 0


def _importance(args: argparse.Namespace) -> int:
    from rlcockpit.store import open_store
    from rlcockpit.sweeps.importance import project_importance

    sweep, sweep_metric = _sweep_metric(args)
    result = project_importance(open_store(args.dir), args.project, args.metric, sweep=sweep,
                                goal=args.goal, sweep_metric=sweep_metric)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(render_importance(result))
    return 0


def _sweep_metric(args: argparse.Namespace) -> tuple[str | None, dict[str, Any] | None]:
    """The sweep's id and metric (``{"name", "goal"}``) for ``--sweep``; a name that is no registered sweep is
    taken as a run group, with no sweep goal."""
    if not args.sweep:
        return None, None
    from rlcockpit.sweeps.config import parse_sweep

    try:
        sweep = _state(args.dir).get(args.sweep)
    except KeyError:
        return args.sweep, None
    metric = parse_sweep(sweep["config"]).metric
    return sweep["id"], None if metric is None else {"name": metric.name, "goal": metric.goal}


def render_importance(result: dict[str, Any]) -> str:
    where = f"sweep {result['sweep']} of project {result['project']!r}" if result.get("sweep") else \
        f"project {result['project']!r}"
    model = result.get("model") or {}
    r2 = model.get("r2_oob")
    lines = [f"importance of {result['metric']} ({result['goal']}) over {result['n_used']} runs of {where}"
             + (f"; {result['excluded_missing_metric']} runs without the metric left out"
                if result.get("excluded_missing_metric") else "")
             + (f"; {result['excluded_nonfinite']} non-finite left out" if result.get("excluded_nonfinite") else "")
             + (f"; forest R2 {r2:.2f} (out of bag)" if r2 is not None else "")
             + (f"; goal from {result['goal_source']}" if result.get("goal_source") else "")]
    if result.get("note"):
        lines.append(result["note"])
    rows = result["parameters"]
    width = max([len(_label(r)) for r in rows] + [9])
    lines.append(f"{'parameter':<{width}}  permutation  importance  correlation  ped-anova  effect")
    for r in rows:
        corr = "" if r["correlation"] is None else f"{r['correlation']:+.3f}"
        ped = "" if r["ped_anova"] is None else f"{r['ped_anova']:.3f}"
        lines.append(f"{_label(r):<{width}}  {r['permutation']:>11.3f}  {r['importance']:>10.3f}  {corr:>11}  "
                     f"{ped:>9}  {r['direction'] or ''}")
        for lv in r["levels"] or []:
            c = "" if lv["correlation"] is None else f"{lv['correlation']:+.3f}"
            lines.append(f"{'  = ' + lv['value']:<{width}}  {'':>11}  {'':>10}  {c:>11}  {'':>9}  "
                         f"mean {lv['mean']:.4g} (n={lv['n']})")
    if result.get("skipped"):
        lines.append("skipped: " + "; ".join(f"{s['key']} ({s['why']})" for s in result["skipped"]))
    return "\n".join(lines)


def _label(row: dict[str, Any]) -> str:
    return row["key"] + (f" (= {', '.join(row['aliases'])})" if row["aliases"] else "")
