"""``rlcockpit agent``: a process that takes trials from a sweep and runs each as an ordinary program.

Like ``wandb agent``, it launches the sweep's command with the trial's parameters, streams the program's
output, and stops the program early when the sweep says so (hyperband bands, or — new here — a health
finding of the configured severity, ``early_terminate: {type: health}``). Unlike W&B there is no
controller service: decisions come from the trial table (see :mod:`rlcockpit.sweeps.controller`), so any
number of agents on any machine that reaches the store share the sweep, and one that dies has its trial
marked ``crashed`` by the others after :data:`~rlcockpit.sweeps.controller.STALE_S` seconds.

A trial's outcome: ``finished`` (exit 0), ``failed`` (exit != 0), ``crashed`` (killed by a signal or
never reported), ``stopped`` (early-terminated, reason recorded) or ``killed`` (agent interrupted, sweep
cancelled). Failed trials never stop the sweep; Bayesian search imputes their value (``metric.impute``).
"""

from __future__ import annotations

import collections
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from rlcockpit.paths import confined
from rlcockpit.redact import redact_argv, redact_text
from rlcockpit.store import open_store, resolve_dir
from rlcockpit.store.sql import open_database
from rlcockpit.sweeps import hyperband
from rlcockpit.sweeps.command import build_command, uses_args_json_file
from rlcockpit.sweeps.config import SweepConfig, check_runnable, parse_sweep
from rlcockpit.sweeps.controller import Claim, next_trial, summarize
from rlcockpit.sweeps.metric_key import resolve_key
from rlcockpit.sweeps.params import flat_params
from rlcockpit.sweeps.state import SweepState
from rlcockpit.tracking.compat import sweep_env

HEARTBEAT_S = 5.0
KILL_GRACE_S = 30.0
TAIL_LINES = 40


@dataclass
class Stop:
    state: str  # stopped | killed
    reason: str


def _store_target(dir: str | os.PathLike[str] | None) -> tuple[str | None, Path]:
    """``(database URL or None, local directory)`` for ``--dir``/``--store``: a ``postgresql://`` URL (also from
    ``$RLCOCKPIT_STORE``) is the sweep's and trials' store, the directory then only holds the agent's files
    (``${args_json_file}``); ``sqlite:///DIR`` is that directory."""
    from rlcockpit.store.urls import sqlite_dir, store_url

    url = store_url(dir)
    if url is None:
        return None, resolve_dir(dir)
    if url.split("://", 1)[0].lower() == "sqlite":
        return None, sqlite_dir(url)
    return url, resolve_dir(None)


