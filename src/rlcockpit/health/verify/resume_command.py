"""``diagnose --verify`` for verl and TRL runs, which rlcockpit watches but does not train.

rlcockpit cannot rerun them itself, so it prints the exact command that resumes the run from its last checkpoint
before the onset, with the fix's overrides (one command per ranked fix):

* verl: ``python -m verl.trainer.main_ppo <the run's arguments> trainer.resume_mode=resume_path
  trainer.resume_from_path=<trainer.default_local_dir>/global_step_N <overrides>``;
* TRL: ``--resume_from_checkpoint <output_dir>/checkpoint-N`` (``trainer.train(resume_from_checkpoint=...)``)
  plus the ``GRPOConfig`` arguments.

N is the last save (``save_freq`` / ``save_steps``) at least ``FIX_LEAD`` steps before the onset. When such a rerun is later imported
or watched into the same store (its config resumes from inside the diagnosed run's checkpoint folder), it is
linked as a branch (``meta.verify_of``) and compared with the diagnosed run the same way as rlcockpit's own
branches (:func:`rlcockpit.health.verify.verdict.judge`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlcockpit.health.config_view import detect_framework
from rlcockpit.health.verify.verdict import (
    FIX_LEAD,
    Plan,
    branch_findings,
    headline,
    judge,
    make_plan,
    summarise,
    try_report,
)

OWN_ARGS = "<your original arguments>"  # placeholders where the run recorded no command line
TRL_SCRIPT = "<your TRL script or `trl grpo`>"


def framework_of(run: Mapping[str, Any]) -> str:
    """verl | trl | rlcockpit: the run's config, or its meta's marker for a run imported without its config."""
    marked = (run.get("meta") or {}).get("framework")
    return marked if marked in ("verl", "trl") else detect_framework(run.get("config") or {})


def _dig(config: Mapping[str, Any], path: str) -> Any:
    node: Any = config
    for part in path.split("."):
        if isinstance(node, Mapping) and path in node and node is config:
            return node[path]  # a flat "a.b.c" key
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def save_every(run: Mapping[str, Any]) -> int | None:
    """How often the run saved: verl's ``trainer.save_freq``, TRL's ``save_steps`` (its args or trainer_state)."""
    config = run.get("config") or {}
    if framework_of(run) == "verl":
        return _int(_dig(config, "trainer.save_freq"))
    return _int(config.get("save_steps") or (config.get("trainer_state") or {}).get("save_steps"))


def last_save(onset: int, every: int | None) -> int:
    """The step of the last checkpoint at least ``FIX_LEAD`` steps before ``onset`` when saving every ``every``
    steps (0: none), as for rlcockpit's own runs (see :func:`rlcockpit.health.verify.verdict.checkpoint_before`)."""
    return 0 if not every or every <= 0 else max(0, onset - FIX_LEAD) // every * every


def verl_checkpoint_dir(config: Mapping[str, Any]) -> str:
    """``trainer.default_local_dir`` with verl's default and its ``${trainer.*}`` interpolations resolved."""
    folder = str(_dig(config, "trainer.default_local_dir") or "checkpoints/${trainer.project_name}/${trainer.experiment_name}")
    return re.sub(r"\$\{(trainer\.\w+)\}", lambda m: str(_dig(config, m.group(1)) or m.group(0)), folder)


def _verl_args(run: Mapping[str, Any], drop: set[str]) -> list[str]:
    """The run's own ``key=value`` arguments (from its recorded command line) minus those re-set here."""
    argv = list((run.get("meta") or {}).get("command") or [])
    args = [a for a in argv[1:] if "=" in a and not a.startswith("-")]
    return [shlex.quote(a) for a in args if a.split("=", 1)[0].lstrip("+") not in drop] or [OWN_ARGS]


def verl_command(run: Mapping[str, Any], onset: int, overrides: list[str]) -> tuple[str, str | None]:
    """(command, checkpoint path or None) that resumes the verl run before ``onset`` with ``overrides``."""
    step = last_save(onset, save_every(run))
    ckpt = f"{verl_checkpoint_dir(run.get('config') or {})}/global_step_{step}" if step else None
    resume = ["trainer.resume_mode=resume_path", f"trainer.resume_from_path={ckpt}"] if ckpt else \
        ["trainer.resume_mode=disable"]  # no save before the onset: from the start, same seed
    keys = {o.split("=", 1)[0] for o in overrides + resume}
    quoted = [shlex.quote(a) for a in resume + overrides]
    return " ".join(["python -m verl.trainer.main_ppo", *_verl_args(run, keys), *quoted]), ckpt


def trl_command(run: Mapping[str, Any], onset: int, overrides: list[str]) -> tuple[str, str | None]:
    """(command-line arguments, checkpoint) resuming the TRL run before ``onset``: ``--resume_from_checkpoint``
    (what ``trainer.train(resume_from_checkpoint=...)`` takes) and the ``GRPOConfig`` overrides as flags."""
    config = run.get("config") or {}
    step = last_save(onset, save_every(run))
    out_dir = str(config.get("output_dir") or "<output_dir>")
    ckpt = f"{out_dir}/checkpoint-{step}" if step else None
    flags = ["--resume_from_checkpoint", ckpt] if ckpt else []
    for o in overrides:
        key, _, value = o.partition("=")
        flags += [f"--{key}", value]
    return " ".join([TRL_SCRIPT, *map(shlex.quote, flags)]), ckpt


def resumes_from(config: Mapping[str, Any]) -> str | None:
    """The checkpoint a run's config resumed from (verl's resume_from_path, TRL's resume_from_checkpoint)."""
    path = _dig(config, "trainer.resume_from_path") or config.get("resume_from_checkpoint")
    return str(path) if isinstance(path, str) and path else None


