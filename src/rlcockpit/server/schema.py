"""The team server's own tables (a part of the PostgreSQL schema, versioned like the run store's).

users / tokens (hashed) / members (role per project) / audit (who changed what) / kpi_targets /
kpi_marks (which run reached which target, for alerts and the leaderboard) / views (saved dashboard
views) / ratings (people's judgement of samples) / project_alerts (a project's alert channels).
"""

from __future__ import annotations

from rlcockpit.store.postgres.schema import register_part

TEAM_V1 = (
    """CREATE TABLE IF NOT EXISTS users (
      id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE, is_admin BOOLEAN NOT NULL DEFAULT false,
      created_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS tokens (
      id TEXT PRIMARY KEY, user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE, hash TEXT NOT NULL,
      label TEXT, created_at DOUBLE PRECISION NOT NULL, last_used DOUBLE PRECISION, revoked BOOLEAN NOT NULL
      DEFAULT false)""",
    """CREATE TABLE IF NOT EXISTS members (
      user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE, project TEXT NOT NULL,
      role TEXT NOT NULL CHECK (role IN ('viewer', 'member', 'admin')), PRIMARY KEY (user_id, project))""",
    """CREATE TABLE IF NOT EXISTS audit (
      id BIGSERIAL PRIMARY KEY, ts DOUBLE PRECISION NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
      project TEXT, target TEXT, detail TEXT NOT NULL DEFAULT '{}')""",
    "CREATE INDEX IF NOT EXISTS audit_ts ON audit(ts)",
    """CREATE TABLE IF NOT EXISTS kpi_targets (
      id BIGSERIAL PRIMARY KEY, project TEXT NOT NULL, key TEXT NOT NULL, op TEXT NOT NULL CHECK (op IN ('>=', '<=', '>', '<')),
      value DOUBLE PRECISION NOT NULL, label TEXT, created_by TEXT, created_at DOUBLE PRECISION NOT NULL,
      UNIQUE (project, key, op))""",
    """CREATE TABLE IF NOT EXISTS kpi_marks (
      target_id BIGINT NOT NULL REFERENCES kpi_targets(id) ON DELETE CASCADE, run_id TEXT NOT NULL,
      reached_step BIGINT, reached_value DOUBLE PRECISION, reached_at DOUBLE PRECISION, best_step BIGINT,
      best_value DOUBLE PRECISION, regressed BOOLEAN NOT NULL DEFAULT false, PRIMARY KEY (target_id, run_id))""",
    """CREATE TABLE IF NOT EXISTS views (
      id TEXT PRIMARY KEY, project TEXT NOT NULL, name TEXT NOT NULL, owner TEXT NOT NULL, state TEXT NOT NULL,
      created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS views_project ON views(project)",
    """CREATE TABLE IF NOT EXISTS ratings (
      id BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, step BIGINT NOT NULL,
      idx INTEGER NOT NULL, rating TEXT NOT NULL CHECK (rating IN ('good', 'bad', 'hacked')), note TEXT,
      author TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, UNIQUE (run_id, step, idx, author))""",
    "CREATE INDEX IF NOT EXISTS ratings_run ON ratings(run_id, step)",
    """CREATE TABLE IF NOT EXISTS project_alerts (
      project TEXT PRIMARY KEY, config TEXT NOT NULL, updated_by TEXT, updated_at DOUBLE PRECISION)""",
)

# v2: token expiry (``NULL``: never) — see :meth:`rlcockpit.server.accounts.Accounts.issue_token`
TEAM_V2 = ("ALTER TABLE tokens ADD COLUMN IF NOT EXISTS expires_at DOUBLE PRECISION",)

register_part("team", [TEAM_V1, TEAM_V2])
