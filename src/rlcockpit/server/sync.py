"""``rlcockpit status`` and ``rlcockpit sync``: what a machine has not yet given the team server, and sending it.

Two kinds of leftovers:

* **spools** (``<dir>/spool/*.db``) of remote runs whose process ended (or was killed) before the
  server acknowledged everything: replayed op by op with the same stream id and sequence numbers, so
  what the server already has is skipped (idempotent), and an interrupted sync simply resumes;
* **offline runs** in the local SQLite store (logged without a server, like ``wandb sync`` of an offline
  run): the server says what it holds of the run (points per key, samples per step, event and finding
  ids) and only the rest is sent — resumable, never duplicated.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.remote.client import RemoteStore
from rlcockpit.store.remote.spool import Spool

POINTS_PER_OP = 200_000


def spool_files(dir: Path) -> list[Path]:
    return sorted((dir / "spool").glob("*.db"))


def spool_status(path: Path) -> dict[str, Any]:
    live = Spool.is_locked(path)
    spool = Spool(path, own=False)
    try:
        stats = spool.stats()
        info = {k: spool.info(k) for k in ("server", "stream", "pid", "last_error", "last_error_at", "last_ok")}
        info["gone"] = spool.info_like("gone:")  # runs deleted on the server: what was dropped for each
    finally:
        spool.close()
    return {"path": str(path), "live": live, **stats, **info}


def replay_spool(path: Path, token: str | None, *, server: str | None = None, timeout_s: float = 60.0) -> dict:
    """Send what a dead process left in its spool; returns what is left (0 ops: done, file removed)."""
    probe = Spool(path, own=False)
    url, stream = server or probe.info("server"), probe.info("stream") or path.stem
    probe.close()
    if not url:
        raise ValueError(f"spool {path} does not name its server; pass --server")
    store = RemoteStore(url, token, spool_dir=path.parent, stream=stream, start=False)
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if store.uploader.flush():
                break
            time.sleep(min(max(0.0, store.uploader._next_try - time.monotonic()), 1.0))
        left = store.spool.stats()
        return {"server": url, "stream": stream, "sent_ops": store.uploader.sent_ops, "left_ops": left["ops"],
                "state": store.uploader.state}
    finally:
        store.close()


def _client(server: str, token: str | None) -> httpx.Client:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server.rstrip("/"), timeout=60, headers=headers)


def sync_run(local: Any, run_id: str, server: str, token: str | None) -> dict[str, Any]:
    """Upload what the server lacks of the local run ``run_id`` (``local``: a store); resumable."""
    run = local.get_run(run_id)
    rid = run["id"]
    with _client(server, token) as client:
        r = client.get(f"/api/v1/runs/{rid}/sync-state")
        if r.status_code != 200:
            raise RuntimeError(f"team server {server}: {r.status_code} {r.text[:300]}")
        have = r.json()
    stream = f"sync-{os.getpid()}-{int(time.time() * 1000)}"
    spool_dir = Path(os.environ.get("TMPDIR", "/tmp")) / "rlcockpit-sync"
    remote = RemoteStore(server, token, spool_dir=spool_dir, stream=stream, start=False)
    sent = {"points": 0, "samples": 0, "events": 0, "findings": 0}
    try:
        if not have.get("exists"):
            remote.create_run({k: run.get(k) for k in ("id", "project", "name", "group", "tags", "config", "meta",
                                                       "notes", "created_at")})
        for batch, counts in _missing(local, rid, have):
            remote.write_batch(rid, batch)
            for k, v in counts.items():
                sent[k] += v
        remote.update_run(rid, summary=run.get("summary") or {}, status=run.get("stored_status") or run["status"],
                          exit_code=run.get("exit_code"), finished_at=run.get("finished_at"),
                          heartbeat_at=run.get("heartbeat_at"), data_lost=int(run.get("data_lost") or 0))
        deadline = time.monotonic() + 600
        while not remote.uploader.flush():
            if time.monotonic() > deadline or remote.uploader.state == "refused":
                raise RuntimeError(f"team server {server}: {remote.uploader.state}; run the sync again to resume")
            time.sleep(min(max(0.05, remote.uploader._next_try - time.monotonic()), 2.0))
    finally:
        remote.close()
    return {"run": rid, "sent": sent, "already": bool(have.get("exists"))}


def _missing(local: Any, rid: str, have: dict[str, Any]) -> Iterator[tuple[WriteBatch, dict[str, int]]]:
    """Batches of what the server lacks: the tail of each key, sample rows, events, findings."""
    have_points = have.get("points") or {}
    batch, n = WriteBatch(), 0
    for key in local.keys(rid):
        s, v, t = local.series(rid, key)
        start = int(have_points.get(key, 0))
        for lo in range(start, len(s), POINTS_PER_OP):
            part = (s[lo: lo + POINTS_PER_OP], v[lo: lo + POINTS_PER_OP], t[lo: lo + POINTS_PER_OP])
            batch.points[key] = part
            n += len(part[0])
            if n >= POINTS_PER_OP:
                yield batch, {"points": n}
                batch, n = WriteBatch(), 0
    if batch:
        yield batch, {"points": n}
    have_samples = have.get("samples") or {}
    for step in local.sample_steps(rid):
        rows = local.samples(rid, step)
        rows = [{k: v for k, v in r.items() if k not in ("step", "idx")} for r in rows[int(have_samples.get(str(step),
                                                                                                          0)):]]
        if rows:
            yield WriteBatch(samples=[(step, rows)]), {"samples": len(rows)}
    known = set(have.get("events") or [])
    events = [(e["kind"], e["payload"], e["step"], e["id"]) for e in local.events(rid) if e["id"] not in known]
    if events:
        yield WriteBatch(events=events), {"events": len(events)}
    known = set(have.get("findings") or [])
    findings = [f for f in local.findings(rid) if f.get("id") not in known]
    if findings:
        yield WriteBatch(findings=findings), {"findings": len(findings)}
