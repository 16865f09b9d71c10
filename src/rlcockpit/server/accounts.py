"""Users, API tokens (stored hashed), roles per project, and the audit log.

A token is ``rlc_<id>_<secret>``: the id finds the row, the secret is checked against its SHA-256. A token
expires (90 days unless chosen otherwise), can be revoked, and records when it was last used (to the
minute); every request reads its row, so a revocation applies at once in every server process.
Why SHA-256 and not a slow password hash: the secret is 32 random bytes (not a password a person
picked), so guessing is hopeless either way, and a slow hash would cost every ingest request tens of
milliseconds. The plain token is shown once, when it is made, and never stored or logged.

Roles per project: ``viewer`` reads, ``member`` also logs runs, rates samples and saves views,
``admin`` also sets KPI targets, alert channels, roles and deletes runs. A server admin (``is_admin``,
the first one made by ``rlcockpit server create-admin``) is admin of every project.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI reads this module's defaults without loading the PostgreSQL driver
    from rlcockpit.store.postgres.store import PostgresStore

ROLES = ("viewer", "member", "admin")
RANK = {r: i for i, r in enumerate(ROLES)}
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
TOKEN_RE = re.compile(r"^rlc_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})$")
DEFAULT_TOKEN_DAYS = 90.0  # a token's life unless asked otherwise (``--expires-days``; 0: never)
RESERVED_NAMES = ("issue", "list", "revoke")  # `rlcockpit server token list` is not a token for user "list"
LAST_USED_EVERY_S = 60.0  # ``tokens.last_used`` is written at most this often per token


@dataclass
class User:
    id: int
    name: str
    is_admin: bool = False
    roles: dict[str, str] = field(default_factory=dict)  # project -> role
    token_id: str | None = None

    def role(self, project: str) -> str | None:
        return "admin" if self.is_admin else self.roles.get(project)

    def can(self, project: str, role: str) -> bool:
        have = self.role(project)
        return have is not None and RANK[have] >= RANK[role]

    def projects(self) -> tuple[str, ...] | None:
        """The projects this user may read (``None``: all of them)."""
        return None if self.is_admin else tuple(sorted(self.roles))


def token_id_of(token: str) -> str:
    """The id part of ``rlc_<id>_<secret>`` (a bare id is returned as it is)."""
    m = TOKEN_RE.match(token or "")
    return m.group(1) if m else (token or "").strip()


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class Accounts:
    """Account operations over the team store's database."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def _q(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self.store._query(sql, params)

    def _tx(self, fn, *args):
        return self.store._tx(lambda tx: fn(tx.conn, *args))

    # ---- users and tokens -----------------------------------------------------------------------
    def create_user(self, name: str, *, is_admin: bool = False, actor: str = "cli") -> User:
        if not NAME_RE.match(name or ""):
            raise ValueError(f"user name {name!r}: 1-64 letters, digits or . _ @ - (starting with a letter/digit)")
        if name in RESERVED_NAMES:
            raise ValueError(f"user name {name!r} is a word of `rlcockpit server token`: pick another")

        def work(c: Any) -> int:
            if c.execute("SELECT 1 FROM users WHERE name = %s", (name,)).fetchone():
                raise ValueError(f"user {name!r} exists already")
            uid = c.execute("INSERT INTO users(name, is_admin, created_at) VALUES (%s, %s, %s) RETURNING id",
                            (name, is_admin, time.time())).fetchone()[0]
            self._audit(c, actor, "user.create", None, name, {"admin": is_admin})
            return uid

        return User(self._tx(work), name, is_admin)

    def user(self, name: str) -> User:
        rows = self._q("SELECT id, name, is_admin FROM users WHERE name = %s", (name,))
        if not rows:
            raise KeyError(f"no user {name!r}")
        uid, uname, admin = rows[0]
        roles = dict(self._q("SELECT project, role FROM members WHERE user_id = %s", (uid,)))
        return User(uid, uname, admin, roles)

    def users(self) -> list[dict[str, Any]]:
        out = []
        for uid, name, admin in self._q("SELECT id, name, is_admin FROM users ORDER BY name"):
            roles = dict(self._q("SELECT project, role FROM members WHERE user_id = %s", (uid,)))
            out.append({"name": name, "is_admin": admin, "roles": roles})
        return out

    def issue_token(self, name: str, label: str = "", *, actor: str = "cli",
                    expires_days: float | None = DEFAULT_TOKEN_DAYS) -> str:
        """A new API token for user ``name`` (returned once; only its hash is kept). It stops working after
        ``expires_days`` (``None`` or 0: never)."""
        if expires_days is not None and (not math.isfinite(expires_days) or expires_days < 0):
            raise ValueError(f"expires_days must be a number of days >= 0 (0: never), got {expires_days!r}")
        user = self.user(name)
        tid, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        now = time.time()
        expires = now + expires_days * 86400 if expires_days else None

        def work(c: Any) -> None:
            c.execute("INSERT INTO tokens(id, user_id, hash, label, created_at, expires_at) VALUES (%s, %s, %s, %s, %s, "
                      "%s)", (tid, user.id, _hash(secret), label or None, now, expires))
            self._audit(c, actor, "token.create", None, name, {"token_id": tid, "label": label, "expires_at": expires})

        self._tx(work)
        return f"rlc_{tid}_{secret}"

    def tokens(self, user: str | None = None) -> list[dict[str, Any]]:
        """Every token (or ``user``'s), newest first: id, user, label, created, expires, last used, revoked —
        never the secret or its hash."""
        sql = ("SELECT t.id, u.name, t.label, t.created_at, t.expires_at, t.last_used, t.revoked FROM tokens t JOIN "
               "users u ON u.id = t.user_id")
        rows = self._q(sql + (" WHERE u.name = %s" if user else "") + " ORDER BY t.created_at DESC",
                       (user,) if user else ())
        now = time.time()
        return [{"id": tid, "user": name, "label": label, "created_at": created, "expires_at": expires,
                 "last_used": used, "revoked": revoked, "expired": expires is not None and expires <= now}
                for tid, name, label, created, expires, used, revoked in rows]

    def token_owner(self, token_id: str) -> str | None:
        rows = self._q("SELECT u.name FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.id = %s",
                       (token_id_of(token_id),))
        return rows[0][0] if rows else None

    def revoke_token(self, token_id: str, *, actor: str) -> str:
        """Revoke a token by its id (or the whole ``rlc_...`` token); it is refused from the next request on,
        in every server process (no cache). Returns the id; :class:`KeyError` when there is no such token."""
        tid = token_id_of(token_id)

        def work(c: Any) -> None:
            if c.execute("UPDATE tokens SET revoked = true WHERE id = %s RETURNING id", (tid,)).fetchone() is None:
                raise KeyError(f"no token {tid!r}")
            self._audit(c, actor, "token.revoke", None, tid, {})

        self._tx(work)
        return tid

    def authenticate(self, token: str) -> User | None:
        """The user of ``token`` (``None``: unknown, malformed, revoked or expired)."""
        return self.check(token)[0]

    def check(self, token: str) -> tuple[User | None, str]:
        """``(user, "")`` or ``(None, why)``. One query per request, no cache: a revocation, an expiry or a
        role change made by any process applies to the very next request. ``last_used`` is written at most
        once every ``LAST_USED_EVERY_S`` per token (not a write per ingest request)."""
        m = TOKEN_RE.match(token or "")
        if not m:
            return None, "malformed"
        rows = self._q("SELECT t.hash, t.revoked, t.expires_at, t.last_used, u.id, u.name, u.is_admin, (SELECT "
                       "json_object_agg(project, role) FROM members WHERE user_id = u.id) FROM tokens t JOIN users u "
                       "ON u.id = t.user_id WHERE t.id = %s", (m.group(1),))
        if not rows or not hmac.compare_digest(rows[0][0], _hash(m.group(2))):
            return None, "unknown"
        _, revoked, expires, last_used, uid, name, admin, roles = rows[0]
        now = time.time()
        if revoked:
            return None, "revoked"
        if expires is not None and expires <= now:
            return None, f"expired on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(expires))}"
        if last_used is None or now - last_used >= LAST_USED_EVERY_S:
            self._tx(lambda c: c.execute("UPDATE tokens SET last_used = %s WHERE id = %s AND (last_used IS NULL OR "
                                         "last_used < %s)", (now, m.group(1), now - LAST_USED_EVERY_S)))
        return User(uid, name, admin, dict(roles or {}), token_id=m.group(1)), ""

    def grant(self, name: str, project: str, role: str | None, *, actor: str) -> None:
        """Give ``name`` ``role`` in ``project`` (``None``: remove the membership)."""
        if role is not None and role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        user = self.user(name)

        def work(c: Any) -> None:
            if role is None:
                c.execute("DELETE FROM members WHERE user_id = %s AND project = %s", (user.id, project))
            else:
                c.execute("INSERT INTO members(user_id, project, role) VALUES (%s, %s, %s) ON CONFLICT (user_id, "
                          "project) DO UPDATE SET role = EXCLUDED.role", (user.id, project, role))
            self._audit(c, actor, "role.set", project, name, {"role": role})

        self._tx(work)

    # ---- audit ----------------------------------------------------------------------------------
    @staticmethod
    def _audit(c: Any, actor: str, action: str, project: str | None, target: str | None, detail: dict) -> None:
        c.execute("INSERT INTO audit(ts, actor, action, project, target, detail) VALUES (%s, %s, %s, %s, %s, %s)",
                  (time.time(), actor, action, project, target, json.dumps(detail, default=str)))

    def audit(self, actor: str, action: str, project: str | None, target: str | None, detail: dict) -> None:
        self._tx(self._audit, actor, action, project, target, detail)

    def audit_log(self, project: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
        sql = "SELECT ts, actor, action, project, target, detail FROM audit"
        params: tuple = ()
        if project is not None:
            sql += " WHERE project = %s"
            params = (project,)
        rows = self._q(sql + " ORDER BY id DESC LIMIT %s", (*params, int(limit)))
        return [{"ts": ts, "actor": a, "action": act, "project": p, "target": t, "detail": json.loads(d)}
                for ts, a, act, p, t, d in rows]
