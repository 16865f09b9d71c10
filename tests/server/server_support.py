"""Helpers for team-server tests: a server on a fresh PostgreSQL schema, users with tokens, HTTP clients."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from rlcockpit.server.app import TeamServer
from rlcockpit.server.guard import Limits


@dataclass
class Team:
    server: TeamServer
    db: str
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, user: str | None = None, **kw) -> httpx.Client:
        headers = {"authorization": f"Bearer {self.tokens[user]}"} if user else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kw)

    def add_user(self, name: str, projects: dict[str, str] | None = None, *, admin: bool = False) -> str:
        acc = self.server.team.accounts
        acc.create_user(name, is_admin=admin, actor="test")
        for project, role in (projects or {}).items():
            acc.grant(name, project, role, actor="test")
        self.tokens[name] = acc.issue_token(name, "test", actor="test")
        return self.tokens[name]


def start_team(db: str, host: str = "127.0.0.1", **kw) -> Team:
    kw.setdefault("limits", Limits())
    server = TeamServer(db, host, 0, pool_size=8, **kw).serve_in_thread()
    return Team(server, db)