def find_branches(store: Any, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Runs of the store that resumed from inside ``run``'s checkpoint folder; each is linked as its branch
    (``meta.verify_of``) so the dashboard and ``show`` see the link."""
    config = run.get("config") or {}
    root = verl_checkpoint_dir(config) if framework_of(run) == "verl" else str(config.get("output_dir") or "")
    if not root:
        return []
    root_path = Path(root).expanduser()
    out = []
    for other in store.list_runs(fields=("config", "meta")):
        src = resumes_from(other.get("config") or {})
        if other["id"] == run["id"] or src is None or not Path(src).expanduser().is_relative_to(root_path):
            continue
        meta = dict(other.get("meta") or {})
        if meta.get("verify_of") != run["id"]:
            store.update_run(other["id"], meta={**meta, "verify_of": run["id"]})
        out.append(store.get_run(other["id"]))
    return out


def _changed(parent: Mapping[str, Any], child: Mapping[str, Any], overrides: list[str]) -> bool:
    """Whether ``child``'s config sets any of ``overrides``' keys to a value other than ``parent``'s."""
    for o in overrides:
        key = o.split("=", 1)[0]
        if str(_dig(child, key)) != str(_dig(parent, key)):
            return True
    return False


def _tried(parent: Mapping[str, Any], child: Mapping[str, Any], actions: list[dict[str, Any]]) -> int | None:
    """The rank of the try a rerun applied: the one with the largest share of its keys changed (the pasted merged
    line and a single action both match a rerun that pasted the line; the earlier, the line, wins), else ``None``."""
    best: tuple[float, int] | None = None
    for a in actions:
        keys = {o.split("=", 1)[0] for o in a["overrides"]}
        share = sum(_changed(parent, child, [f"{k}="]) for k in keys) / len(keys) if keys else 0.0
        if share > 0 and (best is None or share > best[0]):
            best = (share, a["rank"])
    return None if best is None else best[1]


def compare_branches(store: Any, run: Mapping[str, Any], plan: Plan, branches: list[dict[str, Any]],
                     start: int) -> list[dict[str, Any]]:
    """One try per candidate fix some branch applied: the diagnosed run and its unchanged reruns against the
    branches that applied the try (see :func:`_tried`)."""
    parent_cfg = run.get("config") or {}
    tried = {b["id"]: _tried(parent_cfg, b.get("config") or {}, plan.actions) for b in branches}
    unchanged = [b for b in branches if tried[b["id"]] is None]
    base = [{"role": "unchanged", "seed": None, "overrides": [], "run_id": r["id"], "cpu_s": 0.0,
             "status": r.get("status"), "error": None, "headline": headline(store, r["id"])[1]}
            for r in [run, *unchanged]]
    base_findings = [branch_findings(store, run["id"], b["run_id"], start) for b in base]
    tries = []
    for action in plan.actions:
        fixed = [b for b in branches if tried[b["id"]] == action["rank"]]
        if not fixed:
            continue
        rows = [{"role": "fixed", "seed": None, "overrides": action["overrides"], "run_id": b["id"], "cpu_s": 0.0,
                 "status": b.get("status"), "error": None, "headline": headline(store, b["id"])[1]} for b in fixed]
        verdict, found = judge(plan, base_findings, [branch_findings(store, run["id"], b["id"], start) for b in fixed])
        tries.append(try_report(action, base + rows, verdict, found))
    return tries


def external_verify(store: Any, run_id: str, diagnosis: Mapping[str, Any]) -> tuple[dict[str, Any], str] | None:
    """(report, text) for a verl/TRL run: the resume command per ranked fix, and the comparison with reruns
    already in the store; ``None`` for a run of rlcockpit's own trainer."""
    run = store.get_run(run_id)
    framework = framework_of(run)
    if framework not in ("verl", "trl"):
        return None
    plan = make_plan(store, run_id, diagnosis, external=True)
    build = verl_command if framework == "verl" else trl_command
    commands = []
    for action in plan.actions:
        cmd, ckpt = build(run, plan.onset, action["overrides"])
        commands.append({"rank": action["rank"], "title": action["title"], "command": cmd, "checkpoint": ckpt})
    start = last_save(plan.onset, save_every(run))
    branches = find_branches(store, run)
    tries = compare_branches(store, run, plan, branches, start) if branches else []
    report = summarise(plan, tries, [], 0.0, 0.0, None, [], headline(store, run["id"])[0])
    report.update(framework=framework, commands=commands, branches=[b["id"] for b in branches],
                  start={"step": start, "checkpoint": commands[0]["checkpoint"] if commands else None})
    return report, format_external(report)


def format_external(report: Mapping[str, Any]) -> str:
    """The resume commands, then the comparison with reruns found in the store (if any)."""
    from rlcockpit.health.verify.verdict import format_verify_text

    f = report["finding"]
    lines = [f"{report['run']['id']} is a {report['framework']} run: rlcockpit cannot rerun it. To verify the fix for "
             f"{f['title']} ({f['detector']}, onset step {report['onset']}), resume it before the onset:"]
    for c in report["commands"]:
        lines += [f"\nTry {c['rank']}: {c['title']}", f"  {c['command']}"]
    if not report["commands"]:
        lines.append("  (the root cause has no fix with overrides to verify)")
    if report["tries"]:
        lines.append(f"\nReruns found in the store, linked as branches: {', '.join(report['branches'])}")
        lines.append(format_verify_text(report).split("\n", 2)[-1])
    else:
        lines.append("\nImport or watch the rerun into this store (it resumes from this run's checkpoint folder, "
                     "so it is linked as a branch) and run diagnose --verify again to compare.")
    return "\n".join(lines)
