"""Logging to a team server: the store interface over HTTP, with a local spool that never loses a point.

``init(server=...)`` or ``RLCOCKPIT_SERVER=https://... RLCOCKPIT_TOKEN=...`` gives a run this store
instead of the local SQLite one. Nothing else in tracking changes: the writer thread calls
:meth:`RemoteStore.write_batch` once per drain as usual, which appends the batch to the spool (a local
SQLite file, see :mod:`rlcockpit.store.remote.spool`) and returns — so ``log()`` costs what it always did and
the writer never waits on the network. The :class:`Uploader` thread sends spooled ops in order, many
per request, and deletes them when the server acknowledges them.

Idempotent replay: every op carries its stream's sequence number; the server applies an op and moves
its cursor for ``(run, stream)`` in one transaction and skips any op at or below the cursor, so a
request retried after a timeout, a server SIGKILL or a PostgreSQL restart never stores a point twice.

Visible: one console line when the server becomes unreachable (and where the data is spooled), one
when it is back; ``rlcockpit status`` reads the spool; a run that ends with ops unsent says so and
``rlcockpit sync`` sends them later. Refusals (401/403) keep the data; a batch the server rejects as
malformed (400/413/422, or a 500 three times for one op) is isolated op by op, dropped, and recorded on the
run as ``data_lost``. Before that can happen, each batch is cleaned with the rules the server checks
(:mod:`rlcockpit.store.clean`): a bad key, sample row or run field is dropped alone and recorded exactly.
A run the server no longer has (404: deleted by an admin) is given up: its spooled ops and later writes are
dropped, counted, and said once.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
import threading
import time
import urllib.parse
import uuid
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from rlcockpit.store.base import Series, Store, StoreError, StoreFull, StoreUnavailable
from rlcockpit.store.batch import DataLoss, WriteBatch
from rlcockpit.store.clean import Refusal, refusal_losses, split_batch, split_run_row
from rlcockpit.store.ratelimit import RepeatLimiter
from rlcockpit.store.remote.spool import Spool
from rlcockpit.store.remote.wire import dumps, encode_batch, op_losses
from rlcockpit.store.rows import finding_record

logger = logging.getLogger("rlcockpit")

SERVER_ENV, TOKEN_ENV = "RLCOCKPIT_SERVER", "RLCOCKPIT_TOKEN"
FINISH_ENV = "RLCOCKPIT_SERVER_FINISH_S"  # how long finish() waits for the spool to drain (default 30)
MAX_REQUEST_BYTES = 4 << 20
BACKOFF_START_S, BACKOFF_MAX_S, REFUSED_RETRY_S = 0.25, 5.0, 30.0
SERVER_ERROR_TRIES = 3  # a single op answered 500 this many times in a row is deterministic: dropped, recorded
REPEAT_REPORT_S = 30.0  # the same kind of refusal is said again at most this often (with how many since)
INGEST_PATH = "/api/v1/runs/{run}/ingest"


def say(message: str) -> None:
    """A console line (stderr) and the log: remote logging problems must be seen, not only logged (the log
    record is INFO so that Python's last-resort handler does not print the line a second time)."""
    logger.info("%s", message)
    print(message, file=sys.stderr, flush=True)


class RemoteStore(Store):
    """Writes go to the spool and on to ``server``; reads of run rows ask the server (or the spool)."""

    def __init__(self, server: str, token: str | None = None, *, spool_dir: str | os.PathLike[str],
                 upload_interval_s: float = 1.0, timeout_s: float = 10.0, stream: str | None = None,
                 start: bool = True) -> None:
        self.server = server.rstrip("/")
        if not self.server.startswith(("http://", "https://")):
            raise ValueError(f"team server URL must start with http:// or https://, got {server!r}")
        self.token = token
        self.stream = stream or uuid.uuid4().hex[:16]
        self.spool_dir = Path(spool_dir)
        self.upload_interval_s = upload_interval_s
        self._open_lock = threading.Lock()
        self._closed = True
        self.report = RepeatLimiter(say, REPEAT_REPORT_S)
        self.gone: dict[str, int] = {}  # runs the server no longer has -> writes dropped since
        headers = {"content-type": "application/json", "user-agent": "rlcockpit-remote"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        self.client = httpx.Client(base_url=self.server, timeout=timeout_s, headers=headers)
        self._open(start)
        self.dir = f"{self.server} (spool {self.spool.path})"

    def _open(self, start: bool = True) -> None:
        """(Re)open the spool and its uploader (again after :meth:`close`, if something writes late)."""
        try:
            self.spool = Spool(self.spool_dir / f"{self.stream}.db")
            self.spool.set_info(server=self.server, stream=self.stream, created=str(time.time()), pid=str(os.getpid()))
        except OSError as exc:
            raise StoreError(exc.errno or 5, f"cannot create the spool in {self.spool_dir}: {exc}") from exc
        self.uploader = Uploader(self, interval_s=self.upload_interval_s)
        self._closed = False
        if start:
            self.uploader.start()

    # ---- writes: into the spool ---------------------------------------------------------------
    def _append(self, run_id: str, op: dict[str, Any]) -> None:
        if run_id in self.gone:  # deleted on the server: said once when found, counted since
            self.gone[run_id] += 1
            return
        with self._open_lock:
            if self._closed:
                self._open()
        try:
            self.spool.append(run_id, op, dumps)
        except Exception as exc:  # noqa: BLE001 - the spool's disk: the writer keeps the batch and retries
            if "full" in str(exc).lower() or getattr(exc, "errno", None) == 28:
                raise StoreFull(f"spool {self.spool.path}: the disk is full ({exc})") from exc
            raise StoreUnavailable("io", f"spool {self.spool.path}: {exc}") from exc
        self.uploader.wake_soon()

    def create_run(self, run: Mapping[str, Any]) -> None:
        row, refused = split_run_row({k: v for k, v in dict(run).items() if v is not None})
        if any(r.where == "run.id" for r in refused):
            raise StoreError(22, f"team server {self.server}: run id {str(run.get('id'))[:80]!r} cannot be stored "
                                 f"({next(r.reason for r in refused if r.where == 'run.id')})")
        row.setdefault("created_at", time.time())
        self.spool.remember_run({**row, "status": row.get("status", "running")})
        self._append(row["id"], {"create": row})
        if refused:
            self._refused(row["id"], WriteBatch(), refused)

    def update_run(self, run_id: str, **fields: Any) -> None:
        if fields:
            self.write_batch(run_id, WriteBatch(run_fields=fields))

    def write_batch(self, run_id: str, batch: WriteBatch, *, timeout_s: float | None = None) -> None:
        batch, refused = split_batch(batch)  # the server's rules: a bad unit is dropped alone, not the batch
        if refused:
            self._refused(run_id, batch, refused)
        elif batch:
            self._append(run_id, {"batch": encode_batch(batch)})

    def _refused(self, run_id: str, batch: WriteBatch, refused: list[Refusal]) -> None:
        """Record what the store's rules refuse (exactly: units, steps, points) and say it, rate-limited."""
        batch.losses.extend(refusal_losses(refused, "rejected_by_store"))
        self._append(run_id, {"batch": encode_batch(batch)})
        for r in refused:
            self.report(f"refused:{r.where.split('[')[0]}:{r.reason[:60]}",
                        f"rlcockpit: run {run_id}: {r} — the team server cannot store it; dropped and recorded as "
                        f"data_lost (the rest of the batch is kept)")

    def append_points(self, run_id: str, points: Mapping[str, Series]) -> None:
        self.write_batch(run_id, WriteBatch(points=dict(points)))

    def append_samples(self, run_id: str, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        self.write_batch(run_id, WriteBatch(samples=[(int(step), [dict(r) for r in rows])]))

    def add_finding(self, run_id: str, finding: Any) -> str:
        d = finding_record(finding)
        self.write_batch(run_id, WriteBatch(findings=[d]))
        return d["id"]

    def add_event(self, run_id: str, kind: str, payload: Mapping[str, Any], step: int | None = None) -> str:
        eid = uuid.uuid4().hex[:12]
        self.write_batch(run_id, WriteBatch(events=[(kind, dict(payload), step, eid)]))
        return eid

    def add_data_loss(self, run_id: str, loss: DataLoss) -> str:
        self.write_batch(run_id, WriteBatch(losses=[loss]))
        return getattr(loss, "id", None) or ""

    def delete_run(self, run_id: str) -> None:
        raise StoreError(1, "runs on a team server are deleted by a project admin in its dashboard")

    # ---- reads: run rows from the server, else what this client knows -------------------------
    def _get(self, path: str, **params: Any) -> Any:
        try:
            r = self.client.get(path, params={k: v for k, v in params.items() if v is not None})
        except httpx.HTTPError as exc:
            raise StoreUnavailable("io", f"team server {self.server}: unreachable ({exc})") from exc
        if r.status_code == 404:
            raise KeyError(_message(r))
        if r.status_code != 200:
            raise StoreUnavailable("io", f"team server {self.server}: {r.status_code} {_message(r)}")
        return r.json()

    def get_run(self, run_id: str) -> dict[str, Any]:
        try:
            return self._get(f"/api/v1/runs/{urllib.parse.quote(run_id, safe='')}")["run"]
        except StoreUnavailable:
            row = None if self._closed else self.spool.run_row(run_id)
            if row is None:
                raise
            return {**row, "stored_status": row.get("status"), "last_step": row.get("last_step")}

    def list_runs(self, project: str | None = None, *, fields: Collection[str] | None = None) -> list[dict[str, Any]]:
        try:
            return self._get("/api/v1/runs", project=project)["runs"]
        except StoreUnavailable:
            return []  # the server is down: nothing to resume from here (a new run is started)

    def _unsupported(self, *args: Any, **kw: Any) -> Any:
        raise StoreError(95, f"reading metrics from a team server goes through its dashboard ({self.server}) or "
                             "its database (Api(store='postgresql://...')), not the logging client")

    keys = series = samples = sample_steps = findings = events = _unsupported  # type: ignore[assignment]

    # ---- lifecycle ------------------------------------------------------------------------------
    def finish_run(self, run_id: str, timeout_s: float | None = None) -> bool:
        """Wait (up to ``$RLCOCKPIT_SERVER_FINISH_S``, 30 s) until the run's ops are acknowledged; say so."""
        if timeout_s is None:
            timeout_s = float(os.environ.get(FINISH_ENV) or 30.0)
        deadline = time.monotonic() + timeout_s
        self.uploader.wake_now()
        while self.spool.stats(run_id)["ops"] and time.monotonic() < deadline and self.uploader.is_alive() \
                and self.uploader.state != "refused":  # a refused token or role does not heal by waiting
            time.sleep(0.05)
        left = self.spool.stats(run_id)
        if left["ops"] and self.uploader.state == "refused":
            say(f"rlcockpit: run {run_id}: the team server {self.server} refused it ({self.uploader.outage}); "
                f"{left['ops']} batches ({left['bytes'] / 2**20:.1f} MiB) are kept in {self.spool.path}: fix "
                "RLCOCKPIT_TOKEN or the project role, then `rlcockpit sync`")
            return False
        if left["ops"]:
            say(f"rlcockpit: run {run_id}: {left['ops']} batches ({left['bytes'] / 2**20:.1f} MiB) not yet at the team "
                f"server {self.server} ({self.uploader.state}); they are kept in {self.spool.path} and sent by "
                f"`rlcockpit sync` (or while this process lives)")
            return False
        if self.uploader.had_outage:
            say(f"rlcockpit: run {run_id}: everything reached the team server {self.server}")
        self.close(keep_client=True)
        return True

    def close(self, keep_client: bool = False) -> None:
        with self._open_lock:
            if self._closed:
                return
            self._closed = True
            self.uploader.stop()
            if not self.spool.remove_if_empty():
                self.spool.close()
        if not keep_client:
            self.client.close()


def _message(r: httpx.Response) -> str:
    try:
        body = r.json()
        return str(body.get("error") or body.get("detail") or body)
    except ValueError:
        return r.text[:300]


class Uploader(threading.Thread):
    """Sends the spool's ops in order; backs off while the server is unreachable; never gives up."""

    def __init__(self, store: RemoteStore, *, interval_s: float = 0.5, max_bytes: int = MAX_REQUEST_BYTES) -> None:
        super().__init__(name="rlcockpit-uploader", daemon=True)
        self.store, self.spool, self.client = store, store.spool, store.client
        self.interval_s, self.max_bytes = interval_s, max_bytes
        self._wake = threading.Event()
        self._halt = threading.Event()
        self._next_try = 0.0
        self._backoff = BACKOFF_START_S
        self._single_through = 0  # ops up to this seq are sent one per request (isolating a rejected one)
        self._errors_of = (0, 0)  # (seq, consecutive 500s) of the op sent alone
        self.state = "ok"
        self.outage: str | None = None
        self.had_outage = False
        self.sent_ops = 0
        self.requests = 0
        self.latencies: deque[float] = deque(maxlen=100_000)  # seconds per answered request (the load bench)

    def wake_soon(self) -> None:
        """New data: it goes with the next round (every ``interval_s``), many ops per request."""

    def wake_now(self) -> None:
        self._next_try = 0.0
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._halt.set()
        self._wake.set()
        if self.is_alive() and self is not threading.current_thread():
            self.join(timeout)

    def run(self) -> None:
        while not self._halt.is_set():
            self._wake.wait(self.interval_s)
            self._wake.clear()
            if time.monotonic() >= self._next_try:
                try:
                    self.flush()
                except Exception as exc:  # noqa: BLE001 - never die: the data stays in the spool
                    try:
                        self._failed(f"{type(exc).__name__}: {exc}", BACKOFF_MAX_S)
                    except Exception:  # noqa: BLE001 - e.g. the spool's disk is full: retry later
                        self._next_try = time.monotonic() + BACKOFF_MAX_S

    def flush(self) -> bool:
        """Send everything pending; ``True`` when the spool is empty."""
        while not self._halt.is_set():
            ops = self.spool.pending(max_bytes=self.max_bytes)
            if not ops:
                return True
            if ops[0][0] <= self._single_through:
                ops = ops[:1]
            if not self._send(ops):
                return False
        return False

    def _send(self, ops: list[tuple[int, str, bytes]]) -> bool:
        run_id = ops[0][1]
        body = (b'{"stream":' + dumps(self.store.stream) + b',"ops":[' + b",".join(b for _, _, b in ops) + b"]}")
        path = INGEST_PATH.format(run=urllib.parse.quote(run_id, safe=""))
        t0 = time.perf_counter()
        try:
            r = self.client.post(path, content=body)
        except httpx.HTTPError as exc:
            return self._failed(f"unreachable: {type(exc).__name__}: {exc}")
        self.latencies.append(time.perf_counter() - t0)
        self.requests += 1
        if r.status_code == 200:
            through = int(r.json().get("applied_through", ops[-1][0]))
            self.spool.acknowledge(run_id, max(through, ops[-1][0]))
            self.sent_ops += len(ops)
            self._recovered()
            return True
        message = f"{r.status_code} {_message(r)}"
        if r.status_code in (401, 403):
            if self.state != "refused":
                say(f"rlcockpit: the team server {self.store.server} refused run {run_id}: {message}; the data stays "
                    f"in {self.spool.path} (fix RLCOCKPIT_TOKEN or the project role, then `rlcockpit sync`)")
            self.state = "refused"
            return self._failed(message, REFUSED_RETRY_S, quiet=True)
        if r.status_code == 404:
            return self._gone(run_id, message)
        if r.status_code in (400, 409, 413, 422) or (r.status_code == 500 and self._deterministic(ops)):
            if len(ops) > 1:
                self._single_through = ops[-1][0]  # resend one by one to find the op at fault
                return True
            return self._reject(ops[0], message)
        if r.status_code == 500 and len(ops) > 1:
            self._single_through = ops[-1][0]  # a 500 may be one op's value: isolate before it blocks the rest
        retry = r.headers.get("retry-after")
        return self._failed(message, float(retry) if retry and retry.replace(".", "", 1).isdigit() else None)

    def _deterministic(self, ops: list[tuple[int, str, bytes]]) -> bool:
        """Whether this 500 is the op's own: the same single op answered 500 :data:`SERVER_ERROR_TRIES` times."""
        if len(ops) > 1:
            return False
        seq = ops[0][0]
        n = self._errors_of[1] + 1 if self._errors_of[0] == seq else 1
        self._errors_of = (seq, n)
        return n >= SERVER_ERROR_TRIES

    def _reject(self, op: tuple[int, str, bytes], message: str) -> bool:
        """The server refuses this op for good: drop it and record the loss on the run (a new op)."""
        seq, run_id, body = op
        self.spool.drop(seq)
        losses = op_losses(body, "rejected_by_store", message)
        self.store.report(f"rejected:{message[:80]}", f"rlcockpit: the team server rejected a batch of run {run_id}: "
                          f"{message}; it is dropped and recorded as data_lost ({'; '.join(x.describe() for x in losses)})")
        for loss in losses:
            self.spool.append(run_id, {"batch": encode_batch(WriteBatch(losses=[loss]))}, dumps)
        return True

    def _gone(self, run_id: str, message: str) -> bool:
        """The server does not have the run (deleted by an admin, or never created): nothing sent for it can
        succeed. Drop its spooled ops, drop its later writes (counted), record it in the spool, say it once."""
        self.store.gone.setdefault(run_id, 0)  # first: a write racing with the drop below is not spooled
        dropped = self.spool.drop_run(run_id)
        self._note(**{f"gone:{run_id}": f"{dropped} batches dropped: {message}"})
        say(f"rlcockpit: the team server {self.store.server} no longer has run {run_id} ({message}); {dropped} spooled "
            f"batches are dropped and nothing more is sent for it (logging goes on; `rlcockpit status` shows it)")
        return True

    def _failed(self, why: str, retry_s: float | None = None, *, quiet: bool = False) -> bool:
        wait = self._backoff if retry_s is None else max(retry_s, 0.05)
        self._next_try = time.monotonic() + wait
        self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)
        self._note(last_error=why, last_error_at=str(time.time()))
        if self.outage is None and not quiet:
            say(f"rlcockpit: team server {self.store.server} {why}; logging goes on, spooling to {self.spool.path} "
                f"({self._waiting()} batches waiting); they are sent in order when it is back")
        if self.state != "refused":
            self.state = f"waiting: {why}"
        self.outage = self.outage or why
        self.had_outage = True
        return False

    def _note(self, **info: str) -> None:
        """Status for ``rlcockpit status`` in the spool, best effort: on a full disk (or a locked spool) the
        bookkeeping must not raise out of the uploader — its thread would die and nothing be sent again."""
        try:
            self.spool.set_info(**info)
        except (OSError, sqlite3.Error) as exc:
            logger.debug("rlcockpit: spool status not written: %s", exc)

    def _waiting(self) -> int | str:
        try:
            return int(self.spool.stats()["ops"])
        except (OSError, sqlite3.Error):
            return "?"

    def _recovered(self) -> None:
        self._backoff = BACKOFF_START_S
        if self.outage is not None or self.state != "ok":
            say(f"rlcockpit: team server {self.store.server} is back; sending the spooled batches "
                f"({self._waiting()} left)")
            self._note(last_ok=str(time.time()))
        self.outage = None
        self.state = "ok"