class Agent:
    """Runs trials of one sweep until ``count`` trials ran or the sweep has none left."""

    def __init__(self, sweep_id: str, *, dir: str | os.PathLike[str] | None = None, count: int | None = None,
                 function: Callable[[], Any] | None = None, poll_s: float = 1.0,
                 kill_grace_s: float = KILL_GRACE_S, out: TextIO | None = None) -> None:
        self.url, self.dir = _store_target(dir)
        self.store = open_store(self.url or self.dir)
        self.state = SweepState(open_database(self.url or self.dir))
        self.sweep = self.state.get(sweep_id)
        self.sweep_id = self.sweep["id"]
        self.cfg: SweepConfig = parse_sweep(self.sweep["config"])
        if function is None:
            check_runnable(self.cfg)
        self.count, self.function = count, function
        self.poll_s, self.kill_grace_s = poll_s, kill_grace_s
        self.out = out or sys.stdout
        self.agent_id = uuid.uuid4().hex[:8]
        self._interrupted = False
        self._proc: subprocess.Popen | None = None
        self._keys: dict[str, str] = {}  # run id -> the key its metric is logged under
        self._alias_noted = False

    def say(self, text: str) -> None:
        print(f"rlcockpit agent: {text}", file=self.out, flush=True)

    # ---- the loop ---------------------------------------------------------------------------------
    def run(self) -> int:
        """Run trials; returns how many ran."""
        self.state.register_agent(self.agent_id, self.sweep_id, socket.gethostname(), os.getpid())
        metric = self.cfg.metric
        self.say(f"agent {self.agent_id} on sweep {self.sweep_id} ({self.cfg.method}"
                 + (f", {metric.goal} {metric.name}" if metric else "") + f"), store {redact_text(self.url) if self.url else self.dir}"
                 + (f", at most {self.count} trials" if self.count else ""))
        restore = self._install_signals()
        done, waiting = 0, False
        try:
            while not self._interrupted and (self.count is None or done < self.count):
                claim = next_trial(self.state, self.sweep_id, self.agent_id)
                if claim == "paused":
                    if not waiting:
                        self.say(f"sweep {self.sweep_id} is paused; waiting (rlcockpit sweep --resume {self.sweep_id})")
                    waiting = True
                    self._sleep(max(self.poll_s, 1.0))
                    continue
                waiting = False
                if isinstance(claim, str):
                    self.say(claim)
                    break
                self._run_trial(claim)
                done += 1
                self.state.agent_beat(self.agent_id, trials=done)
        finally:
            self.state.agent_beat(self.agent_id, state="interrupted" if self._interrupted else "done")
            restore()
        return done

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self._interrupted and time.monotonic() < end:
            time.sleep(min(0.1, seconds))

    def _install_signals(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

        def handler(signum: int, frame: Any) -> None:  # noqa: ARG001
            self._interrupted = True
            if self._proc is not None and self._proc.poll() is None:
                _signal_group(self._proc, signal.SIGTERM)

        for sig in previous:
            signal.signal(sig, handler)

        def restore() -> None:
            for sig, prev in previous.items():
                signal.signal(sig, prev)
        return restore

    # ---- one trial --------------------------------------------------------------------------------
    def _run_trial(self, claim: Claim) -> None:
        shown = ", ".join(f"{k}={v}" for k, v in flat_params(claim.params).items())
        self.say(f"trial {claim.number} (run {claim.run_id}) of sweep {self.sweep_id}: {shown}")
        t0 = time.monotonic()
        if self.function is not None:
            rc, stop, tail = self._run_function(claim)
        else:
            rc, stop, tail = self._run_process(claim)
        self._finish(claim, rc, stop, tail, time.monotonic() - t0)

    def _trial_env(self, claim: Claim) -> dict[str, str]:
        env = dict(os.environ)
        bindir = str(Path(sys.executable).parent)
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
        if self.url:  # a team database: the trial's init() opens the same store (RLCOCKPIT_STORE wins over a dir)
            env[sweep_env.ENV_STORE] = self.url
        env.update({sweep_env.ENV_DIR: str(self.dir), sweep_env.ENV_PROJECT: self.sweep["project"],
                    sweep_env.ENV_SWEEP_ID: self.sweep_id, sweep_env.ENV_RUN_ID: claim.run_id,
                    sweep_env.ENV_PARAMS: json.dumps(claim.params)})
        return env

    def _run_process(self, claim: Claim) -> tuple[int | None, Stop | None, list[str]]:
        env = self._trial_env(claim)
        json_file = None
        if uses_args_json_file(self.cfg.command):
            path = confined(self.dir / "sweeps", f"{self.sweep_id}/params-{claim.run_id}.json", "sweep params file")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(claim.params), encoding="utf-8")
            json_file = str(path)
        try:
            argv = build_command(program=self.cfg.program, command=self.cfg.command, params=claim.params,
                                 base_args=self.sweep["base_args"], args_json_file=json_file, env=env)
        except ValueError as exc:
            return 2, None, [str(exc)]
        self.say("$ " + shlex.join(redact_argv(argv)))  # ${envvar:...} may have expanded a secret
        tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        try:
            proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=_die_with_parent)
        except OSError as exc:
            return 127, None, [f"cannot start {argv[0]!r}: {exc}"]
        self._proc = proc
        tee = threading.Thread(target=_tee, args=(proc, self.out, tail), daemon=True)
        tee.start()
        try:
            stop = self._watch(proc, claim)
        finally:
            self._proc = None
            tee.join(timeout=5.0)
        return proc.returncode, stop, list(tail)

    def _run_function(self, claim: Claim) -> tuple[int | None, Stop | None, list[str]]:
        """``rlcockpit.agent(sweep_id, function=train)``: the trial runs in this process (no early stop)."""
        import rlcockpit

        saved = {k: os.environ.get(k) for k in self._trial_env(claim) if k != "PATH"}
        os.environ.update({k: v for k, v in self._trial_env(claim).items() if k != "PATH"})
        sweep_env.reset_claim()
        rc, tail = 0, []
        try:
            self.function()  # type: ignore[misc]
        except Exception as exc:  # noqa: BLE001 - a failing trial never stops the sweep
            rc, tail = 1, [f"{type(exc).__name__}: {exc}"]
            self.say(f"trial {claim.number} raised {type(exc).__name__}: {exc}")
        finally:
            rlcockpit.finish(rc)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        return rc, None, tail

    def _watch(self, proc: subprocess.Popen, claim: Claim) -> Stop | None:
        stop: Stop | None = None
        term_at: float | None = None
        next_beat = time.monotonic() + HEARTBEAT_S
        while True:
            try:
                proc.wait(timeout=self.poll_s)
                return stop
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if stop is None:
                stop = self._should_stop(claim)
                if stop is not None:
                    self.say(f"stopping trial {claim.number}: {stop.reason}")
            if stop is not None and term_at is None:
                _signal_group(proc, signal.SIGTERM)
                term_at = now
            elif term_at is not None and now - term_at > self.kill_grace_s:
                _signal_group(proc, signal.SIGKILL)
            if now >= next_beat:
                next_beat = now + HEARTBEAT_S
                self._beat(claim)

    def _beat(self, claim: Claim) -> None:
        values = {}
        if self.cfg.metric is not None:
            s = summarize(self._history(claim.run_id), self.cfg.metric)
            values = {"best": s["best"], "latest": s["latest"], "worst": s["worst"], "n_values": s["n_values"]}
        self.state.heartbeat(self.sweep_id, claim.number, values)
        self.state.agent_beat(self.agent_id)

    def _history(self, run_id: str) -> list[float]:
        """The sweep metric's values in ``run_id`` (under the guide's alias when the run logs that name)."""
        if self.cfg.metric is None:
            return []
        key = self._keys.get(run_id)
        try:
            if key is None:
                key = resolve_key(self.cfg.metric.name, self.store.keys(run_id))
                if key is None:
                    return []
                if key != self.cfg.metric.name and not self._alias_noted:
                    self._alias_noted = True
                    self.say(f"metric {self.cfg.metric.name} is logged as {key} (metric guide alias)")
                self._keys[run_id] = key
            return self.store.series(run_id, key)[1].tolist()
        except KeyError:
            return []

    def _should_stop(self, claim: Claim) -> Stop | None:
        if self._interrupted:
            return Stop("killed", "agent interrupted")
        sweep_state = self.state.get(self.sweep_id)["state"]
        if sweep_state == "cancelled":
            return Stop("killed", "sweep cancelled")
        et, metric = self.cfg.early_terminate, self.cfg.metric
        if et is None:
            return None
        if et.type == "health":
            return self._health_stop(claim, et.severity)
        assert metric is not None
        mine = self._history(claim.run_id)
        if not mine or len(mine) <= et.bands[0]:
            return None
        others = [self._history(t["run_id"]) for t in self.state.trials(self.sweep_id)]
        decision = hyperband.decide(mine, others, et.bands, et.eta, metric.maximize, et.strict)
        return Stop("stopped", decision.reason(metric.name, metric.maximize)) if decision.stop else None

    def _health_stop(self, claim: Claim, severity: str) -> Stop | None:
        wanted = ("critical",) if severity == "critical" else ("warning", "critical")
        try:
            findings = self.store.findings(claim.run_id)
        except KeyError:
            return None
        for f in findings:
            if f.get("severity") in wanted:
                return Stop("stopped", f"health: {f.get('severity')} finding {f.get('title')!r} "
                                       f"({f.get('detector')}, step {f.get('step')})")
        return None

    # ---- recording the outcome --------------------------------------------------------------------
    def _finish(self, claim: Claim, rc: int | None, stop: Stop | None, tail: list[str], wall_s: float) -> None:
        metric = self.cfg.metric
        s = (summarize(self._history(claim.run_id), metric) if metric
             else {"best": None, "worst": None, "latest": None, "n_values": 0})
        run = self._stored_run(claim.run_id)
        if stop is not None:
            state, reason = stop.state, stop.reason
        elif rc == 0:
            state, reason = "finished", None
        elif rc is not None and rc < 0:
            state, reason = "crashed", f"killed by {_signal_name(-rc)}"
        else:
            end_reason = (run or {}).get("meta", {}).get("end_reason")
            last = next((line for line in reversed(tail) if line.strip()), "")
            state, reason = "failed", f"exit code {rc}" + (f": {end_reason or last}" if (end_reason or last) else "")
        self.state.end_trial(self.sweep_id, claim.number, state=state, reason=reason, exit_code=rc, **s)
        self._record_run(claim, run, state, reason, rc, tail)
        shown = ""
        if metric is not None:
            shown = (f": {metric.name} best {s['best']:.6g}, last {s['latest']:.6g}" if s["best"] is not None
                     else f": {metric.name} was never logged")
        self.say(f"trial {claim.number} {state} in {wall_s:.1f}s{shown}" + (f" ({reason})" if reason else ""))

    def _stored_run(self, run_id: str) -> dict[str, Any] | None:
        try:
            return self.store.get_run(run_id)
        except KeyError:
            return None

    def _record_run(self, claim: Claim, run: dict[str, Any] | None, state: str, reason: str | None,
                    rc: int | None, tail: list[str]) -> None:
        """Every trial is a visible run: one that never called ``init`` gets a run record with its output."""
        now = time.time()
        status = {"finished": "finished", "failed": "failed", "crashed": "crashed"}.get(state, "stopped")

        if run is None:
            self.store.create_run({"id": claim.run_id, "project": self.sweep["project"], "group": self.sweep_id,
                                   "name": f"{self.sweep_id}-{claim.number}", "config": claim.params,
                                   "status": status, "meta": {"end_reason": reason, "output_tail": tail[-20:],
                                                              "sweep_trial": claim.number}})
            self.store.update_run(claim.run_id, exit_code=rc, finished_at=now, status=status)
            return
        if state in ("stopped", "killed") or run.get("stored_status") == "running":
            meta = dict(run.get("meta") or {})
            meta["end_reason"] = reason or meta.get("end_reason")
            self.store.update_run(claim.run_id, status=status, meta=meta, finished_at=run.get("finished_at") or now)


def _tee(proc: subprocess.Popen, out: TextIO, tail: collections.deque) -> None:
    """Stream the program's output to ours, keeping the last lines (secrets masked: they are stored) for the
    failure reason."""
    assert proc.stdout is not None
    for raw in iter(proc.stdout.readline, b""):
        line = raw.decode("utf-8", errors="replace")
        tail.append(redact_text(line.rstrip("\n")))
        try:
            out.write(line)
            out.flush()
        except (OSError, ValueError):
            pass
    proc.stdout.close()


def _die_with_parent() -> None:
    """In the trial's process, before exec: receive SIGTERM when the agent dies, even by SIGKILL (Linux), so
    a killed agent leaves no trial running unsupervised (the other agents mark it crashed)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def agent(sweep_id: str, function: Callable[[], Any] | None = None, count: int | None = None,
          dir: str | os.PathLike[str] | None = None, *, entity: str | None = None, project: str | None = None) -> int:
    """``rlcockpit.agent`` (as ``wandb.agent``): run trials of ``sweep_id`` (also W&B's ``entity/project/id``;
    ``entity`` and ``project`` are accepted, the sweep knows its project); returns how many ran."""
    return Agent(sweep_id, dir=dir, count=count, function=function).run()
