-- +goose Up
-- Resources and env vars (issue 25). A resource is a typed connection: its
-- config (JSON, validated against its kind's schema) and at most one
-- secret, which lives in the vault under secret_ref (NULL: none). Every
-- write of a secret goes to a fresh vault name before the row names it, so
-- the row never points at a secret that is not there (the orphan sweep
-- removes what a failed write left behind).
CREATE TABLE resources (
    id                  TEXT PRIMARY KEY,
    workspace_id        TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    kind                TEXT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    config              JSONB NOT NULL,
    secret_ref          TEXT,
    rls_managed         BOOLEAN NOT NULL DEFAULT FALSE,
    max_concurrent_uses BIGINT CHECK (max_concurrent_uses IS NULL OR max_concurrent_uses >= 1),
    created_by          TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    secret_updated_at   TIMESTAMPTZ,
    UNIQUE (workspace_id, name)
);
CREATE INDEX resources_kind ON resources (workspace_id, kind, name);

-- Env vars: global to the workspace (project_id NULL) or one project's,
-- which wins over a global one of the same key. A secret one keeps its
-- value in the vault (value is then empty); locked ones change only by a
-- workspace admin. Keys compare and sort bytewise on both engines
-- (SQLite's BINARY, PostgreSQL's "C"): FOO and foo are two vars.
CREATE TABLE env_vars (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    project_id   TEXT REFERENCES projects (id) ON DELETE CASCADE,
    key          TEXT COLLATE "C" NOT NULL,
    is_secret    BOOLEAN NOT NULL,
    value        TEXT NOT NULL,
    secret_ref   TEXT,
    locked       BOOLEAN NOT NULL DEFAULT FALSE,
    created_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    CHECK (is_secret = (secret_ref IS NOT NULL)),
    CHECK (NOT is_secret OR value = '')
);
CREATE UNIQUE INDEX env_vars_global ON env_vars (workspace_id, key) WHERE project_id IS NULL;
CREATE UNIQUE INDEX env_vars_project ON env_vars (project_id, key) WHERE project_id IS NOT NULL;
-- The workspace's list (globals, then by project, then key) and a run's
-- effective env read through this one.
CREATE INDEX env_vars_workspace ON env_vars (workspace_id, project_id, key);

-- +goose Down
-- Slipway only migrates up.
