"""KPI targets per project: parsing, the leaderboard, and alerts when a run reaches one or the best regresses.

A target is ``KEY OP VALUE`` (``val-core/aime/acc/mean@1 >= 0.70``, ``perf/throughput >= 2000``; OP is one
of ``>= > <= <``). After every ingest the new points of target keys are checked on a background thread
(ingest latency does not pay for it): the first value meeting a target marks the run as having reached
it (``kpi_marks``: step, value) and sends "KPI reached" through the project's alert channels; the run
holding the best value that reached a target, whose latest value no longer meets it, is the *best run
regressed* (one alert, until it meets the target again).
"""

from __future__ import annotations

import json
import logging
import math
import queue
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from rlcockpit.store.postgres.store import PostgresStore

logger = logging.getLogger("rlcockpit.server")
OPS = (">=", "<=", ">", "<")
TEAM_USER_META = "team_user"  # run meta: who ran it (the ingest token's user), the leaderboard's credit
# the key is everything before the operator (metric names may hold spaces: "reward mean >= 0.5"), or quoted
TARGET_RE = re.compile(r"""^\s*(?:"(?P<quoted>[^"]+)"|(?P<key>[^<>]*?[^<>\s]))\s*(?P<op>>=|<=|>|<)\s*"""
                       r"(?P<value>[-+0-9.eE]+)\s*(?P<pct>%?)\s*$")


