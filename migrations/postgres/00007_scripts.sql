-- +goose Up
-- Scripts (issue 9): saved scripts of a workspace, referenced by code nodes
-- (config.script_id). The row holds the current source; every change of
-- source or language adds a revision, so earlier versions stay readable.
-- Revisions carry the workspace too: every query of them is scoped by it.

CREATE TABLE scripts (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    slug         TEXT NOT NULL,
    language     TEXT NOT NULL CHECK (language IN ('sh', 'bash', 'python', 'javascript')),
    description  TEXT,
    source       TEXT NOT NULL,
    version      BIGINT NOT NULL CHECK (version >= 1),
    created_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (workspace_id, slug),
    UNIQUE (workspace_id, name)
);
CREATE INDEX scripts_workspace ON scripts (workspace_id, created_at, id);

CREATE TABLE script_revisions (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    script_id    TEXT NOT NULL REFERENCES scripts (id) ON DELETE CASCADE,
    version      BIGINT NOT NULL CHECK (version >= 1),
    language     TEXT NOT NULL CHECK (language IN ('sh', 'bash', 'python', 'javascript')),
    source       TEXT NOT NULL,
    created_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (script_id, version)
);

-- +goose Down
-- Slipway only migrates up.
