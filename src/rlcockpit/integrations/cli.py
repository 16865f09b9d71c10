"""``rlcockpit watch`` (follow a running verl job) and ``rlcockpit import`` (store a finished run)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("watch", help="follow a running verl job's file log (and rollout dumps) live",
                       description="Follow verl's file logger (trainer.logger=['console','file'], "
                                   "VERL_FILE_LOGGER_PATH) or a captured console log into a stored run, "
                                   "with detectors and alerts running as the job trains. Restart-safe: "
                                   "run it again and it continues where it stopped.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--verl-file", metavar="PATH", help="verl file-logger JSONL (may not exist yet)")
    src.add_argument("--console-log", metavar="PATH", help="captured verl console output (step:N - k:v ...)")
    p.add_argument("--rollout-dir", metavar="DIR", help="verl trainer.rollout_data_dir (<step>.jsonl dumps)")
    p.add_argument("--config", metavar="FILE", help="the job's config yaml/json (e.g. Hydra's .hydra/config.yaml)")
    p.add_argument("--project", default="verl")
    p.add_argument("--name", help="run name (default: the log file's stem)")
    p.add_argument("--dir", help="store directory (default: $RLCOCKPIT_DIR or ./rlcockpit)")
    p.add_argument("--alerts-config", metavar="FILE", help="alerts yaml/json (channels: [...])")
    p.add_argument("--resume", metavar="RUN_ID", help="continue this run (default: the run that watched the "
                                                      "same file, if any)")
    p.add_argument("--poll", type=float, default=1.0, help="seconds between polls (default 1)")
    p.add_argument("--idle-exit", type=float, metavar="SECONDS",
                   help="stop after this long without new data (default: follow until Ctrl-C/SIGTERM)")
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("import", help="create a stored run from verl/TensorBoard/W&B/MLflow/TRL/CSV/JSONL records",
                       description="Import a finished run: a verl file-logger JSONL or console log "
                                   "(+ --rollout-dir), a TensorBoard event dir, a W&B offline run dir, an "
                                   "MLflow run (--run-id + --tracking-uri), a TRL/transformers "
                                   "trainer_state.json, or a TRL/transformers console log (the metrics dicts "
                                   "Trainer prints: train.log, nohup.out; + --logging-steps), or a metric "
                                   "history saved as CSV (TRL log_history via pandas, W&B Export CSV; + "
                                   "--source-run). Detectors run on import.")
    p.add_argument("source", help="file or directory (MLflow: the tracking URI with --run-id, or the run id "
                                  "with --tracking-uri)")
    p.add_argument("--kind", help="verl | tensorboard | wandb | mlflow | trl | trl-console | csv | jsonl (default: detect)")
    p.add_argument("--project")
    p.add_argument("--name")
    p.add_argument("--dir", help="store directory (default: $RLCOCKPIT_DIR or ./rlcockpit)")
    p.add_argument("--rollout-dir", metavar="DIR", help="verl rollout dumps to import as samples")
    p.add_argument("--run-id", help="MLflow run id")
    p.add_argument("--tracking-uri", help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI)")
    p.add_argument("--config", metavar="FILE", help="config yaml/json to store with the run")
    p.add_argument("--logging-steps", type=int, metavar="N",
                   help="trl-console: the run's logging_steps, when the log prints no step (the k-th training "
                        "log becomes step N*k; default: the progress bar's count, else 1, 2, 3, ...)")
    p.add_argument("--source-run", metavar="NAME",
                   help="csv: the run to import from a W&B chart export holding several runs "
                        "('<run> - <key>' columns; default: the first)")
    p.add_argument("--no-health", action="store_true", help="do not run the detectors")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_import)


def _load_alerts(path: str | None) -> Any:
    if not path:
        return None
    from rlcockpit.integrations.verl_files import load_config_file

    data = load_config_file(path)
    return data.get("alerts", data) if isinstance(data, dict) else data


def cmd_watch(args: argparse.Namespace) -> int:
    from rlcockpit.integrations.verl_files import load_config_file
    from rlcockpit.integrations.watch import VerlWatcher

    config = load_config_file(args.config) if args.config else None
    watcher = VerlWatcher(file_log=args.verl_file, console_log=args.console_log, rollout_dir=args.rollout_dir,
                          project=args.project, name=args.name, dir=args.dir, config=config,
                          alerts=_load_alerts(args.alerts_config), run_id=args.resume)
    stop = threading.Event()
    reason = {"why": "watch stopped"}

    def on_signal(signum: int, frame: Any) -> None:  # noqa: ARG001
        reason["why"] = f"watch stopped by {signal.Signals(signum).name}"
        stop.set()

    # the watcher stopping is not the job failing: replace the run's "finish as failed" signal handlers
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    state = "resumed" if watcher.run.resumed else "created"
    print(f"rlcockpit watch: {state} run {watcher.run.id} ({watcher.project}/{watcher.name}) in "
          f"{watcher.run.dir}; following {watcher.source}"
          + (f" and {watcher.rollout_dir}" if watcher.rollout_dir else ""), flush=True)
    try:
        watcher.run_until(stop, poll_s=args.poll, idle_exit_s=args.idle_exit)
        if not stop.is_set() and args.idle_exit is not None:
            reason["why"] = f"watch stopped: no new data for {args.idle_exit:g}s"
    finally:
        watcher.close(reason["why"])
    n = len(watcher.store.findings(watcher.run.id))
    print(f"rlcockpit watch: stopped at step {watcher.run.step}; {n} finding(s); run {watcher.run.id}", flush=True)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    import json

    from rlcockpit.integrations.importer import import_run

    res = import_run(args.source, kind=args.kind, project=args.project, name=args.name, dir=args.dir,
                     rollout_dir=args.rollout_dir, run_id=args.run_id, tracking_uri=args.tracking_uri,
                     config_file=args.config, health=not args.no_health, logging_steps=args.logging_steps,
                     source_run=args.source_run)
    if args.json:
        print(json.dumps({"run_id": res.run_id, "kind": res.kind, "name": res.name, "project": res.project,
                          "steps": res.steps, "sample_rows": res.sample_rows, "skipped": res.skipped,
                          "values_lost": res.values_lost, "findings": len(res.findings), "error": res.error, "problems": res.problems[:20],
                          "notes": res.notes},
                         indent=2))
    else:
        print(f"imported {res.kind} run as {res.run_id} ({res.project}/{res.name}): {res.steps} steps, "
              f"{res.sample_rows} samples, {len(res.findings)} finding(s)")
        for f in res.findings[:10]:
            print(f"  [{f.get('severity')}] step {f.get('step')}: {f.get('title')}")
    for text in res.problems[:5]:
        print(f"rlcockpit import: {text}", file=sys.stderr)
    if len(res.problems) > 5:
        print(f"rlcockpit import: ... {len(res.problems) - 5} more problems (see the run's meta)", file=sys.stderr)
    if res.error:
        print(f"rlcockpit import: error: {res.error} (imported what came before it)", file=sys.stderr)
        return 1
    return 0
