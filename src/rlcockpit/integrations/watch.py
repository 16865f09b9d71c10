"""``rlcockpit watch``: follow a running verl job's files into a stored run, with detectors and alerts live.

Zero code change on the verl side: the job runs with ``trainer.logger=['console','file']`` (and
optionally ``trainer.rollout_data_dir=DIR``); the watcher tails the file logger (or a captured console
log) and the rollout dumps, and logs them through an ordinary ``rlcockpit.init(..., health=True)``
run, so findings and alerts appear while the job trains.

Restart safety: after each batch the watcher records where it is — the file's inode, byte offset and
first-line fingerprint, the steps to skip after a job restart, the last rollout step ingested — in the
run's ``meta["watch"]`` with ``run.update_meta``, which the writer stores in the same transaction as the
data logged before it (so a killed watcher can repeat nothing and lose nothing). A restarted watcher finds its run by the source path and
continues it with ``init(resume=run_id)``. When verl restarts (its FileLogger reopens the file with
``"wb"``: truncation) or the file is replaced (new inode), reading starts over and the steps already
recorded are skipped.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlcockpit.health.stall import StallWatch
from rlcockpit.integrations.follow import MAX_LINE, FollowState, LineFollower
from rlcockpit.integrations.verl_files import (
    SourceError,
    parse_console_line,
    parse_file_logger_line,
    read_rollout_file,
    rollout_files,
    verl_config,
)
from rlcockpit.tracking.compat.reinit import OWN_RUN

logger = logging.getLogger("rlcockpit")
STATE_KEY = "watch"


class VerlWatcher:
    """Follows one verl job. ``poll_once()`` ingests what is new; ``run()`` loops until stopped.

    Exactly one of ``file_log`` (verl's file-logger JSONL) and ``console_log`` is required.
    """

    def __init__(
        self,
        *,
        file_log: str | os.PathLike[str] | None = None,
        console_log: str | os.PathLike[str] | None = None,
        rollout_dir: str | os.PathLike[str] | None = None,
        project: str = "verl",
        name: str | None = None,
        dir: str | os.PathLike[str] | None = None,
        config: Mapping[str, Any] | None = None,
        alerts: Any = None,
        run_id: str | None = None,
        health: bool | Mapping[str, Any] = True,
    ) -> None:
        if (file_log is None) == (console_log is None):
            raise ValueError("watch needs exactly one of --verl-file and --console-log")
        self.kind = "file" if file_log is not None else "console"
        self.source = Path(file_log if file_log is not None else console_log).expanduser().resolve()  # type: ignore[arg-type]
        self.rollout_dir = Path(rollout_dir).expanduser().resolve() if rollout_dir else None
        self.project = project
        self.name = name or self.source.stem
        self.dir = dir
        self.skipped_lines = 0
        self.bad_lines = 0
        self._stable: dict[int, tuple[int, float]] = {}  # rollout step -> (size, mtime) seen last poll
        self.stall = StallWatch()  # no new step for k x the usual step time while the log is followed

        from rlcockpit import init
        from rlcockpit.store import open_store

        store = open_store(dir)
        resume = run_id or self._find_previous_run(store)
        state: dict[str, Any] = {}
        if resume:
            state = dict((store.get_run(resume).get("meta") or {}).get(STATE_KEY) or {})
        self.run = init(project=project, name=self.name, config=verl_config(config), dir=dir, resume=resume,
                        health=health, alerts=alerts, system_interval=None, capture_meta=False, reinit=OWN_RUN)
        self.store = self.run.store
        self.follower = LineFollower(self.source, FollowState.from_dict(state.get("follow")))
        self.skip_through: int = int(state.get("skip_through", -1))
        self.rollout_last: int = int(state.get("rollout_last", -1))
        if self.run.resumed:
            # a watcher killed hard may have stored data after its last recorded position: what is already
            # in the store is never logged twice (steps up to the stored last step, rollout steps stored)
            self.skip_through = max(self.skip_through, self.run.step)
            stored = self.store.sample_steps(self.run.id)
            if stored:
                self.rollout_last = max(self.rollout_last, stored[-1])
        self._source_recorded = bool((self.run.meta or {}).get("source"))
        self._state_dirty = True
        self._persist_state()

    # ---- run lookup and state ------------------------------------------------------------------
    def _find_previous_run(self, store: Any) -> str | None:
        """The newest run in this project that watched the same source file (what a restart continues)."""
        for r in store.list_runs(self.project):
            st = (r.get("meta") or {}).get(STATE_KEY) or {}
            if st.get("source") == str(self.source) and r.get("name") == self.name:
                return r["id"]
        return None

    def state(self) -> dict[str, Any]:
        return {"source": str(self.source), "kind": self.kind, "follow": self.follower.state.to_dict(),
                "skip_through": self.skip_through, "rollout_last": self.rollout_last,
                "rollout_dir": str(self.rollout_dir) if self.rollout_dir else None, "updated_at": time.time()}

    def _persist_state(self) -> None:
        """Record the position on the writer thread, ordered after the data logged so far."""
        if not self._state_dirty:
            return
        self._state_dirty = False
        patch: dict[str, Any] = {STATE_KEY: self.state(), "framework": "verl"}
        if not self._source_recorded:
            patch["source"] = {"kind": f"verl-{self.kind}", "path": str(self.source)}
            self._source_recorded = True
        self.run.update_meta(patch)  # written in the same order as the data logged before it

    # ---- ingest --------------------------------------------------------------------------------
    def _ingest_lines(self) -> int:
        lines = self.follower.poll()
        if self.follower.reset:
            # the job restarted (truncated its log) or the file was replaced: what it writes again up to
            # the last recorded step is already in the store
            self.skip_through = max(self.skip_through, self.run.step)
            self._state_dirty = True
            logger.info("rlcockpit watch: %s was truncated or replaced; skipping steps <= %d",
                        self.source, self.skip_through)
        n = 0
        for line_no, text in lines:
            self._state_dirty = True
            if text is None:
                self.bad_lines += 1
                logger.warning("rlcockpit watch: skipping %s:%d: the line is longer than %d MiB", self.source,
                               line_no, MAX_LINE >> 20)
                continue
            try:
                parsed = (parse_file_logger_line(text, self.source, line_no) if self.kind == "file"
                          else parse_console_line(text))
            except SourceError as exc:
                self.bad_lines += 1
                logger.warning("rlcockpit watch: skipping %s", exc)
                continue
            if parsed is None:
                continue
            step, metrics = parsed
            if step <= self.skip_through or step < self.run.step or not metrics:
                self.skipped_lines += 1
                continue
            self.run.log(metrics, step=step)
            self.stall.step(step, time.monotonic())
            n += 1
        return n

    def _ingest_rollouts(self, final: bool = False) -> int:
        if self.rollout_dir is None:
            return 0
        n = 0
        for step, path in rollout_files(self.rollout_dir):
            if step <= self.rollout_last:
                continue
            try:
                st = path.stat()
                with open(path, "rb") as f:
                    f.seek(max(st.st_size - 1, 0))
                    ends_complete = st.st_size > 0 and f.read(1) == b"\n"
            except OSError:
                break
            seen = self._stable.get(step)
            self._stable[step] = (st.st_size, st.st_mtime)
            # verl writes each dump in one go from a background thread: take it once it stopped growing
            if not ends_complete or (not final and seen != (st.st_size, st.st_mtime)):
                break  # keep step order: later dumps wait for this one
            rows = read_rollout_file(path, strict=False)
            if rows:
                self.run.log_samples(rows, step=step)
            self.rollout_last = step
            self._stable.pop(step, None)
            self._state_dirty = True
            n += 1
        return n

    def poll_once(self, final: bool = False) -> int:
        """Ingest everything new; returns the number of metric lines plus rollout files taken."""
        n = self._ingest_lines() + self._ingest_rollouts(final)
        self._persist_state()
        return n

    def run_until(self, stop: threading.Event, *, poll_s: float = 1.0, idle_exit_s: float | None = None) -> None:
        """Poll every ``poll_s`` until ``stop`` is set (or nothing new arrived for ``idle_exit_s``)."""
        last_new = time.monotonic()
        while not stop.is_set():
            if self.poll_once():
                last_new = time.monotonic()
            elif idle_exit_s is not None and time.monotonic() - last_new >= idle_exit_s:
                break
            else:
                stalled = self.stall.check(time.monotonic())  # the log stopped growing: a finding and an alert
                if stalled is not None:
                    self.run.log_finding(stalled)
            stop.wait(poll_s)

    def close(self, reason: str = "watch stopped") -> None:
        """Take what is complete, record the position and end the run (``resume`` continues it later)."""
        self.poll_once(final=True)
        self.run.flush()
        self.run.finish(0, reason=reason)