def parse_target(text: str) -> tuple[str, str, float]:
    """``"perf/throughput >= 2000"`` → ``("perf/throughput", ">=", 2000.0)``; ``70%`` means 0.70. The key is
    the text before the operator, spaces included (``reward mean >= 0.5``), or a quoted name."""
    m = TARGET_RE.match(text or "")
    if not m:
        raise ValueError(f"KPI target {text!r}: expected 'METRIC OP VALUE' with OP one of {' '.join(OPS)}, e.g. "
                         "'val-core/aime/acc/mean@1 >= 0.70'")
    try:
        value = float(m["value"])
    except ValueError:
        raise ValueError(f"KPI target {text!r}: {m['value']!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"KPI target {text!r}: the value must be finite")
    return m["quoted"] or m["key"], m["op"], value / 100 if m["pct"] else value


def meets(values: np.ndarray, op: str, target: float) -> np.ndarray:
    """Which finite ``values`` meet the target."""
    with np.errstate(invalid="ignore"):
        ok = {">=": values >= target, ">": values > target, "<=": values <= target, "<": values < target}[op]
    return ok & np.isfinite(values)


def _best(values: np.ndarray, op: str) -> int:
    finite = np.where(np.isfinite(values), values, -np.inf if op.startswith(">") else np.inf)
    return int(np.argmax(finite) if op.startswith(">") else np.argmin(finite))


class Kpis:
    """Targets, marks, leaderboards and KPI alerts of the team store."""

    def __init__(self, store: PostgresStore, alerts: Any = None, *, cache_s: float = 5.0) -> None:
        self.store = store
        self.alerts = alerts  # callable(project, title, text, level, run_id, step) or None
        self.cache_s = cache_s
        self._targets: dict[str, tuple[float, list[dict[str, Any]]]] = {}
        self._queue: queue.Queue = queue.Queue(maxsize=10_000)
        self._lock = threading.Lock()
        self.sent: list[dict[str, Any]] = []  # alerts raised (tests, the audit of what was sent)
        self._thread = threading.Thread(target=self._loop, name="rlcockpit-kpis", daemon=True)
        self._thread.start()

    # ---- targets --------------------------------------------------------------------------------
    def targets(self, project: str, *, fresh: bool = False) -> list[dict[str, Any]]:
        hit = self._targets.get(project)
        if hit is not None and not fresh and hit[0] > time.monotonic():
            return hit[1]
        rows = self.store._query("SELECT id, key, op, value, label, created_by, created_at FROM kpi_targets WHERE "
                                 "project = %s ORDER BY id", (project,))
        out = [{"id": i, "project": project, "key": k, "op": o, "value": v, "label": lb, "created_by": by,
                "created_at": at, "text": f"{k} {o} {v:g}"} for i, k, o, v, lb, by, at in rows]
        self._targets[project] = (time.monotonic() + self.cache_s, out)
        return out

    def set_target(self, project: str, text: str, label: str | None, actor: str, audit) -> dict[str, Any]:  # noqa: ANN001
        key, op, value = parse_target(text)

        def work(tx: Any) -> int:
            tid = tx.conn.execute(
                "INSERT INTO kpi_targets(project, key, op, value, label, created_by, created_at) VALUES (%s, %s, %s, "
                "%s, %s, %s, %s) ON CONFLICT (project, key, op) DO UPDATE SET value = EXCLUDED.value, label = "
                "EXCLUDED.label RETURNING id", (project, key, op, value, label, actor, time.time())).fetchone()[0]
            tx.conn.execute("DELETE FROM kpi_marks WHERE target_id = %s", (tid,))  # a new bar: judged afresh
            audit(tx.conn, actor, "kpi.set", project, f"{key} {op} {value:g}", {"label": label})
            return tid

        tid = self.store._tx(work)
        self._targets.pop(project, None)
        self.rescan(project, tid)
        return next(t for t in self.targets(project, fresh=True) if t["id"] == tid)

    def delete_target(self, target_id: int, actor: str, audit) -> dict[str, Any]:  # noqa: ANN001
        def work(tx: Any) -> Any:
            row = tx.conn.execute("DELETE FROM kpi_targets WHERE id = %s RETURNING project, key, op, value",
                                  (target_id,)).fetchone()
            if row is None:
                raise KeyError(f"no KPI target {target_id}")
            audit(tx.conn, actor, "kpi.delete", row[0], f"{row[1]} {row[2]} {row[3]:g}", {})
            return row

        row = self.store._tx(work)
        self._targets.pop(row[0], None)
        return {"project": row[0]}

    # ---- after ingest -------------------------------------------------------------------------------
    def after_ingest(self, run_id: str, project: str, points: Mapping[str, Any]) -> None:
        """Queue the check of the new points (never blocks, never raises)."""
        try:
            wanted = {t["key"] for t in self.targets(project)}
            mine = {k: v for k, v in points.items() if k in wanted}
            if mine:
                self._queue.put_nowait((run_id, project, mine))
        except Exception as exc:  # noqa: BLE001 - KPI checks never fail an ingest
            logger.warning("KPI check skipped for run %s: %s", run_id, exc)

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            try:
                self._check(*item)
            except Exception as exc:  # noqa: BLE001
                logger.warning("KPI check failed for run %s: %s", item[0], exc)
            finally:
                self._queue.task_done()

    def drain(self, timeout: float = 10.0) -> None:
        """Wait until the queued checks are done (tests, the load bench)."""
        end = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < end:
            time.sleep(0.01)

    def rescan(self, project: str, target_id: int) -> None:
        """Judge every stored run of ``project`` against a new or changed target."""
        target = next((t for t in self.targets(project, fresh=True) if t["id"] == target_id), None)
        if target is None:
            return
        for (rid,) in self.store._query("SELECT r.id FROM runs r JOIN keys k ON k.run_id = r.id WHERE r.project = %s "
                                        "AND k.name = %s", (project, target["key"])):
            steps, vals, _ = self.store.series(rid, target["key"], with_ts=False)
            self._queue.put((rid, project, {target["key"]: (steps, vals, None)}))

    def _check(self, run_id: str, project: str, points: Mapping[str, Any]) -> None:
        for t in self.targets(project):
            col = points.get(t["key"])
            if col is None or not len(col[0]):
                continue
            steps, vals = np.asarray(col[0]), np.asarray(col[1], dtype=np.float64)
            ok = meets(vals, t["op"], t["value"])
            mark = self.store._query("SELECT reached_step, best_value, regressed FROM kpi_marks WHERE target_id = %s "
                                     "AND run_id = %s", (t["id"], run_id))
            b = _best(vals, t["op"])
            if not mark:
                if ok.any():
                    i = int(np.argmax(ok))
                    self._exec("INSERT INTO kpi_marks(target_id, run_id, reached_step, reached_value, reached_at, "
                               "best_step, best_value) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                               (t["id"], run_id, int(steps[i]), float(vals[i]), time.time(), int(steps[b]),
                                float(vals[b])))
                    self._alert(project, run_id, int(steps[i]), "info", f"KPI reached: {t['text']}",
                                f"{t['key']} = {vals[i]:.4g} at step {int(steps[i])} (target {t['text']})")
                continue
            _, best_value, regressed = mark[0]
            better = best_value is None or (vals[b] > best_value if t["op"].startswith(">") else vals[b] < best_value)
            if better and math.isfinite(vals[b]):
                self._exec("UPDATE kpi_marks SET best_value = %s, best_step = %s WHERE target_id = %s AND run_id = %s",
                           (float(vals[b]), int(steps[b]), t["id"], run_id))
            latest_ok = bool(ok[-1])
            if latest_ok and regressed:
                self._set_regressed(t["id"], run_id, False)
            elif not latest_ok and not regressed and self._leader(t) == run_id:
                self._set_regressed(t["id"], run_id, True)
                self._alert(project, run_id, int(steps[-1]), "warning", f"Best run regressed: {t['text']}",
                            f"the best run for {t['key']} now logs {vals[-1]:.4g} at step {int(steps[-1])}, no "
                            f"longer meeting {t['text']}")

    def _exec(self, sql: str, params: tuple) -> None:
        self.store._tx(lambda tx: tx.conn.execute(sql, params))

    def _set_regressed(self, target_id: int, run_id: str, value: bool) -> None:
        self._exec("UPDATE kpi_marks SET regressed = %s WHERE target_id = %s AND run_id = %s", (value, target_id, run_id))

    def _leader(self, t: Mapping[str, Any]) -> str | None:
        order = "DESC" if t["op"].startswith(">") else "ASC"
        rows = self.store._query(f"SELECT run_id FROM kpi_marks WHERE target_id = %s AND best_value IS NOT NULL "
                                 f"ORDER BY best_value {order}, reached_at LIMIT 1", (t["id"],))
        return rows[0][0] if rows else None

    def _alert(self, project: str, run_id: str, step: int, level: str, title: str, text: str) -> None:
        entry = {"project": project, "run_id": run_id, "step": step, "level": level, "title": title, "text": text}
        with self._lock:
            self.sent.append(entry)
        try:
            self.store.add_event(run_id, "kpi", entry, step)
        except Exception as exc:  # noqa: BLE001
            logger.warning("could not record KPI event: %s", exc)
        if self.alerts is not None:
            self.alerts(project, title, text, level, run_id, step)

    # ---- leaderboard ------------------------------------------------------------------------------
    def leaderboard(self, project: str, limit: int = 50) -> list[dict[str, Any]]:
        """Per target: runs ranked by their best value (step it was reached, who ran it, reached or not)."""
        out = []
        for t in self.targets(project, fresh=True):
            rows = self.store._query(
                "SELECT r.id, r.name, r.meta, r.status, m.reached_step FROM runs r JOIN keys k ON "
                "k.run_id = r.id LEFT JOIN kpi_marks m ON m.run_id = r.id AND m.target_id = %s WHERE r.project = %s "
                "AND k.name = %s", (t["id"], project, t["key"]))
            entries = []
            for rid, name, meta, status, reached_step in rows:
                steps, vals, _ = self.store.series(rid, t["key"], with_ts=False)
                if not len(vals) or not np.isfinite(vals).any():
                    continue
                b = _best(vals, t["op"])
                meta = json.loads(meta) if meta else {}
                entries.append({"run_id": rid, "name": name, "status": status, "best": float(vals[b]),
                                "best_step": int(steps[b]), "last": float(vals[-1]), "last_step": int(steps[-1]),
                                "reached": reached_step is not None, "reached_step": reached_step,
                                "user": meta.get(TEAM_USER_META)})
            entries.sort(key=lambda e: -e["best"] if t["op"].startswith(">") else e["best"])
            out.append({"target": t, "runs": entries[:limit]})
        return out
