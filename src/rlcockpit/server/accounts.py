"""Users, API tokens (stored hashed), roles per project, and the audit log.

A token is ``rlc_<id>_<secret>``: the id finds the row, the secret is checked against its SHA-256.
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
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from rlcockpit.store.postgres import PostgresStore

ROLES = ("viewer", "member", "admin")
RANK = {r: i for i, r in enumerate(ROLES)}
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
TOKEN_RE = re.compile(r"^rlc_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})$")


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


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class Accounts:
    """Account operations over the team store's database."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self._cache: dict[str, tuple[float, User | None]] = {}  # token -> (expires, user): ingest is hot
        self.cache_s = 5.0

    def _q(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self.store._query(sql, params)

    def _tx(self, fn, *args):
        return self.store._tx(lambda tx: fn(tx.conn, *args))

    # ---- users and tokens -----------------------------------------------------------------------
    def create_user(self, name: str, *, is_admin: bool = False, actor: str = "cli") -> User:
        if not NAME_RE.match(name or ""):
            raise ValueError(f"user name {name!r}: 1-64 letters, digits or . _ @ - (starting with a letter/digit)")

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

    def issue_token(self, name: str, label: str = "", *, actor: str = "cli") -> str:
        """A new API token for user ``name`` (returned once; only its hash is kept)."""
        user = self.user(name)
        tid, secret = secrets.token_hex(6), secrets.token_urlsafe(32)

        def work(c: Any) -> None:
            c.execute("INSERT INTO tokens(id, user_id, hash, label, created_at) VALUES (%s, %s, %s, %s, %s)",
                      (tid, user.id, _hash(secret), label or None, time.time()))
            self._audit(c, actor, "token.create", None, name, {"token_id": tid, "label": label})

        self._tx(work)
        return f"rlc_{tid}_{secret}"

    def revoke_token(self, token_id: str, *, actor: str) -> None:
        self._tx(lambda c: (c.execute("UPDATE tokens SET revoked = true WHERE id = %s", (token_id,)),
                            self._audit(c, actor, "token.revoke", None, token_id, {})))
        self._cache.clear()

    def cached(self, token: str) -> tuple[bool, User | None]:
        """``(True, user)`` when ``token`` was checked less than ``cache_s`` ago (no database call)."""
        hit = self._cache.get(token)
        if hit is not None and hit[0] > time.monotonic():
            return True, hit[1]
        return False, None

    def authenticate(self, token: str) -> User | None:
        """The user of ``token`` (``None``: unknown, malformed or revoked)."""
        now = time.monotonic()
        hit = self._cache.get(token)
        if hit is not None and hit[0] > now:
            return hit[1]
        m = TOKEN_RE.match(token or "")
        user = None
        if m:
            rows = self._q("SELECT t.hash, u.name FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.id = %s "
                           "AND NOT t.revoked", (m.group(1),))
            if rows and hmac.compare_digest(rows[0][0], _hash(m.group(2))):
                user = self.user(rows[0][1])
                user.token_id = m.group(1)
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[token] = (now + self.cache_s, user)
        return user

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
        self._cache.clear()

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
